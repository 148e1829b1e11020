/* Validation datasets from the real traces of shared/traces: the kernel
 * time per class that the cost models predict for each trace's kernels of
 * known work, against what the trace measured (docs/validation.md). They
 * need the trace reader, so their registry rows live here, above calib,
 * with the row type of calib/validate.h; `tpsim validate` runs both tables.
 *
 * Sets: "traces/gemm" (one point per trace with shaped GEMM kernels: the
 * sum of those kernels' durations against the sum of the model's times for
 * their shapes) and "traces/nccl" (one point per trace with NCCL kernels
 * of known message size and group: the same sum for those kernels).
 */
#pragma once

#include <glib.h>

#include "calib/validate.h"

const TpsValidateDataset *tps_trace_validate_datasets(guint *n_rows);
