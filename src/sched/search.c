/* Layout search at a fixed GPU count (search.h, docs/search.md). */
#include "sched/search.h"

#include <math.h>
#include <string.h>

#include "core/error.h"
#include "cost/topology.h"
#include "sched/pipeline.h"

const char *const tps_objective_names[] = {"step_time", "tokens_per_gpu", NULL};

struct TpsSearch {
    TpsScenario base; /* the caller's scenario, copied */
    TpsSearchOptions options;
    GArray *points; /* TpsLayout */
    TpsSearchCounts counts;
    TpsSimCache *cache;
};

static const char *const recompute_keys[] = {"none", "selective", "full"};

char *
tps_layout_key(const TpsLayout *l)
{
    const char *recompute = recompute_keys[l->recompute];
    const char *dopt = l->distributed_optimizer ? "dopt" : "nodopt";
    if (l->ep > 1 || l->etp != 0)
        return g_strdup_printf("tp%u-cp%u-ep%u-etp%u-pp%u-vpp%u-mb%" G_GUINT64_FORMAT "-%s-%s-%s",
                               l->tp, MAX(l->cp, 1u), l->ep, l->etp, l->pp, l->vpp, l->micro_batch,
                               recompute, dopt, l->strategy->name);
    if (l->cp > 1)
        return g_strdup_printf("tp%u-cp%u%s%s-pp%u-vpp%u-mb%" G_GUINT64_FORMAT "-%s-%s-%s", l->tp,
                               l->cp, l->cp_comm == TPS_CP_P2P ? "" : "-",
                               l->cp_comm == TPS_CP_P2P ? "" : tps_cp_comm_names[l->cp_comm], l->pp,
                               l->vpp, l->micro_batch, recompute, dopt, l->strategy->name);
    return g_strdup_printf("tp%u-pp%u-vpp%u-mb%" G_GUINT64_FORMAT "-%s-%s-%s", l->tp, l->pp,
                           l->vpp, l->micro_batch, recompute, dopt, l->strategy->name);
}

void
tps_layout_apply(const TpsLayout *l, TpsScenario *sc)
{
    sc->tp = l->tp;
    sc->pp = l->pp;
    sc->vpp = l->vpp;
    sc->dp = l->dp;
    sc->cp = MAX(l->cp, 1u);
    sc->cp_comm = l->cp_comm;
    if (l->cp_comm == TPS_CP_A2A_P2P)
        sc->cp_a2a = tps_search_hierarchical_a2a(&sc->hardware, l->tp);
    sc->ep = MAX(l->ep, 1u);
    sc->etp = l->etp;
    sc->micro_batch = l->micro_batch;
    sc->recompute = l->recompute;
    sc->distributed_optimizer = l->distributed_optimizer;
    sc->sp = l->strategy->needs_sp;
}

/* The busiest stage before the strategy's userbuffers (which every stage
 * holds alike), as tps_pipeline_simulate() picks it. */
static double
stage_memory_bytes(const TpsScenario *sc)
{
    double busiest = 0.0;
    for (guint s = 0; s < sc->pp; s++) {
        TpsStageMemory m;
        tps_pipeline_stage_memory(sc, s, &m);
        if (s == 0 || m.total > busiest)
            busiest = m.total;
    }
    return busiest;
}

static double
userbuffer_bytes(const TpsScenario *sc, const TpsStrategy *strategy)
{
    TpsOverlapConfig overlap[TPS_GEMM_SLOT_COUNT];
    TpsStageMemory ub = {0};
    tps_strategy_overlap(strategy, sc, overlap);
    tps_stage_memory_add_userbuffers(sc, overlap, &ub);
    return ub.total;
}

/* The same sum, in the same order, as simulate.c's memory_gib. */
static double
memory_gib(double stage_bytes, double userbuffers)
{
    return (stage_bytes + userbuffers) / (double)(1 << 30);
}

double
tps_layout_memory_gib(const TpsScenario *sc, const TpsStrategy *strategy)
{
    return memory_gib(stage_memory_bytes(sc), userbuffer_bytes(sc, strategy));
}

