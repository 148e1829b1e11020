/* Writing results: the aligned table, CSV and the JSON of design.md ("JSON
 * result"), and atomic file output (nothing half-written on failure).
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

/* Write `contents` to `path` through a temporary file renamed into place. */
gboolean tps_write_atomic(const char *path, const char *contents, gsize len, GError **error);
