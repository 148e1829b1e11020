/* The userbuffers configuration of one layout: see tune.h. */
#include "sched/tune.h"

#include <math.h>
#include <string.h>

#include "core/error.h"
#include "sched/method.h"
#include "sched/tune-private.h"

/* ---- groups ---- */

TpsTuneGroup
tps_tune_group_of(TpsGemmSlot slot)
{
    switch (slot) {
    case TPS_GEMM_QKV_FPROP:
    case TPS_GEMM_FC1_FPROP:
    case TPS_GEMM_PROJ_DGRAD:
    case TPS_GEMM_FC2_DGRAD:
        return TPS_TUNE_GROUP_AG;
    case TPS_GEMM_PROJ_FPROP:
    case TPS_GEMM_FC2_FPROP:
        return TPS_TUNE_GROUP_RS;
    case TPS_GEMM_QKV_DGRAD:
    case TPS_GEMM_FC1_DGRAD:
        return TPS_TUNE_GROUP_BULK_DGRAD;
    default:
        return TPS_TUNE_GROUP_BULK_WGRAD;
    }
}

const char *
tps_tune_group_flag(TpsTuneGroup group)
{
    static const char *const flags[] = {
        [TPS_TUNE_GROUP_AG] = "--disable-tp-comm-overlap-ag",
        [TPS_TUNE_GROUP_RS] = "--disable-tp-comm-overlap-rs",
        [TPS_TUNE_GROUP_BULK_DGRAD] = "--disable-tp-comm-bulk-dgrad",
        [TPS_TUNE_GROUP_BULK_WGRAD] = "--disable-tp-comm-bulk-wgrad",
    };
    g_return_val_if_fail(group < TPS_TUNE_GROUP_COUNT, "");
    return flags[group];
}

/* ---- the space ---- */

#define ALL_KNOBS                                                                                  \
    (TPS_KNOB_NUM_SPLITS | TPS_KNOB_NUM_SM | TPS_KNOB_CGA_SIZE | TPS_KNOB_SET_SM_MARGIN |          \
     TPS_KNOB_AGGREGATE | TPS_KNOB_USE_CE)

void
tps_tune_candidate(const TpsScenario *sc, TpsGemmSlot slot, TpsMethod method, guint num_splits,
                   guint num_sm, gboolean margin, gboolean aggregate, gboolean use_ce,
                   TpsOverlapConfig *out)
{
    TpsOverlapConfig c = {
        .set = TRUE,
        .method = method,
        .num_splits = num_splits,
        .num_sm = num_sm,
        .set_sm_margin = margin,
        .aggregate = aggregate,
        .use_ce = use_ce,
        .given = ALL_KNOBS & ~(guint)TPS_KNOB_CGA_SIZE,
    };
    /* cga_size has no modelled effect: TE's default of the slot. */
    tps_strategy_fill_defaults(&c, slot, sc->tp, sc->op_kind);
    c.given = ALL_KNOBS;
    *out = c;
}

static void
add(TpsTuneSlotSpace *s, const TpsOverlapConfig *c)
{
    g_return_if_fail(s->n < TPS_TUNE_MAX_CANDIDATES);
    s->c[s->n++] = *c;
}

static const guint sm_choices[] = {2, 4, 8, 16, 32};

static void
space_ag(const TpsScenario *sc, TpsGemmSlot slot, TpsTuneSlotSpace *s)
{
    TpsOverlapConfig c;
    const gboolean can_aggregate = sc->tp % 2 == 0 && sc->tp > 2;
    for (int agg = 0; agg <= (can_aggregate ? 1 : 0); agg++) {
        tps_tune_candidate(sc, slot, TPS_METHOD_RING_EXCHANGE, sc->tp, 1, FALSE, agg, TRUE, &c);
        add(s, &c);
    }
    for (guint i = 0; i < 3; i++) {
        tps_tune_candidate(sc, slot, TPS_METHOD_RING_EXCHANGE, sc->tp, sm_choices[i], FALSE, FALSE,
                           FALSE, &c);
        add(s, &c);
    }
}

static void
space_sm(const TpsScenario *sc, TpsGemmSlot slot, TpsMethod method, guint splits,
         TpsTuneSlotSpace *s)
{
    TpsOverlapConfig c;
    for (guint i = 0; i < G_N_ELEMENTS(sm_choices); i++) {
        if (sm_choices[i] >= sc->hardware.sms)
            continue;
        for (int margin = 0; margin <= 1; margin++) {
            tps_tune_candidate(sc, slot, method, splits, sm_choices[i], margin, FALSE, TRUE, &c);
            add(s, &c);
        }
    }
}