static void
add_divisors(GArray *out, guint64 n, guint64 limit)
{
    for (guint64 d = 1; d <= n && d <= limit; d++)
        if (n % d == 0)
            g_array_append_val(out, d);
}

/* The presets that may run at `tp`: at tp 1 there is no TP communication
 * and Megatron turns sequence parallelism off (arguments.py sets
 * sequence_parallel to False when tensor_model_parallel_size is 1), so
 * only tp-allreduce, the preset without SP; above, every implemented one. */
static gboolean
preset_candidate(const TpsStrategy *strategy, guint tp)
{
    if (!strategy->implemented || !strategy->for_model)
        return FALSE;
    return tp > 1 || !strategy->needs_sp;
}

static void
note_invalid(TpsSearchCounts *counts, GError *error)
{
    counts->invalid++;
    if (counts->first_invalid == NULL)
        counts->first_invalid = g_strdup(error->message);
}

/* Layout `l` with every preset that may run at its tp, into s->points:
 * those that apply, validate and fit in memory (with --all, those that
 * do not fit too), each counted. `sc` is the scratch scenario. */
static void
add_presets(TpsSearch *s, TpsLayout *l, TpsScenario *sc)
{
    guint n_strategies;
    const TpsStrategy *table = tps_strategy_table(&n_strategies);
    /* Per SP setting: validation and memory. */
    double stage_bytes[2] = {NAN, NAN};
    gboolean valid[2] = {FALSE, FALSE}, checked[2] = {FALSE, FALSE};
    for (guint i = 0; i < n_strategies; i++) {
        if (!preset_candidate(&table[i], l->tp))
            continue;
        l->strategy = &table[i];
        s->counts.candidates++;
        tps_layout_apply(l, sc);
        if (!tps_strategy_applies(l->strategy, sc, NULL)) {
            s->counts.presets_skipped++;
            continue;
        }
        const guint k = sc->sp ? 1 : 0;
        if (!checked[k]) {
            g_autoptr(GError) err = NULL;
            checked[k] = TRUE;
            valid[k] = tps_scenario_validate(sc, NULL, &err);
            if (!valid[k])
                note_invalid(&s->counts, err);
            else
                stage_bytes[k] = stage_memory_bytes(sc);
        } else if (!valid[k]) {
            s->counts.invalid++;
        }
        if (!valid[k])
            continue;
        const double gib = memory_gib(stage_bytes[k], userbuffer_bytes(sc, l->strategy));
        if (!(gib <= sc->hardware.memory_gib)) {
            s->counts.no_memory++;
            if (!s->options.all)
                continue;
        }
        g_array_append_val(s->points, *l);
    }
}

/* A mixture of experts: each expert layout of `l` (Megatron's expert
 * grid, etp x ep dividing tp x cp x dp): ep dividing the experts, etp 1
 * or tp; a dense model: `l` as it is. */
static void
add_expert_layouts(TpsSearch *s, TpsLayout *l, TpsScenario *sc)
{
    const TpsScenario *base = &s->base;
    if (!tps_scenario_is_moe(base)) {
        add_presets(s, l, sc);
        return;
    }
    const guint64 world = (guint64)l->tp * MAX(l->cp, 1u) * l->dp;
    for (guint ep = 1; ep <= base->moe.experts && ep <= TPS_SCENARIO_MAX_EP; ep++) {
        if (base->moe.experts % ep != 0)
            continue;
        for (guint i = 0; i < (l->tp > 1 ? 2u : 1u); i++) {
            const guint etp = i == 0 ? l->tp : 1;
            if (world % ((guint64)etp * ep) != 0)
                continue;
            l->ep = ep;
            l->etp = etp == l->tp ? 0 : etp; /* 0: as tp, the scenario's default */
            add_presets(s, l, sc);
        }
    }
}

/* Every layout of the (tp, pp, dp) split: each vpp, micro-batch,
 * recompute and distributed optimizer setting, with its presets. */
