#include "sched/strategy.h"

#include "sched/placement.h"

#include <string.h>

#include "core/error.h"
#include "core/names.h"
#include "sched/method.h"

/* Sorted by name. Presets named by design.md whose overlap methods this
 * version does not model yet are listed so that their names are known and
 * the message says why they cannot run. */
static const TpsStrategy strategies[] = {
    {"bulk", "megatron, with the backward AG/RS as userbuffers bulk overlap (16 SMs, margin)", TRUE,
     TRUE, TRUE, 0, TRUE, TPS_STRATEGY_BULK},
    {"custom", "the scenario's overlap: map on top of megatron", TRUE, TRUE, TRUE,
     TPS_OPS_AG | TPS_OPS_RS, TRUE, TPS_STRATEGY_CUSTOM},
    {"megatron",
     "Megatron SP without userbuffers: forward blocking; backward AG overlapped with dgrad and RS "
     "with wgrad (NCCL on a side stream)",
     TRUE, TRUE, TRUE, 0, FALSE, TPS_STRATEGY_MEGATRON},
    {"pipeline-rs", "megatron, plus pipeline-chunk RS (4 splits, 16 SMs) for proj_fprop, fc2_fprop",
     TRUE, TRUE, TRUE, TPS_OPS_RS, TRUE, TPS_STRATEGY_PIPELINE_RS},
    {"ring-ag",
     "megatron, plus ring-exchange AG overlap for qkv_fprop, fc1_fprop, proj_dgrad, "
     "fc2_dgrad",
     TRUE, TRUE, TRUE, TPS_OPS_AG, TRUE, TPS_STRATEGY_RING_AG},
    {"ring-rs", "megatron, plus ring-exchange (P2P) RS overlap for proj_fprop and fc2_fprop", TRUE,
     TRUE, TRUE, TPS_OPS_RS, TRUE, TPS_STRATEGY_RING_RS},
    {"sp-blocking", "SP with every AG and RS blocking on the compute stream", TRUE, TRUE, TRUE,
     TPS_OPS_AG | TPS_OPS_RS, FALSE, TPS_STRATEGY_SP_BLOCKING},
    {"te-a100",
     "NVIDIA's tuned A100 userbuffers configuration (bulk 2 SMs, pipeline 4 SMs, no "
     "margins, AG layers ring exchange)",
     TRUE, TRUE, TRUE, TPS_OPS_AG | TPS_OPS_RS, TRUE, TPS_STRATEGY_TE_A100},
    {"te-default", "Transformer Engine's default per-GEMM table", TRUE, TRUE, TRUE,
     TPS_OPS_AG | TPS_OPS_RS, TRUE, TPS_STRATEGY_TE_DEFAULT},
    {"tp-allreduce",
     "classic TP without SP: all-reduce after row-parallel forward and column-parallel dgrad", TRUE,
     FALSE, TRUE, 0, FALSE, TPS_STRATEGY_TP_ALLREDUCE},
};

const TpsStrategy *
tps_strategy_table(guint *n)
{
    if (n)
        *n = G_N_ELEMENTS(strategies);
    return strategies;
}

const TpsStrategy *
tps_strategy_by_id(TpsStrategyId id)
{
    for (guint i = 0; i < G_N_ELEMENTS(strategies); i++)
        if (strategies[i].id == id)
            return &strategies[i];
    g_return_val_if_reached(NULL);
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
    if (scenario->is_op && !(strategy->ops & (1u << scenario->op_kind))) {
        if (why)
            *why =
                g_strdup_printf("strategy '%s' does not apply to %s op scenarios", strategy->name,
                                scenario->op_kind == TPS_OP_AG_GEMM ? "ag_gemm" : "gemm_rs");
        return FALSE;
    }
    if (!scenario->is_op && !strategy->for_model) {
        if (why)
            *why = g_strdup_printf("strategy '%s' applies to op scenarios only", strategy->name);
        return FALSE;
    }
    if (strategy->needs_sp != scenario_has_sp(scenario)) {
        if (why)
            *why = g_strdup_printf(
                strategy->needs_sp ? "strategy '%s' needs sequence parallelism (parallel.sp: true)"
                                   : "strategy '%s' is for tensor parallelism without sequence "
                                     "parallelism (parallel.sp: false)",
                strategy->name);
        return FALSE;
    }
    if (strategy->id == TPS_STRATEGY_CUSTOM && !scenario->has_overlap) {
        if (why)
            *why = g_strdup("strategy 'custom' needs an overlap: map in the scenario");
        return FALSE;
    }
    guint domain_gpus;
    if (strategy->userbuffers && tps_place_tp_crosses(scenario, &domain_gpus)) {
        if (why)
            *why = g_strdup_printf("strategy '%s' uses comm+GEMM overlap, which is single-node "
                                   "TP only: tp %u exceeds the %u GPUs of one NVLink domain",
                                   strategy->name, scenario->tp, domain_gpus);
        return FALSE;
    }
    return TRUE;
}

