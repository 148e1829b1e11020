/* The figure of a tune (see tune-figure.h). */
#include "render/tune-figure.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "render/draw.h"
#include "sched/method.h"

#define ROW_H 34.0
#define BAR_H 9.0
#define LEFT 110.0
#define RIGHT 40.0
#define TOP 86.0
#define BOTTOM 64.0

static const TpsMethod methods[] = {TPS_METHOD_RING_EXCHANGE, TPS_METHOD_PIPELINE, TPS_METHOD_BULK};
static const guint32 colours[] = {0x4c72b0, 0xdd8452, 0x55a868};

struct TpsTuneFigure {
    char *title, *subtitle;
    double width, height;
    /* ms per layer saved on the GEMM against NCCL, and the step gain (%) */
    double saved[TPS_GEMM_OP][G_N_ELEMENTS(methods)], step[TPS_GEMM_OP][G_N_ELEMENTS(methods)];
    gboolean chosen[TPS_GEMM_OP][G_N_ELEMENTS(methods)];
    char chosen_text[TPS_GEMM_OP][64];
    double lo, hi; /* the axis, ms */
};

static void
config_text(const TpsOverlapConfig *c, char *out, gsize n)
{
    if (c->method == TPS_METHOD_PIPELINE)
        g_snprintf(out, n, "pipeline %u splits, %u SMs%s", c->num_splits, c->num_sm,
                   c->set_sm_margin ? ", margin" : "");
    else if (c->method == TPS_METHOD_BULK)
        g_snprintf(out, n, "bulk %u SMs%s", c->num_sm, c->set_sm_margin ? ", margin" : "");
    else if (c->method == TPS_METHOD_RING_EXCHANGE)
        g_snprintf(out, n, "ring exchange%s%s", c->aggregate ? ", aggregate" : "",
                   c->use_ce ? "" : ", SM sends");
    else
        g_snprintf(out, n, "no overlap (group off)");
}

TpsTuneFigure *
tps_tune_figure_new(const TpsScenario *sc, const TpsTuneReport *r, const char *title, double width)
{
    TpsTuneFigure *f = g_new0(TpsTuneFigure, 1);
    const TpsTuneEntry *best = tps_tune_best(r);
    f->lo = 0.0, f->hi = 0.0;
    for (guint s = 0; s < TPS_GEMM_OP; s++) {
        config_text(&best->cfg[s], f->chosen_text[s], sizeof f->chosen_text[s]);
        for (guint m = 0; m < G_N_ELEMENTS(methods); m++) {
            const TpsTuneSlotGain *g = &r->slot_gain[s][methods[m]];
            f->saved[s][m] = r->none.gemms[s].time_ms - g->slot_ms;
            f->step[s][m] = 100 * g->gain;
            f->chosen[s][m] = best->cfg[s].method == methods[m];
            if (!isnan(f->saved[s][m])) {
                f->lo = MIN(f->lo, f->saved[s][m]);
                f->hi = MAX(f->hi, f->saved[s][m]);
            }
        }
    }
    f->hi += (f->hi - f->lo) * 0.18; /* room for the labels */
    f->width = width > 0 ? width : 900;
    f->height = TOP + TPS_GEMM_OP * ROW_H + BOTTOM;
    f->title = g_strdup(title != NULL ? title : "What each GEMM's overlap saves, per method");
    f->subtitle = g_strdup_printf(
        "%s on %s, tp %u. Chosen: step %+.2f%% [%+.2f%%, %+.2f%%] over no userbuffers. Each "
        "bar: that method on that GEMM, the rest as chosen",
        sc->name, sc->hardware.name, sc->tp, 100 * best->gain, 100 * best->gain_low,
        100 * best->gain_high);
    return f;
}

void
tps_tune_figure_free(TpsTuneFigure *f)
{
    if (f == NULL)
        return;
    g_free(f->title);
    g_free(f->subtitle);
    g_free(f);
}

static double
x_of(const TpsTuneFigure *f, double v)
{
    const double x0 = LEFT + 150, x1 = f->width - RIGHT;
    return x0 + (v - f->lo) / MAX(f->hi - f->lo, 1e-9) * (x1 - x0);
}

