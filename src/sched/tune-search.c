/* Evaluation, exhaustive search, coordinate descent and ranking of the
 * tune module (tune.h). */
#include <math.h>
#include <string.h>

#include "core/error.h"
#include "sched/method.h"
#include "sched/tune-private.h"

/* ---- evaluation ---- */

void
tps_tune_evaluator_init(Evaluator *ev, const TpsScenario *sc, const TpsTuneSpace *space, guint jobs,
                        TpsTuneProgress progress, gpointer data)
{
    *ev = (Evaluator){
        .sc = sc,
        .space = space,
        .cache = tps_sim_cache_new(),
        .jobs = jobs != 0 ? jobs : MAX(1u, g_get_num_processors()),
        .progress = progress,
        .data = data,
        .memo = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL),
        .entries = g_array_new(FALSE, TRUE, sizeof(TpsTuneEntry)),
    };
}

void
tps_tune_evaluator_clear(Evaluator *ev)
{
    tps_sim_cache_free(ev->cache);
    g_hash_table_unref(ev->memo);
    g_array_unref(ev->entries);
}

static char *
config_key(const TpsOverlapConfig cfg[TPS_GEMM_SLOT_COUNT])
{
    GString *key = g_string_new(NULL);
    for (guint s = 0; s < TPS_GEMM_OP; s++) {
        const TpsOverlapConfig *c = &cfg[s];
        if (c->method == TPS_METHOD_NONE)
            g_string_append(key, "-|");
        else
            g_string_append_printf(key, "%d.%u.%u.%d.%d.%d|", c->method, c->num_splits, c->num_sm,
                                   c->set_sm_margin, c->aggregate, c->use_ce);
    }
    return g_string_free(key, FALSE);
}

/* One batch of simulations shared by the workers. */
typedef struct {
    const Evaluator *ev;
    TpsTuneEntry *todo;
    guint n;
    gint next, done; /* atomics */
    GMutex lock;
    GError *error; /* the first failure, under the lock */
} Batch;

static void
run_one(Batch *b, TpsScenario *local, guint i)
{
    TpsTuneEntry *e = &b->todo[i];
    memcpy(local->overlap, e->cfg, sizeof local->overlap);
    local->has_overlap = TRUE;
    GError *err = NULL;
    if (!tps_simulate_cached(local, tps_strategy_by_id(TPS_STRATEGY_CUSTOM), b->ev->cache,
                             &e->result, NULL, &err)) {
        g_mutex_lock(&b->lock);
        if (b->error == NULL)
            b->error = err;
        else
            g_error_free(err);
        g_mutex_unlock(&b->lock);
    }
    g_atomic_int_inc(&b->done);
}

static gpointer
worker(gpointer data)
{
    Batch *b = data;
    TpsScenario local = {0};
    tps_scenario_copy(&local, b->ev->sc);
    for (gint i; (i = g_atomic_int_add(&b->next, 1)) < (gint)b->n;)
        run_one(b, &local, (guint)i);
    tps_scenario_clear(&local);
    return NULL;
}

/* Simulate b->todo on ev->jobs threads (the caller's one of them, which
 * reports progress). */
static gboolean
run_batch(const Evaluator *ev, Batch *b, guint pass, const char *what, GError **error)
{
    GPtrArray *threads = g_ptr_array_new();
    for (guint j = 1; j < MIN(ev->jobs, b->n); j++)
        g_ptr_array_add(threads, g_thread_new("tune", worker, b));
    TpsScenario local = {0};
    tps_scenario_copy(&local, ev->sc);
    for (gint i; (i = g_atomic_int_add(&b->next, 1)) < (gint)b->n;) {
        run_one(b, &local, (guint)i);
        if (ev->progress)
            ev->progress(pass, what, (guint)g_atomic_int_get(&b->done), b->n, ev->data);
    }
    tps_scenario_clear(&local);
    for (guint j = 0; j < threads->len; j++)
        g_thread_join(g_ptr_array_index(threads, j));
    g_ptr_array_free(threads, TRUE);
    if (b->error != NULL) {
        g_propagate_error(error, b->error);
        return FALSE;
    }
    return TRUE;
}