gboolean
tps_strategy_usable(const TpsStrategy *strategy, const TpsScenario *scenario, char **why)
{
    if (!tps_strategy_applies(strategy, scenario, why))
        return FALSE;
    if (!strategy->implemented) {
        if (why)
            *why = g_strdup_printf("strategy '%s' (%s) is not modelled by this version of tpsim "
                                   "yet",
                                   strategy->name, strategy->summary);
        return FALSE;
    }
    return TRUE;
}

static gboolean
set_error(const TpsScenario *scenario, gboolean from_scenario, GError **error, char *msg)
{
    if (from_scenario)
        tps_input_error_at(error, scenario->file, scenario->strategies_line,
                           scenario->strategies_column, "%s", msg);
    else
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "--strategy: %s", msg);
    g_free(msg);
    return FALSE;
}

static const TpsStrategy **select_strategies(const TpsScenario *scenario,
                                             const char *const *requested, gboolean keep_unusable,
                                             GError **error);

const TpsStrategy **
tps_strategy_select(const TpsScenario *scenario, const char *const *requested, GError **error)
{
    return select_strategies(scenario, requested, FALSE, error);
}

const TpsStrategy **
tps_strategy_select_all(const TpsScenario *scenario, const char *const *requested,
                        GError **error)
{
    return select_strategies(scenario, requested, TRUE, error);
}