static void
space_rs(const TpsScenario *sc, TpsGemmSlot slot, TpsTuneSlotSpace *s)
{
    static const guint splits[] = {2, 4, 8};
    for (guint i = 0; i < G_N_ELEMENTS(splits); i++)
        if (splits[i] <= sc->hidden)
            space_sm(sc, slot, TPS_METHOD_PIPELINE, splits[i], s);
    TpsOverlapConfig c;
    for (int margin = 0; margin <= 1; margin++) {
        tps_tune_candidate(sc, slot, TPS_METHOD_RING_EXCHANGE, sc->tp, 16, margin, FALSE, TRUE, &c);
        add(s, &c);
    }
}

void
tps_tune_space_default(const TpsScenario *scenario, TpsTuneSpace *space)
{
    memset(space, 0, sizeof *space);
    for (guint s = 0; s < TPS_GEMM_OP; s++) {
        TpsTuneSlotSpace *ss = &space->slot[s];
        switch (tps_tune_group_of((TpsGemmSlot)s)) {
        case TPS_TUNE_GROUP_AG:
            space_ag(scenario, (TpsGemmSlot)s, ss);
            break;
        case TPS_TUNE_GROUP_RS:
            space_rs(scenario, (TpsGemmSlot)s, ss);
            break;
        default:
            space_sm(scenario, (TpsGemmSlot)s, TPS_METHOD_BULK, 0, ss);
            break;
        }
    }
    for (guint g = 0; g < TPS_TUNE_GROUP_COUNT; g++)
        space->group_may_be_off[g] = TRUE;
    space->max_exhaustive = 256;
    space->max_passes = 4;
    space->a100_start = TRUE;
}

guint64
tps_tune_space_size(const TpsTuneSpace *space)
{
    guint64 total = 1;
    for (guint g = 0; g < TPS_TUNE_GROUP_COUNT; g++) {
        guint64 on = 1;
        for (guint s = 0; s < TPS_GEMM_OP; s++)
            if (tps_tune_group_of((TpsGemmSlot)s) == g)
                on *= MAX(space->slot[s].n, 1u);
        total *= on + (space->group_may_be_off[g] ? 1 : 0);
        if (total > G_GUINT64_CONSTANT(1) << 40)
            return G_GUINT64_CONSTANT(1) << 40; /* far beyond any exhaustive limit */
    }
    return total;
}

/* ---- the state of the search ---- */

gboolean
tps_tune_same_config(const TpsOverlapConfig *a, const TpsOverlapConfig *b)
{
    if (a->method != b->method)
        return FALSE;
    if (a->method == TPS_METHOD_NONE)
        return TRUE;
    return a->num_splits == b->num_splits && a->num_sm == b->num_sm &&
           a->set_sm_margin == b->set_sm_margin && a->aggregate == b->aggregate &&
           a->use_ce == b->use_ce;
}

void
tps_tune_state_config(const TpsTuneSpace *space, const TuneState *st,
                      TpsOverlapConfig out[TPS_GEMM_SLOT_COUNT])
{
    memset(out, 0, sizeof(TpsOverlapConfig) * TPS_GEMM_SLOT_COUNT);
    for (guint s = 0; s < TPS_GEMM_OP; s++)
        if (st->on[tps_tune_group_of((TpsGemmSlot)s)] && space->slot[s].n > 0)
            out[s] = space->slot[s].c[st->pick[s]];
}

/* The state of `base`'s configuration in `space`, its configurations
 * added to the space where it has none of them. */
void
tps_tune_base_state(const TpsScenario *sc, const TpsStrategy *base, TpsTuneSpace *space,
                    TuneState *st)
{
    TpsOverlapConfig cfg[TPS_GEMM_SLOT_COUNT];
    tps_strategy_overlap(base, sc, cfg);
    memset(st, 0, sizeof *st);
    for (guint s = 0; s < TPS_GEMM_OP; s++)
        if (cfg[s].method != TPS_METHOD_NONE)
            st->on[tps_tune_group_of((TpsGemmSlot)s)] = TRUE;
    for (guint s = 0; s < TPS_GEMM_OP; s++) {
        TpsTuneSlotSpace *ss = &space->slot[s];
        if (cfg[s].method == TPS_METHOD_NONE)
            continue; /* a slot of a group on left without overlap: the first candidate */
        guint i;
        for (i = 0; i < ss->n; i++)
            if (tps_tune_same_config(&ss->c[i], &cfg[s]))
                break;
        if (i == ss->n && ss->n < TPS_TUNE_MAX_CANDIDATES) {
            cfg[s].given = ALL_KNOBS;
            add(ss, &cfg[s]);
        }
        st->pick[s] = MIN(i, ss->n - 1);
    }
}

/* ---- the report ---- */

void
tps_tune_report_clear(TpsTuneReport *report)
{
    if (report == NULL)
        return;
    if (report->ranked != NULL)
        g_array_unref(report->ranked);
    memset(report, 0, sizeof *report);
}

