/* The GEMM kernels a measurement recorded (tpsim-gpubench's `algos`
 * section, TpsGemmAlgoPoint), looked up by shape: what `tpsim validate
 * --kernels` runs the model on instead of its own tile and split choice.
 *
 * A recorded tile must be one of the model's gemm.tiles (the model has no
 * efficiency for another), and one shape has one kernel: either is refused
 * when the table is built, naming the point.
 */
#pragma once

#include <glib.h>

#include "calib/measurements.h"
#include "cost/kernel-cost.h"

typedef struct TpsGemmKernels TpsGemmKernels;

/* The table of `algos` (TpsGemmAlgoPoint) checked against `hw`'s tiles;
 * `file` names them in errors (TPS_ERROR_INPUT). NULL on error. Points
 * whose tile the library did not say (tile_m 0) are kept as unknown. */
TpsGemmKernels *tps_gemm_kernels_new(const GArray *algos, const TpsHardware *hw, const char *file,
                                     GError **error);
void tps_gemm_kernels_free(TpsGemmKernels *kernels);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TpsGemmKernels, tps_gemm_kernels_free)

/* Sets run's tile and split to the kernel recorded for m x n x k in
 * `dtype` and returns TRUE; FALSE (run untouched) when none is recorded or
 * its tile is unknown. */
gboolean tps_gemm_kernels_apply(const TpsGemmKernels *kernels, TpsDtype dtype, guint64 m, guint64 n,
                                guint64 k, TpsGemmRun *run);

/* Each point of `gemm_points` (TpsGemmPoint) on the whole GPU (`sms` 0 or
 * at least `device_sms`: the heuristic was asked for every SM) whose shape
 * has a recorded kernel runs on it; returns how many. */
guint tps_gemm_kernels_attach(const TpsGemmKernels *kernels, GArray *gemm_points, guint device_sms);
