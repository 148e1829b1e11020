/* The figure of a layout search (`tpsim search --plot`, docs/search.md):
 * step time against memory per GPU for every simulated layout, coloured by
 * tp, the Pareto front (no other layout both faster and smaller) drawn as
 * a line, the best layout labelled. PNG, SVG or PDF by extension. */
#pragma once

#include <glib.h>

#include "sched/search.h"

typedef struct TpsSearchPlot TpsSearchPlot;

/* The figure of `rows` (any order; rows not simulated are left out), for
 * the search of `scenario` on `gpus` GPUs, best row `best` (may be NULL).
 * Copies what it draws. */
TpsSearchPlot *tps_search_plot_new(const TpsScenario *scenario, guint gpus,
                                   const TpsSearchRow *rows, guint n, const TpsSearchRow *best);
void tps_search_plot_free(TpsSearchPlot *plot);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TpsSearchPlot, tps_search_plot_free)

/* The indices into `rows` of the Pareto front, by memory ascending (for
 * the tests): a simulated row is on it when no other is at most as large
 * and as slow and better in one of the two. */
GArray *tps_search_pareto(const TpsSearchRow *rows, guint n);

gboolean tps_search_plot_write(const TpsSearchPlot *plot, const char *path, GError **error);