gboolean
tps_tune_evaluate(Evaluator *ev, const TuneState *states, guint n, guint pass, const char *what,
                  guint *out, GError **error)
{
    Batch b = {.ev = ev, .todo = g_new0(TpsTuneEntry, MAX(n, 1u))};
    g_mutex_init(&b.lock);
    g_autofree guint *slot_of = g_new(guint, MAX(n, 1u)); /* todo index + 1, or 0: memo */
    g_autoptr(GHashTable) pending = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (guint i = 0; i < n; i++) {
        TpsOverlapConfig cfg[TPS_GEMM_SLOT_COUNT];
        tps_tune_state_config(ev->space, &states[i], cfg);
        char *key = config_key(cfg);
        gpointer hit = g_hash_table_lookup(ev->memo, key);
        gpointer queued = g_hash_table_lookup(pending, key);
        slot_of[i] = 0;
        if (hit != NULL) {
            out[i] = GPOINTER_TO_UINT(hit) - 1;
            g_free(key);
        } else if (queued != NULL) {
            slot_of[i] = GPOINTER_TO_UINT(queued);
            g_free(key);
        } else {
            TpsTuneEntry *e = &b.todo[b.n++];
            memcpy(e->cfg, cfg, sizeof cfg);
            memcpy(e->group_on, states[i].on, sizeof e->group_on);
            slot_of[i] = b.n;
            g_hash_table_insert(pending, key, GUINT_TO_POINTER(b.n));
        }
    }
    gboolean ok = b.n == 0 || run_batch(ev, &b, pass, what, error);
    if (ok) {
        /* Entries in the order asked: deterministic whatever the threads. */
        const guint first = ev->entries->len;
        g_array_append_vals(ev->entries, b.todo, b.n);
        GHashTableIter it;
        gpointer key, value;
        g_hash_table_iter_init(&it, pending);
        while (g_hash_table_iter_next(&it, &key, &value)) {
            g_hash_table_insert(ev->memo, key,
                                GUINT_TO_POINTER(first + GPOINTER_TO_UINT(value) - 1 + 1));
            g_hash_table_iter_steal(&it);
        }
        for (guint i = 0; i < n; i++)
            if (slot_of[i] != 0)
                out[i] = first + slot_of[i] - 1;
    }
    g_mutex_clear(&b.lock);
    g_free(b.todo);
    return ok;
}

static double
step_of(const Evaluator *ev, guint index)
{
    return g_array_index(ev->entries, TpsTuneEntry, index).result.step_time_s;
}

/* ---- exhaustive ---- */

/* The choices of group g: each combination of its slots' candidates, then
 * off (when it may be). Choice `k` into `st`. */
static guint
group_choices(const TpsTuneSpace *space, guint g)
{
    guint on = 1;
    for (guint s = 0; s < TPS_GEMM_OP; s++)
        if (tps_tune_group_of((TpsGemmSlot)s) == g)
            on *= MAX(space->slot[s].n, 1u);
    return on + (space->group_may_be_off[g] ? 1 : 0);
}

static void
set_group_choice(const TpsTuneSpace *space, guint g, guint k, TuneState *st)
{
    guint on = group_choices(space, g) - (space->group_may_be_off[g] ? 1 : 0);
    st->on[g] = k < on;
    for (guint s = 0; s < TPS_GEMM_OP; s++) {
        if (tps_tune_group_of((TpsGemmSlot)s) != g)
            continue;
        guint n = MAX(space->slot[s].n, 1u);
        st->pick[s] = k < on ? k % n : 0;
        k = k < on ? k / n : k;
    }
}

gboolean
tps_tune_exhaustive(Evaluator *ev, TuneState *best, GError **error)
{
    const guint64 total = tps_tune_space_size(ev->space);
    g_autofree TuneState *states = g_new0(TuneState, total);
    for (guint64 p = 0; p < total; p++) {
        guint64 rest = p;
        for (guint g = 0; g < TPS_TUNE_GROUP_COUNT; g++) {
            guint n = group_choices(ev->space, g);
            set_group_choice(ev->space, g, (guint)(rest % n), &states[p]);
            rest /= n;
        }
    }
    g_autofree guint *idx = g_new(guint, total);
    if (!tps_tune_evaluate(ev, states, (guint)total, 0, "exhaustive", idx, error))
        return FALSE;
    guint64 arg = 0;
    for (guint64 p = 1; p < total; p++)
        if (step_of(ev, idx[p]) < step_of(ev, idx[arg]))
            arg = p;
    *best = states[arg];
    return TRUE;
}

/* ---- coordinate descent ---- */

/* The fastest of `n` variants of *cur (the first: *cur itself); *cur
 * takes it when strictly faster. Returns whether it changed. */
