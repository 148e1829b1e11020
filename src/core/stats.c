#include "core/stats.h"

#include <math.h>
#include <stdlib.h>

static int
cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

double
tps_median(double *values, guint n)
{
    if (n == 0)
        return NAN;
    qsort(values, n, sizeof(double), cmp_double);
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}
