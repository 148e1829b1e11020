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

#include "calib/measurements.h"
#include "io/trace-import.h"

/* Read `path` and append its points to `m` (so that several files add up).
 * On failure `m` may hold part of the file's points. */
gboolean tps_measurements_file_load(const char *path, TpsMeasurements *m, GError **error);

/* Same, from text; `name` is used in messages. */
gboolean tps_measurements_file_load_string(const char *name, const char *text, gssize len,
                                           TpsMeasurements *m, GError **error);

/* Appends the points a trace gives to `m`:
 *  - GEMM: the kernels of each op invocation whose shape is known (batch 1),
 *    their durations summed (a GEMM and its split-K reduce), skipping those
 *    that overlap an NCCL kernel on the same device (slowed by contention);
 *    one point per shape, the median TFLOP/s, dtype bf16 (the trace does not
 *    say; bf16 and fp16 share the tensor peak of A100 and H100);
 *  - collectives: NCCL AllGather / ReduceScatter / AllReduce / SendRecv
 *    kernels with a message size and group size; one point per (kind,
 *    bytes, ranks), the median kernel duration (launch not included).
 * Returns the number of points added. */
guint tps_measurements_from_trace(const TpsTrace *trace, TpsMeasurements *m);
