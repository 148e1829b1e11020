/* Tests of what the figures show, read off the rendered output: pixels of
 * a timeline painted on a Cairo image surface, the text of its SVG; and
 * the step-level figure (render/step-figure.h). Expected positions come
 * from the spans' times and the axis, not from the layout code. */
#include <check.h>

#include "scenario-util.h"
#include "test-util.h"
#include <cairo.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "hand-run.h"
#include "io/input/scenario-file.h"
#include "render/chart.h"
#include "render/draw.h"
#include "render/figure.h"
#include "render/step-figure.h"
#include "render/timeline.h"
#include "sched/pipeline.h"
#include "sched/simulate.h"
#include "sched/strategy.h"

/* The timeline painted at 1 pixel per point. */
static cairo_surface_t *
paint(const TpsTimeline *tl)
{
    cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)ceil(tl->width),
                                                    (int)ceil(tl->height));
    cairo_t *cr = cairo_create(s);
    tps_timeline_draw(cr, tl);
    cairo_destroy(cr);
    cairo_surface_flush(s);
    return s;
}

static guint32
pixel(cairo_surface_t *s, double x, double y)
{
    int ix = (int)floor(x), iy = (int)floor(y);
    ck_assert(ix >= 0 && iy >= 0 && ix < cairo_image_surface_get_width(s) &&
              iy < cairo_image_surface_get_height(s));
    const guchar *row = cairo_image_surface_get_data(s) + iy * cairo_image_surface_get_stride(s);
    return ((const guint32 *)(const void *)row)[ix] & 0xFFFFFF;
}

/* Pixels of colour `rgb` in the rectangle. */
static guint
count_rgb(cairo_surface_t *s, double x0, double y0, double x1, double y1, guint32 rgb)
{
    guint n = 0;
    for (double y = floor(y0); y < y1; y += 1.0)
        for (double x = floor(x0); x < x1; x += 1.0)
            n += pixel(s, x, y) == rgb;
    return n;
}

/* Pixels of the rectangle that pass `keep`. */
static guint
count_if(cairo_surface_t *s, double x0, double y0, double x1, double y1,
         gboolean (*keep)(guint32 rgb))
{
    guint n = 0;
    for (double y = floor(y0); y < y1; y += 1.0)
        for (double x = floor(x0); x < x1; x += 1.0)
            n += keep(pixel(s, x, y));
    return n;
}

/* Text painted white (antialiased: light in every channel). */
static gboolean
is_light(guint32 rgb)
{
    return ((rgb >> 16) & 0xFF) > 0xC0 && ((rgb >> 8) & 0xFF) > 0xC0 && (rgb & 0xFF) > 0xC0;
}

/* The idle style: light grey, hatched in a darker grey (antialiased),
 * lighter than nothing else drawn there and darker than the lane. */
static gboolean
is_idle_grey(guint32 rgb)
{
    guint r = (rgb >> 16) & 0xFF, g = (rgb >> 8) & 0xFF, b = rgb & 0xFF;
    return r == g && g == b && r >= 0xA0 && r <= 0xE8;
}

/* Where time t (ns since the origin) is on the axis: by hand from the
 * axis ends. */
static double
x_at(const TpsTimeline *tl, TpsTime t)
{
    return tl->plot_x0 +
           ((double)t / 1000.0 - tl->t0_us) / (tl->t1_us - tl->t0_us) * (tl->plot_x1 - tl->plot_x0);
}

static const TpsLane *
critical_lane(const TpsTimeline *tl)
{
    for (guint i = 0; i < tl->lanes->len; i++)
        if (g_array_index(tl->lanes, TpsLane, i).critical)
            return &g_array_index(tl->lanes, TpsLane, i);
    return NULL;
}

/* TE's layer (te-a100) of GPT-3 175B at TP 8, recorded, and timeline
 * options drawing its forward pass: what most figure tests look at. */
