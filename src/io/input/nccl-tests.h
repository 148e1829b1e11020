/* nccl-tests output (all_gather_perf, reduce_scatter_perf, all_reduce_perf)
 * read as collective measurements for calibration (docs/calibration.md,
 * "nccl-tests logs").
 *
 * A log is what the test prints on standard output: the "# nThread ..."
 * header, one "#  Rank N Group G Pid P on HOST device D [BUS] NAME" line
 * per rank (their count is the number of ranks), the column header and
 * one row per size: size (B), count (elements), type, redop, root, then
 * time (us), algbw, busbw and #wrong out of place and again in place (with
 * -I 1, four per-iteration columns after each #wrong). Several runs may
 * follow one another in one file; each run's rank lines count for its
 * rows.
 *
 * Each row becomes one TpsCollPoint: the collective (from the test's name
 * where the log names it, else from size, count and redop: all-reduce
 * moves count elements, all-gather and reduce-scatter count per rank),
 * bytes = the size column (the gathered or unreduced buffer, as
 * collective.h counts it), the ranks, and the out-of-place time (Megatron's
 * collectives do not alias input and output), launch included (nccl-tests
 * times back-to-back calls). Every problem is TPS_ERROR_INPUT
 * "file:line:column: message".
 */
#pragma once

#include <glib.h>

#include "calib/measurements.h"

/* The largest log read (a full sweep of sizes is a few kilobytes). */
#define TPS_NCCL_TESTS_MAX_BYTES ((gsize)16 << 20)

/* Read the log `path` and append its points to `m`; the GPU name and the
 * number of ranks are set where `m` has none. Returns the number of points
 * added through `added` (may be NULL). */
gboolean tps_nccl_tests_load(const char *path, TpsMeasurements *m, guint *added, GError **error);

/* Same, from text; `name` is used in messages. */
gboolean tps_nccl_tests_load_string(const char *name, const char *text, gssize len,
                                    TpsMeasurements *m, guint *added, GError **error);