const TpsTuneEntry *
tps_tune_best(const TpsTuneReport *report)
{
    g_return_val_if_fail(report != NULL && report->ranked != NULL && report->ranked->len > 0, NULL);
    return &g_array_index(report->ranked, TpsTuneEntry, 0);
}

/* ---- the search ---- */

/* Refuse what cannot take userbuffers, with the reason. */
static gboolean
check_scenario(const TpsScenario *sc, const TpsStrategy *base, GError **error)
{
    g_autofree char *why = NULL;
    if (sc->is_op) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "%s: tune needs a model scenario (an op has one GEMM: tpsim run compares its "
                    "methods)",
                    sc->file != NULL ? sc->file : "scenario");
        return FALSE;
    }
    const TpsStrategy *te = tps_strategy_by_id(TPS_STRATEGY_TE_DEFAULT);
    if (!tps_strategy_usable(te, sc, &why) || !tps_strategy_usable(base, sc, &why)) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "%s: cannot tune userbuffers: %s",
                    sc->file != NULL ? sc->file : "scenario", why);
        return FALSE;
    }
    if (!base->userbuffers) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "tune: strategy %s uses no userbuffers; start from one that does "
                    "(te-default, te-a100, ring-ag, ring-rs, pipeline-rs, bulk or custom)",
                    base->name);
        return FALSE;
    }
    return TRUE;
}

/* Coordinate descent from `base`, then from NVIDIA's tuned A100 table
 * (te-a100) when that is another start: a local optimum depends on where
 * the descent starts, and the second start costs little (configurations
 * are simulated once). The faster end is kept, with its slot gains. */
static gboolean
descend_from_starts(Evaluator *ev, const TpsScenario *sc, const TpsStrategy *base,
                    TpsTuneSpace *space, TuneState *best, TpsTuneReport *report, GError **error)
{
    guint passes = 0;
    if (!tps_tune_descend(ev, best, &passes, report->slot_gain, error))
        return FALSE;
    report->passes = passes;
    const TpsStrategy *a100 = tps_strategy_by_id(TPS_STRATEGY_TE_A100);
    if (!space->a100_start || base == a100 || !tps_strategy_usable(a100, sc, NULL))
        return TRUE;
    TuneState other;
    tps_tune_base_state(sc, a100, space, &other);
    report->second_start = TRUE;
    TpsTuneSlotGain gains[TPS_GEMM_OP][TPS_METHOD_COUNT];
    if (!tps_tune_descend(ev, &other, &passes, gains, error))
        return FALSE;
    report->passes += passes;
    guint idx[2];
    TuneState ends[2] = {*best, other};
    if (!tps_tune_evaluate(ev, ends, 2, passes, "starts", idx, error))
        return FALSE;
    if (g_array_index(ev->entries, TpsTuneEntry, idx[1]).result.step_time_s <
        g_array_index(ev->entries, TpsTuneEntry, idx[0]).result.step_time_s) {
        *best = other;
        memcpy(report->slot_gain, gains, sizeof gains);
    }
    return TRUE;
}

gboolean
tps_tune(const TpsScenario *scenario, const TpsStrategy *base, const TpsTuneSpace *space_in,
         guint jobs, TpsTuneProgress progress, gpointer data, TpsTuneReport *report, GError **error)
{
    g_return_val_if_fail(scenario != NULL && base != NULL && space_in != NULL && report != NULL,
                         FALSE);
    memset(report, 0, sizeof *report);
    if (!check_scenario(scenario, base, error))
        return FALSE;
    TpsTuneSpace *space = g_memdup2(space_in, sizeof *space);
    TuneState start;
    tps_tune_base_state(scenario, base, space, &start);

    Evaluator ev;
    tps_tune_evaluator_init(&ev, scenario, space, jobs, progress, data);
    gboolean ok = tps_simulate_cached(scenario, tps_strategy_by_id(TPS_STRATEGY_MEGATRON), ev.cache,
                                      &report->none, NULL, error);
    guint base_index = 0;
    ok = ok && tps_tune_evaluate(&ev, &start, 1, 0, "base", &base_index, error);
    report->exhaustive = tps_tune_space_size(space) <= space->max_exhaustive;
    TuneState best = start;
    if (ok && report->exhaustive)
        ok = tps_tune_exhaustive(&ev, &best, error);
    else if (ok)
        ok = descend_from_starts(&ev, scenario, base, space, &best, report, error);
    if (ok) {
        report->base = g_array_index(ev.entries, TpsTuneEntry, base_index);
        tps_tune_rank(&ev, report);
        report->base.gain = report->none.step_time_s / report->base.result.step_time_s - 1.0;
        if (report->exhaustive)
            tps_tune_slot_gains_exhaustive(&ev, report);
        tps_tune_explain(scenario, report);
    }
    tps_tune_evaluator_clear(&ev);
    g_free(space);
    if (!ok)
        tps_tune_report_clear(report);
    return ok;
}
