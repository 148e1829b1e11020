/* Writing results: the aligned table, CSV and the JSON of design.md ("JSON
 * result"). Files are written by core/output.h.
 */
#pragma once

#include <glib.h>

#include "sched/scenario.h"
#include "sched/simulate.h"

typedef enum {
    TPS_FORMAT_TABLE,
    TPS_FORMAT_CSV,
    TPS_FORMAT_JSON,
} TpsFormat;

/* "table", "csv", "json"; NULL-terminated. */
extern const char *const tps_format_names[];

/* The results of a run in `format`, newly allocated. With `breakdown`, a
 * table per strategy (or a "gemms" array in JSON) gives each GEMM of the
 * measured layer: collective, method, GEMM, communication and exposed
 * time, overlap efficiency. */
char *tps_result_format(const TpsScenario *scenario, const TpsResult *results, guint n,
                        TpsFormat format, gboolean breakdown);