static void
add_split_layouts(TpsSearch *s, guint tp, guint cp, TpsCpComm comm, guint pp, guint dp,
                  TpsScenario *sc)
{
    const TpsScenario *base = &s->base;
    g_autoptr(GArray) vpps = g_array_new(FALSE, FALSE, sizeof(guint64));
    /* Interleaving needs stages to interleave. */
    add_divisors(vpps, base->layers / pp, pp > 1 ? TPS_SCENARIO_MAX_VPP : 1);
    g_autoptr(GArray) mbs = g_array_new(FALSE, FALSE, sizeof(guint64));
    add_divisors(mbs, base->global_batch / dp, TPS_SCENARIO_MAX_MICRO_BATCH);
    for (guint iv = 0; iv < vpps->len; iv++)
        for (guint im = 0; im < mbs->len; im++)
            for (guint rc = 0; rc < G_N_ELEMENTS(recompute_keys); rc++)
                for (guint dopt = 0; dopt < 2; dopt++) {
                    /* One replica has nothing to shard over. */
                    if (dopt && dp == 1)
                        continue;
                    TpsLayout l = {
                        .tp = tp,
                        .pp = pp,
                        .vpp = (guint)g_array_index(vpps, guint64, iv),
                        .dp = dp,
                        .cp = cp,
                        .cp_comm = comm,
                        .ep = 1,
                        .micro_batch = g_array_index(mbs, guint64, im),
                        .recompute = (TpsRecompute)rc,
                        .distributed_optimizer = dopt,
                    };
                    add_expert_layouts(s, &l, sc);
                }
}

/* Whether cp_comm a2a can split the heads of `base` over tp x cp (query
 * and K/V heads alike); the validator says why not where it cannot. */
static gboolean
a2a_fits(const TpsScenario *base, guint tp, guint cp)
{
    const guint64 ways = (guint64)tp * cp;
    return base->heads % ways == 0 && tps_scenario_kv_heads(base) % ways == 0;
}

guint
tps_search_hierarchical_a2a(const TpsHardware *hw, guint tp)
{
    g_return_val_if_fail(hw != NULL && tp >= 1, 0);
    return tps_topo_domain_gpus(hw) / tp;
}

/* Whether a2a+p2p applies at (tp, cp): its a2a group of CP ranks filling
 * the NVLink domain is at least 2 and short of cp, divides cp, and tp
 * times it divides the heads and K/V heads. */
static gboolean
hierarchical_fits(const TpsScenario *base, guint tp, guint cp)
{
    const guint a2a = tps_search_hierarchical_a2a(&base->hardware, tp);
    return a2a >= 2 && a2a < cp && cp % a2a == 0 && a2a_fits(base, tp, a2a);
}

guint
tps_search_default_max_cp(const TpsScenario *base)
{
    g_return_val_if_fail(base != NULL, 1);
    guint cp = 1;
    if (tps_scenario_is_moe(base))
        return cp; /* context parallelism with experts is refused (scenario.c) */
    while (2 * cp <= TPS_SEARCH_DEFAULT_MAX_CP &&
           base->seq_len / (2 * cp) >= TPS_SEARCH_CP_TOKENS && base->seq_len % (4ull * cp) == 0)
        cp *= 2;
    return cp;
}

/* Every layout with tp x pp dividing the GPUs; returns the number of
 * (tp, pp) pairs that did, with dp dividing the global batch. */
