/* Figures of simulated runs: see figure.h. */
#include "render/figure.h"

#include <math.h>
#include <string.h>

/* A time in the unit that shows its digits: "2.61 ms", "180 µs",
 * "4.2 µs"; never "0.00 ms" for a time that is not zero. */
static char *
format_ms(double ms)
{
    double a = fabs(ms);
    if (a >= 1.0)
        return g_strdup_printf("%.2f ms", ms);
    if (a >= 0.01)
        return g_strdup_printf("%.0f µs", ms * 1000.0);
    if (a > 0.0)
        return g_strdup_printf("%.1f µs", ms * 1000.0);
    return g_strdup("0 µs");
}

static char *
heading(const TpsScenario *sc, const TpsResult *r)
{
    g_autofree char *f = format_ms(r->forward_ms), *b = format_ms(r->backward_ms),
                    *x = format_ms(r->exposed_comm_ms);
    (void)sc;
    return g_strdup_printf("%s — layer forward %s, backward %s, exposed TP communication %s",
                           r->strategy->name, f, b, x);
}

/* An op panel's heading: the op's time as the GEMM alone plus what the
 * communication costs on top (Flux's effective communication time, the
 * figure the overlap efficiency is made of: efficiency = 1 - ECT /
 * ECT of the blocking op), then the communication while no compute
 * kernel runs (the band), which the GEMM's slowdown under overlap is not
 * part of: both are needed to read an efficiency below 1 with a band of 0. */
static char *
op_heading(const TpsResult *r, double band_ms)
{
    g_autofree char *t = format_ms(r->op_time_ms), *g = format_ms(r->op_gemm_ms),
                    *ect = format_ms(r->op_time_ms - r->op_gemm_ms), *band = format_ms(band_ms);
    return g_strdup_printf("%s — %s = GEMM alone %s + %s (overlap efficiency %.3f); "
                           "exposed comm (band) %s",
                           r->strategy->name, t, g, ect, r->op_overlap_efficiency, band);
}

/* The table's order (tps_results_rank()): fastest first, by op time or
 * step time, ties by name. */
static gboolean
ranks_before(const TpsScenario *sc, const TpsResult *a, const TpsResult *b)
{
    double x = sc->is_op ? a->op_time_ms : a->step_time_s;
    double y = sc->is_op ? b->op_time_ms : b->step_time_s;
    if (x != y)
        return x < y;
    return strcmp(a->strategy->name, b->strategy->name) < 0;
}

static char *
subtitle(const TpsScenario *sc, const TpsTimelineOptions *opt)
{
    g_autofree char *ranks = opt->rank == TPS_RANK_ALL
                                 ? g_strdup_printf("all %u GPUs, ranks with the same "
                                                   "schedule drawn once",
                                                   sc->tp)
                                 : g_strdup_printf("GPU%d of %u", opt->rank, sc->tp);
    if (sc->is_op)
        return g_strdup_printf("%s: m %" G_GUINT64_FORMAT ", n %" G_GUINT64_FORMAT
                               ", k %" G_GUINT64_FORMAT ", TP %u on %s — %s; exposed comm is "
                               "communication while no compute kernel runs",
                               sc->op_kind == TPS_OP_AG_GEMM ? "all-gather + GEMM"
                                                             : "GEMM + reduce-scatter",
                               sc->m, sc->n, sc->k, sc->tp, sc->hardware_ref, ranks);
    const char *pass = opt->pass == TPS_PASS_FORWARD    ? "forward"
                       : opt->pass == TPS_PASS_BACKWARD ? "backward"
                                                        : "forward and backward";
    return g_strdup_printf("one transformer layer, %s — hidden %" G_GUINT64_FORMAT
                           ", seq %" G_GUINT64_FORMAT ", TP %u%s on %s — %s",
                           pass, sc->hidden, sc->seq_len, sc->tp, sc->sp ? " + SP" : "",
                           sc->hardware_ref, ranks);
}

/* What the panels show, in the figure's words (a title may say
 * otherwise): the fastest, by the table's measure, and how much longer
 * each other takes; NULL for one panel. */
static char *
verdict(const TpsScenario *sc, const TpsResult *results, const guint *order, guint n)
{
    if (n < 2)
        return NULL;
    const TpsResult *best = &results[order[0]];
    const double t0 = sc->is_op ? best->op_time_ms : best->step_time_s * 1000.0;
    g_autofree char *first =
        t0 >= 1000.0 ? g_strdup_printf("%.3f s", t0 / 1000.0) : format_ms(t0);
    GString *s = g_string_new(NULL);
    g_string_append_printf(s, "fastest %s: %s %s", sc->is_op ? "op" : "step",
                           best->strategy->name, first);
    for (guint i = 1; i < n; i++) {
        const TpsResult *r = &results[order[i]];
        const double t = sc->is_op ? r->op_time_ms : r->step_time_s * 1000.0;
        g_string_append_printf(s, ", %s %+.1f%%", r->strategy->name,
                               t0 > 0.0 ? 100.0 * (t / t0 - 1.0) : 0.0);
    }
    return g_string_free(s, FALSE);
}

TpsTimeline *
tps_figure_timeline(const TpsScenario *scenario, TpsRun *const *records, const TpsResult *results,
                    guint n, const char *title, const TpsTimelineOptions *options, GError **error)
{
    g_return_val_if_fail(n > 0, NULL);
    TpsTimelineOptions defaults;
    if (options == NULL) {
        tps_timeline_options_init(&defaults);
        options = &defaults;
    }
    /* Panels in the table's order, fastest first, and the title names
     * them in that order. */
    g_autofree guint *order = g_new(guint, n);
    for (guint i = 0; i < n; i++) {
        guint j = i;
        for (; j > 0 && ranks_before(scenario, &results[i], &results[order[j - 1]]); j--)
            order[j] = order[j - 1];
        order[j] = i;
    }
    g_autofree TpsTimelineRun *runs = g_new0(TpsTimelineRun, n);
    g_autoptr(GPtrArray) words = g_ptr_array_new_with_free_func(g_free);
    GString *names = g_string_new(NULL);
    for (guint i = 0; i < n; i++) {
        char *h = heading(scenario, &results[order[i]]);
        g_ptr_array_add(words, h);
        runs[i].record = records[order[i]];
        runs[i].heading = h;
        g_string_append_printf(names, "%s%s", i ? " vs " : "", results[order[i]].strategy->name);
    }
    g_autofree char *names_str = g_string_free(names, FALSE);
    g_autofree char *default_title = g_strdup_printf("%s: %s", scenario->name, names_str);
    g_autofree char *sub_what = subtitle(scenario, options);
    g_autofree char *sub_verdict = verdict(scenario, results, order, n);
    g_autofree char *sub =
        sub_verdict ? g_strdup_printf("%s; %s", sub_what, sub_verdict) : g_strdup(sub_what);
    TpsTimeline *tl = tps_timeline_new(runs, n, title ? title : default_title, sub, options, error);
    if (tl && scenario->is_op) {
        /* An op result has no exposed figure: give the one the band marks. */
        for (guint i = 0; i < tl->panels->len; i++) {
            TpsPanel *p = &g_array_index(tl->panels, TpsPanel, i);
            char *h = op_heading(&results[order[i]], p->exposed_us / 1000.0);
            g_free(p->heading);
            p->heading = h;
        }
    }
    return tl;
}