static void
draw_axis(cairo_t *cr, const TpsTuneFigure *f)
{
    const double y0 = TOP - 6, y1 = TOP + TPS_GEMM_OP * ROW_H;
    const double span = f->hi - f->lo;
    const double step = span > 4 ? 1 : span > 2 ? 0.5 : span > 0.8 ? 0.2 : span > 0.4 ? 0.1 : 0.05;
    for (double v = ceil(f->lo / step) * step; v <= f->hi + 1e-9; v += step) {
        const double grey = fabs(v) < 1e-9 ? 0.2 : 0.88;
        cairo_set_source_rgb(cr, grey, grey, grey);
        cairo_set_line_width(cr, 1);
        cairo_move_to(cr, x_of(f, v), y0);
        cairo_line_to(cr, x_of(f, v), y1);
        cairo_stroke(cr);
        char label[32];
        g_snprintf(label, sizeof label, "%g", fabs(v) < 1e-9 ? 0.0 : v);
        tps_draw_text(cr, label, x_of(f, v), y1 + 6, 10, FALSE, 0x333333, 0, 1);
    }
    tps_draw_text(cr, "time saved on the GEMM and its communication against NCCL (ms per layer)",
                  (x_of(f, f->lo) + x_of(f, f->hi)) / 2, y1 + 24, 11, FALSE, 0x222222, 0, 1);
}

static void
draw_bar(cairo_t *cr, const TpsTuneFigure *f, guint s, guint m, double y)
{
    const double v = f->saved[s][m];
    if (isnan(v))
        return;
    const guint32 c = colours[m];
    cairo_set_source_rgb(cr, ((c >> 16) & 255) / 255.0, ((c >> 8) & 255) / 255.0,
                         (c & 255) / 255.0);
    const double xa = x_of(f, 0), xb = x_of(f, v);
    cairo_rectangle(cr, MIN(xa, xb), y, fabs(xb - xa), BAR_H);
    cairo_fill(cr);
    if (f->chosen[s][m]) {
        cairo_set_source_rgb(cr, 0, 0, 0);
        cairo_set_line_width(cr, 1.5);
        cairo_rectangle(cr, MIN(xa, xb), y, fabs(xb - xa), BAR_H);
        cairo_stroke(cr);
    }
    char label[48];
    g_snprintf(label, sizeof label, "%.3f ms, step %+.2f%%", v, f->step[s][m]);
    tps_draw_text(cr, label, MAX(xa, xb) + 4, y - 2, 9, FALSE, 0x333333, 0, 0);
}

static void
draw_legend(cairo_t *cr, const TpsTuneFigure *f)
{
    double x = LEFT + 150;
    for (guint m = 0; m < G_N_ELEMENTS(methods); m++) {
        const guint32 c = colours[m];
        cairo_set_source_rgb(cr, ((c >> 16) & 255) / 255.0, ((c >> 8) & 255) / 255.0,
                             (c & 255) / 255.0);
        cairo_rectangle(cr, x, TOP - 26, 12, 9);
        cairo_fill(cr);
        x += 16 +
             tps_draw_text(cr, tps_method_info(methods[m])->name, x + 16, TOP - 29, 10, FALSE,
                           0x222222, 0, 0) +
             18;
    }
    tps_draw_text(cr, "outlined: chosen; labels: ms saved, the step's gain with it", x, TOP - 29,
                  10, FALSE, 0x555555, 0, 0);
}

void
tps_tune_figure_draw(cairo_t *cr, gconstpointer data)
{
    const TpsTuneFigure *f = data;
    tps_draw_heading(cr, f->width, 20, f->title, f->subtitle);
    draw_legend(cr, f);
    draw_axis(cr, f);
    for (guint s = 0; s < TPS_GEMM_OP; s++) {
        const double y = TOP + s * ROW_H;
        tps_draw_text(cr, tps_gemm_slot_names[s], 20, y + 2, 11, TRUE, 0x222222, 0, 0);
        tps_draw_text(cr, f->chosen_text[s], 20, y + 16, 9, FALSE, 0x555555, LEFT + 120, 0);
        guint k = 0;
        for (guint m = 0; m < G_N_ELEMENTS(methods); m++)
            if (!isnan(f->saved[s][m]))
                draw_bar(cr, f, s, m, y + 3 + (k++) * (BAR_H + 1));
        if (k == 0)
            tps_draw_text(cr, "not evaluated with the others as chosen", x_of(f, 0) + 6, y + 6, 9,
                          FALSE, 0x777777, 0, 0);
    }
}

gboolean
tps_tune_figure_write(const TpsTuneFigure *f, const char *path, GError **error)
{
    return tps_render_file(path, f->width, f->height, tps_tune_figure_draw, f, error);
}