static guint
enumerate(TpsSearch *s)
{
    const TpsScenario *base = &s->base;
    const guint gpus = s->options.gpus;
    guint pairs = 0;
    g_auto(TpsScenario) sc = {0};
    tps_scenario_copy(&sc, base);

    for (guint tp = 1; tp <= TPS_SCENARIO_MAX_TP && tp <= gpus; tp++) {
        if (gpus % tp != 0 || base->heads % tp != 0)
            continue;
        if (tp > tps_topo_domain_gpus(&base->hardware) && !s->options.allow_cross_node_tp)
            continue;
        for (guint pp = 1; pp <= TPS_SCENARIO_MAX_PP && (guint64)tp * pp <= gpus; pp++) {
            if (gpus % (tp * pp) != 0 || base->layers % pp != 0)
                continue;
            /* Context parallelism (with --max-cp) splits the sequence in
             * 2 cp chunks; the rest of the layout's rules are the
             * validator's. */
            for (guint cp = 1; cp <= MAX(s->options.max_cp, 1u); cp++) {
                if (gpus % ((guint64)tp * pp * cp) != 0 || base->seq_len % (2ull * cp) != 0)
                    continue;
                const guint dp = gpus / (tp * pp * cp);
                if (base->global_batch % dp != 0)
                    continue;
                pairs++;
                add_split_layouts(s, tp, cp, TPS_CP_P2P, pp, dp, &sc);
                /* K/V all-gathered: no ring to hide, but no per-step
                 * kernels either, which wins where each rank's blocks are
                 * short. */
                if (cp > 1)
                    add_split_layouts(s, tp, cp, TPS_CP_ALLGATHER, pp, dp, &sc);
                if (cp > 1 && a2a_fits(base, tp, cp))
                    add_split_layouts(s, tp, cp, TPS_CP_A2A, pp, dp, &sc);
                if (cp > 1 && hierarchical_fits(base, tp, cp))
                    add_split_layouts(s, tp, cp, TPS_CP_A2A_P2P, pp, dp, &sc);
            }
        }
    }
    return pairs;
}

/* "1, 2, 4, 8" for the messages. */
static char *
divisor_list(guint64 n, guint64 limit)
{
    GString *s = g_string_new(NULL);
    for (guint64 d = 1; d <= n && d <= limit; d++)
        if (n % d == 0)
            g_string_append_printf(s, "%s%" G_GUINT64_FORMAT, s->len ? ", " : "", d);
    return g_string_free(s, FALSE);
}

TpsSearch *
tps_search_new(const TpsScenario *base, const TpsSearchOptions *options, GError **error)
{
    if (base->is_op) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "%s: search needs a model scenario (model:), not an op scenario", base->file);
        return NULL;
    }
    if (options->gpus == 0) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "--gpus must be at least 1");
        return NULL;
    }
    g_autoptr(TpsSearch) s = g_new0(TpsSearch, 1);
    tps_scenario_copy(&s->base, base);
    s->options = *options;
    s->points = g_array_new(FALSE, FALSE, sizeof(TpsLayout));
    s->cache = tps_sim_cache_new();

    const guint pairs = enumerate(s);
    if (pairs == 0) {
        const guint node = tps_topo_domain_gpus(&base->hardware);
        g_autofree char *tps = divisor_list(
            base->heads, options->allow_cross_node_tp ? TPS_SCENARIO_MAX_TP : MIN(node, TPS_SCENARIO_MAX_TP));
        g_autofree char *pps = divisor_list(base->layers, TPS_SCENARIO_MAX_PP);
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "--gpus %u: no layout divides it: it must be tp x pp x dp with tp one of %s "
                    "(divisors of model.heads %" G_GUINT64_FORMAT "%s), pp one of %s (divisors "
                    "of model.layers %" G_GUINT64_FORMAT ") and dp dividing "
                    "training.global_batch (%" G_GUINT64_FORMAT ")",
                    options->gpus, tps, base->heads,
                    options->allow_cross_node_tp ? "" : ", within a node; --allow-cross-node-tp "
                                                        "lifts that",
                    pps, base->layers, base->global_batch);
        return NULL;
    }
    if (s->points->len == 0) {
        const TpsSearchCounts *c = &s->counts;
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "%s: no layout of %u GPUs is left: of %" G_GUINT64_FORMAT
                    " layouts, %" G_GUINT64_FORMAT " need more than the %.3g GiB of one %s "
                    "(memory), %" G_GUINT64_FORMAT " break a rule between the values "
                    "(divisibility or limits%s%s)%s",
                    base->file ? base->file : base->name, options->gpus, c->candidates,
                    c->no_memory, base->hardware.memory_gib, base->hardware.name, c->invalid,
                    c->first_invalid ? "; the first: " : "",
                    c->first_invalid ? c->first_invalid : "",
                    c->no_memory ? "; --all lists the layouts that do not fit" : "");
        return NULL;
    }
    return g_steal_pointer(&s);
}

