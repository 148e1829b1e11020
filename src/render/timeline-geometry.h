/* The geometry of the timeline figures, in points, shared by the layer
 * timeline (timeline.c) and the step figure (step-figure.c), so that the
 * two read alike. Label widths are estimated (DejaVu Sans at 8.5 pt
 * averages about 5.3 pt per character): the drawing ellipsizes anything
 * the estimate lets through, so an estimate that errs wide costs a label,
 * never an overlap. Private to render/. */
#pragma once

#include "render/timeline.h"

#define MARGIN 16.0
#define LABEL_COL 118.0
#define TITLE_H 24.0
#define SUBTITLE_H 18.0
#define LEGEND_H 24.0
#define HEADING_H 22.0
#define ROW_H 20.0
#define LINK_ROW_H 9.0
#define LANE_GAP 3.0
#define AXIS_H 46.0
#define CHAR_W 5.3
#define LABEL_PAD 6.0

/* A timeline with its titles, empty arrays and the plot's horizontal
 * extent for `width` (at least 400): what both figures start from.
 * Defined in timeline.c. */
TpsTimeline *tps_timeline_alloc(const char *title, const char *subtitle, double width);
