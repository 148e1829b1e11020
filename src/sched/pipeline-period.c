/* The ordered replay's jump over the steady state: see replay-private.h
 * and docs/step-model.md, "The replay's periodic jump". */
#include "sched/replay-private.h"

#include <string.h>

/* ---- the steady state jumped over ----
 *
 * Between its warm-up and its cool-down a stage alternates one forward and
 * one backward, and the kinds of its ops (direction, model chunk, and so
 * their times and where their outputs go) repeat every P = 2 pp vpp ops:
 * the cursors of both directions advance by pp vpp, one group of pp
 * micro-batches per model chunk. The replay's arithmetic is additions,
 * maxima and comparisons of integer times, and the fluid sharing of the
 * flows reads only differences of times: so where the replay's whole
 * state (every stage's next op, when its stream is free, its last flow's
 * end, the inputs known ahead of its next op, the flows in their latency
 * phase, the ends the links remember, no flow in its fluid phase) is, one
 * period of ops later, the same state shifted by a time T, every period
 * after it repeats it shifted by T again, as long as the ops it runs are
 * of the steady kinds. The replay then moves the state m periods on at
 * once (m T later, m P ops further) and goes on from there, exact to the
 * ns: the steady periods are replayed twice (one to compare with) instead
 * of all of them. The state is compared at instants the replay has
 * handled whole (every event, then the re-solve) with no flow in its fluid
 * phase, the first such instant at which stage 0 has run a given number of
 * ops, so that the instants compared are each other's copies. */

/* The ops of a period: both cursors advance by pp vpp, one group of pp
 * micro-batches per model chunk, a forward and a backward each. */
static guint64
period_ops(const Stages *st)
{
    return 2 * (guint64)st->pp * st->vpp;
}

/* The ops of stage `s` whose kinds repeat every period: from its first
 * steady op (and after micro-batch 0's forwards where they wait for
 * parameter all-gathers) up to (not including) its cool-down or, where the last
 * micro-batch's backwards run in gradient buckets, the first of those
 * backwards' group (the last pp micro-batches of each model chunk). */
static void
regular_range(const Stages *st, guint s, guint64 *lo, guint64 *hi)
{
    const guint64 w = st->lane[s].warmup, total = st->total;
    *lo = w;
    *hi = 2 * total - w;
    if (st->buckets) {
        const guint pp = st->pp;
        const guint64 last = st->shape.micro - 1;
        /* The first backward of the last micro-batch: its group of pp,
         * model chunk 0 in backward order, its place in the group. */
        const guint64 nth = (last / pp) * pp * st->vpp + last % pp;
        *hi = MIN(*hi, position(st, s, nth, TRUE));
    }
    if (st->gathers) {
        /* After the last forward of micro-batch 0 (model chunk vpp - 1),
         * split by its buckets' parameter all-gathers. */
        *lo = MAX(*lo, position(st, s, (guint64)(st->vpp - 1) * st->pp, FALSE) + 1);
    }
    *hi = MAX(*hi, *lo);
}

/* Stage 0's ops between two states compared: an eighth of a period (or
 * the largest part of it, a half or a quarter, that divides it), so that
 * the first state of the steady state is found within that many ops of
 * its start and the jump then holds as many periods as it can (on the
 * 1T-class step a state is first repeated at stage 0's op 480 instead of
 * 705, and 5 periods are jumped instead of 4), but at least 16 ops (or a
 * period), since a state compared costs about as much as replaying 3 ops
 * of every stage. */
static guint64
period_step(guint64 period)
{
    guint64 parts = 8;
    while (parts > 1 && (period % parts != 0 || period / parts < MIN(period, 16)))
        parts /= 2;
    return period / parts;
}

void
tps_period_init(Period *pd, const Stages *st)
{
    const guint pp = st->pp;
    const guint64 period = period_ops(st), step = period_step(period);
    *pd = (Period){
        .period = period,
        .step = step,
        .lo = g_new(guint64, pp),
        .hi = g_new(guint64, pp),
        .bound = g_new(guint64, pp),
        /* The states of PERIOD_CYCLES periods back, and the one they
         * are compared with. */
        .slots = (guint)(PERIOD_CYCLES * ((period + step - 1) / step)) + 1,
    };
    pd->state = g_new(PeriodState, pd->slots);
    for (guint i = 0; i < pd->slots; i++)
        pd->state[i] = (PeriodState){.next = g_new(guint64, pp),
                                     .bound = g_new(guint64, pp),
                                     .cursor_n = g_new(guint64, 2 * pp)};
    for (guint s = 0; s < pp; s++)
        regular_range(st, s, &pd->lo[s], &pd->hi[s]);
    pd->at_op = pd->lo[0];
    pd->armed = tps_period_possible(st);
}

