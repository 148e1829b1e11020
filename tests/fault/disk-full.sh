#!/bin/bash
# Fault test: a sweep and a search whose output folder fills up (a small
# tmpfs, mounted here and unmounted by this script alone). Each must stop
# with exit 1 and a message naming the full disk, leave no final file,
# and, its partial file moved to a folder with room, resume to the bytes
# of a run that never stopped. Needs root and mount(8): without them it is
# skipped (exit 77), never passed.
#
# Environment (tests/meson.build sets it): TPSIM_BIN, TPSIM_SOURCE_DIR.
set -u
TPSIM=${TPSIM_BIN:?}
SRC=${TPSIM_SOURCE_DIR:?}

fail() {
    echo "FAIL: $*"
    exit 1
}

dir=$(mktemp -d "${TMPDIR:-/tmp}/tpsim-full-XXXXXX") || fail "no temporary folder"
mnt="$dir/full"
mounted=0
cleanup() {
    [ "$mounted" = 1 ] && umount "$mnt"
    rm -rf "$dir"
}
trap cleanup EXIT
mkdir -p "$mnt" "$dir/room"
if [ "$(id -u)" != 0 ]; then
    echo "SKIP: mounting a tmpfs needs root"
    exit 77
fi

# full NAME SIZE ARGS...: `tpsim ARGS... -o FULL/NAME.csv` on a tmpfs of
# SIZE, then resumed in a folder with room, against an uninterrupted run.
full() {
    local name=$1 size=$2
    shift 2
    if ! mount -t tmpfs -o "size=$size" tmpfs "$mnt" 2>/dev/null; then
        echo "SKIP: mount -t tmpfs is not permitted here"
        exit 77
    fi
    mounted=1
    "$TPSIM" "$@" --output "$mnt/$name.csv" >"$dir/$name.out" 2>"$dir/$name.err"
    local rc=$?
    [ "$rc" = 1 ] || fail "$name: exit $rc on a full disk, not 1"
    grep -q "No space left on device" "$dir/$name.err" ||
        fail "$name: the message does not name the full disk: $(cat "$dir/$name.err")"
    [ -e "$mnt/$name.csv" ] && fail "$name: a final file was written on the full disk"
    [ -e "$mnt/$name.csv.partial" ] || fail "$name: no partial file to resume"
    cp "$mnt/$name.csv.partial" "$dir/room/"
    umount "$mnt"
    mounted=0
    "$TPSIM" "$@" --output "$dir/room/$name.csv" --resume >/dev/null 2>"$dir/$name.err2" ||
        fail "$name: the resume failed: $(cat "$dir/$name.err2")"
    "$TPSIM" "$@" --output "$dir/room/$name-ref.csv" >/dev/null 2>&1 ||
        fail "$name: the uninterrupted run failed"
    cmp -s "$dir/room/$name.csv" "$dir/room/$name-ref.csv" ||
        fail "$name: the resumed file is not the bytes of the uninterrupted run"
    echo "ok: $name ($size): stopped on the full disk, resumed to the same bytes"
}

cd "$SRC" || fail "no source folder"
# The sweep's head does not fit in 4 KiB beside the rest: it stops before
# any point is whole.
full sweep 4k sweep sweeps/tp-fixed-gpus.yaml --jobs 2
# The search's 2.4 MB of rows stop a quarter of a megabyte in.
full search 256k search scenarios/gpt3-xl-search.yaml --gpus 64 --jobs 2
echo "2 passed, 0 failed"
