/* The step-level figure: see step-figure.h. */
#include "render/step-figure.h"

#include <math.h>
#include <string.h>

#include "render/timeline-geometry.h"

/* Geometry in points: the layer timeline's (timeline-geometry.h), and the
 * gap between stages. */
#define STAGE_GAP 8.0

typedef struct {
    TpsTimeline *tl;
    double t0, xscale; /* axis origin (µs) and points per µs */
    TpsTime lo, hi;    /* the window drawn: boxes are cut to it */
    gboolean used[TPS_STYLE_COUNT];
} Layout;

static double
xof(const Layout *L, TpsTime t)
{
    return L->tl->plot_x0 + ((double)t / 1000.0 - L->t0) * L->xscale;
}

static void
add_box(Layout *L, TpsStyle style, guint lane, TpsTaskId task, TpsTime s, TpsTime e, double y,
        double h, const char *label)
{
    const gboolean clipped = s < L->lo || e > L->hi;
    s = MAX(s, L->lo);
    e = MIN(e, L->hi);
    if (e <= s)
        return;
    TpsBox b = {0};
    b.clipped = clipped;
    b.style = style;
    b.lane = lane;
    b.task = task;
    b.x = xof(L, s);
    b.width = (double)(e - s) / 1000.0 * L->xscale;
    b.y = y + 1.5;
    b.height = h - 3.0;
    if (label && b.height >= 12.0 && strlen(label) * CHAR_W + LABEL_PAD <= b.width)
        b.label = g_strdup(label);
    L->used[style] = TRUE;
    g_array_append_val(L->tl->boxes, b);
}

static guint
add_lane(Layout *L, char *label, guint stage, gboolean link, double y, double height)
{
    TpsLane lane = {0};
    lane.label = label;
    lane.rank = stage;
    lane.link = link;
    lane.rows = 1;
    lane.y = y;
    lane.height = height;
    g_array_append_val(L->tl->lanes, lane);
    return L->tl->lanes->len - 1;
}