static TpsRun *
te_layer_forward(TpsTimelineOptions *opt)
{
    g_auto(TpsScenario) sc = {0};
    tps_test_load_scenario("gpt3-175b-tp8.yaml", &sc);
    tps_timeline_options_init(opt);
    opt->pass = TPS_PASS_FORWARD;
    return tps_test_record(&sc, "te-a100", NULL);
}

/* pipeline-rs: every GEMM chunk on a GEMM stream, none on main; its
 * reduce-scatter after the last chunk is exposed. The band must be drawn,
 * in vermillion, at the exposed intervals' times. */
START_TEST(test_exposed_band_pixels)
{
    g_auto(TpsScenario) sc = {0};
    tps_test_load_scenario("op-gemm-rs.yaml", &sc);
    g_autoptr(TpsRun) rec = tps_test_record(&sc, "pipeline-rs", NULL);
    g_autoptr(GArray) exposed = tps_run_exposed_intervals(rec, 0, rec->fwd_start, rec->fwd_end);
    ck_assert_uint_gt(exposed->len, 0);
    TpsTimelineOptions opt;
    tps_timeline_options_init(&opt);
    TpsTimelineRun run = {rec, "pipeline-rs"};
    g_autoptr(GError) error = NULL;
    g_autoptr(TpsTimeline) tl = tps_timeline_new(&run, 1, "t", NULL, &opt, &error);
    ck_assert_msg(tl != NULL, "%s", error ? error->message : "");
    const TpsLane *crit = critical_lane(tl);
    ck_assert_ptr_nonnull(crit);
    cairo_surface_t *s = paint(tl);
    /* The band is the lane's bottom 7 points. */
    const double band_y = crit->y + crit->height - 3.5;
    guint checked = 0;
    for (guint i = 0; i < exposed->len; i++) {
        const TpsInterval *iv = &g_array_index(exposed, TpsInterval, i);
        double a = x_at(tl, iv->start - rec->fwd_start), b = x_at(tl, iv->end - rec->fwd_start);
        if (b - a < 3.0)
            continue;
        ck_assert_uint_gt(count_rgb(s, a + 1, band_y, b - 1, band_y + 1, 0xD55E00),
                          (guint)((b - a - 2) * 0.9));
        checked++;
    }
    ck_assert_uint_gt(checked, 0);
    /* And none where nothing is exposed: the first GEMM chunk's time. */
    const double quiet = x_at(tl, (TpsTime)(0.25 * (double)(rec->fwd_end - rec->fwd_start)));
    ck_assert_uint_eq(pixel(s, quiet, band_y) == 0xD55E00, 0);
    cairo_surface_destroy(s);
}
END_TEST

/* Chunk GEMMs that start while every SM is taken wait for one: their box
 * starts at their first SM (run_start), not at their start on the stream.
 * TE's ring-exchange QKV chunks [1..7] each start while the one before
 * holds every SM: equal chunks, drawn equally long, but for one that got
 * SMs from its predecessor's last wave and so ran partly beside it. */
