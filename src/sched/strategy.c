#include "sched/strategy.h"

#include <string.h>

#include "core/error.h"
#include "core/names.h"

/* Sorted by name. Presets named by design.md whose overlap methods this
 * version does not model yet are listed so that their names are known and
 * the message says why they cannot run. */
static const TpsStrategy strategies[] = {
    {"bulk", "megatron, with the backward AG/RS as userbuffers bulk overlap", FALSE, TRUE, TRUE,
     FALSE, 0},
    {"custom", "the scenario's overlap: map on top of megatron", FALSE, TRUE, TRUE, TRUE, 0},
    {"megatron",
     "Megatron SP without userbuffers: forward blocking; backward AG overlapped with dgrad and RS "
     "with wgrad (NCCL on a side stream)",
     TRUE, TRUE, TRUE, FALSE, TPS_STRATEGY_MEGATRON},
    {"pipeline-rs", "megatron, plus pipeline-chunk RS (4 splits) for proj_fprop and fc2_fprop",
     FALSE, TRUE, TRUE, TRUE, 0},
    {"ring-ag", "megatron, plus ring-exchange AG overlap for qkv_fprop, fc1_fprop, proj_dgrad, "
                "fc2_dgrad",
     FALSE, TRUE, TRUE, TRUE, 0},
    {"ring-rs", "megatron, plus ring-exchange (P2P) RS overlap for proj_fprop and fc2_fprop", FALSE,
     TRUE, TRUE, TRUE, 0},
    {"sp-blocking", "SP with every AG and RS blocking on the compute stream", TRUE, TRUE, TRUE, TRUE,
     TPS_STRATEGY_SP_BLOCKING},
    {"te-a100", "NVIDIA's tuned A100 userbuffers configuration", FALSE, TRUE, TRUE, TRUE, 0},
    {"te-default", "Transformer Engine's default per-GEMM table", FALSE, TRUE, TRUE, TRUE, 0},
    {"tp-allreduce",
     "classic TP without SP: all-reduce after row-parallel forward and column-parallel dgrad",
     TRUE, FALSE, TRUE, FALSE, TPS_STRATEGY_TP_ALLREDUCE},
};

const TpsStrategy *
tps_strategy_table(guint *n)
{
    if (n)
        *n = G_N_ELEMENTS(strategies);
    return strategies;
}

const TpsStrategy *
tps_strategy_lookup(const char *name)
{
    for (guint i = 0; i < G_N_ELEMENTS(strategies); i++)
        if (strcmp(strategies[i].name, name) == 0)
            return &strategies[i];
    return NULL;
}

static gboolean
scenario_has_sp(const TpsScenario *scenario)
{
    return scenario->is_op || scenario->sp;
}

gboolean
tps_strategy_applies(const TpsStrategy *strategy, const TpsScenario *scenario, char **why)
{
    if (scenario->is_op && !strategy->for_op) {
        if (why)
            *why = g_strdup_printf("strategy '%s' does not apply to op scenarios", strategy->name);
        return FALSE;
    }
    if (!scenario->is_op && !strategy->for_model) {
        if (why)
            *why = g_strdup_printf("strategy '%s' applies to op scenarios only", strategy->name);
        return FALSE;
    }
    if (strategy->needs_sp != scenario_has_sp(scenario)) {
        if (why)
            *why = g_strdup_printf(strategy->needs_sp
                                       ? "strategy '%s' needs sequence parallelism (parallel.sp: true)"
                                       : "strategy '%s' is for tensor parallelism without sequence "
                                         "parallelism (parallel.sp: false)",
                                   strategy->name);
        return FALSE;
    }
    if (strcmp(strategy->name, "custom") == 0 && !scenario->has_overlap) {
        if (why)
            *why = g_strdup("strategy 'custom' needs an overlap: map in the scenario");
        return FALSE;
    }
    return TRUE;
}

static gboolean
set_error(const TpsScenario *scenario, gboolean from_scenario, GError **error, char *msg)
{
    if (from_scenario)
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "%s:%u:%u: %s", scenario->file,
                    scenario->strategies_line, scenario->strategies_column, msg);
    else
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "--strategy: %s", msg);
    g_free(msg);
    return FALSE;
}

const TpsStrategy **
tps_strategy_select(const TpsScenario *scenario, const char *const *requested, GError **error)
{
    gboolean from_scenario = FALSE;
    GPtrArray *out = g_ptr_array_new();

    if (requested == NULL && scenario->strategies) {
        requested = (const char *const *)scenario->strategies;
        from_scenario = TRUE;
    }
    if (requested == NULL) {
        for (guint i = 0; i < G_N_ELEMENTS(strategies); i++)
            if (strategies[i].implemented && tps_strategy_applies(&strategies[i], scenario, NULL))
                g_ptr_array_add(out, (gpointer)&strategies[i]);
        g_ptr_array_add(out, NULL);
        return (const TpsStrategy **)g_ptr_array_free(out, FALSE);
    }

    const char *names[G_N_ELEMENTS(strategies) + 1];
    for (guint i = 0; i < G_N_ELEMENTS(strategies); i++)
        names[i] = strategies[i].name;
    names[G_N_ELEMENTS(strategies)] = NULL;

    for (const char *const *r = requested; *r; r++) {
        const TpsStrategy *s = tps_strategy_lookup(*r);
        char *why = NULL;
        if (s == NULL) {
            const char *close = tps_names_closest(*r, names);
            g_autofree char *list = tps_names_join(names);
            g_ptr_array_free(out, TRUE);
            return set_error(scenario, from_scenario, error,
                             close ? g_strdup_printf("unknown strategy '%s'; did you mean '%s'?",
                                                     *r, close)
                                   : g_strdup_printf("unknown strategy '%s'; known: %s", *r,
                                                     list)),
                   NULL;
        }
        if (!tps_strategy_applies(s, scenario, &why)) {
            g_ptr_array_free(out, TRUE);
            return set_error(scenario, from_scenario, error, why), NULL;
        }
        if (!s->implemented) {
            g_ptr_array_free(out, TRUE);
            return set_error(scenario, from_scenario, error,
                             g_strdup_printf("strategy '%s' (%s) is not modelled by this version "
                                             "of tpsim yet",
                                             s->name, s->summary)),
                   NULL;
        }
        gboolean dup = FALSE;
        for (guint i = 0; i < out->len; i++)
            dup |= g_ptr_array_index(out, i) == s;
        if (!dup)
            g_ptr_array_add(out, (gpointer)s);
    }
    g_ptr_array_add(out, NULL);
    return (const TpsStrategy **)g_ptr_array_free(out, FALSE);
}
