/* Small statistics shared by the readers of measurements and traces, the
 * calibration and the benchmarks. */
#pragma once

#include <glib.h>

/* The median of `n` values, sorting them in place (the mean of the two
 * middle ones when n is even); NAN when n is 0. */
double tps_median(double *values, guint n);
