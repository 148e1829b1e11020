#!/bin/sh
# A Check test that cannot run here says so as a skip (issue 23, 10): run
# without the shared data (TPSIM_SHARED_DIR naming no folder), the unit
# test program PROGRAM must exit 0 and mark its tests that read them
# "ok N - ... # SKIP no shared traces", which meson counts as skipped,
# rather than pass them silently.
# Usage: sh tests/skips.sh PROGRAM
set -u
program=${1:?usage: skips.sh PROGRAM}
out=$(TPSIM_SHARED_DIR=/nonexistent/shared CK_TAP_LOG_FILE_NAME=- CK_VERBOSITY=silent \
    "$program" 2>&1)
status=$?
if [ "$status" != 0 ]; then
    echo "$out"
    echo "FAIL: $program exited $status without the shared data"
    exit 1
fi
if ! printf '%s\n' "$out" | grep -q '^ok [0-9]* - .* # SKIP no shared traces'; then
    echo "$out"
    echo "FAIL: $program reports no skip without the shared data"
    exit 1
fi
echo "ok: $program skips what needs the shared data"
