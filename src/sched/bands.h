/* Error bands of a prediction (docs/validation.md, "Error bands").
 *
 * A simulated window of one rank is cut into disjoint parts by the class of
 * work that runs (TpsBandClass): compute beside communication is
 * interference; otherwise a GEMM, attention or memory-bound kernel (in that
 * order when several run) is its class; communication alone (kernels,
 * copies) is collective; a GPU running nothing waits for its host (issue,
 * syncs, a dependency on another rank). Each part's measured time lies,
 * for 80% of the validation points of its class, between its time
 * divided by (1 + p90) and by (1 + p10), the signed residual quantiles of
 * the hardware model's uncertainty section. The window's band is the sum:
 * every part of a class taken at the same quantile, as the error of a
 * class repeats on every layer and micro-batch rather than averaging out.
 */
#pragma once

#include <glib.h>

#include "cost/hardware.h"
#include "engine/run.h"

/* Adds to `parts` (ns per TpsBandClass) the window [lo, hi) of `rank`;
 * `small_gemms`: its GEMMs have fewer than 512 tokens (TPS_BAND_GEMM_SMALL
 * rather than TPS_BAND_GEMM). The parts added sum to hi - lo. */
void tps_band_parts(const TpsRun *run, guint rank, TpsTime lo, TpsTime hi, gboolean small_gemms,
                    TpsTime parts[TPS_BAND_COUNT]);

/* The band of a time made of `parts` on `hw`: the lowest and highest time
 * (ns) the measurements of its classes allow. */
void tps_band_of_parts(const TpsHardware *hw, const TpsTime parts[TPS_BAND_COUNT], double *low_ns,
                       double *high_ns);

/* The band of the difference a - b of two predictions on `hw` whose times
 * are made of `a` and `b` (ns per TpsBandClass): the lowest and highest
 * a - b (ns) the measurements of their classes allow when each class's
 * residual is the same in both (an error of a class repeats wherever that
 * class of work runs, so the work both share cancels). Per class, d = a - b
 * measures d / (1 + r) for r between the class's p10 and p90; the low end
 * takes for each class the r that makes d / (1 + r) least, the high end the
 * one that makes it most. a == b gives [0, 0]. */
void tps_band_of_difference(const TpsHardware *hw, const double a[TPS_BAND_COUNT],
                            const double b[TPS_BAND_COUNT], double *low_ns, double *high_ns);

/* The token count from which a GEMM is in TPS_BAND_GEMM (the acceptance
 * split of the vidur GEMM datasets). */
#define TPS_BAND_GEMM_MIN_TOKENS 512
