/* The report of tpsim tune (see tune-writer.h). */
#include "io/output/tune-writer.h"

#include <math.h>
#include <string.h>

#include "io/output/ub-cfg.h"
#include "sched/method.h"

/* A slot's configuration in a few words. */
static void
append_config(GString *s, const TpsOverlapConfig *c)
{
    switch (c->method) {
    case TPS_METHOD_PIPELINE:
        g_string_append_printf(s, "pipeline %u splits %u SMs%s", c->num_splits, c->num_sm,
                               c->set_sm_margin ? " margin" : "");
        break;
    case TPS_METHOD_BULK:
        g_string_append_printf(s, "bulk %u SMs%s", c->num_sm, c->set_sm_margin ? " margin" : "");
        break;
    case TPS_METHOD_RING_EXCHANGE:
        g_string_append(s, "ring_exchange");
        if (c->aggregate)
            g_string_append(s, " aggregate");
        if (!c->use_ce)
            g_string_append_printf(s, " SM sends %u SMs", c->num_sm);
        if (c->set_sm_margin)
            g_string_append_printf(s, " margin %u SMs", c->num_sm);
        break;
    default:
        g_string_append(s, "none");
    }
}

/* How an entry differs from the best (the first rows share most slots). */
static void
append_difference(GString *s, const TpsTuneEntry *e, const TpsTuneEntry *best)
{
    guint n = 0;
    for (guint g = 0; g < TPS_TUNE_GROUP_COUNT; g++)
        if (e->group_on[g] != best->group_on[g]) {
            g_string_append_printf(s, "%s%s %s", n++ ? "; " : "",
                                   e->group_on[g] ? "with" : "without",
                                   tps_tune_group_flag((TpsTuneGroup)g) + strlen("--disable-"));
        }
    for (guint slot = 0; slot < TPS_GEMM_OP; slot++) {
        const TpsOverlapConfig *a = &e->cfg[slot], *b = &best->cfg[slot];
        if (a->method == TPS_METHOD_NONE || b->method == TPS_METHOD_NONE)
            continue;
        if (a->method == b->method && a->num_splits == b->num_splits && a->num_sm == b->num_sm &&
            a->set_sm_margin == b->set_sm_margin && a->aggregate == b->aggregate &&
            a->use_ce == b->use_ce)
            continue;
        g_string_append_printf(s, "%s%s: ", n++ ? "; " : "", tps_gemm_slot_names[slot]);
        append_config(s, a);
    }
    if (n == 0 && e == best) {
        gboolean any = FALSE;
        for (guint g = 0; g < TPS_TUNE_GROUP_COUNT; g++)
            any |= e->group_on[g];
        g_string_append(s, any ? "-" : "(no userbuffers: every group off)");
    } else if (n == 0) {
        g_string_append(s, "-");
    }
}

static void
append_head(GString *s, const TpsScenario *sc, const TpsStrategy *base, const TpsTuneReport *r)
{
    g_string_append_printf(s,
                           "tune %s on %s: tp=%u pp=%u vpp=%u dp=%u, %" G_GUINT64_FORMAT
                           " layers, hidden %" G_GUINT64_FORMAT ", seq %" G_GUINT64_FORMAT
                           "; from %s\n",
                           sc->name, sc->hardware.name, sc->tp, sc->pp, sc->vpp, sc->dp, sc->layers,
                           sc->hidden, sc->seq_len, base->name);
    if (r->exhaustive)
        g_string_append_printf(s, "search: exhaustive, %u configurations simulated\n",
                               r->evaluated);
    else
        g_string_append_printf(s,
                               "search: coordinate descent from %s%s (each group on/off, then "
                               "each slot's candidates with the others fixed), %u passes, %u "
                               "configurations simulated\n",
                               base->name, r->second_start ? " and from te-a100" : "", r->passes,
                               r->evaluated);
    g_string_append_printf(s,
                           "no userbuffers (megatron): step %.3f s; %s: step %.3f s, %+.2f%% "
                           "[%+.2f%%, %+.2f%%]\n\n",
                           r->none.step_time_s, base->name, r->base.result.step_time_s,
                           100 * r->base.gain, 100 * r->base.gain_low, 100 * r->base.gain_high);
    /* The start against the choice: base - best, with its band. */
    double diff, low, high;
    tps_result_difference(sc, &r->base.result, &tps_tune_best(r)->result, &diff, &low, &high);
    g_string_truncate(s, s->len - 1);
    g_string_append_printf(
        s, "rank 1 against %s: %.3f s faster per step, band [%+.3f, %+.3f] s: %s\n\n", base->name,
        diff, low, high,
        low <= 0 && high >= 0 ? "tied (the model cannot rank them)"
        : diff > 0            ? "faster beyond the band"
                              : "the same");
}

