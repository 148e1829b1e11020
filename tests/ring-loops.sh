#!/bin/sh
# build-aux/ring-loops.sh: the loops of NCCL's ring all-reduce in vTrain's
# one-node A100 curves. Its figures are those docs/cost-model.md states
# (the cost of a loop that carries no data, the first loop's startup, the
# second and the last loop's bus bandwidth against the 1 GiB point); a
# change of the files or of the script's reading shows here before the
# page goes stale. Without the shared data: a skip (77).
# Usage: sh tests/ring-loops.sh SOURCE_DIR SHARED_DIR
set -u
src=${1:?usage: ring-loops.sh SOURCE_DIR SHARED_DIR}
shared=${TPSIM_SHARED_DIR:-${2:?}}
if [ ! -d "$shared/calibration/measured" ]; then
    echo "skip: no shared calibration data in $shared"
    exit 77
fi
out=$(sh "$src/build-aux/ring-loops.sh" "$shared") || {
    echo "$out"
    echo "FAIL: build-aux/ring-loops.sh failed"
    exit 1
}
for want in '^2  *96  *10  *24[.]0  *36[.]3  *189[.]0  *207[.]7  *197[.]3$' \
    '^4  *192  *5  *53[.]9  *60[.]9  *219[.]1  *229[.]3  *221[.]9$' \
    '^8  *384  *2  *109[.]2  *104[.]2  *231[.]8  *231[.]8  *229[.]3$'; do
    if ! printf '%s\n' "$out" | grep -q "$want"; then
        echo "$out"
        echo "FAIL: no line matching '$want' (the figures the docs quote)"
        exit 1
    fi
done
echo "ok: the ring's loops as the docs state them"
