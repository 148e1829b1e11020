/* Writing results: the aligned table, CSV and the JSON of design.md ("JSON
 * result"). Files are written by core/output.h.
 */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

#include "sched/scenario.h"
#include "sched/simulate.h"

typedef enum {
    TPS_FORMAT_TABLE,
    TPS_FORMAT_CSV,
    TPS_FORMAT_JSON,
} TpsFormat;

/* "table", "csv", "json"; NULL-terminated. */
extern const char *const tps_format_names[];

/* The results of a run in `format`, newly allocated: `results` ranked
 * (tps_results_rank()), each marked tied or not with the fastest (the
 * `tied` column, tps_results_mark_ties()). With `breakdown`, a
 * table per strategy (or a "gemms" array in JSON) gives each GEMM of the
 * measured layer: collective, method, GEMM, communication and exposed
 * time, overlap efficiency. */
char *tps_result_format(const TpsScenario *scenario, const TpsResult *results, guint n,
                        TpsFormat format, gboolean breakdown);

/* Rows one at a time, for writers that stream them (plan/batch.c): the
 * CSV header of the results of `scenario` and one result as a CSV line,
 * appended to `s` without a newline, and its members in a JSON object
 * being built (as in the JSON result). A row with a `skipped` reason (not
 * NULL: its point or strategy could not be simulated) has only the
 * scenario's values (name, hardware, layout), the strategy when
 * `result->strategy` is set and the reason (the `skipped` column, the
 * JSON member `skipped`); the other CSV cells are empty and the other
 * JSON members left out. A batch's rows are not one ranked set: these
 * leave out the columns only such a set has (`tied`). */
void tps_result_csv_header(const TpsScenario *scenario, GString *s);
void tps_result_csv_row(const TpsScenario *scenario, const TpsResult *result, const char *skipped,
                        GString *s);
void tps_result_json_members(JsonBuilder *jb, const TpsScenario *scenario,
                             const TpsResult *result, const char *skipped);