gboolean
tps_period_possible(const Stages *st)
{
    guint64 lo, hi;
    regular_range(st, 0, &lo, &hi);
    /* Two periods to compare, one at least to jump over. */
    /* (FSDP's per-layer ops carry DP stream state from op to op that the
     * period's state does not hold: not jumped over.) */
    return st->pp > 1 && !st->fsdp[0] && !st->fsdp[1] && lo + 3 * period_ops(st) <= hi;
}

void
tps_period_clear(Period *pd)
{
    g_free(pd->lo);
    g_free(pd->hi);
    g_free(pd->bound);
    g_free(pd->words.v);
    for (guint i = 0; i < pd->slots; i++) {
        g_free(pd->state[i].words.v);
        g_free(pd->state[i].next);
        g_free(pd->state[i].bound);
        g_free(pd->state[i].cursor_n);
    }
    g_free(pd->state);
}

/* The last op of stage `s`'s order whose input may be known: that of the
 * latest forward of the stage that feeds its forwards, or of the latest
 * backward of the stage that feeds its backwards (an input comes from an
 * op that ran); next[s] - 1 where neither feeds it yet. */
static guint64
known_bound(const Replay *r, const Stages *st, guint s)
{
    const guint pp = st->pp;
    const guint64 total = st->total;
    guint64 bound = st->lane[s].next > 0 ? st->lane[s].next - 1 : 0;
    for (guint b = 0; b < 2; b++) {
        /* The route into s: the forward one of the stage before (round
         * the pipeline from the last), the backward one of the stage after. */
        const guint from = b == 0 ? (s == 0 ? pp - 1 : s - 1) : (s + 1 == pp ? 0 : s + 1);
        g_assert(r->routes[2 * from + b].to == s);
        const Cursor *cu = &st->lane[from].cursor[b];
        if (cu->n == 0)
            continue;
        const gboolean wraps = b == 0 ? from + 1 == pp : from == 0;
        const guint64 nth = cu->n - 1 + (wraps ? pp : 0);
        if (nth < total)
            bound = MAX(bound, position(st, s, nth, b == 1));
    }
    return MIN(bound, 2 * total - 1);
}

static void
words_grow(PeriodWords *w)
{
    w->cap = MAX(256u, 2 * w->cap);
    w->v = g_renew(gint64, w->v, w->cap);
}

static inline void
word(PeriodWords *w, gint64 v)
{
    if (G_UNLIKELY(w->len == w->cap))
        words_grow(w);
    w->v[w->len++] = v;
}

/* The replay's state at instant `at` into `w`, each time as its distance
 * from `at` and each op as its distance from its stage's next op, and each
 * stage's known_bound() into `bounds`; FALSE where a stage has not
 * reached its steady ops or its inputs known ahead span a period (the
 * state is then not compared). restore() reads the words back. */
static gboolean
snapshot(const Period *pd, const Replay *r, const Stages *st, TpsTime at, PeriodWords *w,
         guint64 *bounds)
{
    const guint pp = st->pp;
    const guint64 total = st->total;
    w->len = 0;
    for (guint s = 0; s < pp; s++) {
        const guint64 next = st->lane[s].next;
        if (next < pd->lo[s])
            return FALSE;
        const guint64 bound = known_bound(r, st, s);
        if (bound >= next + pd->period)
            return FALSE;
        bounds[s] = bound;
        word(w, st->lane[s].compute - at);
        word(w, st->lane[s].sent - at);
        word(w, st->dp[s]);
        word(w, st->reduced[s]);
        const TpsTime *arrive = st->arrive + (gsize)s * 2 * total;
        for (guint64 k = next; k <= bound; k++)
            if (arrive[k] >= 2) {
                word(w, (gint64)(k - next));
                word(w, arrive[k] - 1 - at);
            }
        word(w, -1);
    }
    for (guint32 q = 0; q < 2 * pp; q++) {
        const Route *rt = &r->routes[q];
        const gsize base = (gsize)rt->to * 2 * total;
        word(w, rt->len);
        for (guint32 i = 0; i < rt->len; i++) {
            const Pending *p = &rt->ring[(rt->head + i) & (rt->cap - 1)];
            word(w, p->when - at);
            word(w, (gint64)(p->op - base) - (gint64)st->lane[rt->to].next);
        }
    }
    for (guint k = 0; k < pp * LINKS_PER_RANK; k++) {
        const Link *ln = &r->link[k];
        if (ln->n != 0)
            return FALSE;
        word(w, MAX(ln->lone_until - at, 0));
    }
    return TRUE;
}

