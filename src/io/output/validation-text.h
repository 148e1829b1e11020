/* The figures of `tpsim validate` as text: an aligned table, and the JSON
 * that CI compares with docs/validation.json (docs/validation.md):
 *
 *   {"datasets": [
 *     {"name": "vidur-gemm/llama-3-8b", "points": 6240, "median_abs_pct": 2.9,
 *      "p90_abs_pct": 8.1, "max_abs_pct": 31.5, "bias_pct": -0.4},
 *     ...
 *   ]}
 *
 *   ], "uncertainty": [
 *     {"class": "gemm", "points": 15600, "p10_pct": -6.1, "p90_pct": 8.0,
 *      "model": "a100-sxm4-80gb", "model_p10_pct": -6.1, "model_p90_pct": 8.0},
 *     ...
 *   ]}
 *
 * one dataset per line, in the order of `sets` (build-aux/check-validation.sh
 * reads it line by line), then, when `hw` is given, the error-band classes
 * (tps_validate_bands()) beside the values of the model's uncertainty
 * section, which the check compares. Percentages with two decimals; a set
 * without points has null figures.
 */
#pragma once

#include <glib.h>

#include "calib/validate.h"

/* `sets` holds TpsValidateSet *; `hw` (may be NULL: no band classes) the
 * model validated; newly allocated text. */
char *tps_validation_to_table(const GPtrArray *sets, const TpsHardware *hw);
char *tps_validation_to_json(const GPtrArray *sets, const TpsHardware *hw);

/* Every point of `sets` as CSV, one line each, the sets in order and a
 * set's points in its order (summary sets, the unions of others, left
 * out): `dataset,x,measured_us,predicted_us,error_pct`, error_pct as
 * tps_validate_error_pct(); values with 17 significant digits (they read
 * back to the same doubles). The residuals behind the statistics, for a
 * reader's own analysis (`tpsim validate --points`). */
char *tps_validation_points_csv(const GPtrArray *sets);
