#!/bin/bash
# Fault test: a `tpsim sweep --jobs 2` and a `tpsim search --jobs 2` killed
# with SIGKILL at random points (again and again, each run resuming the
# partial file the last one left), then resumed to the end: the final file
# must be the bytes of a run that was never interrupted. The kills fall
# anywhere in a run (before the partial file exists, in the middle of a
# row, between a point's rows and its #done line, while the final file is
# written); their delays come from SEED, printed, so that a failure can be
# replayed (SEED=N bash tests/fault/kill-resume.sh).
#
# Environment (tests/meson.build sets it): TPSIM_BIN, TPSIM_SOURCE_DIR.
set -u
TPSIM=${TPSIM_BIN:?}
SRC=${TPSIM_SOURCE_DIR:?}
SEED=${SEED:-$(($(date +%s%N) / 1000 % 32768))}
RANDOM=$SEED
echo "SEED=$SEED"

fail() {
    echo "FAIL: $*"
    exit 1
}

dir=$(mktemp -d "${TMPDIR:-/tmp}/tpsim-kill-XXXXXX") || fail "no temporary folder"
trap 'rm -rf "$dir"' EXIT
# Small sort runs: the resumed rows go through the spilled sort too.
export TPSIM_BATCH_SORT_RUN=7

# same WHOLE RESUMED NAME: the resumed file is the uninterrupted run's.
same() {
    cmp -s "$1" "$2" && return 0
    diff "$1" "$2" | head -n 20
    fail "$3: the resumed file is not the bytes of the uninterrupted run"
}

now_ms() {
    date +%s%3N
}

# kill_resume NAME ARGS...: `tpsim ARGS... --output FILE` killed and resumed
# until it ends, compared with the uninterrupted run.
kill_resume() {
    local name=$1
    shift
    local ref=$dir/$name-whole.csv out=$dir/$name.csv
    local t0 t1
    t0=$(now_ms)
    "$TPSIM" "$@" --output "$ref" >/dev/null 2>"$dir/err" || fail "$name: $(cat "$dir/err")"
    t1=$(now_ms)
    # Kills until at least 3 of them cut a run that had started its
    # partial file and a resume then ended it; a run that ends before its
    # kill is checked too, and the chain starts again.
    local span=$((t1 - t0 + 5)) kills=0 cut=0 try pid rc delay
    for try in $(seq 1 80); do
        local resume=()
        [ -e "$out.partial" ] && resume=(--resume)
        "$TPSIM" "$@" --output "$out" "${resume[@]}" >/dev/null 2>"$dir/err" &
        pid=$!
        delay=$((RANDOM % span))
        sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
        kill -KILL "$pid" 2>/dev/null && kills=$((kills + 1))
        { wait "$pid"; } 2>/dev/null
        rc=$?
        [ "$rc" -eq 0 ] || [ "$rc" -eq 137 ] || fail "$name: exit $rc: $(cat "$dir/err")"
        if [ -e "$out" ]; then
            same "$ref" "$out" "$name"
            [ "$cut" -ge 3 ] && break
            rm -f "$out" "$out.partial"
            cut=0
            continue
        fi
        [ -e "$out.partial" ] && cut=$((cut + 1))
    done
    if [ ! -e "$out" ]; then
        local resume=()
        [ -e "$out.partial" ] && resume=(--resume)
        "$TPSIM" "$@" --output "$out" "${resume[@]}" >/dev/null 2>"$dir/err" ||
            fail "$name: the last resume: $(cat "$dir/err")"
        same "$ref" "$out" "$name"
    fi
    [ -e "$out.partial.lock" ] && [ "$rc" -eq 0 ] && fail "$name: the lock file was left"
    echo "ok: $name: $kills kills in all, the last $cut of them resumed to the bytes of the whole run"
}

cat >"$dir/sweep.yaml" <<SWEEP
base: $SRC/scenarios/gpt3-175b-tp8.yaml
vary:
  model.seq_len: {from: 1024, to: 16384, step: 512}
  training.micro_batch: [1, 2, 4]
strategies: [megatron, te-a100]
SWEEP
kill_resume sweep sweep "$dir/sweep.yaml" --jobs 2
kill_resume search search "$SRC/scenarios/gpt-345m-tp8.yaml" --gpus 16 --jobs 2
