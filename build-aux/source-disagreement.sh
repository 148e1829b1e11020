#!/bin/sh
# Where two sources measure the same collective on the same GPUs: vidur's
# one-node all-reduces (Kineto kernel durations, the median of 11 calls) and
# vTrain's (nccl-tests, one launch included) on 2, 4 and 8 A100s of one
# DGX node. For every vidur point from 1 MiB to 64 MiB (vTrain's curves
# start at 1 MiB, in 1 MiB steps: its time is interpolated linearly between
# the two nearest sizes, less the 3 us launch of models/a100-sxm4-80gb.yaml
# `launch_us`), the script prints, per GPU count and size octave, the median
# of
#   vidur / vTrain - 1          (the disagreement of the sources)
#   model / vTrain - 1          (the model's kernel, `tpsim validate --points`)
#   model / vidur - 1
# and, per GPU count, whether the model lies between the two (`between`:
# the share of points where it is within [min, max] of the two sources).
# docs/cost-model.md ("Open, and why") and docs/validation.md quote it.
#
#   sh build-aux/source-disagreement.sh TPSIM [SHARED_DIR]
set -eu
tpsim=$1
shared=${2:-${TPSIM_SHARED_DIR:-$(dirname "$0")/../../shared}}
cal=$shared/calibration/measured
points=$(mktemp)
trap 'rm -f "$points"' EXIT
"$tpsim" validate --data "$shared" --points "$points" >/dev/null 2>&1

prog='
function add(key, v) { cnt[key]++; val[key, cnt[key]] = v }
FILENAME ~ /vtrain-a100-all-reduce-/ {
    if (FNR == 1) next
    g = FILENAME; sub(/.*all-reduce-/, "", g); sub(/gpu\.csv$/, "", g)
    vt[g, $1 + 0] = $4 / 1e3 - launch_us
    next
}
FILENAME ~ /vidur-a100-dgx-all-reduce/ {
    if (FNR == 1) next
    # rank, num_workers, size, collective, devices_per_node: columns 7-11
    if ($8 != $11) next
    vd[$8, $9 + 0] = $5 * 1e3
    next
}
{
    # the points file: dataset, x, measured, predicted, error
    if ($1 ~ /^vidur-all-reduce\/1x/) { g = $1; sub(/.*1x/, "", g); md[g, $2 + 0] = $4 }
}
END {
    mib = 1048576
    for (k in vd) {
        split(k, f, SUBSEP); g = f[1]; b = f[2]
        if (b < mib || b > 64 * mib || !((g, b) in md)) continue
        lo = int(b / mib) * mib; hi = lo + mib
        if (!((g, lo) in vt)) continue
        t = vt[g, lo]
        if (hi > lo && (g, hi) in vt) t += (vt[g, hi] - vt[g, lo]) * (b - lo) / mib
        o = int(log(b / mib) / log(2) + 1e-9)
        v = vd[k]; m = md[g, b]
        add(g "/all/sv", 100 * (v / t - 1)); add(g "/" o "/sv", 100 * (v / t - 1))
        add(g "/all/mt", 100 * (m / t - 1)); add(g "/" o "/mt", 100 * (m / t - 1))
        add(g "/all/mv", 100 * (m / v - 1)); add(g "/" o "/mv", 100 * (m / v - 1))
        lo4 = o >= 2 ? "/4m" : "/1m"
        add(g lo4 "/in", (m >= (v < t ? v : t) && m <= (v > t ? v : t)) ? 1 : 0)
        seen[g] = 1
    }
    printf "%-5s %-9s %6s %14s %14s %14s\n", "gpus", "MiB", "points", "vidur/vTrain", "model/vTrain", "model/vidur"
    for (g = 2; g <= 8; g *= 2) {
        if (!(g in seen)) continue
        for (o = 0; o <= 6; o++) {
            if (!cnt[g "/" o "/sv"]) continue
            printf "%-5d %-9s %6d %+13.1f%% %+13.1f%% %+13.1f%%\n", g, (2 ^ o) "-" (2 ^ (o + 1)),
                   cnt[g "/" o "/sv"], median(g "/" o "/sv"), median(g "/" o "/mt"), median(g "/" o "/mv")
        }
        printf "%-5d %-9s %6d %+13.1f%% %+13.1f%% %+13.1f%%\n", g, "1-64", cnt[g "/all/sv"],
               median(g "/all/sv"), median(g "/all/mt"), median(g "/all/mv")
        n = cnt[g "/4m/in"]; s = 0
        for (i = 1; i <= n; i++) s += val[g "/4m/in", i]
        if (n) printf "%-5d between the sources from 4 MiB: %d of %d points\n", g, s, n
    }
}'
printf '%s\n' "$prog" | awk -F, -v launch_us=3.0 \
    -f "$(dirname "$0")/median.awk" -f /dev/stdin \
    "$cal/vtrain-a100-all-reduce-2gpu.csv" "$cal/vtrain-a100-all-reduce-4gpu.csv" \
    "$cal/vtrain-a100-all-reduce-8gpu.csv" "$cal/vidur-a100-dgx-all-reduce.csv" "$points"