START_TEST(test_box_from_run_start)
{
    TpsTimelineOptions opt;
    g_autoptr(TpsRun) rec = te_layer_forward(&opt);
    TpsTimelineRun run = {rec, "te-a100"};
    g_autoptr(TpsTimeline) tl = tps_timeline_new(&run, 1, "t", NULL, &opt, NULL);
    ck_assert_ptr_nonnull(tl);
    guint waited = 0, chunks = 0;
    double width[16];
    for (guint i = 0; i < tl->boxes->len; i++) {
        const TpsBox *b = &g_array_index(tl->boxes, TpsBox, i);
        if (b->task == TPS_TASK_NONE || b->style != TPS_STYLE_GEMM)
            continue;
        const TpsSpan *sp = tps_run_span(rec, b->task);
        TpsTime from = sp->run_start > sp->start ? sp->run_start : sp->start;
        ck_assert_double_eq_tol(b->x, x_at(tl, from - rec->fwd_start), 1e-6);
        ck_assert_double_eq_tol(b->x + b->width, x_at(tl, sp->end - rec->fwd_start), 1e-6);
        if (!g_str_has_suffix(sp->name, "]") || strstr(sp->name, ".qkv_fprop[") == NULL ||
            g_str_has_suffix(sp->name, "[0]"))
            continue;
        waited += sp->run_start > sp->start;
        ck_assert_uint_lt(chunks, G_N_ELEMENTS(width));
        width[chunks++] = b->width;
    }
    ck_assert_uint_eq(chunks, 7);
    ck_assert_uint_gt(waited, 3); /* else this shows nothing */
    double wmin = G_MAXDOUBLE;
    for (guint i = 0; i < chunks; i++)
        wmin = MIN(wmin, width[i]);
    guint equal = 0;
    for (guint i = 0; i < chunks; i++)
        equal += width[i] <= wmin * 1.05;
    ck_assert_msg(equal >= chunks - 1, "%u of %u chunks drawn as long as the shortest", equal,
                  chunks);
}
END_TEST

/* Labels: every box wide enough is labelled, always with the task's own
 * short name (fc2_fprop[0] and fc2_fprop[1], never fc2[0] beside
 * fc2_fprop[1]), and the label's text is painted inside the box. */
START_TEST(test_labels_one_scheme)
{
    TpsTimelineOptions opt;
    g_autoptr(TpsRun) rec = te_layer_forward(&opt);
    opt.links = FALSE;
    TpsTimelineRun run = {rec, "te-a100"};
    g_autoptr(TpsTimeline) tl = tps_timeline_new(&run, 1, "t", NULL, &opt, NULL);
    ck_assert_ptr_nonnull(tl);
    cairo_surface_t *s = paint(tl);
    guint wide = 0, fc2 = 0;
    for (guint i = 0; i < tl->boxes->len; i++) {
        const TpsBox *b = &g_array_index(tl->boxes, TpsBox, i);
        if (b->task == TPS_TASK_NONE || b->height < 12.0)
            continue;
        const char *name = tps_timeline_short_name(tps_run_span(rec, b->task)->name);
        if (b->label)
            ck_assert_str_eq(b->label, name);
        if (g_str_has_prefix(name, "fc2_fprop[") && b->width > 20)
            fc2 += b->label != NULL;
        if (b->width < 40.0)
            continue;
        wide++;
        ck_assert_msg(b->label != NULL, "a %g point box of %s unlabelled", b->width, name);
        if (b->style == TPS_STYLE_GEMM) /* white text on blue */
            ck_assert_uint_gt(count_if(s, b->x + 2, b->y + 2, b->x + b->width - 2,
                                       b->y + b->height - 2, is_light),
                              4);
    }
    ck_assert_uint_gt(wide, 4);
    ck_assert_uint_ge(fc2, 2);
    cairo_surface_destroy(s);
}
END_TEST

/* An op heading: the time as the GEMM alone plus what is on top, the
 * efficiency with three digits, the band in a unit that shows it (no
 * "0.00" next to an efficiency that says something is exposed). */