static gboolean
pick_fastest(Evaluator *ev, TuneState *variants, guint n, guint pass, const char *what, guint *idx,
             TuneState *cur, GError **error, gboolean *failed)
{
    if (!tps_tune_evaluate(ev, variants, n, pass, what, idx, error)) {
        *failed = TRUE;
        return FALSE;
    }
    guint arg = 0;
    for (guint i = 1; i < n; i++)
        if (step_of(ev, idx[i]) < step_of(ev, idx[arg]))
            arg = i;
    if (arg == 0)
        return FALSE;
    *cur = variants[arg];
    return TRUE;
}

/* One slot's coordinate: every candidate with the rest of *cur fixed. */
static gboolean
descend_slot(Evaluator *ev, guint s, guint pass, TuneState *cur, guint *best_idx,
             TpsTuneSlotGain gains[TPS_METHOD_COUNT], GError **error, gboolean *failed)
{
    const guint n = ev->space->slot[s].n;
    g_autofree TuneState *variants = g_new(TuneState, n + 1);
    g_autofree guint *idx = g_new(guint, n + 1);
    variants[0] = *cur;
    for (guint i = 0; i < n; i++) {
        /* With its group on: a group switched off comes back when one of
         * its slots' candidates beats it. */
        variants[i + 1] = *cur;
        variants[i + 1].pick[s] = i;
        variants[i + 1].on[tps_tune_group_of((TpsGemmSlot)s)] = TRUE;
    }
    gboolean changed =
        pick_fastest(ev, variants, n + 1, pass, tps_gemm_slot_names[s], idx, cur, error, failed);
    if (*failed)
        return FALSE;
    for (guint m = 0; m < TPS_METHOD_COUNT; m++)
        gains[m] = (TpsTuneSlotGain){NAN, NAN, NAN, 0, 0, NAN};
    for (guint i = 0; i < n; i++) {
        TpsTuneSlotGain *g = &gains[ev->space->slot[s].c[i].method];
        /* The step stands in `gain` until tps_tune_rank() turns it into one. */
        if (isnan(g->gain) || step_of(ev, idx[i + 1]) < g->gain) {
            g->gain = step_of(ev, idx[i + 1]);
            g->candidate = i;
            g->entry = idx[i + 1];
        }
    }
    *best_idx = idx[0];
    return changed;
}

gboolean
tps_tune_descend(Evaluator *ev, TuneState *cur, guint *passes,
                 TpsTuneSlotGain gains[TPS_GEMM_OP][TPS_METHOD_COUNT], GError **error)
{
    const TpsTuneSpace *space = ev->space;
    gboolean failed = FALSE;
    for (guint s = 0; s < TPS_GEMM_OP; s++)
        for (guint m = 0; m < TPS_METHOD_COUNT; m++)
            gains[s][m] = (TpsTuneSlotGain){NAN, NAN, NAN, 0, 0, NAN};
    for (*passes = 1; *passes <= space->max_passes; (*passes)++) {
        gboolean changed = FALSE;
        for (guint g = 0; g < TPS_TUNE_GROUP_COUNT && !failed; g++) {
            if (space->group_may_be_off[g]) {
                TuneState v[2] = {*cur, *cur};
                guint idx[2];
                v[1].on[g] = !v[1].on[g];
                changed |= pick_fastest(ev, v, 2, *passes, "groups", idx, cur, error, &failed);
            }
            for (guint s = 0; s < TPS_GEMM_OP && !failed; s++) {
                guint at;
                if (tps_tune_group_of((TpsGemmSlot)s) == g && space->slot[s].n > 1)
                    changed |= descend_slot(ev, s, *passes, cur, &at, gains[s], error, &failed);
            }
        }
        if (failed)
            return FALSE;
        if (!changed)
            return TRUE;
    }
    *passes = space->max_passes;
    return TRUE;
}

/* ---- ranking ---- */

void
tps_tune_gain(const TpsScenario *sc, const TpsResult *none, const TpsResult *r, double *gain,
              double *low, double *high)
{
    double diff, lo, hi;
    /* none - r: positive when r is faster. */
    tps_result_difference(sc, none, r, &diff, &lo, &hi);
    *gain = none->step_time_s / r->step_time_s - 1.0;
    *low = lo / r->step_time_s;
    *high = hi / r->step_time_s;
}

/* By step, then by the order of evaluation. */
static gint
cmp_index(gconstpointer pa, gconstpointer pb, gpointer data)
{
    const Evaluator *ev = data;
    const guint a = *(const guint *)pa, b = *(const guint *)pb;
    const double sa = step_of(ev, a), sb = step_of(ev, b);
    if (sa != sb)
        return sa < sb ? -1 : 1;
    return a < b ? -1 : a > b;
}

