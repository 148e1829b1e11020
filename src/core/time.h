/* Simulated time.
 *
 * Simulated time is an integer count of nanoseconds so that runs are
 * bit-identical; floating point appears only inside cost formulas and is
 * rounded once, here. Bandwidths are kept in bytes per nanosecond, which is
 * numerically the same as GB/s (1e9 bytes per second).
 */
#pragma once

#include <glib.h>
#include <math.h>

typedef gint64 TpsTime; /* nanoseconds */

#define TPS_TIME_NEVER G_MAXINT64

/* Round a duration in (fractional) nanoseconds up to whole nanoseconds.
 * Negative or NaN durations are clamped to 0. */
static inline TpsTime
tps_time_from_ns(double ns)
{
    if (!(ns > 0.0))
        return 0;
    if (ns >= 9.0e18)
        return TPS_TIME_NEVER;
    return (TpsTime)ceil(ns);
}

static inline TpsTime
tps_time_from_us(double us)
{
    return tps_time_from_ns(us * 1e3);
}

static inline double
tps_time_to_ms(TpsTime t)
{
    return (double)t * 1e-6;
}

static inline double
tps_time_to_us(TpsTime t)
{
    return (double)t * 1e-3;
}