START_TEST(test_op_heading)
{
    g_auto(TpsScenario) sc = {0};
    tps_test_load_scenario("op-ag-gemm.yaml", &sc);
    static const char *const names[] = {"ring-ag", "sp-blocking"};
    TpsRun *recs[2];
    TpsResult res[2];
    for (guint i = 0; i < 2; i++)
        recs[i] = tps_test_record(&sc, names[i], &res[i]);
    g_autoptr(TpsTimeline) tl = tps_figure_timeline(&sc, recs, res, 2, NULL, NULL, NULL);
    ck_assert_ptr_nonnull(tl);
    for (guint i = 0; i < 2; i++) {
        const TpsPanel *p = &g_array_index(tl->panels, TpsPanel, i);
        const TpsResult *r = g_str_has_prefix(p->heading, "ring-ag") ? &res[0] : &res[1];
        g_autofree char *eff = g_strdup_printf("overlap efficiency %.3f", r->op_overlap_efficiency);
        ck_assert_msg(strstr(p->heading, eff), "%s", p->heading);
        ck_assert_msg(strstr(p->heading, "0.00 ms") == NULL, "%s", p->heading);
        /* time = GEMM alone + the rest, as printed. */
        double t, g, rest;
        const char *eq = strstr(p->heading, "— ");
        ck_assert_ptr_nonnull(eq);
        char unit[3][8];
        ck_assert_int_eq(sscanf(eq + strlen("— "), "%lf %7s = GEMM alone %lf %7s + %lf %7s", &t,
                                unit[0], &g, unit[1], &rest, unit[2]),
                         6);
        double scale[3];
        for (guint k = 0; k < 3; k++)
            scale[k] = strcmp(unit[k], "ms") == 0 ? 1.0 : 1e-3;
        ck_assert_double_eq_tol(t * scale[0], g * scale[1] + rest * scale[2], 0.011);
        ck_assert(strstr(p->heading, " us") == NULL);
    }
    for (guint i = 0; i < 2; i++)
        tps_run_free(recs[i]);
}
END_TEST

/* Microseconds are "µs" on the axis. */
START_TEST(test_axis_micro)
{
    g_autoptr(TpsRun) rec = tps_test_hand_run();
    TpsTimelineOptions opt;
    tps_timeline_options_init(&opt);
    TpsTimelineRun run = {rec, "hand"};
    g_autoptr(TpsTimeline) tl = tps_timeline_new(&run, 1, "t", NULL, &opt, NULL);
    ck_assert_ptr_nonnull(tl);
    ck_assert_str_eq(tl->unit, "µs");
    ck_assert_ptr_nonnull(strstr(tl->axis_label, "(µs)"));
}
END_TEST

/* --timeline-rank all: the 8 ranks of TE's layer run one schedule, shifted
 * at most: drawn once, as "GPUs 0-7", with one link lane per neighbour
 * offset instead of 56. */
START_TEST(test_fold_identical_ranks)
{
    TpsTimelineOptions opt;
    g_autoptr(TpsRun) rec = te_layer_forward(&opt);
    TpsTimelineRun run = {rec, "te-a100"};
    opt.rank = 0;
    g_autoptr(TpsTimeline) one = tps_timeline_new(&run, 1, "t", NULL, &opt, NULL);
    opt.rank = TPS_RANK_ALL;
    g_autoptr(TpsTimeline) all = tps_timeline_new(&run, 1, "t", NULL, &opt, NULL);
    ck_assert(one && all);
    ck_assert_uint_eq(all->lanes->len, one->lanes->len);
    guint links = 0;
    for (guint i = 0; i < all->lanes->len; i++) {
        const TpsLane *l = &g_array_index(all->lanes, TpsLane, i);
        ck_assert_msg(g_str_has_prefix(l->label, "GPUs 0-7 ") ||
                          g_str_has_prefix(l->label, "GPUs 0-7: r→r+"),
                      "%s", l->label);
        links += l->link;
    }
    ck_assert_uint_eq(links, 7);
    ck_assert_double_le(all->height, one->height + 1e-6);
}
END_TEST

