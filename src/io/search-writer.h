/* Writing the rows of a layout search (`tpsim search`, docs/search.md):
 * the aligned table of the best layouts with the paragraph on why the
 * best wins, and every row as CSV or JSON. The columns are one table here
 * (search rows carry a rank and a layout, which results of `run` do not).
 */
#pragma once

#include <glib.h>

#include "io/result-writer.h"
#include "sched/search.h"

/* One column of a search row. */
typedef struct {
    const char *name; /* CSV header and JSON key */
    const char *head; /* the aligned table's header; NULL: not in the table */
    const char *unit; /* its unit line */
} TpsSearchColumn;

extern const TpsSearchColumn tps_search_columns[];
extern const guint tps_search_n_columns;

/* `rows` (ranked: tps_search_rank()) of a search of `scenario` on `gpus`
 * GPUs in `format`, newly allocated. The
 * table shows the first `top` rows, then `why` (may be NULL) and a line
 * on what was pruned (`counts`, may be NULL); CSV and JSON show every row,
 * a rank for each simulated one. */
char *tps_search_format(const TpsScenario *scenario, guint gpus, const TpsSearchRow *rows,
                        guint n, TpsFormat format, guint top, const char *why,
                        const TpsSearchCounts *counts);