void
tps_search_free(TpsSearch *s)
{
    if (s == NULL)
        return;
    tps_scenario_clear(&s->base);
    if (s->points)
        g_array_unref(s->points);
    g_free(s->counts.first_invalid);
    tps_sim_cache_free(s->cache);
    g_free(s);
}

guint
tps_search_n_points(const TpsSearch *s)
{
    return s->points->len;
}

const TpsLayout *
tps_search_layout(const TpsSearch *s, guint index)
{
    g_return_val_if_fail(index < s->points->len, NULL);
    return &g_array_index(s->points, TpsLayout, index);
}

const TpsSearchCounts *
tps_search_counts(const TpsSearch *s)
{
    return &s->counts;
}

const TpsScenario *
tps_search_scenario(const TpsSearch *s)
{
    return &s->base;
}

/* The per-step figures of a simulated layout, on one GPU of a stage:
 * `layers` layers of `micro` micro-batches each. */
static void
fill_row(const TpsScenario *sc, const TpsResult *r, TpsSearchRow *row)
{
    const double micro = (double)sc->global_batch / ((double)sc->micro_batch * sc->dp);
    const double layers = (double)sc->layers / sc->pp;
    const double gpus = (double)sc->tp * sc->pp * sc->dp * MAX(sc->cp, 1u);
    row->step_time_s = r->step_time_s;
    row->tokens_per_s_per_gpu = r->tokens_per_s / gpus;
    row->mfu = r->mfu;
    row->model_tflops_per_gpu = r->model_tflops_per_gpu;
    row->bubble_s = r->bubble_fraction * r->compute_end_s;
    row->exposed_tp_s = r->exposed_comm_ms * 1e-3 * layers * micro;
    row->dp_exposed_s = r->dp_exposed_ms * 1e-3;
    row->optimizer_s = r->optimizer_ms * 1e-3;
    /* The layers' time split by FLOPs: the share of the hardware FLOPs
     * that recompute adds (none without recompute). */
    const double hw = tps_hardware_flops_per_iteration(sc);
    const double share = hw > 0 ? (hw - tps_model_flops_per_iteration(sc)) / hw : 0.0;
    row->recompute_s = (r->forward_ms + r->backward_ms) * 1e-3 * layers * micro * share;
}

void
tps_search_row_from_result(const TpsSearch *s, guint index, const TpsResult *r, TpsSearchRow *row)
{
    g_return_if_fail(index < s->points->len);
    const TpsLayout *l = &g_array_index(s->points, TpsLayout, index);
    TpsScenario sc = s->base;
    tps_layout_apply(l, &sc);
    memset(row, 0, sizeof *row);
    row->layout = *l;
    row->index = index;
    row->memory_gib = r->memory_gib;
    row->memory_headroom_gib = sc.hardware.memory_gib - r->memory_gib;
    row->fits = r->fits_memory;
    row->simulated = r->fits_memory && !isnan(r->step_time_s);
    if (row->simulated) {
        fill_row(&sc, r, row);
        return;
    }
    row->step_time_s = row->tokens_per_s_per_gpu = row->mfu = row->model_tflops_per_gpu = NAN;
    row->bubble_s = row->exposed_tp_s = row->dp_exposed_s = row->recompute_s = NAN;
    row->optimizer_s = NAN;
}