static gint
time_cmp(gconstpointer a, gconstpointer b)
{
    const TpsInterval *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* Stage s's compute lane at y: its chunks, the optimizer, and the idle
 * gaps. */
static void
add_compute_lane(Layout *L, const TpsStepSchedule *sch, guint s, double y)
{
    const TpsRun *run = sch->run;
    const guint compute = add_lane(L, g_strdup_printf("stage %u", s), s, FALSE, y, ROW_H);
    g_autoptr(GArray) busy = g_array_new(FALSE, FALSE, sizeof(TpsInterval));
    for (guint i = 0; i < sch->ops->len; i++) {
        const TpsStepOp *op = &g_array_index(sch->ops, TpsStepOp, i);
        if (op->stage != s)
            continue;
        g_autofree char *label =
            sch->vpp > 1 ? g_strdup_printf("%" G_GUINT64_FORMAT "v%u", op->mb + 1, op->chunk)
                         : g_strdup_printf("%" G_GUINT64_FORMAT, op->mb + 1);
        /* The last backward's bucket pieces run back to back: one box. */
        TpsTime a = tps_run_span(run, op->first)->start, b = tps_run_span(run, op->last)->end;
        add_box(L, op->backward ? TPS_STYLE_BACKWARD : TPS_STYLE_FORWARD, compute, op->first, a, b,
                y, ROW_H, label);
        TpsInterval iv = {a, b};
        g_array_append_val(busy, iv);
    }
    for (TpsTaskId id = sch->first_optimizer; id < tps_run_n_spans(run); id++) {
        const TpsSpan *sp = tps_run_span(run, id);
        if (sp->rank == s && g_strcmp0(tps_run_stream_name(run, sp->stream), "compute") == 0)
            add_box(L, TPS_STYLE_OPTIMIZER, compute, id, sp->start, sp->end, y, ROW_H, NULL);
    }
    g_array_sort(busy, time_cmp);
    TpsTime at = 0;
    for (guint i = 0; i < busy->len; i++) {
        const TpsInterval *iv = &g_array_index(busy, TpsInterval, i);
        add_box(L, TPS_STYLE_IDLE, compute, TPS_TASK_NONE, at, iv->start, y, ROW_H, NULL);
        at = MAX(at, iv->end);
    }
}

/* Stage s's DP lane at `*y`, when it reduces anything: each reduction
 * split where the stage's chunks end (`stage_end`); `*y` moves below it. */
static void
add_dp_lane(Layout *L, const TpsStepSchedule *sch, guint s, TpsTime stage_end, double *y)
{
    const TpsRun *run = sch->run;
    gboolean dp_any = FALSE;
    for (TpsTaskId id = 0; id < tps_run_n_spans(run) && !dp_any; id++) {
        const TpsSpan *sp = tps_run_span(run, id);
        dp_any = sp->rank == s && g_strcmp0(tps_run_stream_name(run, sp->stream), "dp") == 0 &&
                 sp->end > sp->start;
    }
    if (!dp_any)
        return;
    const guint dp = add_lane(L, g_strdup_printf("stage %u DP", s), s, FALSE, *y, ROW_H);
    for (TpsTaskId id = 0; id < tps_run_n_spans(run); id++) {
        const TpsSpan *sp = tps_run_span(run, id);
        if (sp->rank != s || g_strcmp0(tps_run_stream_name(run, sp->stream), "dp") != 0)
            continue;
        if (id >= sch->first_optimizer) {
            add_box(L, TPS_STYLE_OPTIMIZER, dp, id, sp->start, sp->end, *y, ROW_H, NULL);
            continue;
        }
        TpsTime cut = CLAMP(stage_end, sp->start, sp->end);
        add_box(L, TPS_STYLE_DP, dp, id, sp->start, cut, *y, ROW_H, NULL);
        add_box(L, TPS_STYLE_DP_EXPOSED, dp, id, cut, sp->end, *y, ROW_H, NULL);
    }
    *y += ROW_H + LANE_GAP;
}

/* Stage s's P2P lanes at `*y`: one per receiving stage it sends to; `*y`
 * moves below them. */
static void
add_p2p_lanes(Layout *L, const TpsStepSchedule *sch, guint s, double *y)
{
    const TpsRun *run = sch->run;
    for (guint to = 0; to < sch->pp; to++) {
        if (to == s)
            continue;
        guint lane = G_MAXUINT;
        for (TpsTaskId id = 0; id < tps_run_n_spans(run); id++) {
            const TpsSpan *sp = tps_run_span(run, id);
            if (sp->kind != TPS_KIND_FLOW || sp->rank != s || tps_run_dst_rank(run, id) != to)
                continue;
            if (lane == G_MAXUINT)
                lane = add_lane(L, g_strdup_printf("P2P %u→%u", s, to), s, TRUE, *y, LINK_ROW_H);
            add_box(L, TPS_STYLE_P2P, lane, id, sp->start, MAX(sp->end, sp->start + 1), *y,
                    LINK_ROW_H, NULL);
        }
        if (lane != G_MAXUINT)
            *y += LINK_ROW_H + LANE_GAP;
    }
}

/* The repeat: one cycle of the steady state, from stage 0's forward of
 * the first micro-batch of the cycle to that of the next cycle, marked
 * from `y0` (its labels' row) to `y1`. */
static void
add_repeat_marks(Layout *L, const TpsStepSchedule *sch, double y0, double y1)
{
    const TpsRun *run = sch->run;
    const guint64 lo = sch->result.cycle_from, hi = lo + sch->result.cycle;
    TpsTime a = -1, b = -1;
    for (guint i = 0; i < sch->ops->len; i++) {
        const TpsStepOp *op = &g_array_index(sch->ops, TpsStepOp, i);
        if (op->stage != 0 || op->chunk != 0 || op->backward)
            continue;
        if (op->mb == lo)
            a = tps_run_span(run, op->first)->start;
        if (op->mb == hi)
            b = tps_run_span(run, op->first)->start;
    }
    if (a >= 0 && b > a && a >= L->lo && b <= L->hi) {
        const guint64 more = (sch->micro_step - sch->micro) / sch->result.cycle;
        TpsMark m0 = {.x = xof(L, a), .y0 = y0, .y1 = y1};
        m0.label = g_strdup_printf("one cycle (%" G_GUINT64_FORMAT " micro-batch%s, %.2f ms)",
                                   sch->result.cycle, sch->result.cycle > 1 ? "es" : "",
                                   (double)sch->result.period / 1e6);
        TpsMark m1 = {.x = xof(L, b), .y0 = y0, .y1 = y1};
        m1.label = g_strdup_printf("the step repeats it %" G_GUINT64_FORMAT " more times", more);
        g_array_append_val(L->tl->marks, m0);
        g_array_append_val(L->tl->marks, m1);
    }
}

/* The time axis at y, in ms (µs below 2 ms); the figure ends below it. */
static void
add_step_axis(Layout *L, double y)
{
    TpsTimeline *tl = L->tl;
    tl->axis_y = y;
    const gboolean ms = tl->t1_us >= 2000.0;
    tl->unit = ms ? "ms" : "µs";
    tl->unit_scale = ms ? 1000.0 : 1.0;
    const double u0 = tl->t0_us / tl->unit_scale, u1 = tl->t1_us / tl->unit_scale;
    const guint target = (guint)CLAMP((tl->plot_x1 - tl->plot_x0) / 90.0, 3.0, 12.0);
    double first;
    const double step = tps_nice_step(u0, u1, target, &first);
    for (double v = first; v <= u1 + step * 1e-6; v += step) {
        TpsTick tick = {0};
        tick.value = fabs(v) < step * 1e-6 ? 0.0 : v;
        tick.x = tl->plot_x0 + (tick.value * tl->unit_scale - tl->t0_us) * L->xscale;
        int dec = step >= 1.0 ? 0 : (int)ceil(-log10(step) - 1e-9);
        tick.label = g_strdup_printf("%.*f", dec, tick.value);
        g_array_append_val(tl->ticks, tick);
    }
    tl->height = y + AXIS_H + MARGIN;
    tl->axis_label = g_strdup_printf("time since the step starts (%s)", tl->unit);
}

TpsTimeline *
tps_step_timeline_new(const TpsStepSchedule *sch, const char *title, const char *subtitle,
                      const char *heading, double width, double window_start_us,
                      double window_end_us)
{
    g_return_val_if_fail(sch != NULL && sch->run != NULL && title != NULL, NULL);
    const TpsRun *run = sch->run;
    TpsTimeline *tl = tps_timeline_alloc(title, subtitle, width > 0 ? width : 1200.0);

    TpsTime end = 0;
    for (TpsTaskId id = 0; id < tps_run_n_spans(run); id++)
        end = MAX(end, tps_run_span(run, id)->end);
    tl->t0_us = 0.0;
    tl->t1_us = MAX((double)end / 1000.0, 1e-3);
    if (window_end_us > window_start_us) {
        tl->t0_us = MAX(window_start_us, 0.0);
        tl->t1_us = window_end_us;
    }
    Layout L = {.tl = tl,
                .t0 = tl->t0_us,
                .lo = (TpsTime)llround(tl->t0_us * 1000.0),
                .hi = (TpsTime)llround(tl->t1_us * 1000.0)};
    L.xscale = (tl->plot_x1 - tl->plot_x0) / (tl->t1_us - tl->t0_us);

    double y = MARGIN + TITLE_H + (subtitle ? SUBTITLE_H : 0.0);
    tl->legend_y = y;
    y += LEGEND_H + 4.0;

    TpsPanel panel = {0};
    panel.heading = g_strdup(heading ? heading : run->label);
    panel.y = y;
    panel.span_us = tl->t1_us - tl->t0_us;
    y += HEADING_H;
    const gboolean repeat = sch->result.cycle > 0 && sch->micro < sch->micro_step;
    const double mark_label_y = y - 4.0;
    if (repeat)
        y += 12.0;

    /* Per stage: where its chunks end (the bubble is counted up to there,
     * the DP reduction is exposed after it). */
    const guint pp = sch->pp;
    g_autofree TpsTime *stage_end = g_new0(TpsTime, pp);
    for (guint i = 0; i < sch->ops->len; i++) {
        const TpsStepOp *op = &g_array_index(sch->ops, TpsStepOp, i);
        stage_end[op->stage] = MAX(stage_end[op->stage], tps_run_span(run, op->last)->end);
    }

    for (guint s = 0; s < pp; s++) {
        if (s > 0)
            y += STAGE_GAP;
        add_compute_lane(&L, sch, s, y);
        y += ROW_H + LANE_GAP;
        add_dp_lane(&L, sch, s, stage_end[s], &y);
        add_p2p_lanes(&L, sch, s, &y);
    }
    panel.height = y - panel.y;
    if (repeat)
        add_repeat_marks(&L, sch, mark_label_y, y);
    g_array_append_val(tl->panels, panel);
    y += 8.0;

    add_step_axis(&L, y);
    for (guint st = 0; st < TPS_STYLE_COUNT; st++)
        if (L.used[st])
            g_array_append_val(tl->legend, st);
    return tl;
}

/* A time in the unit that shows its digits (as figure.c's headings). */
static char *
format_ms(double ms)
{
    if (ms >= 1000.0)
        return g_strdup_printf("%.3f s", ms / 1000.0);
    if (ms >= 1.0)
        return g_strdup_printf("%.2f ms", ms);
    if (ms > 0.0)
        return g_strdup_printf("%.0f µs", ms * 1000.0);
    return g_strdup("0 ms");
}

TpsTimeline *
tps_step_figure_new(const TpsScenario *sc, const TpsResult *r, const TpsStepSchedule *sch,
                    double width, double window_start_us, double window_end_us)
{
    g_autofree char *title =
        g_strdup_printf("%s: one training step, %s", sc->name, r->strategy->name);
    g_autofree char *drawn =
        sch->micro == sch->micro_step
            ? g_strdup("every micro-batch drawn")
        : sch->result.cycle > 0
            ? g_strdup_printf("drawn: the %" G_GUINT64_FORMAT " micro-batches the step is "
                              "extrapolated from (marked: the cycle it repeats)",
                              sch->micro)
            : g_strdup_printf("drawn: the first %" G_GUINT64_FORMAT " micro-batches", sch->micro);
    if (window_end_us > window_start_us) {
        g_autofree char *all = g_steal_pointer(&drawn);
        g_autofree char *a = format_ms(MAX(window_start_us, 0.0) / 1000.0),
                        *b = format_ms(window_end_us / 1000.0);
        drawn = g_strdup_printf("%s; the window %s to %s of the step", all, a, b);
    }
    g_autofree char *vpp = sc->vpp > 1 ? g_strdup_printf(" x vpp %u", sc->vpp) : g_strdup("");
    g_autofree char *subtitle = g_strdup_printf(
        "%s, pp %u%s, dp %u, TP %u on %s; %" G_GUINT64_FORMAT " micro-batches of %" G_GUINT64_FORMAT
        " per replica, boxes numbered by micro-batch%s; %s",
        sc->vpp > 1 ? "interleaved 1F1B" : "1F1B", sc->pp,
        vpp, sc->dp, sc->tp, sc->hardware_ref,
        sch->micro_step, sc->micro_batch, sc->vpp > 1 ? " (vK: virtual chunk K)" : "", drawn);
    g_autofree char *step = format_ms(r->step_time_s * 1000.0), *dp = format_ms(r->dp_exposed_ms),
                    *opt = format_ms(r->optimizer_ms);
    g_autofree char *heading = g_strdup_printf(
        "%s — step %s: stage 0 idle %.1f%% of the pipeline (bubble), DP reduction exposed %s, "
        "optimizer %s",
        r->strategy->name, step, 100.0 * r->bubble_fraction, dp, opt);
    return tps_step_timeline_new(sch, title, subtitle, heading, width, window_start_us,
                                 window_end_us);
}