/* Ranks that differ are not folded; a link nothing crossed has no lane. */
START_TEST(test_fold_keeps_different_ranks)
{
    g_autoptr(TpsRun) run = tps_run_new("hand", 3, 8);
    TpsStreamId st[3];
    for (guint r = 0; r < 3; r++)
        st[r] = tps_run_add_stream(run, r, 0, "main");
    /* Ranks 0 and 2: the same kernel, 100 ns apart; rank 1 a longer one. */
    const TpsTime len[3] = {400, 600, 400}, at[3] = {0, 0, 100};
    for (guint r = 0; r < 3; r++) {
        TpsSpan sp = {.kind = TPS_KIND_GEMM, .name = "gemm", .rank = r, .stream = st[r],
                      .parent = TPS_TASK_NONE, .start = at[r], .end = at[r] + len[r]};
        tps_run_add_span(run, &sp, r);
    }
    /* A zero-byte flow from rank 1 to rank 0: no traffic. */
    TpsSpan flow = {.kind = TPS_KIND_FLOW, .name = "f", .rank = 1, .stream = TPS_STREAM_NONE,
                    .parent = TPS_TASK_NONE, .start = 0, .end = 50, .bytes = 0};
    tps_run_add_span(run, &flow, 0);
    run->is_op = TRUE;
    run->fwd_start = 0;
    run->fwd_end = 700;
    TpsTimelineOptions opt;
    tps_timeline_options_init(&opt);
    opt.rank = TPS_RANK_ALL;
    TpsTimelineRun r = {run, "hand"};
    g_autoptr(TpsTimeline) tl = tps_timeline_new(&r, 1, "t", NULL, &opt, NULL);
    ck_assert_ptr_nonnull(tl);
    ck_assert_uint_eq(tl->lanes->len, 2);
    ck_assert_str_eq(g_array_index(tl->lanes, TpsLane, 0).label, "GPUs 0,2 main");
    ck_assert_str_eq(g_array_index(tl->lanes, TpsLane, 1).label, "GPU1 main");
}
END_TEST

/* SVG: real <text> elements (searchable words), no glyph outlines. */
START_TEST(test_svg_real_text)
{
    g_auto(TpsScenario) sc = {0};
    tps_test_load_scenario("op-ag-gemm.yaml", &sc);
    g_autoptr(TpsRun) rec = tps_test_record(&sc, "ring-ag", NULL);
    TpsTimelineRun run = {rec, "ring-ag heading"};
    g_autoptr(TpsTimeline) tl = tps_timeline_new(&run, 1, "A title & more", NULL, NULL, NULL);
    ck_assert_ptr_nonnull(tl);
    g_autofree char *dir = tps_test_tmpdir("tpsim-figures");
    g_autofree char *path = g_build_filename(dir, "t.svg", NULL);
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_timeline_write(tl, path, &error), "%s", error ? error->message : "");
    g_autofree char *svg = NULL;
    ck_assert(g_file_get_contents(path, &svg, NULL, NULL));
    ck_assert_ptr_nonnull(strstr(svg, ">A title &amp; more</text>"));
    ck_assert_ptr_nonnull(strstr(svg, ">ring-ag heading</text>"));
    ck_assert_ptr_nonnull(strstr(svg, "font-family=\"DejaVu Sans\""));
    ck_assert_ptr_null(strstr(svg, "id=\"glyph"));
    /* The document ends after the text. */
    const char *end = g_strrstr(svg, "</svg>");
    ck_assert_ptr_nonnull(end);
    ck_assert_ptr_null(strstr(end, "<text"));
    tps_test_remove_dir(dir);
}
END_TEST

/* A chart's legend explains "custom" and leaves out a series with no
 * point drawn. */
START_TEST(test_chart_legend)
{
    g_autoptr(TpsChart) c = tps_chart_new("t", NULL, "x", "y");
    guint a = tps_chart_add_series(c, "custom");
    tps_chart_set_series_note(c, a, "the scenario's overlap: map");
    guint b = tps_chart_add_series(c, "nowhere");
    tps_chart_add_point(c, a, 1, 2);
    tps_chart_add_point(c, a, 2, 3);
    tps_chart_add_point(c, b, 1, NAN);
    g_autofree char *dir = tps_test_tmpdir("tpsim-figures");
    g_autofree char *path = g_build_filename(dir, "c.svg", NULL);
    ck_assert(tps_chart_write(c, path, NULL));
    g_autofree char *svg = NULL;
    ck_assert(g_file_get_contents(path, &svg, NULL, NULL));
    ck_assert_ptr_nonnull(strstr(svg, ">custom</text>"));
    ck_assert_ptr_nonnull(strstr(svg, ">the scenario&apos;s overlap: map</text>"));
    ck_assert_ptr_null(strstr(svg, ">nowhere</text>"));
    tps_test_remove_dir(dir);
}
END_TEST