static void
append_ranked(GString *s, const TpsTuneReport *r, guint top)
{
    const TpsTuneEntry *best = tps_tune_best(r);
    g_string_append(s, "rank  step s  gain vs none  band of the gain       vs rank 1  "
                       "differs from rank 1\n");
    for (guint i = 0; i < MIN(top, r->ranked->len); i++) {
        const TpsTuneEntry *e = &g_array_index(r->ranked, TpsTuneEntry, i);
        g_string_append_printf(s, "%4u  %6.3f  %11.2f%%  [%+7.2f%%, %+7.2f%%]  %9s  ", i + 1,
                               e->result.step_time_s, 100 * e->gain, 100 * e->gain_low,
                               100 * e->gain_high,
                               i == 0    ? "best"
                               : e->tied ? "tied"
                                         : "slower");
        append_difference(s, e, best);
        g_string_append_c(s, '\n');
    }
    guint tied = 0;
    for (guint i = 1; i < r->ranked->len; i++)
        tied += g_array_index(r->ranked, TpsTuneEntry, i).tied;
    g_string_append_printf(s,
                           "tied: %u of the %u configurations are within the band of rank 1's "
                           "difference (the model cannot rank them)\n\n",
                           tied, r->ranked->len);
}

static void
append_best(GString *s, const TpsTuneReport *r)
{
    const TpsTuneEntry *best = tps_tune_best(r);
    g_string_append(s, "chosen per GEMM (gain vs none: the step with only this slot changed "
                       "to each method's best knobs)\n");
    g_string_append(s, "GEMM        configuration                   ring_exchange   pipeline    "
                       "   bulk\n");
    for (guint slot = 0; slot < TPS_GEMM_OP; slot++) {
        GString *cfg = g_string_new(NULL);
        append_config(cfg, &best->cfg[slot]);
        g_string_append_printf(s, "%-11s %-30s", tps_gemm_slot_names[slot], cfg->str);
        g_string_free(cfg, TRUE);
        static const TpsMethod cols[] = {TPS_METHOD_RING_EXCHANGE, TPS_METHOD_PIPELINE,
                                         TPS_METHOD_BULK};
        for (guint m = 0; m < G_N_ELEMENTS(cols); m++) {
            const TpsTuneSlotGain *g = &r->slot_gain[slot][cols[m]];
            if (isnan(g->gain))
                g_string_append_printf(s, " %14s", "-");
            else
                g_string_append_printf(s, " %+13.2f%%", 100 * g->gain);
        }
        g_string_append_c(s, '\n');
    }
}

char *
tps_tune_megatron_flags(const TpsTuneReport *r, const char *ub_path)
{
    const TpsTuneEntry *best = tps_tune_best(r);
    if (!r->overlap_pays)
        return g_strdup("--sequence-parallel (no --tp-comm-overlap)");
    GString *s = g_string_new("CUDA_DEVICE_MAX_CONNECTIONS=1 ... --sequence-parallel "
                              "--tp-comm-overlap --tp-comm-overlap-cfg ");
    g_string_append(s, ub_path != NULL ? ub_path : "FILE");
    for (guint g = 0; g < TPS_TUNE_GROUP_COUNT; g++)
        if (!best->group_on[g])
            g_string_append_printf(s, " %s", tps_tune_group_flag((TpsTuneGroup)g));
    return g_string_free(s, FALSE);
}

char *
tps_tune_format_text(const TpsScenario *sc, const TpsStrategy *base, const TpsTuneReport *r,
                     guint top, const char *ub_path)
{
    GString *s = g_string_new(NULL);
    append_head(s, sc, base, r);
    append_ranked(s, r, top);
    append_best(s, r);
    g_autofree char *flags = tps_tune_megatron_flags(r, ub_path);
    if (r->overlap_pays) {
        g_string_append_printf(s,
                               "\noverlap: rank 1, %+.2f%% [%+.2f%%, %+.2f%%] over no "
                               "userbuffers\nmegatron: %s\n",
                               100 * tps_tune_best(r)->gain, 100 * tps_tune_best(r)->gain_low,
                               100 * tps_tune_best(r)->gain_high, flags);
        if (ub_path == NULL) {
            g_autofree char *ub = tps_tune_ub_cfg(sc, r);
            g_string_append_printf(s, "\n%s", ub);
        }
    } else {
        g_string_append_printf(s, "\ndo not overlap: %s\nmegatron: %s\n", r->verdict, flags);
    }
    g_string_append(s, "gain band: from the residuals of the classes of work in which the two "
                       "steps differ (docs/tune.md)\n");
    return g_string_free(s, FALSE);
}

char *
tps_tune_ub_cfg(const TpsScenario *sc, const TpsTuneReport *r)
{
    return tps_ub_cfg_format_table(sc, tps_tune_best(r)->cfg, "tpsim tune", NULL);
}
