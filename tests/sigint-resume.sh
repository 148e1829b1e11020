#!/bin/sh
# A sweep stopped by SIGINT (issue 23, 8) clears its progress line and
# says that --resume continues it, then ends by the signal as before; run
# again with --resume, it completes the same file as an uninterrupted run.
# Usage: sh tests/sigint-resume.sh TPSIM SOURCE_DIR
set -u
tpsim=${1:?usage: sigint-resume.sh TPSIM SOURCE_DIR}
src=${2:?usage: sigint-resume.sh TPSIM SOURCE_DIR}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tpsim-sigint.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() {
    echo "FAIL: $*"
    exit 1
}
# Some 960 points: seconds on one thread, long enough to be stopped.
cat >"$tmp/s.yaml" <<YAML
base: $src/scenarios/gpt3-175b-tp8.yaml
vary:
  model.seq_len: {from: 1024, to: 16384, step: 16}
strategies: [megatron]
YAML
# A background job of a script ignores SIGINT: env restores its default.
TPSIM_PROGRESS=1 env --default-signal=INT "$tpsim" sweep "$tmp/s.yaml" -j 1 -o "$tmp/out.csv" \
    2>"$tmp/err" &
pid=$!
i=0
until grep -q '^#done' "$tmp/out.csv.partial" 2>/dev/null; do
    i=$((i + 1))
    [ "$i" -le 300 ] || fail "no point done after 30 s"
    sleep 0.1
done
kill -INT "$pid"
wait "$pid"
status=$?
[ "$status" -gt 128 ] || fail "exit $status after SIGINT, not killed by it"
[ -e "$tmp/out.csv" ] && fail "an output after SIGINT"
[ -e "$tmp/out.csv.partial" ] || fail "no partial file after SIGINT"
# What the terminal shows last: the progress line cleared (ESC [ K), then
# the note alone on its line.
esc=$(printf '\033')
last=$(tr '\r' '\n' <"$tmp/err" | sed "s/$esc\[K//g" | tail -n 1)
[ "$last" = "stopped: continue with --resume" ] ||
    fail "the last line after SIGINT is '$(printf '%s' "$last" | od -c | head -n 3)'"
tail -c 40 "$tmp/err" | grep -q "$esc\[Kstopped: continue with --resume" ||
    fail "the progress line is not cleared before the note"

"$tpsim" sweep "$tmp/s.yaml" -j 2 -o "$tmp/out.csv" --resume 2>/dev/null ||
    fail "the --resume run failed"
"$tpsim" sweep "$tmp/s.yaml" -j 2 -o "$tmp/full.csv" 2>/dev/null || fail "the full run failed"
cmp -s "$tmp/out.csv" "$tmp/full.csv" || fail "the resumed output differs from the full run's"
echo "ok: SIGINT clears the progress line and says --resume continues"