/* ---- the step figure ---- */

typedef struct {
    guint vpp;
    guint64 global_batch; /* dp 16, micro-batch 1: global_batch / 16 micro-batches */
} StepCase;

static const StepCase step_cases[] = {{1, 128}, {2, 128}, {1, 1536}};

START_TEST(test_step_figure)
{
    const StepCase *c = &step_cases[_i];
    g_auto(TpsScenario) sc = {0};
    tps_test_load_scenario("gpt3-175b-pp8.yaml", &sc);
    sc.vpp = c->vpp;
    sc.global_batch = c->global_batch;
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_scenario_validate(&sc, NULL, &error), "%s", error ? error->message : "");
    const TpsStrategy *megatron = tps_strategy_lookup("megatron");
    TpsResult res;
    ck_assert(tps_simulate(&sc, megatron, &res, &error));
    g_autoptr(TpsStepSchedule) sch = NULL;
    ck_assert_msg(tps_simulate_step_schedule(&sc, megatron, &sch, &error), "%s",
                  error ? error->message : "");
    /* The same step as the table's: exporting changes no prediction. */
    ck_assert_double_eq_tol((double)sch->result.step / 1e9, res.step_time_s, 1e-12);
    const guint64 micro_step = c->global_batch / 16;
    ck_assert_uint_eq(sch->micro_step, micro_step);
    if (micro_step * 8 * c->vpp * 2 <= 4096 && sch->result.cycle == 0)
        ck_assert_uint_eq(sch->micro, micro_step);

    g_autoptr(TpsTimeline) tl = tps_step_figure_new(&sc, &res, sch, 1400, 0, 0);
    /* Lanes: a compute lane per stage. */
    guint stages = 0;
    g_autofree guint *fwd = g_new0(guint, 8), *bwd = g_new0(guint, 8);
    g_autofree double *first_x = g_new0(double, 8);
    for (guint i = 0; i < tl->lanes->len; i++) {
        const TpsLane *l = &g_array_index(tl->lanes, TpsLane, i);
        guint s;
        char tail;
        if (sscanf(l->label, "stage %u%c", &s, &tail) == 1) {
            ck_assert_uint_eq(s, stages);
            stages++;
        }
    }
    ck_assert_uint_eq(stages, 8);
    for (guint s = 0; s < 8; s++)
        first_x[s] = G_MAXDOUBLE;
    for (guint i = 0; i < tl->boxes->len; i++) {
        const TpsBox *b = &g_array_index(tl->boxes, TpsBox, i);
        const TpsLane *l = &g_array_index(tl->lanes, TpsLane, b->lane);
        if (b->style == TPS_STYLE_FORWARD)
            fwd[l->rank]++;
        if (b->style == TPS_STYLE_BACKWARD)
            bwd[l->rank]++;
        if (b->style == TPS_STYLE_FORWARD || b->style == TPS_STYLE_BACKWARD)
            first_x[l->rank] = MIN(first_x[l->rank], b->x);
    }
    /* Boxes: micro-batches x virtual chunks, forward and backward, per stage. */
    for (guint s = 0; s < 8; s++) {
        ck_assert_uint_eq(fwd[s], sch->micro * c->vpp);
        ck_assert_uint_eq(bwd[s], sch->micro * c->vpp);
    }
    /* The bubble: the last stage waits for the first forward to cross the
     * pipeline; its lane is idle (hatched grey) before its first chunk. */
    cairo_surface_t *surf = paint(tl);
    const TpsLane *last = NULL;
    for (guint i = 0; i < tl->lanes->len; i++)
        if (strcmp(g_array_index(tl->lanes, TpsLane, i).label, "stage 7") == 0)
            last = &g_array_index(tl->lanes, TpsLane, i);
    ck_assert_ptr_nonnull(last);
    ck_assert_double_gt(first_x[7] - tl->plot_x0, 20.0);
    guint idle = count_if(surf, tl->plot_x0 + 2, last->y + 3, first_x[7] - 2,
                          last->y + last->height - 3, is_idle_grey);
    const double area = (first_x[7] - tl->plot_x0 - 4) * (last->height - 6);
    ck_assert_msg(idle > 0.8 * area, "idle %u of %g pixels", idle, area);
    ck_assert_uint_eq(count_rgb(surf, tl->plot_x0 + 2, last->y + 3, first_x[7] - 2,
                                last->y + last->height - 3, 0x56B4E9),
                      0);
    cairo_surface_destroy(surf);
    /* P2P and the DP reduction are drawn; the optimizer too. */
    gboolean seen[TPS_STYLE_COUNT] = {FALSE};
    for (guint i = 0; i < tl->legend->len; i++)
        seen[g_array_index(tl->legend, guint, i)] = TRUE;
    ck_assert(seen[TPS_STYLE_P2P] && seen[TPS_STYLE_OPTIMIZER] && seen[TPS_STYLE_IDLE]);
    ck_assert(seen[TPS_STYLE_DP] || seen[TPS_STYLE_DP_EXPOSED]);
    /* An extrapolated step says so: the cycle marked, the repeats counted. */
    if (sch->micro < sch->micro_step) {
        ck_assert_uint_gt(sch->result.cycle, 0);
        ck_assert_uint_eq(tl->marks->len, 2);
        g_autofree char *more = g_strdup_printf(
            "repeats it %" G_GUINT64_FORMAT " more times",
            (sch->micro_step - sch->micro) / sch->result.cycle);
        ck_assert_ptr_nonnull(strstr(g_array_index(tl->marks, TpsMark, 1).label, more));
    } else {
        ck_assert_uint_eq(tl->marks->len, 0);
    }
}
END_TEST

