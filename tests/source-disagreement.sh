#!/bin/sh
# build-aux/source-disagreement.sh: vidur's one-node A100 all-reduces
# against vTrain's on the same GPU counts. Its 2-GPU row is the
# disagreement docs/cost-model.md and docs/validation.md state (vidur's
# kernels 8.3% slower than vTrain's nccl-tests times less one launch,
# median of the 865 vidur points of 1-64 MiB); a change of either file or
# of the script's reading shows here before the pages go stale. Without
# the shared data: a skip (77).
# Usage: sh tests/source-disagreement.sh TPSIM SOURCE_DIR SHARED_DIR
set -u
tpsim=${1:?usage: source-disagreement.sh TPSIM SOURCE_DIR SHARED_DIR}
src=${2:?}
shared=${TPSIM_SHARED_DIR:-${3:?}}
if [ ! -d "$shared/calibration/measured" ]; then
    echo "skip: no shared calibration data in $shared"
    exit 77
fi
out=$(sh "$src/build-aux/source-disagreement.sh" "$tpsim" "$shared") || {
    echo "$out"
    echo "FAIL: build-aux/source-disagreement.sh failed"
    exit 1
}
for want in '^2 *1-64 *865 *[+]8[.]3%' '^4 *1-64 *865 *[+]14[.]0%' '^8 *1-64 *865 *[+]17[.]1%'; do
    if ! printf '%s\n' "$out" | grep -q "$want"; then
        echo "$out"
        echo "FAIL: no line matching '$want' (the figures the docs quote)"
        exit 1
    fi
done
echo "ok: vidur against vTrain as the docs state it"
