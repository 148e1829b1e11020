/* Measurements files (docs/calibration.md, "Measurements file"), as
 * tpsim-gpubench writes them: strict reading into a TpsMeasurements, and
 * measurements taken from a real trace.
 *
 * Every problem is TPS_ERROR_INPUT "file:line:column: message": unknown keys
 * (with the closest known one suggested), missing keys, wrong types,
 * out-of-range values. The writer is calib's tps_measurements_format (the
 * backend needs no libyaml).
 */
#pragma once

#include <glib.h>

#include "calib/gemm-kernels.h"
#include "calib/measurements.h"
#include "io/trace/trace-import.h"

/* Read `path` and append its points to `m` (so that several files add up).
 * On failure `m` may hold part of the file's points. */
gboolean tps_measurements_file_load(const char *path, TpsMeasurements *m, GError **error);

/* Same, from text; `name` is used in messages. */
gboolean tps_measurements_file_load_string(const char *name, const char *text, gssize len,
                                           TpsMeasurements *m, GError **error);

/* The recorded GEMM kernels of `path`'s gemm_algos (`--kernels FILE` of
 * tpsim validate and calibrate), checked against `hw`'s tiles; an error
 * when the file has none. */
TpsGemmKernels *tps_gemm_kernels_load(const char *path, const TpsHardware *hw, GError **error);

/* What tps_measurements_from_trace() took from a trace and what it left. */
typedef struct {
    guint gemm_points, coll_points;
    /* GEMM op invocations with a known shape (batch 1, not beside NCCL), by
     * the input type of their kernels' names; only bf16 and fp16, the types
     * of the model's tensor peak, become points. */
    guint gemm_ops[TPS_TRACE_DTYPE_COUNT];
} TpsTraceUse;

/* Appends the points a trace gives to `m`:
 *  - GEMM: the kernels of each op invocation whose shape is known (batch 1),
 *    their durations summed (a GEMM and its split-K reduce), skipping those
 *    that overlap an NCCL kernel on the same device (slowed by contention);
 *    one point per shape and input type, the median TFLOP/s. The type is
 *    the kernel name's (tps_trace_gemm_dtype): bf16 and fp16 become points
 *    of that dtype; tf32, fp32 (another peak) and names that do not say are
 *    counted in `use` and left out, never fitted as bf16;
 *  - collectives: NCCL AllGather / ReduceScatter / AllReduce / SendRecv
 *    kernels with a message size and group size; one point per (kind,
 *    bytes, ranks), the median kernel duration (launch not included).
 * Returns the number of points added; `use` (may be NULL) receives the
 * counts. */
guint tps_measurements_from_trace(const TpsTrace *trace, TpsMeasurements *m, TpsTraceUse *use);
