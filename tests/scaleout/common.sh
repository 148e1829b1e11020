# What both scale-out tests share, sourced by them: the tpsim under test,
# the search (or sweep) they shard, the unsharded result to compare with, and a
# tpsim wrapper whose shard 1 fails on its first run (to exercise the
# documented way to run a failed shard again).
#
# Environment (tests/meson.build sets it): TPSIM_BIN, the tpsim built;
# TPSIM_SOURCE_DIR, the source tree (scenarios/ and contrib/).

SRC=${TPSIM_SOURCE_DIR:?}
TPSIM=${TPSIM_BIN:?}
SHARDS=3

skip() {
    echo "SKIP: $*"
    exit 77
}

fail() {
    echo "FAIL: $*"
    exit 1
}

# What is sharded: a search (some 7000 layouts of a small GPT on 16 GPUs,
# under a second of CPU) where tpsim's search shards, else a sweep (the
# recipes' -c sweep).
"$TPSIM" merge --help >/dev/null 2>&1 || skip "this tpsim has no merge command"
if "$TPSIM" search --help 2>/dev/null | grep -q -- --shard; then
    COMMAND=search
    INPUT=$SRC/scenarios/gpt-345m-tp8.yaml
    ARGS=(--gpus 16)
elif "$TPSIM" sweep --help >/dev/null 2>&1; then
    COMMAND=sweep
    INPUT=$SRC/sweeps/tp-fixed-gpus.yaml
    ARGS=()
else
    skip "this tpsim has neither a search nor a sweep command"
fi

# The unsharded run (on all CPUs) into $1.
unsharded() {
    "$TPSIM" "$COMMAND" "$INPUT" "${ARGS[@]}" --output "$1" >/dev/null ||
        fail "the unsharded $COMMAND failed"
}

# $1/tpsim: runs $TPSIM, but the first run of shard 1/$SHARDS exits 3
# (marker $1/failed-once).
flaky_tpsim() {
    cat >"$1/tpsim" <<WRAP
#!/bin/sh
case " \$* " in
    *" 1/$SHARDS "*)
        if [ ! -e "$1/failed-once" ]; then
            touch "$1/failed-once"
            echo "shard 1 fails on purpose" >&2
            exit 3
        fi
        ;;
esac
exec "$TPSIM" "\$@"
WRAP
    chmod +x "$1/tpsim"
}

# Whether two results are the same bytes, with their difference if not:
# the files (plain tables, a search's ranked best first with its rank
# column) and their sidecars (FILE.batch: the batch, the shard, a search's
# rank keys), which the merge writes as the unsharded run does.
same_result() {
    local f
    for f in "$1" "$1.batch"; do
        [ -e "$f" ] || { echo "$f: missing"; return 1; }
    done
    head -n 1 "$1" | grep -q '^#' && { echo "$1: starts with a comment line"; return 1; }
    cmp -s "$1" "$2" && cmp -s "$1.batch" "$2.batch" && return 0
    echo "$2 (or $2.batch) differs from $1:"
    diff "$1" "$2" | head -n 20
    diff "$1.batch" "$2.batch" | head -n 5
    return 1
}