/* The result of a layout pruned by memory: its memory, every time NAN. */
static void
unfit_result(const TpsScenario *sc, const TpsStrategy *strategy, double gib, TpsResult *r)
{
    memset(r, 0, sizeof *r);
    r->strategy = strategy;
    r->gain = NAN;
    r->step_time_s = r->forward_ms = r->backward_ms = r->exposed_comm_ms = r->tp_comm_ms = NAN;
    r->step_time_s_low = r->step_time_s_high = NAN;
    r->mfu = r->hfu = r->model_tflops_per_gpu = r->tokens_per_s = NAN;
    r->head_ms = r->optimizer_ms = r->bubble_fraction = r->dp_exposed_ms = r->compute_end_s =
        r->param_gather_exposed_ms = NAN;
    r->memory_weights_gib = r->memory_optimizer_gib = r->memory_activations_gib = NAN;
    r->memory_overheads_gib = NAN;
    r->memory_context_gib = r->memory_nccl_gib = r->memory_nvls_gib = r->memory_userbuffers_gib =
        r->memory_fragmentation_gib = NAN;
    r->memory_gib = gib;
    r->memory_headroom_gib = sc->hardware.memory_gib - gib;
    r->fits_memory = FALSE;
    r->micro_batches = sc->global_batch / (sc->micro_batch * sc->dp);
    r->op_time_ms = r->op_gemm_ms = r->op_comm_ms = r->op_overlap_efficiency = NAN;
}

gboolean
tps_search_evaluate(TpsSearch *s, guint index, gboolean use_cache, TpsSearchRow *row,
                    TpsResult *result, GError **error)
{
    g_return_val_if_fail(index < s->points->len, FALSE);
    const TpsLayout *l = &g_array_index(s->points, TpsLayout, index);
    /* A shallow copy: only the layout's numbers change; the strings and
     * the hardware model's arrays are shared, read-only. */
    TpsScenario sc = s->base;
    tps_layout_apply(l, &sc);

    TpsResult local;
    TpsResult *r = result ? result : &local;
    const double gib = tps_layout_memory_gib(&sc, l->strategy);
    if (!(gib <= sc.hardware.memory_gib)) {
        /* Pruned: listed by --all, never simulated. */
        unfit_result(&sc, l->strategy, gib, r);
    } else {
        if (!tps_simulate_cached(&sc, l->strategy, use_cache ? s->cache : NULL, r, NULL, error)) {
            g_autofree char *key = tps_layout_key(l);
            g_prefix_error(error, "layout %s: ", key);
            return FALSE;
        }
        /* The simulation's memory is the same closed form (the tests hold
         * them equal); where they would part, the simulation's figures are
         * the row's. */
    }
    if (row)
        tps_search_row_from_result(s, index, r, row);
    return TRUE;
}

/* ---- ranking ---- */