/* The tournament of the routes' first entries built anew. */
static void
tournament_build(Replay *r)
{
    for (guint32 node = r->leaves - 1; node > 0; node--) {
        if (2 * node >= r->leaves) {
            const guint32 a = 2 * node - r->leaves;
            r->key[node] = MIN(r->first[a], r->first[a + 1]);
        } else {
            r->key[node] = MIN(r->key[2 * node], r->key[2 * node + 1]);
        }
    }
}

/* A cursor at its `n`-th forward (or backward). */
static void
cursor_at(Cursor *cu, guint64 n, guint pp, guint vpp)
{
    const guint64 group = n / ((guint64)pp * vpp), rem = n % ((guint64)pp * vpp);
    *cu = (Cursor){.base = group * pp, .c = (guint)(rem / pp), .q = (guint)(rem % pp), .n = n};
}

/* Stage `s` moved `ops` ops and `dt` on: its streams, its last flow's
 * end, its cursors, and the inputs known ahead of its next op (moved from
 * the last to the first, so that none is overwritten before it is read). */
static void
stage_jump(Stages *st, guint s, guint64 bound, guint64 ops, TpsTime dt)
{
    const guint64 total = st->total;
    TpsTime *arrive = st->arrive + (gsize)s * 2 * total;
    for (guint64 k = bound + 1; k-- > st->lane[s].next;)
        arrive[k + ops] = arrive[k] >= 2 ? arrive[k] + dt : arrive[k];
    st->lane[s].compute += dt;
    st->lane[s].sent += dt;
    for (guint b = 0; b < 2; b++) {
        Cursor *cu = &st->lane[s].cursor[b];
        cursor_at(cu, cu->n + ops / 2, st->pp, st->vpp);
    }
    st->lane[s].next += ops;
}

/* The state `m` cycles of `ops` ops and `dt` on, the counters as many
 * times their growth over the cycle since `then`. */
static void
jump(const PeriodState *then, Replay *r, Stages *st, TpsPipeFigures *fig, guint64 m, guint64 ops,
     TpsTime dt, const guint64 *bound)
{
    const guint pp = st->pp;
    const guint64 moved = m * ops;
    const TpsTime shift = (TpsTime)m * dt;
    for (guint32 q = 0; q < 2 * pp; q++) {
        Route *rt = &r->routes[q];
        for (guint32 i = 0; i < rt->len; i++) {
            Pending *p = &rt->ring[(rt->head + i) & (rt->cap - 1)];
            p->when += shift;
            p->op += moved;
        }
        route_first(r, q);
    }
    tournament_build(r);
    for (guint s = 0; s < pp; s++)
        stage_jump(st, s, bound[s], moved, shift);
    for (guint k = 0; k < pp * LINKS_PER_RANK; k++)
        if (r->link[k].lone_until > 0)
            r->link[k].lone_until += shift;
    st->tasks += m * (st->tasks - then->tasks);
    r->lone += m * (r->lone - then->lone);
    r->shared += m * (r->shared - then->shared);
    fig->busy0 += (TpsTime)m * (fig->busy0 - then->busy0);
    fig->periods += moved / period_ops(st);
}

/* The cycles of `ops` ops the state may move on: while every stage's ops
 * run and its inputs arrive at steady ops. */
static guint64
cycles_left(const Period *pd, const Stages *st, const guint64 *bound, guint64 ops)
{
    guint64 m = G_MAXUINT64;
    for (guint s = 0; s < st->pp; s++) {
        const guint64 cool = 2 * st->total - st->lane[s].warmup;
        if (st->lane[s].next > pd->hi[s] || bound[s] >= cool)
            return 0;
        m = MIN(m, (pd->hi[s] - st->lane[s].next) / ops);
        m = MIN(m, (cool - 1 - bound[s]) / ops);
    }
    return m;
}

