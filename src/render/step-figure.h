/* The step-level figure: one training iteration's pipeline schedule
 * (tps_pipeline_schedule()) laid out as a timeline (render/timeline.h,
 * drawn by tps_timeline_draw()).
 *
 * Per pipeline stage, top to bottom: its compute lane (forward and
 * backward chunks numbered by micro-batch, with the virtual chunk when
 * the schedule is interleaved; the optimizer step at the end; hatched
 * grey where the stage idles before its last chunk: the bubble), its DP
 * lane (the gradient reductions: orange while the stage still computes,
 * vermillion after its last chunk, the exposed part) and a thin lane per
 * stage it sends to (the P2P transfers of activations and gradients).
 *
 * When the step was extrapolated from a shorter schedule, the shorter
 * schedule is what is drawn, with one cycle of the steady state marked and
 * the number of cycles the step holds more written at the mark.
 */
#pragma once

#include <glib.h>

#include "render/timeline.h"
#include "sched/pipeline.h"
#include "sched/run-analysis.h"
#include "sched/simulate.h"

/* Lay out `schedule` under `title` and `subtitle` (may be NULL), `width`
 * points wide (<= 0: 1200). `heading` names the panel (the strategy and
 * the step's figures). Only the window [window_start_us, window_end_us)
 * of the step is drawn, its boxes cut to it (end <= start: the whole
 * step). */
TpsTimeline *tps_step_timeline_new(const TpsStepSchedule *schedule, const char *title,
                                   const char *subtitle, const char *heading, double width,
                                   double window_start_us, double window_end_us);

/* The figure of `strategy`'s step in `scenario` (`result` its result, for
 * the figures in the heading: the table's), with its title, subtitle and
 * heading; the window as tps_step_timeline_new()'s. */
TpsTimeline *tps_step_figure_new(const TpsScenario *scenario, const TpsResult *result,
                                 const TpsStepSchedule *schedule, double width,
                                 double window_start_us, double window_end_us);
