/* The figure of a tune (sched/tune.h, docs/tune.md): per GEMM slot and
 * method, the predicted step gain over no userbuffers of the chosen
 * configuration with only that slot changed to the method's best knobs,
 * with the band of that gain; the chosen configuration's gain dashed.
 * Drawn by `tpsim plot` for `kind: tune` (render/plot-file.h). */
#pragma once

#include <cairo.h>
#include <glib.h>

#include "sched/tune.h"

typedef struct TpsTuneFigure TpsTuneFigure;

/* The figure of `report` on `scenario`; `title` NULL for the default,
 * `width` 0 for 900 points. Free with tps_tune_figure_free(). */
TpsTuneFigure *tps_tune_figure_new(const TpsScenario *scenario, const TpsTuneReport *report,
                                   const char *title, double width);
void tps_tune_figure_free(TpsTuneFigure *figure);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TpsTuneFigure, tps_tune_figure_free)

void tps_tune_figure_draw(cairo_t *cr, gconstpointer figure);
gboolean tps_tune_figure_write(const TpsTuneFigure *figure, const char *path, GError **error);
