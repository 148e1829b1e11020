#!/bin/sh
# `make fuzz` runs every fuzz target that tests/fuzz/meson.build defines
# (issue 24, 12: it ran 8 of the 12): the targets of its loop, as
# `make -n` prints it, must be the keys of fuzz_targets there.
# Usage: sh tests/fuzz-targets.sh SOURCE_DIR
set -eu
src=${1:?usage: fuzz-targets.sh SOURCE_DIR}
defined=$(sed -n "s/^  '\(fuzz-[a-z0-9-]*\)': .*/\1/p" "$src/tests/fuzz/meson.build" | sort)
run=$(make -s -n -C "$src" --no-print-directory fuzz FUZZ_BUILD=/nonexistent/build-fuzz |
    sed -n 's/.*for t in \([^;]*\);.*/\1/p' | tr ' ' '\n' | sed '/^$/d' | sort)
if [ -z "$defined" ] || [ "$defined" != "$run" ]; then
    echo "tests/fuzz/meson.build defines:" $defined
    echo "make fuzz runs:" $run
    echo "FAIL: make fuzz does not run every fuzz target"
    exit 1
fi
echo "ok: make fuzz runs the $(echo "$defined" | wc -l) fuzz targets"
