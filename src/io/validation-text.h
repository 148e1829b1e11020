/* The figures of `tpsim validate` as text: an aligned table, and the JSON
 * that CI compares with docs/validation.json (docs/validation.md):
 *
 *   {"datasets": [
 *     {"name": "vidur-gemm/llama-3-8b", "points": 6240, "median_abs_pct": 2.9,
 *      "p90_abs_pct": 8.1, "max_abs_pct": 31.5, "bias_pct": -0.4},
 *     ...
 *   ]}
 *
 * one dataset per line, in the order of `sets` (build-aux/check-validation.sh
 * reads it line by line). Percentages with two decimals; a set without
 * points has null figures.
 */
#pragma once

#include <glib.h>

#include "calib/validate.h"

/* `sets` holds TpsValidateSet *; newly allocated text. */
char *tps_validation_to_table(const GPtrArray *sets);
char *tps_validation_to_json(const GPtrArray *sets);