START_TEST(test_step_window)
{
    /* --timeline-window on the step figure: 20 to 60 ms of a GPT-3 175B
     * step (pp 8, 8 micro-batches). The axis spans the window; every box
     * lies inside it, the ones cut by its edges marked, and the
     * subtitle says it. */
    g_auto(TpsScenario) sc = {0};
    tps_test_load_scenario("gpt3-175b-pp8.yaml", &sc);
    sc.vpp = 1;
    sc.global_batch = 128;
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_scenario_validate(&sc, NULL, &error), "%s", error ? error->message : "");
    const TpsStrategy *megatron = tps_strategy_lookup("megatron");
    TpsResult res;
    ck_assert(tps_simulate(&sc, megatron, &res, &error));
    g_autoptr(TpsStepSchedule) sch = NULL;
    ck_assert(tps_simulate_step_schedule(&sc, megatron, &sch, &error));
    g_autoptr(TpsTimeline) whole = tps_step_figure_new(&sc, &res, sch, 1400, 0, 0);
    g_autoptr(TpsTimeline) tl = tps_step_figure_new(&sc, &res, sch, 1400, 20000, 60000);
    ck_assert_double_eq(tl->t0_us, 20000);
    ck_assert_double_eq(tl->t1_us, 60000);
    ck_assert_msg(strstr(tl->subtitle, "the window 20.00 ms to 60.00 ms of the step") != NULL,
                  "%s", tl->subtitle);
    ck_assert_uint_lt(tl->boxes->len, whole->boxes->len);
    guint clipped = 0;
    for (guint i = 0; i < tl->boxes->len; i++) {
        const TpsBox *b = &g_array_index(tl->boxes, TpsBox, i);
        ck_assert(b->x >= tl->plot_x0 - 1e-6);
        ck_assert(b->x + b->width <= tl->plot_x1 + 1e-6);
        clipped += b->clipped;
    }
    ck_assert_uint_gt(clipped, 0);
    /* The first tick is at or after the window's start. */
    const TpsTick *tick = &g_array_index(tl->ticks, TpsTick, 0);
    ck_assert(tick->value * tl->unit_scale >= 20000 - 1e-6);
    ck_assert(tick->x >= tl->plot_x0 - 1e-6);
}
END_TEST

