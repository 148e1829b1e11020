/* Figures of simulated runs: the words around a timeline (title, subtitle,
 * one heading per strategy) made from the scenario and the results, so
 * that `tpsim run --timeline` and `tpsim plot` describe runs alike.
 */
#pragma once

#include <glib.h>

#include "render/timeline.h"
#include "sched/scenario.h"
#include "sched/simulate.h"

/* Lay out the timeline of `n` runs of `scenario` (records[i] and
 * results[i] of one strategy each; n > 1 gives a comparison figure).
 * `title` may be NULL for the default ("SCENARIO: STRATEGY" or
 * "SCENARIO: A vs B vs ..."). Errors as tps_timeline_new(). */
TpsTimeline *tps_figure_timeline(const TpsScenario *scenario, TpsRun *const *records,
                                 const TpsResult *results, guint n, const char *title,
                                 const TpsTimelineOptions *options, GError **error);
