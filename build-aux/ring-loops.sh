#!/bin/sh
# The loops of NCCL's ring all-reduce in vTrain's one-node A100 curves
# (nccl-tests, 1 MiB to 1 GiB in 1 MiB steps, on 2, 4 and 8 GPUs).
#
# NCCL's Simple ring all-reduce walks the buffer in loops of
#   loop = nChannels x nranks x chunkSize
# (NVIDIA/nccl src/device/all_reduce.h runRing, 2.18 and later: the
# chunk is ALLREDUCE_CHUNKSTEPS 4 FIFO steps of NCCL_BUFFSIZE 4 MiB /
# NCCL_STEPS 8 = 2 MiB; below a whole loop it is the buffer / (nChannels x
# nranks)): with the 24 channels of a DGX A100 (models/a100-sxm4-80gb.yaml
# nccl.channels), 96, 192 and 384 MiB on 2, 4 and 8 GPUs. Per GPU count
# the script prints
#   jump      the median, over the loop boundaries below 1 GiB, of the time
#             one more MiB adds across a boundary (a loop of a few KiB per
#             channel) less the mean of the three 1 MiB steps on each side:
#             the cost of a loop that carries no data;
#   startup   t(1 loop) - (t(2 loops) - t(1 loop)), less vTrain's one
#             launch (3 us, models/a100-sxm4-80gb.yaml launch_us): what the
#             first loop costs beyond a later one;
#   busbw     of the second loop (its bytes over t(2 loops) - t(1 loop))
#             and of the last whole loop below 1 GiB, and vTrain's 1 GiB
#             point, the one nccl.channel_mem_gbps was taken from.
# docs/cost-model.md ("Open, and why") quotes it.
#
#   sh build-aux/ring-loops.sh [SHARED_DIR]
set -eu
shared=${1:-${TPSIM_SHARED_DIR:-$(dirname "$0")/../../shared}}
cal=$shared/calibration/measured

prog='
function busbw(g, mib, us) { return mib * 1048576 * 2 * (g - 1) / g / (us * 1e3) }
FNR == 1 {
    g = FILENAME; sub(/.*all-reduce-/, "", g); sub(/gpu\.csv$/, "", g)
    gs[++ng] = g
    next
}
{ t[g, $1 / 1048576] = $4 / 1e3 }
END {
    printf "%-5s %8s %6s %9s %11s %12s %12s %12s\n", "gpus", "loop MiB", "jumps", "jump us",
           "startup us", "loop 2 GB/s", "last GB/s", "1 GiB GB/s"
    for (i = 1; i <= ng; i++) {
        g = gs[i]; loop = channels * g * chunk_mib
        for (b = loop; b + 4 <= 1024; b += loop) {
            around = (t[g, b] - t[g, b - 3] + t[g, b + 4] - t[g, b + 1]) / 6
            cnt[g]++; val[g, cnt[g]] = t[g, b + 1] - t[g, b] - around
            last = b
        }
        second = t[g, 2 * loop] - t[g, loop]
        startup = t[g, loop] - second - launch_us
        printf "%-5d %8d %6d %9.1f %11.1f %12.1f %12.1f %12.1f\n", g, loop, cnt[g], median(g),
               startup, busbw(g, loop, second), busbw(g, loop, t[g, last] - t[g, last - loop]),
               busbw(g, 1024, t[g, 1024])
    }
}'
printf '%s\n' "$prog" | awk -F, -v channels=24 -v chunk_mib=2 -v launch_us=3.0 \
    -f "$(dirname "$0")/median.awk" -f /dev/stdin \
    "$cal/vtrain-a100-all-reduce-2gpu.csv" "$cal/vtrain-a100-all-reduce-4gpu.csv" \
    "$cal/vtrain-a100-all-reduce-8gpu.csv"