/* tpsim run --timeline-step: writes the figure (and says so); an op
 * scenario or an unknown image name is a usage error, nothing written. */
START_TEST(test_cli_timeline_step)
{
    g_autofree char *dir = tps_test_tmpdir("tpsim-figures");
    g_autofree char *png = g_build_filename(dir, "step.png", NULL);
    g_autofree char *bad = g_build_filename(dir, "step.gif", NULL);
    g_autofree char *model =
        g_build_filename(g_getenv("TPSIM_SOURCE_DIR"), "scenarios", "gpt3-175b-pp8.yaml", NULL);
    g_autofree char *op =
        g_build_filename(g_getenv("TPSIM_SOURCE_DIR"), "scenarios", "op-gemm-rs.yaml", NULL);
    g_autofree char *err = NULL;
    const char *ok_args[] = {"run", model, "--strategy", "megatron", "--timeline-step", png, NULL};
    ck_assert_int_eq(tps_test_spawn("TPSIM_BIN", NULL, ok_args, NULL, &err), 0);
    ck_assert_ptr_nonnull(strstr(err, png));
    g_autofree char *data = NULL;
    gsize len;
    ck_assert(g_file_get_contents(png, &data, &len, NULL));
    ck_assert(len > 8 && memcmp(data, "\x89PNG", 4) == 0);
    g_autofree char *png2 = g_build_filename(dir, "op.png", NULL);
    const char *op_args[] = {"run", op, "--timeline-step", png2, NULL};
    ck_assert_int_eq(tps_test_spawn("TPSIM_BIN", NULL, op_args, NULL, &err), 2);
    ck_assert_ptr_nonnull(strstr(err, "model scenario"));
    ck_assert(!g_file_test(png2, G_FILE_TEST_EXISTS));
    const char *bad_args[] = {"run", model, "--timeline-step", bad, NULL};
    ck_assert_int_eq(tps_test_spawn("TPSIM_BIN", NULL, bad_args, NULL, &err), 2);
    ck_assert(!g_file_test(bad, G_FILE_TEST_EXISTS));
    tps_test_remove_dir(dir);
}
END_TEST

/* No tps_render_shutdown() between tests: no drawing may follow it, and
 * each test runs in a process of its own, which frees everything at its
 * exit. */
int
main(void)
{
    Suite *s = suite_create("figures");
    TCase *tc = tcase_create("defects");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_exposed_band_pixels);
    tcase_add_test(tc, test_box_from_run_start);
    tcase_add_test(tc, test_labels_one_scheme);
    tcase_add_test(tc, test_op_heading);
    tcase_add_test(tc, test_axis_micro);
    tcase_add_test(tc, test_fold_identical_ranks);
    tcase_add_test(tc, test_fold_keeps_different_ranks);
    tcase_add_test(tc, test_svg_real_text);
    tcase_add_test(tc, test_chart_legend);
    suite_add_tcase(s, tc);
    tc = tcase_create("step");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_step_figure, 0, G_N_ELEMENTS(step_cases));
    tcase_add_test(tc, test_step_window);
    tcase_add_test(tc, test_cli_timeline_step);
    suite_add_tcase(s, tc);
    return tps_test_run(s);
}