/* ---- beyond the whole periods: a part period ----
 *
 * The states kept after `then` (the state the state now repeats, c
 * periods back) are each, c periods later, a state the replay would reach
 * after the state now, and m whole periods after that as well, as long as
 * the ops run up to it are of the steady kinds. So the state may move on
 * m + 1 cycles from the latest such state kept instead of m from the
 * state now: the steady ops left over after whole periods (98 of each
 * stage's on the 1T-class step) are then fewer than a step of the states
 * compared. The state is read back from its words (snapshot()), the ops
 * and times moved on. */

/* The latest of the states kept after `then` that is still in the steady
 * ops `ops` ops on (cycles_left()'s test for that state); NULL where none. */
static const PeriodState *
part_target(const Period *pd, const Stages *st, const PeriodState *then, guint64 ops)
{
    for (guint back = 1; back <= pd->kept; back++) {
        const PeriodState *k = &pd->state[(pd->cur + pd->slots + 1 - back) % pd->slots];
        if (k == then)
            return NULL;
        gboolean fits = TRUE;
        for (guint s = 0; s < st->pp && fits; s++) {
            const guint64 cool = 2 * st->total - st->lane[s].warmup;
            fits = k->next[s] + ops <= pd->hi[s] && k->bound[s] + ops < cool;
        }
        if (fits)
            return k;
    }
    return NULL;
}

/* The stages of state `k`, `ops` ops on and at instant `at`: their next
 * ops, streams, last flows' ends, cursors and the inputs known ahead (an
 * input known stays known, so the other entries of its span are those the
 * replay holds already: not known yet, or no flow); the first word after
 * them. */
static gsize
restore_stages(const PeriodState *k, Stages *st, guint64 ops, TpsTime at)
{
    const gint64 *v = k->words.v;
    const guint64 total = st->total;
    gsize i = 0;
    for (guint s = 0; s < st->pp; s++) {
        const guint64 next = k->next[s] + ops;
        TpsTime *arrive = st->arrive + (gsize)s * 2 * total;
        st->lane[s].next = next;
        st->lane[s].compute = at + v[i++];
        st->lane[s].sent = at + v[i++];
        st->dp[s] = v[i++];
        st->reduced[s] = v[i++] != 0;
        for (; v[i] != -1; i += 2)
            arrive[next + (guint64)v[i]] = at + v[i + 1] + 1;
        i++;
        for (guint b = 0; b < 2; b++)
            cursor_at(&st->lane[s].cursor[b], k->cursor_n[2 * s + b] + ops / 2, st->pp, st->vpp);
    }
    return i;
}

/* The routes' flows in their latency phase and the ends the links
 * remember, from word `i` of state `k`, at instant `at` (an end before the
 * instant kept was kept as 0: any end not after `at` reads the same). */
static void
restore_links(const PeriodState *k, gsize i, Replay *r, const Stages *st, TpsTime at)
{
    const gint64 *v = k->words.v;
    for (guint32 q = 0; q < 2 * st->pp; q++) {
        Route *rt = &r->routes[q];
        const guint32 len = (guint32)v[i++];
        if (len > rt->cap) {
            guint32 cap = MAX(16u, rt->cap);
            while (cap < len)
                cap *= 2;
            g_free(rt->ring);
            rt->ring = g_new(Pending, cap);
            rt->cap = cap;
        }
        rt->head = 0;
        rt->len = len;
        const gint64 base = (gint64)((gsize)rt->to * 2 * st->total + st->lane[rt->to].next);
        for (guint32 j = 0; j < len; j++, i += 2)
            rt->ring[j] = (Pending){at + v[i], (gsize)(base + v[i + 1])};
        route_first(r, q);
    }
    for (guint n = 0; n < st->pp * LINKS_PER_RANK; n++) {
        Link *ln = &r->link[n];
        ln->lone_until = v[i] > 0 ? at + v[i] : MIN(ln->lone_until, at);
        i++;
    }
    tournament_build(r);
}

/* The state `k`, kept after `then`, m + 1 cycles of `ops` ops and `dt`
 * on; the counters as many times their growth over the cycle since
 * `then`, from their values in `k`. */
