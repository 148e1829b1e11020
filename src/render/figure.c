/* Figures of simulated runs: see figure.h. */
#include "render/figure.h"

static char *
heading(const TpsScenario *sc, const TpsResult *r)
{
    if (sc->is_op)
        return g_strdup_printf("%s — %.2f ms (GEMM alone %.2f ms, communication busy %.2f ms, "
                               "overlap efficiency %.2f)",
                               r->strategy->name, r->op_time_ms, r->op_gemm_ms, r->op_comm_ms,
                               r->op_overlap_efficiency);
    return g_strdup_printf("%s — layer forward %.2f ms, backward %.2f ms, exposed TP "
                           "communication %.2f ms",
                           r->strategy->name, r->forward_ms, r->backward_ms, r->exposed_comm_ms);
}

static char *
subtitle(const TpsScenario *sc, const TpsTimelineOptions *opt)
{
    g_autofree char *ranks = opt->rank == TPS_RANK_ALL
                                 ? g_strdup_printf("all %u GPUs", sc->tp)
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
    g_autofree TpsTimelineRun *runs = g_new0(TpsTimelineRun, n);
    g_autoptr(GPtrArray) words = g_ptr_array_new_with_free_func(g_free);
    GString *names = g_string_new(NULL);
    for (guint i = 0; i < n; i++) {
        char *h = heading(scenario, &results[i]);
        g_ptr_array_add(words, h);
        runs[i].record = records[i];
        runs[i].heading = h;
        g_string_append_printf(names, "%s%s", i ? " vs " : "", results[i].strategy->name);
    }
    g_autofree char *names_str = g_string_free(names, FALSE);
    g_autofree char *default_title = g_strdup_printf("%s: %s", scenario->name, names_str);
    g_autofree char *sub = subtitle(scenario, options);
    TpsTimeline *tl = tps_timeline_new(runs, n, title ? title : default_title, sub, options, error);
    if (tl && scenario->is_op) {
        /* An op result has no exposed figure: give the one the figure marks. */
        for (guint i = 0; i < tl->panels->len; i++) {
            TpsPanel *p = &g_array_index(tl->panels, TpsPanel, i);
            char *h = g_strdup_printf("%s — %.2f ms, exposed comm %.2f ms (GEMM alone %.2f ms, "
                                      "overlap efficiency %.2f)",
                                      results[i].strategy->name, results[i].op_time_ms,
                                      p->exposed_us / 1000.0, results[i].op_gemm_ms,
                                      results[i].op_overlap_efficiency);
            g_free(p->heading);
            p->heading = h;
        }
    }
    return tl;
}