void
tps_tune_rank(const Evaluator *ev, TpsTuneReport *report)
{
    const guint n = ev->entries->len;
    report->evaluated = n;
    g_autofree guint *order = g_new(guint, MAX(n, 1u));
    for (guint i = 0; i < n; i++)
        order[i] = i;
    g_qsort_with_data(order, (gint)n, sizeof(guint), cmp_index, (gpointer)ev);
    report->ranked = g_array_sized_new(FALSE, TRUE, sizeof(TpsTuneEntry), n);
    for (guint i = 0; i < n; i++)
        g_array_append_val(report->ranked, g_array_index(ev->entries, TpsTuneEntry, order[i]));
    const TpsTuneEntry *best = &g_array_index(report->ranked, TpsTuneEntry, 0);
    for (guint i = 0; i < report->ranked->len; i++) {
        TpsTuneEntry *e = &g_array_index(report->ranked, TpsTuneEntry, i);
        tps_tune_gain(ev->sc, &report->none, &e->result, &e->gain, &e->gain_low, &e->gain_high);
        e->beats_none = e->gain_low > 0.0;
        e->tied = i > 0 && tps_result_tied(ev->sc, &e->result, &best->result);
    }
    tps_tune_gain(ev->sc, &report->none, &report->base.result, &report->base.gain,
                  &report->base.gain_low, &report->base.gain_high);
    report->base.beats_none = report->base.gain_low > 0.0;
    /* Slot gains: the steps and entries descend_slot() left, as gains. */
    for (guint s = 0; s < TPS_GEMM_OP; s++)
        for (guint m = 0; m < TPS_METHOD_COUNT; m++) {
            TpsTuneSlotGain *g = &report->slot_gain[s][m];
            if (isnan(g->gain) || report->exhaustive)
                continue;
            const TpsTuneEntry *e = &g_array_index(ev->entries, TpsTuneEntry, g->entry);
            tps_tune_gain(ev->sc, &report->none, &e->result, &g->gain, &g->low, &g->high);
            g->slot_ms = e->result.gemms[s].time_ms;
        }
}

static gboolean
same_entry(const TpsTuneEntry *a, const TpsTuneEntry *b)
{
    if (memcmp(a->group_on, b->group_on, sizeof a->group_on) != 0)
        return FALSE;
    for (guint s = 0; s < TPS_GEMM_OP; s++)
        if (!tps_tune_same_config(&a->cfg[s], &b->cfg[s]))
            return FALSE;
    return TRUE;
}

/* The one slot in which `a` differs from `b` (TPS_GEMM_OP: none or
 * several), with the same groups on. */
static guint
only_difference(const TpsTuneEntry *a, const TpsTuneEntry *b)
{
    guint slot = TPS_GEMM_OP;
    if (memcmp(a->group_on, b->group_on, sizeof a->group_on) != 0)
        return TPS_GEMM_OP;
    for (guint s = 0; s < TPS_GEMM_OP; s++) {
        if (tps_tune_same_config(&a->cfg[s], &b->cfg[s]))
            continue;
        if (slot != TPS_GEMM_OP)
            return TPS_GEMM_OP;
        slot = s;
    }
    return slot;
}

void
tps_tune_slot_gains_exhaustive(const Evaluator *ev, TpsTuneReport *report)
{
    const TpsTuneEntry *best = tps_tune_best(report);
    for (guint s = 0; s < TPS_GEMM_OP; s++)
        for (guint m = 0; m < TPS_METHOD_COUNT; m++)
            report->slot_gain[s][m] = (TpsTuneSlotGain){NAN, NAN, NAN, 0, 0, NAN};
    for (guint i = 0; i < ev->entries->len; i++) {
        const TpsTuneEntry *e = &g_array_index(ev->entries, TpsTuneEntry, i);
        const guint slot = only_difference(e, best);
        const gboolean itself = slot == TPS_GEMM_OP && same_entry(e, best);
        for (guint s = 0; s < TPS_GEMM_OP; s++) {
            if (!itself && slot != s)
                continue;
            if (e->cfg[s].method == TPS_METHOD_NONE)
                continue;
            TpsTuneSlotGain *g = &report->slot_gain[s][e->cfg[s].method];
            double gain, low, high;
            tps_tune_gain(ev->sc, &report->none, &e->result, &gain, &low, &high);
            if (isnan(g->gain) || gain > g->gain)
                *g = (TpsTuneSlotGain){gain, low, high, 0, i, e->result.gemms[s].time_ms};
        }
    }
}
