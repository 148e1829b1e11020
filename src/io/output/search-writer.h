/* The table of a layout search (`tpsim search`, docs/search.md): the best
 * layouts ranked, with the paragraph on why the best wins. Every row of a
 * search is written to files by the batch runner (plan/batch.h) with the
 * result columns of `run` and the layout; the rank is the table's.
 */
#pragma once

#include <glib.h>

#include "sched/search.h"

/* One column of the table. */
typedef struct {
    const char *name; /* as the result columns spell it (docs/search.md) */
    const char *head; /* the table's header; NULL: not in the table */
    const char *unit; /* its unit line */
} TpsSearchColumn;

extern const TpsSearchColumn tps_search_columns[];
extern const guint tps_search_n_columns;

/* The first `top` of `rows` (ranked: tps_search_rank()) of a search of
 * `scenario` on `gpus` GPUs as an aligned table, newly allocated: a title,
 * `note` (may be NULL) under it, the rows (fits only when a row does
 * not), then `why` (may be NULL), both wrapped at 78 columns. */
char *tps_search_table(const TpsScenario *scenario, guint gpus, const TpsSearchRow *rows, guint n,
                       guint top, const char *why, const char *note);

/* The same table from the rows a search kept (tps_search_top_add()): its
 * first `top` rows, the counts of every row. */
char *tps_search_table_top(const TpsScenario *scenario, guint gpus, const TpsSearchTop *best,
                           guint top, const char *why, const char *note);
