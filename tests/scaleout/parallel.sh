#!/bin/bash
# The GNU parallel recipe of docs/scale-out.md, for real, on this machine
# (--sshlogin :): contrib/parallel/tpsim-search-parallel.sh in SHARDS
# shards must write exactly the unsharded search. Shard 1 fails on its
# first run: the recipe must then fail without a merged file, and running
# it again must run only that shard (--resume-failed) and complete the
# result. Skipped (exit 77) only when GNU parallel is not installed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"

command -v parallel >/dev/null 2>&1 ||
    skip "parallel not found: install the Debian package parallel (build-aux/deps.sh)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tpsim-parallel.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP

unsharded "$tmp/full.csv"
flaky_tpsim "$tmp"
cd "$tmp" || exit 1
# The recipe, its output (each shard's table) into recipe.log.
recipe() {
    "$SRC/contrib/parallel/tpsim-search-parallel.sh" -n "$SHARDS" -S : -t "$tmp/tpsim" \
        -o "$tmp/merged.csv" -c "$COMMAND" "$INPUT" "${ARGS[@]}" >"$tmp/recipe.log" 2>&1
}
if recipe; then
    cat "$tmp/recipe.log"
    fail "the recipe succeeded although shard 1 failed"
fi
[ -e "$tmp/failed-once" ] || fail "shard 1 did not run"
[ ! -e "$tmp/merged.csv" ] || fail "a merged file after a failed shard"
before=$(stat -c %Y "$tmp/merged.csv.parts/part-0-of-$SHARDS.csv" 2>/dev/null) ||
    fail "shard 0 wrote no part"
sleep 1
recipe || {
    cat "$tmp/recipe.log"
    fail "the recipe failed when run again"
}
after=$(stat -c %Y "$tmp/merged.csv.parts/part-0-of-$SHARDS.csv")
[ "$before" = "$after" ] || fail "shard 0 ran again although it had ended well"
same_result "$tmp/full.csv" "$tmp/merged.csv" || fail "merged != unsharded"

# Issue 24, 10: GNU parallel's replacement strings ({}, {.}, {#}) in the
# paths and arguments given reach tpsim as written, not replaced.
odd=$tmp/'in {} {.} {#}'
mkdir "$odd" "$tmp/o{}" || fail "cannot make the folders"
cp "$INPUT" "$odd/" || fail "cannot copy $INPUT"
# A sweep's base is relative to its file: the copy names the original.
case $COMMAND in
    sweep) sed "s|^base: .*|base: $(dirname "$INPUT")/$(sed -n 's/^base: //p' "$INPUT")|" \
        "$INPUT" >"$odd/$(basename "$INPUT")" ;;
esac
"$SRC/contrib/parallel/tpsim-search-parallel.sh" -n "$SHARDS" -S : -t "$TPSIM" \
    -o "$tmp/o{}/merged.csv" -c "$COMMAND" "$odd/$(basename "$INPUT")" "${ARGS[@]}" \
    >"$tmp/recipe.log" 2>&1 || {
    cat "$tmp/recipe.log"
    fail "the recipe failed on paths with {}, {.} and {#}"
}
same_result "$tmp/full.csv" "$tmp/o{}/merged.csv" || fail "merged (paths with {}) != unsharded"
echo "ok: $SHARDS GNU parallel shards merged = the unsharded $COMMAND"
