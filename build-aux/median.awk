# median(key): the median of val[key, 1..cnt[key]] (insertion sort), for
# the analysis scripts of build-aux/ that read the calibration curves
# (ring-loops.sh, source-disagreement.sh: awk -f median.awk -f PROGRAM).
function median(key,   n, i, j, t, a) {
    n = cnt[key]
    for (i = 1; i <= n; i++) a[i] = val[key, i]
    for (i = 2; i <= n; i++) {
        t = a[i]
        for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]
        a[j + 1] = t
    }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