static void
part_jump(const PeriodState *then, const PeriodState *k, Replay *r, Stages *st, TpsPipeFigures *fig,
          guint64 m, guint64 ops, TpsTime dt)
{
    const guint64 moved = (m + 1) * ops;
    const TpsTime at = k->at + (TpsTime)(m + 1) * dt;
    fig->part_ops += k->next[0] - then->next[0];
    fig->periods += m * ops / period_ops(st);
    st->tasks = k->tasks + (m + 1) * (st->tasks - then->tasks);
    r->lone = k->lone + (m + 1) * (r->lone - then->lone);
    r->shared = k->shared + (m + 1) * (r->shared - then->shared);
    fig->busy0 = k->busy0 + (TpsTime)(m + 1) * (fig->busy0 - then->busy0);
    restore_links(k, restore_stages(k, st, moved, at), r, st, at);
}

/* Whether the state now (`now_words`, each stage's next op) is `then` a
 * cycle of `ops` ops on, shifted. */
static gboolean
repeats(const PeriodState *then, const Stages *st, const PeriodWords *now_words, guint64 ops)
{
    for (guint s = 0; s < st->pp; s++)
        if (st->lane[s].next != then->next[s] + ops)
            return FALSE;
    return now_words->len == then->words.len &&
           memcmp(now_words->v, then->words.v, then->words.len * sizeof(gint64)) == 0;
}

/* The state now (its words in pd->words) kept as the latest, in the slot
 * of the oldest. */
static void
keep(Period *pd, const Replay *r, const Stages *st, const TpsPipeFigures *fig, TpsTime now)
{
    pd->cur = (pd->cur + 1) % pd->slots;
    PeriodState *k = &pd->state[pd->cur];
    const PeriodWords w = k->words;
    k->words = pd->words;
    pd->words = w;
    for (guint s = 0; s < st->pp; s++)
        k->next[s] = st->lane[s].next;
    memcpy(k->bound, pd->bound, st->pp * sizeof *pd->bound);
    for (guint i = 0; i < 2 * st->pp; i++)
        k->cursor_n[i] = st->lane[i / 2].cursor[i % 2].n;
    k->at = now;
    k->tasks = st->tasks;
    k->lone = r->lone;
    k->shared = r->shared;
    k->busy0 = fig->busy0;
    pd->kept = MIN(pd->kept + 1, pd->slots);
}

/* The latest of the states kept that the state now repeats, a cycle of
 * c periods on (c = 1 .. PERIOD_CYCLES), and that c; NULL where none. */
static const PeriodState *
repeated(const Period *pd, const Stages *st, const PeriodWords *now_words, guint *c)
{
    for (guint back = 1; back <= pd->kept; back++) {
        const PeriodState *then = &pd->state[(pd->cur + pd->slots + 1 - back) % pd->slots];
        const guint64 ops = st->lane[0].next - then->next[0];
        if (ops % pd->period != 0 || ops / pd->period > PERIOD_CYCLES)
            continue;
        *c = (guint)(ops / pd->period);
        if (repeats(then, st, now_words, ops))
            return then;
    }
    return NULL;
}

void
tps_period_at(Period *pd, Replay *r, Stages *st, TpsPipeFigures *fig, TpsTime now)
{
    PeriodWords *w = &pd->words;
    if (!snapshot(pd, r, st, now, w, pd->bound)) {
        pd->kept = 0;
        pd->at_op = st->lane[0].next + 1;
        return;
    }
    guint c;
    const PeriodState *then = repeated(pd, st, w, &c);
    if (then != NULL) {
        const guint64 ops = c * pd->period;
        const guint64 m = cycles_left(pd, st, pd->bound, ops);
        if (m > 0) {
            const PeriodState *k = part_target(pd, st, then, (m + 1) * ops);
            if (k != NULL)
                part_jump(then, k, r, st, fig, m, ops, now - then->at);
            else
                jump(then, r, st, fig, m, ops, now - then->at, pd->bound);
            pd->armed = FALSE;
            return;
        }
    }
    keep(pd, r, st, fig, now);
    /* The next instant compared: the first after stage 0 has run a
     * multiple of `step` ops more than at the first kept (instants a
     * period of ops apart are then each other's copies in the steady
     * state); once the ring is full without a repeat, a period on (the
     * ring then holds PERIOD_CYCLES periods in fewer states). */
    do
        pd->at_op += pd->kept == pd->slots ? pd->period : pd->step;
    while (pd->at_op <= st->lane[0].next);
    if (pd->at_op + 2 * pd->period > pd->hi[0])
        pd->armed = FALSE;
}