static int
cmp_rows(gconstpointer a, gconstpointer b, gpointer data)
{
    const TpsSearchRow *x = a, *y = b;
    const TpsObjective objective = *(const TpsObjective *)data;
    if (x->simulated != y->simulated)
        return x->simulated ? -1 : 1;
    if (x->simulated) {
        double vx = x->step_time_s, vy = y->step_time_s;
        if (objective == TPS_OBJECTIVE_TOKENS_PER_GPU) {
            vx = -x->tokens_per_s_per_gpu;
            vy = -y->tokens_per_s_per_gpu;
        }
        if (vx != vy)
            return vx < vy ? -1 : 1;
    }
    if (x->memory_gib != y->memory_gib)
        return x->memory_gib < y->memory_gib ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

void
tps_search_rank(TpsSearchRow *rows, guint n, TpsObjective objective)
{
    g_qsort_with_data(rows, (gint)n, sizeof *rows, cmp_rows, &objective);
}

TpsSearchTop *
tps_search_top_new(guint keep, TpsObjective objective)
{
    TpsSearchTop *top = g_new0(TpsSearchTop, 1);
    top->objective = objective;
    top->keep = keep;
    top->rows = g_array_sized_new(FALSE, FALSE, sizeof(TpsSearchRow), MIN(keep, 1024) + 1);
    return top;
}

void
tps_search_top_free(TpsSearchTop *top)
{
    if (top == NULL)
        return;
    g_array_unref(top->rows);
    g_free(top);
}

void
tps_search_top_add(TpsSearchTop *top, const TpsSearchRow *row)
{
    top->n++;
    top->simulated += row->simulated;
    top->any_unfit |= !row->fits;
    if (row->simulated && row->fits && row->layout.strategy->userbuffers &&
        (!top->has_best_ub || cmp_rows(row, &top->best_ub, &top->objective) < 0)) {
        top->best_ub = *row;
        top->has_best_ub = TRUE;
    }
    /* Where it ranks among the kept rows: after every one before it. */
    guint lo = 0, hi = top->rows->len;
    while (lo < hi) {
        const guint mid = lo + (hi - lo) / 2;
        if (cmp_rows(&g_array_index(top->rows, TpsSearchRow, mid), row, &top->objective) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo >= top->keep)
        return;
    g_array_insert_val(top->rows, lo, *row);
    if (top->rows->len > top->keep)
        g_array_set_size(top->rows, top->keep);
}

/* ---- why the best wins ---- */

typedef struct {
    const char *what;
    double delta; /* best - second, seconds per step */
} Difference;

/* A time difference in the unit that shows it: ms below 10 s. */
static void
append_delta(GString *s, double seconds, double scale_s, gboolean sign)
{
    if (scale_s < 10.0)
        g_string_append_printf(s, sign ? "%+.1f ms" : "%.1f ms", seconds * 1e3);
    else
        g_string_append_printf(s, sign ? "%+.3f s" : "%.3f s", seconds);
}

static int
cmp_difference(gconstpointer a, gconstpointer b)
{
    double x = fabs(((const Difference *)a)->delta), y = fabs(((const Difference *)b)->delta);
    return x > y ? -1 : x < y;
}

char *
tps_search_explain(const TpsSearchRow *best, const TpsSearchRow *second)
{
    g_autofree char *kb = tps_layout_key(&best->layout);
    g_autofree char *ks = tps_layout_key(&second->layout);
    GString *s = g_string_new(NULL);
    const double dt = second->step_time_s - best->step_time_s;
    const double scale = second->step_time_s;
    g_string_append_printf(s, "%s beats %s by ", kb, ks);
    append_delta(s, dt, scale, FALSE);
    g_string_append_printf(s, " per step (%.2f%%).",
                           second->step_time_s > 0 ? 100.0 * dt / second->step_time_s : 0.0);
    Difference d[] = {
        {"pipeline bubble", best->bubble_s - second->bubble_s},
        {"exposed TP communication", best->exposed_tp_s - second->exposed_tp_s},
        {"exposed DP reduction", best->dp_exposed_s - second->dp_exposed_s},
        {"recompute", best->recompute_s - second->recompute_s},
        {"optimizer step", best->optimizer_s - second->optimizer_s},
    };
    qsort(d, G_N_ELEMENTS(d), sizeof d[0], cmp_difference);
    double listed = 0.0;
    gboolean any = FALSE;
    const char *sep = " Per step on the busiest stage, best minus runner-up:";
    for (guint i = 0; i < G_N_ELEMENTS(d); i++) {
        listed += d[i].delta;
        if (fabs(d[i].delta) < 0.5e-4 * scale)
            continue;
        g_string_append_printf(s, "%s %s ", sep, d[i].what);
        append_delta(s, d[i].delta, scale, TRUE);
        sep = ",";
        any = TRUE;
    }
    /* What is left: the layers' own compute, the transfers between
     * stages, everything the figures above do not name. */
    const double rest = (best->step_time_s - second->step_time_s) - listed;
    if (fabs(rest) >= 0.5e-4 * scale) {
        g_string_append_printf(s, "%s the rest (the layers' compute, stage transfers) ", sep);
        append_delta(s, rest, scale, TRUE);
        any = TRUE;
    }
    g_string_append(s, any ? "." : " They differ by less than 0.005% in every figure.");
    g_string_append_printf(s, " Memory per GPU: %.1f GiB against %.1f GiB.", best->memory_gib,
                           second->memory_gib);
    return g_string_free(s, FALSE);
}