static const TpsStrategy **
select_strategies(const TpsScenario *scenario, const char *const *requested,
                  gboolean keep_unusable, GError **error)
{
    gboolean from_scenario = FALSE;
    GPtrArray *out = g_ptr_array_new();

    if (requested == NULL && scenario->strategies) {
        requested = (const char *const *)scenario->strategies;
        from_scenario = TRUE;
    }
    if (requested == NULL) {
        for (guint i = 0; i < G_N_ELEMENTS(strategies); i++)
            if (tps_strategy_usable(&strategies[i], scenario, NULL))
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
                                   : g_strdup_printf("unknown strategy '%s'; known: %s", *r, list)),
                   NULL;
        }
        if (!keep_unusable && !tps_strategy_usable(s, scenario, &why)) {
            g_ptr_array_free(out, TRUE);
            return set_error(scenario, from_scenario, error, why), NULL;
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

/* ---- per-GEMM overlap configurations of the presets ---- */

/* `method` on its slot, every knob left to Transformer Engine's defaults
 * (fill_defaults()). */
static void
set_method(TpsOverlapConfig *c, TpsMethod method)
{
    memset(c, 0, sizeof *c);
    c->method = method;
    c->set = TRUE;
}

/* `method` on `num_sm` SMs without SM margin (a tuned configuration), or
 * with TE's defaults when num_sm is 0. */
static void
set_tuned(TpsOverlapConfig *c, TpsMethod method, guint num_sm)
{
    set_method(c, method);
    if (num_sm != 0) {
        c->num_sm = num_sm;
        c->set_sm_margin = FALSE;
        c->given = TPS_KNOB_NUM_SM | TPS_KNOB_SET_SM_MARGIN;
    }
}

/* The method whose defaults a slot's knobs take: TE fills a GEMM's
 * configuration from get_default_config() of its default method, which
 * is the dgrad's own method once a reduce-scatter method is set on a
 * column-parallel dgrad (initialize_ub moves it to that method's list). */
static TpsMethod
defaults_method(TpsGemmSlot slot, const TpsOverlapConfig *c, TpsOpKind op_kind)
{
    gboolean dgrad = slot == TPS_GEMM_QKV_DGRAD || slot == TPS_GEMM_FC1_DGRAD;
    if (dgrad && tps_method_info(c->method)->gemm_rs != NULL)
        return c->method;
    /* The op slot stands for an AG or an RS slot; pipeline runs only on
     * RS ones, whose defaults are its own. */
    if (slot == TPS_GEMM_OP && c->method == TPS_METHOD_PIPELINE)
        return TPS_METHOD_PIPELINE;
    return tps_method_te_default(slot, op_kind);
}

void
tps_strategy_fill_defaults(TpsOverlapConfig *c, TpsGemmSlot slot, guint tp, TpsOpKind op_kind)
{
    const TpsMethodInfo *m = tps_method_info(c->method);
    if (c->method == TPS_METHOD_NONE) {
        if (c->cga_size == 0)
            c->cga_size = m->defaults.cga_size;
        return;
    }
    const TpsOverlapConfig *d = &tps_method_info(defaults_method(slot, c, op_kind))->defaults;
    if (m->splits_per_rank)
        c->num_splits = tp;
    else if (m->has_splits && (!(c->given & TPS_KNOB_NUM_SPLITS) || c->num_splits == 0))
        c->num_splits = d->num_splits != 0 ? d->num_splits : m->defaults.num_splits;
    if (!(c->given & TPS_KNOB_NUM_SM) || c->num_sm == 0)
        c->num_sm = d->num_sm;
    if (!(c->given & TPS_KNOB_CGA_SIZE) || c->cga_size == 0)
        c->cga_size = d->cga_size;
    if (!(c->given & TPS_KNOB_SET_SM_MARGIN))
        c->set_sm_margin = d->set_sm_margin;
    if (!(c->given & TPS_KNOB_AGGREGATE))
        c->aggregate = d->aggregate;
    if (!(c->given & TPS_KNOB_USE_CE))
        c->use_ce = d->use_ce;
}

static const TpsGemmSlot ag_fprop[] = {TPS_GEMM_QKV_FPROP, TPS_GEMM_FC1_FPROP};
static const TpsGemmSlot ag_dgrad[] = {TPS_GEMM_PROJ_DGRAD, TPS_GEMM_FC2_DGRAD};
static const TpsGemmSlot rs_fprop[] = {TPS_GEMM_PROJ_FPROP, TPS_GEMM_FC2_FPROP};
static const TpsGemmSlot bulk_slots[] = {TPS_GEMM_QKV_DGRAD, TPS_GEMM_FC1_DGRAD, TPS_GEMM_QKV_WGRAD,
                                         TPS_GEMM_FC1_WGRAD};

void
tps_strategy_overlap(const TpsStrategy *strategy, const TpsScenario *scenario,
                     TpsOverlapConfig out[TPS_GEMM_SLOT_COUNT])
{
    const guint t = scenario->tp;
    const gboolean ag_op = scenario->is_op && scenario->op_kind == TPS_OP_AG_GEMM;
    memset(out, 0, sizeof(TpsOverlapConfig) * TPS_GEMM_SLOT_COUNT);

    switch (strategy->id) {
    case TPS_STRATEGY_RING_AG:
        for (guint i = 0; i < 2; i++) {
            set_method(&out[ag_fprop[i]], TPS_METHOD_RING_EXCHANGE);
            set_method(&out[ag_dgrad[i]], TPS_METHOD_RING_EXCHANGE);
        }
        set_method(&out[TPS_GEMM_OP], TPS_METHOD_RING_EXCHANGE);
        break;
    case TPS_STRATEGY_RING_RS:
        for (guint i = 0; i < 2; i++)
            set_method(&out[rs_fprop[i]], TPS_METHOD_RING_EXCHANGE);
        set_method(&out[TPS_GEMM_OP], TPS_METHOD_RING_EXCHANGE);
        break;
    case TPS_STRATEGY_PIPELINE_RS:
        for (guint i = 0; i < 2; i++)
            set_method(&out[rs_fprop[i]], TPS_METHOD_PIPELINE);
        set_method(&out[TPS_GEMM_OP], TPS_METHOD_PIPELINE);
        break;
    case TPS_STRATEGY_BULK:
        for (guint i = 0; i < G_N_ELEMENTS(bulk_slots); i++)
            set_method(&out[bulk_slots[i]], TPS_METHOD_BULK);
        break;
    case TPS_STRATEGY_TE_DEFAULT:
    case TPS_STRATEGY_TE_A100: {
        /* real-schedules.md section 2: TE's default table (the methods'
         * defaults), and NVIDIA's A100 GPT-3 175B configuration (bulk 2
         * SMs, pipeline 4 SMs and 4 splits, no SM margin anywhere). */
        gboolean a100 = strategy->id == TPS_STRATEGY_TE_A100;
        for (guint i = 0; i < 2; i++) {
            set_method(&out[ag_fprop[i]], TPS_METHOD_RING_EXCHANGE);
            set_method(&out[ag_dgrad[i]], TPS_METHOD_RING_EXCHANGE);
            set_tuned(&out[rs_fprop[i]], TPS_METHOD_PIPELINE, a100 ? 4 : 0);
        }
        for (guint i = 0; i < G_N_ELEMENTS(bulk_slots); i++)
            set_tuned(&out[bulk_slots[i]], TPS_METHOD_BULK, a100 ? 2 : 0);
        if (ag_op)
            set_method(&out[TPS_GEMM_OP], TPS_METHOD_RING_EXCHANGE);
        else
            set_tuned(&out[TPS_GEMM_OP], TPS_METHOD_PIPELINE, a100 ? 4 : 0);
        break;
    }
    case TPS_STRATEGY_CUSTOM:
        for (guint i = 0; i < TPS_GEMM_SLOT_COUNT; i++)
            if (scenario->overlap[i].set)
                out[i] = scenario->overlap[i];
        break;
    default:
        break;
    }
    for (guint i = 0; i < TPS_GEMM_SLOT_COUNT; i++)
        tps_strategy_fill_defaults(&out[i], (TpsGemmSlot)i, t, scenario->op_kind);
}
