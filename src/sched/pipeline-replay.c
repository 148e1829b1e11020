/* The step replayed without the event engine: see the section comment
 * below, pipeline.h and docs/step-model.md. */
#include "sched/data-parallel.h"
#include "sched/replay-private.h"

#include <math.h>
#include <string.h>

#include "core/error.h"

/* ---- the schedule replayed ----
 *
 * Up to the optimizer step, the step graph is chunks (and bucket pieces)
 * and DP reductions that share nothing, so each lasts its floor from its
 * start, and the P2P flows, which share their stages' links. The replay
 * runs that graph without the event engine: a stage's chunks follow from
 * their inputs in one pass over its order, and only the flows go through
 * an event loop, in time order, with the engine's fluid sharing of their
 * links reproduced operation for operation (engine-fluid.c: advance, the
 * progressive filling of the component touched, the rounding of a moved
 * end, an end kept while its rate is unchanged, every event of an instant
 * handled before one re-solve; the arithmetic is the engine's own
 * functions, engine.h's tps_fluid_*()). A flow that meets no other on its
 * links, which is nearly every flow where chunks outlast transfers, is
 * resolved when it enters them, its end the engine's for a flow alone
 * (flow_alone()): one event per flow, its entry, and no re-solve. The
 * entries come from one list per route (a stage's flows to one
 * neighbour, in the order they start, which is the order they enter) and
 * a tournament of the routes' first entries. Where the progressive
 * filling could sum three loads on a link in an order the replay does not
 * know (three flows on one link at once), the replay is void and the
 * engine runs the schedule. The optimizer steps (host issue, synchronisations) run on the
 * engine, after a task per stream that ends when the replayed stream
 * ended: the hosts issue as they would after the whole schedule. */


static void
heap_put(Replay *r, guint32 i, HeapItem item)
{
    r->heap[i] = item;
    r->flows[item.flow].heap = i;
}

static void
heap_fix(Replay *r, guint32 i)
{
    const HeapItem item = r->heap[i];
    while (i > 0 && r->heap[(i - 1) / 2].when > item.when) {
        heap_put(r, i, r->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    for (;;) {
        guint32 l = 2 * i + 1, m = l;
        if (l >= r->heap_len)
            break;
        if (l + 1 < r->heap_len && r->heap[l + 1].when < r->heap[l].when)
            m = l + 1;
        if (!(r->heap[m].when < item.when))
            break;
        heap_put(r, i, r->heap[m]);
        i = m;
    }
    heap_put(r, i, item);
}

/* Schedule flow `f`'s next event at `when` (moving a pending one). */
static void
heap_set(Replay *r, guint32 f, TpsTime when)
{
    Flow *fl = &r->flows[f];
    fl->when = when;
    if (fl->heap == NO_FLOW) {
        fl->heap = r->heap_len++;
    }
    r->heap[fl->heap] = (HeapItem){when, f};
    heap_fix(r, fl->heap);
}

static guint32
heap_pop(Replay *r)
{
    guint32 f = r->heap[0].flow;
    r->heap_len--;
    if (r->heap_len > 0) {
        r->heap[0] = r->heap[r->heap_len];
        heap_fix(r, 0);
    }
    r->flows[f].heap = NO_FLOW;
    return f;
}

/* Route `q`'s first entry changed: the tournament replayed on its path,
 * to the root (an early stop where nothing changed measured slower). A
 * node holds one word, the least key of its subtree (entry_key(): the
 * entry and the route in one integer), so a match is a load of the
 * sibling and a minimum: the chain of matches is one compare and one
 * conditional move a level, and the winner is read off the root's low
 * bits (before, a node held the route and its entry apart, and a match
 * moved both: 13 instructions a level, now 5). The keys tie-break by
 * route number; a tie of entries may go either way in any case: the
 * entries of an instant are all handled before its re-solve, and whether
 * each is resolved alone depends only on the set of them (those still to
 * come are first on their routes, those handled are on their links), so
 * their order changes no figure. */
static void
entry_update(Replay *r, guint32 q)
{
    gint64 *key = r->key;
    const guint32 a = q & ~1u;
    gint64 wk = MIN(r->first[a], r->first[a + 1]);
    /* (A node index as wide as a pointer: no zero extension a level.) */
    gsize node = ((gsize)q + r->leaves) >> 1;
    key[node] = wk;
    for (; node > 1; node >>= 1) {
        wk = MIN(wk, key[node ^ 1]);
        key[node >> 1] = wk;
    }
}

/* Route `q`'s first entry came earlier (a flow on a route that had
 * none): it climbs its path only as long as it wins (a node holds its
 * subtree's least key, so a key that does not win here wins nowhere
 * above). A flow enters a link an op and a latency after the events
 * handled, later than most routes' first flows (some 90 of the 1T-class
 * step's 128 routes hold one): most stop a level or two up. */
static void
entry_lower(Replay *r, guint32 q)
{
    const gint64 fq = r->first[q];
    gint64 *key = r->key;
    for (gsize node = ((gsize)q + r->leaves) >> 1; node > 0 && fq < key[node]; node >>= 1)
        key[node] = fq;
}

/* The first flow of the first route in entry order leaves its route's
 * ring into `*p`; its route. */
static guint32
entry_pop(Replay *r, Pending *p)
{
    const guint32 q = (guint32)(r->key[1] & (r->leaves - 1));
    Route *rt = &r->routes[q];
    *p = rt->ring[rt->head];
    rt->head = (rt->head + 1) & (rt->cap - 1);
    r->first[q] = --rt->len > 0 ? entry_key(r, rt->ring[rt->head].when, q) : ENTRY_NONE;
    entry_update(r, q);
    return q;
}

static void
mark_res(Replay *r, guint32 k)
{
    if (!r->res[k].dirty) {
        r->res[k].dirty = TRUE;
        r->dirty_res[r->n_dirty_res++] = k;
    }
}

/* The route of stage `from`'s flows to stage `to`. */
static Route
route(const Replay *r, guint from, guint to)
{
    const TpsMachine *m = &r->machine;
    const gboolean near = tps_pipe_same_node(m, from, to);
    const guint src = near ? from : tps_machine_pool(m, from);
    const guint dst = near ? to : tps_machine_pool(m, to);
    return (Route){
        .to = to,
        .res = {src * LINKS_PER_RANK + (near ? LINK_NVLINK_OUT : LINK_NIC_OUT),
                dst * LINKS_PER_RANK + (near ? LINK_NVLINK_IN : LINK_NIC_IN)},
        .near = near,
    };
}

/* Route `rt`'s ring unrolled into one twice its size. */
G_NO_INLINE static void
ring_grow(Route *rt)
{
    Pending *ring = g_new(Pending, MAX(16u, 2 * rt->cap));
    for (guint32 i = 0; i < rt->len; i++)
        ring[i] = rt->ring[(rt->head + i) & (rt->cap - 1)];
    g_free(rt->ring);
    rt->ring = ring;
    rt->head = 0;
    rt->cap = MAX(16u, 2 * rt->cap);
}

/* The flow that carries op `op`'s input along route `k`, ready at
 * `start` (its producer's end): its latency phase begins. (Inline: a
 * call per op, its registers saved and restored, was a twentieth of the
 * replay.) */
G_ALWAYS_INLINE static inline void
flow_start(Replay *r, guint32 k, gsize op, TpsTime start)
{
    Route *rt = &r->routes[k];
    if (G_UNLIKELY(rt->len == rt->cap))
        ring_grow(rt);
    const TpsTime when = start + rt->fixed;
    if (G_UNLIKELY(when >= r->key_limit))
        r->void_ = TRUE; /* beyond what a key holds: the engine runs it */
    rt->ring[(rt->head + rt->len) & (rt->cap - 1)] = (Pending){when, op};
    if (rt->len++ == 0) {
        r->first[k] = entry_key(r, when, k);
        entry_lower(r, k);
    }
}

/* A Flow for the flow of op `op` on route `k` that enters its links and
 * meets another there. */
static guint32
flow_new(Replay *r, guint32 k, gsize op)
{
    const Route *rt = &r->routes[k];
    guint32 f;
    if (r->n_free > 0) {
        f = r->free_flows[--r->n_free];
    } else {
        if (r->n_flows == r->cap_flows) {
            r->cap_flows = MAX(64u, 2 * r->cap_flows);
            r->flows = g_renew(Flow, r->flows, r->cap_flows);
            r->heap = g_renew(HeapItem, r->heap, r->cap_flows);
            r->free_flows = g_renew(guint32, r->free_flows, r->cap_flows);
            r->dirty_flows = g_renew(guint32, r->dirty_flows, r->cap_flows);
            r->comp = g_renew(guint32, r->comp, r->cap_flows);
        }
        f = r->n_flows++;
        r->flows[f].mark = 0; /* below every epoch */
    }
    Flow *fl = &r->flows[f];
    fl->op = op;
    fl->from = k / 2;
    fl->to = rt->to;
    fl->near = rt->near;
    fl->route = k;
    fl->res[0] = rt->res[0];
    fl->res[1] = rt->res[1];
    fl->heap = NO_FLOW;
    return f;
}

/* The latency phase of `f` is over: it enters its links (engine-fluid.c,
 * eng_enter_fluid). */
static void
flow_enter(Replay *r, guint32 f, TpsTime now)
{
    Flow *fl = &r->flows[f];
    fl->remaining = 1.0;
    fl->rate = -1.0;
    fl->last = now;
    for (guint k = 0; k < 2; k++) {
        Link *ln = &r->link[fl->res[k]];
        if (ln->n == 2 || ln->lone_until > now) {
            r->void_ = TRUE;
            return;
        }
        r->res[fl->res[k]].member[ln->n++] = f;
        mark_res(r, fl->res[k]);
    }
    r->dirty_flows[r->n_dirty_flows++] = f;
}

/* `f` has ended: it leaves its links. */
static void
flow_leave(Replay *r, guint32 f)
{
    Flow *fl = &r->flows[f];
    for (guint k = 0; k < 2; k++) {
        Res *res = &r->res[fl->res[k]];
        if (res->member[0] == f)
            res->member[0] = res->member[1];
        r->link[fl->res[k]].n--;
        mark_res(r, fl->res[k]);
    }
    r->free_flows[r->n_free++] = f;
}

static void
visit_flow(Replay *r, guint32 f)
{
    if (r->flows[f].mark != r->epoch) {
        r->flows[f].mark = r->epoch;
        r->comp[r->n_comp++] = f;
    }
}

static void
visit_res(Replay *r, guint32 k)
{
    if (r->res[k].mark != r->epoch) {
        r->res[k].mark = r->epoch;
        r->comp_res[r->n_comp_res++] = k;
    }
}

/* fill() of engine-fluid.c on a component of flows: every flow uses its
 * two links with its whole size (share 1) and has no solo limit. */
static void
fill(Replay *r, const guint32 *comp, guint n, const guint32 *comp_res, guint n_res, double share)
{
    for (guint j = 0; j < n_res; j++) {
        Res *res = &r->res[comp_res[j]];
        res->used = 0.0;
        res->coef = 0.0;
        res->n_unfrozen = 0;
    }
    for (guint i = 0; i < n; i++) {
        Flow *fl = &r->flows[comp[i]];
        fl->frozen = FALSE;
        for (guint k = 0; k < 2; k++) {
            r->res[fl->res[k]].coef += share;
            r->res[fl->res[k]].n_unfrozen++;
        }
    }
    for (guint unfrozen = n; unfrozen > 0;) {
        double level = INFINITY;
        for (guint j = 0; j < n_res; j++) {
            Res *res = &r->res[comp_res[j]];
            res->level =
                res->n_unfrozen > 0 ? tps_fluid_level(res->cap, res->used, res->coef) : INFINITY;
            level = MIN(level, res->level);
        }
        if (!(level > 0.0) || isinf(level)) {
            r->void_ = TRUE; /* a link without bandwidth: the engine reports it */
            return;
        }
        const double bound = level * (1.0 + TPS_FLUID_LEVEL_EPSILON);
        for (guint i = 0; i < n; i++) {
            Flow *fl = &r->flows[comp[i]];
            if (fl->frozen ||
                !(r->res[fl->res[0]].level <= bound || r->res[fl->res[1]].level <= bound))
                continue;
            fl->frozen = TRUE;
            fl->rate = MIN(level / r->bytes, INFINITY);
            for (guint k = 0; k < 2; k++) {
                Res *res = &r->res[fl->res[k]];
                res->used += fl->rate * r->bytes;
                res->coef -= share;
                res->n_unfrozen--;
            }
            unfrozen--;
        }
    }
}

/* fill() of a flow alone on links of capacities `cap0` and `cap1` (most
 * flows): one round, at the level of its narrower link, each link's level
 * its capacity over a summed share of 1. FALSE where a link has no
 * bandwidth (the engine reports it). */
static gboolean
solo_rate(const Replay *r, double cap0, double cap1, double *rate)
{
    const double share = r->bytes / r->bytes;
    const double level =
        MIN(tps_fluid_level(cap0, 0.0, 0.0 + share), tps_fluid_level(cap1, 0.0, 0.0 + share));
    if (!(level > 0.0) || isinf(level))
        return FALSE;
    *rate = MIN(level / r->bytes, INFINITY);
    return TRUE;
}

/* The end of the fluid phase of a flow alone from its start (work 1 at its
 * solo rate), as reschedule() rounds it: the engine's end of a flow that
 * meets no other on its links. 0 where the engine would not end it so. */
static TpsTime
alone_ns(const Replay *r, double cap)
{
    double rate;
    if (!solo_rate(r, cap, cap, &rate) || !(1.0 > TPS_FLUID_WORK_EPSILON))
        return 0;
    const TpsTime dt = tps_fluid_duration(1.0, rate);
    return dt >= 1 && dt < TPS_TIME_NEVER / 4 ? dt : 0;
}

/* Whether the flow of route `q` whose latency phase ends at `now` (taken
 * off its ring), can be resolved at
 * once, alone: no flow is on its links, none of those on their way to
 * them (in their latency phase) enters them before it ends, and none can
 * start towards them early enough to. That last holds when every op
 * lasts at least a flow's fluid phase less its latency (set up in
 * tps_pipe_replay(), else alone[] is 0): every flow not yet started comes
 * from an op that waits, at best, for an input arriving now or later, so
 * it enters a link at the earliest one op and one latency from now, when
 * `f`, alone, has ended (an end before an entry of the same instant, as
 * the engine handles them). Its end is then the engine's for a flow
 * alone: two events and a re-solve saved. The links remember its end,
 * and a flow entering before it voids the replay (which the argument
 * above excludes: a guard, not a path). */
static gboolean
flow_alone(Replay *r, guint32 q, TpsTime now, TpsTime *end)
{
    const Route *rt = &r->routes[q];
    const TpsTime d = rt->alone;
    if (d == 0)
        return FALSE;
    for (guint k = 0; k < 2; k++) {
        const Link *ln = &r->link[rt->res[k]];
        if (ln->lone_until > now) {
            r->void_ = TRUE;
            return FALSE;
        }
        if (ln->n > 0)
            return FALSE;
    }
    /* (A key is below the key of now + d with no route bits where its
     * entry is before now + d.) */
    const gint64 until = entry_key(r, now + d, 0);
    for (guint i = 0; i < rt->n_meets; i++)
        if (r->first[r->meets[rt->meets + i]] < until)
            return FALSE;
    *end = now + d;
    r->link[rt->res[0]].lone_until = r->link[rt->res[1]].lone_until = *end;
    return TRUE;
}

/* The engine's re-solve at `now` (engine-fluid.c, eng_solve without the
 * local update, which never applies to a flow: its solo rate is
 * unbounded): the component reachable from what changed is advanced,
 * filled progressively, and its moved ends rescheduled. With at most two
 * flows per link, every sum the filling makes has at most two terms, so
 * the order in which it visits them does not change a bit of it. */
static void
replay_solve(Replay *r, TpsTime now)
{
    if (r->n_dirty_flows == 0 && r->n_dirty_res == 0)
        return;
    r->epoch++;
    r->n_comp = r->n_comp_res = 0;
    for (guint i = 0; i < r->n_dirty_flows; i++)
        visit_flow(r, r->dirty_flows[i]);
    for (guint i = 0; i < r->n_dirty_res; i++) {
        r->res[r->dirty_res[i]].dirty = FALSE;
        visit_res(r, r->dirty_res[i]);
    }
    r->n_dirty_flows = r->n_dirty_res = 0;
    for (guint i = 0, j = 0; i < r->n_comp || j < r->n_comp_res;) {
        for (; i < r->n_comp; i++) {
            const Flow *fl = &r->flows[r->comp[i]];
            visit_res(r, fl->res[0]);
            visit_res(r, fl->res[1]);
        }
        for (; j < r->n_comp_res; j++) {
            const Res *res = &r->res[r->comp_res[j]];
            for (guint m = 0; m < r->link[r->comp_res[j]].n; m++)
                visit_flow(r, res->member[m]);
        }
    }
    const guint32 *comp = r->comp, *comp_res = r->comp_res;
    const guint n = r->n_comp, n_res = r->n_comp_res;
    if (n == 0)
        return;
    if (n > 1)
        r->shared++;

    /* advance(): the work done at the old rate. */
    for (guint i = 0; i < n; i++) {
        Flow *fl = &r->flows[comp[i]];
        fl->remaining = tps_fluid_advance(fl->remaining, fl->rate, fl->last, now);
        fl->last = now;
        fl->old_rate = fl->rate;
    }
    const double share = r->bytes / r->bytes;
    if (n == 1) {
        Flow *fl = &r->flows[comp[0]];
        if (!solo_rate(r, r->res[fl->res[0]].cap, r->res[fl->res[1]].cap, &fl->rate)) {
            r->void_ = TRUE;
            return;
        }
    } else {
        fill(r, comp, n, comp_res, n_res, share);
        if (r->void_)
            return;
    }

    /* reschedule(): an unchanged rate keeps its end. */
    for (guint i = 0; i < n; i++) {
        const guint32 f = comp[i];
        Flow *fl = &r->flows[f];
        if (fl->rate == fl->old_rate)
            continue;
        if (fl->remaining <= TPS_FLUID_WORK_EPSILON) {
            heap_set(r, f, now);
        } else {
            const TpsTime dt = tps_fluid_duration(fl->remaining, fl->rate);
            if (dt >= TPS_TIME_NEVER - now) {
                r->void_ = TRUE;
                return;
            }
            heap_set(r, f, now + dt);
        }
    }
}

/* Free what `r` holds; returns `ok`. */
static gboolean
replay_clear(Replay *r, gboolean ok)
{
    g_free(r->res);
    g_free(r->link);
    g_free((gpointer)r->machine.place);
    for (guint32 q = 0; r->routes != NULL && q < r->leaves; q++)
        g_free(r->routes[q].ring);
    g_free(r->routes);
    g_free(r->meets);
    g_free(r->key);
    g_free(r->first);
    g_free(r->flows);
    g_free(r->heap);
    g_free(r->free_flows);
    g_free(r->dirty_flows);
    g_free(r->dirty_res);
    g_free(r->comp);
    g_free(r->comp_res);
    g_free(r->entered);
    g_free(r->n_entered);
    g_free(r->peers);
    return ok;
}


/* The ops that wait for no flow (the first virtual stage's forwards, the
 * last one's backwards; every op with one stage) are marked known from
 * the start, so that pump() reads whether an op may run before it
 * decodes the op. */
static void
mark_no_input(Stages *st, guint pp, guint vpp)
{
    const guint64 total = st->total;
    if (pp == 1) {
        for (guint64 k = 0; k < 2 * total; k++)
            st->arrive[k] = 1;
        return;
    }
    for (guint e = 0; e < 2; e++) {
        const guint s = e == 0 ? 0 : pp - 1;
        Cursor cu[2] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
        for (guint64 k = 0; k < 2 * total; k++) {
            const gboolean backward = order_backward(k, st->lane[s].warmup, total);
            const guint chunk = backward ? vpp - 1 - cu[backward].c : cu[backward].c;
            if (backward ? (e == 1 && chunk == vpp - 1) : (e == 0 && chunk == 0))
                st->arrive[s * 2 * total + k] = 1;
            cursor_step(&cu[backward], pp, vpp);
        }
    }
}

/* The in-order pass, where op `op`'s flow along route `q` is ready at
 * `start` (its producer's end): its interval on its links, from its
 * entry to its end alone, checked against those of every flow on them
 * so far, and its end, the engine's for a flow alone, made its op's
 * input. FALSE where the interval overlaps another (the flows would
 * meet: the pass is void). A route's entries come in order (a stage's
 * ops end one after the other), so that its own last entry is the one
 * that may overlap, and it keeps, per other route through its links
 * (Peer), the first of that route's entries that does not end before
 * its own latest entry: the check reads one or two entries a route. */
static gboolean
flow_in_order(Replay *r, Stages *st, guint32 q, gsize op, TpsTime start)
{
    const Route *rt = &r->routes[q];
    const TpsTime entry = start + rt->fixed;
    const TpsTime end = entry + rt->alone;
    TpsTime *mine = r->entered + q * r->stride;
    const guint32 n_mine = r->n_entered[q];
    if (n_mine > 0 && mine[n_mine - 1] + rt->alone > entry)
        return FALSE;
    for (Peer *p = r->peers + rt->peers, *last = p + rt->n_peers; p < last; p++) {
        const TpsTime *in = p->entered;
        const guint32 n = *p->n;
        guint32 c = p->seen;
        while (c < n && in[c] + p->alone <= entry)
            c++;
        p->seen = c;
        if (c < n && in[c] < end)
            return FALSE;
    }
    mine[n_mine] = entry;
    r->n_entered[q] = n_mine + 1;
    st->arrive[op] = end + 1;
    st->lane[q / 2].sent = MAX(st->lane[q / 2].sent, end);
    r->lone++;
    if (!st->queued[rt->to]) {
        st->queued[rt->to] = TRUE;
        st->queue[(st->queue_head + st->queue_len++) % st->pp] = rt->to;
    }
    return TRUE;
}

/* An op of stage `s` in its pieces (tps_pipe_op_pieces()), ready at *t:
 * the last micro-batch's backward in gradient buckets, each reduced on
 * the DP stream when done; under model.moe.overlap_ep_comm the first
 * forward and the last backward too, which run alone (the others in
 * pairs). Moves *t to its end; returns the number of tasks. */
static guint
pieced_op(Stages *st, guint s, const TpsPipeOp *op, TpsTime *t, TpsPipeFigures *fig)
{
    const guint n = tps_pipe_op_pieces(st->sc, st->pc, s, op, st->shape.micro, st->pieces);
    for (guint p = 0; p < n; p++) {
        const TpsTime d = MAX(st->pieces[p].ns, 1);
        *t += d;
        if (s == 0)
            fig->busy0 += d;
        if (st->pieces[p].reduce) {
            st->dp[s] = MAX(st->dp[s], *t) + MAX(st->pieces[p].dp_ns, 1);
            st->reduced[s] = TRUE;
            st->tasks++;
        }
    }
    return n;
}

/* The first forward of a model chunk on stage `s`, ready at `t`, in one
 * task per bucket, each after its bucket's all-gather on the DP stream
 * (the all-gathers wait for nothing else: they run back to back from the
 * step's start, in the order the stage's forwards need them); stage 0's
 * waits for them into fig->gather_wait. Leaves the end in
 * st->lane[s].compute; returns the number of tasks. */
static guint
gathered_forward(Stages *st, guint s, const TpsPipeOp *op, TpsTime t, TpsPipeFigures *fig)
{
    const guint n = tps_pipe_op_pieces(st->sc, st->pc, s, op, st->shape.micro, st->pieces);
    for (guint p = 0; p < n; p++) {
        st->dp[s] += MAX(st->pieces[p].ag_ns, 1);
        const TpsTime start = MAX(t, st->dp[s]);
        const TpsTime d = MAX(st->pieces[p].ns, 1);
        if (s == 0) {
            fig->gather_wait += start - t;
            fig->busy0 += d;
        }
        t = start + d;
        st->tasks++;
    }
    st->lane[s].compute = t;
    return n;
}

/* An op of stage `s` whose pieces prefetch their all-gathers (FSDP's
 * sharded parameters), ready at `t`, as add_prefetched() of pipeline.c
 * builds it: on the DP stream AG 0, then before each unit the next one's
 * all-gather (after the unit two before has ended) and after it its
 * reduce-scatter; each unit after its all-gather. Leaves the end in
 * st->lane[s].compute; returns the number of compute tasks. */
static guint
prefetched_op(Stages *st, guint s, const TpsPipeOp *op, TpsTime t, TpsPipeFigures *fig)
{
    const guint n = tps_pipe_op_pieces(st->sc, st->pc, s, op, st->shape.micro, st->pieces);
    TpsTime *held = st->held + 2 * s;
    TpsTime dp = MAX(st->dp[s], held[0]) + MAX(st->pieces[0].ag_ns, 1);
    /* Unit k's all-gather's end. */
    TpsTime ready = dp;
    st->tasks++;
    for (guint k = 0; k < n; k++) {
        const TpsPipePiece *pc = &st->pieces[k];
        TpsTime next_ready = 0;
        if (k + 1 < n) {
            dp = MAX(dp, held[1]) + MAX(st->pieces[k + 1].ag_ns, 1);
            next_ready = dp;
            st->tasks++;
        }
        const TpsTime d = MAX(pc->ns, 1);
        t = MAX(t, ready) + d;
        if (s == 0)
            fig->busy0 += d;
        if (pc->reduce) {
            dp = MAX(dp, t) + MAX(pc->dp_ns, 1);
            st->tasks++;
        }
        held[0] = held[1];
        held[1] = t;
        ready = next_ready;
    }
    st->dp[s] = dp;
    st->reduced[s] = TRUE;
    st->lane[s].compute = t;
    return n;
}

/* An op of stage `s` in pieces, ready at `t` (an FSDP unit's prefetch,
 * micro-batch 0's gathered forward, or the ops in pieces_op()): its end;
 * its tasks counted. (Out of the loop of pump_ops(), which then holds
 * only the ops in one piece.) */
G_NO_INLINE static TpsTime
pieces_op(Stages *st, guint s, const TpsPipeOp *op, TpsTime t, TpsPipeFigures *fig)
{
    guint n;
    if (op->mb < st->pieces_below[op->backward] && st->prefetch) {
        n = prefetched_op(st, s, op, t, fig);
        t = st->lane[s].compute;
    } else if (!op->backward && op->mb < st->pieces_below[0]) {
        n = gathered_forward(st, s, op, t, fig);
        t = st->lane[s].compute;
    } else {
        n = pieced_op(st, s, op, &t, fig);
    }
    st->tasks += n;
    return t;
}

/* Run stage `s`'s ops as far as their inputs are known; each op whose
 * output goes to another stage starts a flow (in the in-order pass,
 * resolved at once: FALSE where it would meet another). An op's input is
 * read before the op is decoded: a stage stops at an op whose input is
 * not known at nearly every call, and decoding it for nothing was a
 * fifth of the replay. An op in one piece is one range check of its
 * micro-batch (Stages.plain_lo, plain_span): the others, rare, are out
 * of line. */
G_ALWAYS_INLINE static inline gboolean
pump_ops(Replay *r, Stages *st, guint s, TpsPipeFigures *fig, const gboolean in_order)
{
    const guint pp = st->pp, vpp = st->vpp;
    Lane *ln = &st->lane[s];
    const guint64 warmup = ln->warmup, total = st->total;
    const TpsTime *arrive = ln->arrive;
    guint64 k = ln->next;
    for (; k < 2 * total; k++) {
        /* Its input: the op of the neighbouring virtual stage, over a
         * flow (with one stage, its own earlier op: ended before), kept
         * as its arrival + 1 (0: not known yet; 1: no flow). */
        const TpsTime in = arrive[k];
        if (in == 0)
            break;
        /* order_op(), by steps. */
        const gboolean backward = order_backward(k, warmup, total);
        /* The combined interleaved 1F1B: a steady forward runs beside the
         * backward after it, once that one's input is in too (else 1:
         * no flow). */
        const TpsTime pair_in = st->combined && !backward && k >= warmup ? arrive[k + 1] : 1;
        if (pair_in == 0)
            break;
        const guint32 q = 2 * s + (backward ? 1 : 0);
        const Out *o = &ln->out[backward ? 1 : 0];
        Cursor *cu = &ln->cursor[backward ? 1 : 0];
        const TpsPipeOp op = {
            .chunk = backward ? vpp - 1 - cu->c : cu->c,
            .mb = cu->base + cu->q,
            .backward = backward,
        };
        /* Where the op's micro-batch and chunk put it among the forwards
         * (or backwards) of a stage (op_position() of pipeline.c, by
         * steps): the same on the stage its output goes to. */
        const guint64 nth = cu->n;
        cursor_step(cu, pp, vpp);
        TpsTime t = MAX(ln->compute, MAX(in, pair_in) - 1);
        if (G_LIKELY(op.mb - st->plain_lo[backward] < st->plain_span[backward])) {
            const TpsTime d = o->ns[op.chunk];
            t += d;
            if (s == 0)
                fig->busy0 += d;
            st->tasks++;
        } else {
            t = pieces_op(st, s, &op, t, fig);
        }
        ln->compute = t;
        /* Its output: to the next virtual stage (forward) or the previous
         * one (backward), on the next stage or the previous one (round
         * the pipeline between model chunks). */
        if (pp > 1 && op.chunk != o->silent) {
            /* Round the pipeline, the next model chunk in the order: a
             * group of pp later. */
            const guint64 i = nth + o->wrap, w = o->warmup;
            const gsize to_op =
                o->base + (!backward ? (i < w ? i : 2 * i - w)
                                     : (i < total - w ? w + 2 * i + 1 : total + i));
            st->tasks++;
            if (!in_order) {
                flow_start(r, q, to_op, t);
            } else if (!flow_in_order(r, st, q, to_op, t)) {
                ln->next = k + 1;
                return FALSE;
            }
        }
    }
    ln->next = k;
    return TRUE;
}

G_ALWAYS_INLINE static inline void
pump(Replay *r, Stages *st, guint s, TpsPipeFigures *fig)
{
    pump_ops(r, st, s, fig, FALSE);
}

static gboolean
pump_in_order(Replay *r, Stages *st, guint s, TpsPipeFigures *fig)
{
    return pump_ops(r, st, s, fig, TRUE);
}

/* The link resources, the routes (and as many more that never have a
 * flow as make the leaves of the tournament a power of two), the
 * tournament with no flow on any route, the routes each route meets on
 * its links (itself among them), and a flow's bytes and latencies. */
static void
replay_init(Replay *r, const TpsScenario *sc)
{
    const guint pp = sc->pp;
    *r = (Replay){.sc = sc};
    tps_pipe_machine(sc, &r->machine);
    {
        TpsTaskSpec spec;
        tps_pipe_transfer_spec(sc, &r->machine, 0, 0, &spec);
        r->bytes = spec.link_bytes;
        r->fixed[0] = tps_time_from_us(sc->hardware.nccl_hw_latency_us[TPS_PROTO_SIMPLE]);
        r->fixed[1] = tps_time_from_us(sc->hardware.network_latency_us);
    }
    r->res = g_new0(Res, pp * LINKS_PER_RANK);
    r->link = g_new0(Link, pp * LINKS_PER_RANK);
    for (guint k = 0; k < pp * LINKS_PER_RANK; k++) {
        const guint kind = k % LINKS_PER_RANK;
        r->res[k].cap = kind == LINK_NVLINK_OUT || kind == LINK_NVLINK_IN
                            ? r->machine.nvlink_gbps
                            : r->machine.place[k / LINKS_PER_RANK].pool_gbps;
    }
    r->leaves = 1;
    while (r->leaves < 2 * pp)
        r->leaves *= 2;
    r->routes = g_new(Route, r->leaves);
    for (guint q = 0; q < r->leaves; q++) {
        const guint s = q / 2;
        r->routes[q] = q >= 2 * pp  ? (Route){.to = 0}
                       : q % 2 == 0 ? route(r, s, s + 1 == pp ? 0 : s + 1)
                                    : route(r, s, s == 0 ? pp - 1 : s - 1);
    }
    r->first = g_new(gint64, r->leaves);
    r->key = g_new(gint64, r->leaves);
    for (guint q = 0; q < r->leaves; q++)
        r->first[q] = r->key[q] = ENTRY_NONE;
    while ((1u << r->key_shift) < r->leaves)
        r->key_shift++;
    /* (A margin of one bit below ENTRY_NONE.) */
    r->key_limit = (TpsTime)1 << (62 - r->key_shift);
    r->meets = g_new(guint32, 2 * pp * 2 * pp);
    for (guint32 q = 0, n = 0; q < 2 * pp; q++) {
        const Route *a = &r->routes[q];
        r->routes[q].meets = n;
        for (guint32 o = 0; o < 2 * pp; o++) {
            const Route *b = &r->routes[o];
            if (a->res[0] == b->res[0] || a->res[0] == b->res[1] || a->res[1] == b->res[0] ||
                a->res[1] == b->res[1])
                r->meets[n++] = o;
        }
        r->routes[q].n_meets = n - r->routes[q].meets;
    }
    r->dirty_res = g_new(guint32, pp * LINKS_PER_RANK);
    r->comp_res = g_new(guint32, pp * LINKS_PER_RANK);
    r->epoch = 1;
}

/* Per route (stage `s`'s forwards, then its backwards): its ops' times
 * in one piece by model chunk, the model chunk whose output stays on the
 * stage (the last virtual stage's forward, the first's backward; vpp:
 * none), and position() of the receiving stage, by parts: its first op
 * in `arrive`, its warm-up, and the group of pp more where the output
 * goes round the pipeline. */
static void
out_init(Stages *st)
{
    const guint pp = st->pp, vpp = st->vpp;
    for (guint s = 0; s < pp; s++)
        for (guint b = 0; b < 2; b++) {
            const guint to = b == 0 ? (s + 1 == pp ? 0 : s + 1) : (s == 0 ? pp - 1 : s - 1);
            const gboolean edge = b == 0 ? s + 1 == pp : s == 0;
            st->lane[s].out[b] = (Out){
                .ns = (b ? st->bwd_ns : st->fwd_ns) + (gsize)s * vpp,
                .base = (gsize)to * 2 * st->total,
                .warmup = st->lane[to].warmup,
                .wrap = edge ? pp : 0,
                .silent = !edge ? vpp : b == 0 ? vpp - 1 : 0,
            };
        }
}

/* The micro-batches whose forwards (backwards) run in one piece, from
 * plain_lo[0] ([1]), plain_span[0] ([1]) of them: none of the tests of
 * pieces_op() holds (no FSDP unit prefetched, no gathered or paired
 * forward, no reduced backward) and the 1F1B is not combined. */
static void
plain_range(Stages *st)
{
    const guint64 lo[2] = {MAX(st->pieces_below[0], st->paired ? 1u : 0u),
                           st->prefetch ? st->pieces_below[1] : 0};
    const guint64 hi[2] = {G_MAXUINT64, st->pieces_from};
    for (guint b = 0; b < 2; b++) {
        st->plain_lo[b] = lo[b];
        st->plain_span[b] = st->combined || hi[b] <= lo[b] ? 0 : hi[b] - lo[b];
    }
}

/* The stages of the step of `micro` micro-batches per replica before
 * their first op: each stage's warm-up, and the time of its forward and
 * backward of each model chunk in one piece (every op but the last
 * micro-batch's bucketed backward: tps_pipe_op_pieces() with
 * micro-batch 0 of many). */
static void
stages_init(Stages *st, const TpsScenario *sc, const TpsPieceTimes *pc, guint64 micro)
{
    const guint pp = sc->pp, vpp = sc->vpp;
    const guint layers_chunk = tps_scenario_max_chunk_layers(sc);
    const guint64 total = micro * vpp;
    *st = (Stages){
        .sc = sc,
        .pc = pc,
        .shape = {.sc = sc, .micro = micro},
        .total = total,
        .fwd_ns = g_new(TpsTime, (gsize)pp * vpp),
        .bwd_ns = g_new(TpsTime, (gsize)pp * vpp),
        .dp = g_new0(TpsTime, pp),
        .held = g_new0(TpsTime, 2 * pp),
        .reduced = g_new0(gboolean, pp),
        .arrive = g_new0(TpsTime, (gsize)pp * 2 * total),
        .pieces = g_new(TpsPipePiece, MAX(layers_chunk, 1u)),
        .pp = pp,
        .vpp = vpp,
        /* (FSDP's sharded gradients: reduced in every backward.) */
        .buckets =
            sc->overlap_grad_reduce && tps_scenario_grad_ranks(sc) >= 2 && !tps_fsdp_grads(sc),
        .gathers = tps_dp_gathers_in_forward(sc),
        .fsdp = {tps_fsdp_layer_op(sc, FALSE), tps_fsdp_layer_op(sc, TRUE)},
        .prefetch = tps_fsdp_params(sc),
    };
    st->lane = g_new0(Lane, pp);
    /* Which ops go in pieces: the first micro-batch's forwards with the
     * gathers, every forward and backward under FSDP's per-layer ops, and
     * the last micro-batch's backwards with buckets. */
    st->pieces_below[0] = st->fsdp[0] ? G_MAXUINT64 : st->gathers ? 1 : 0;
    st->pieces_below[1] = st->fsdp[1] && st->prefetch ? G_MAXUINT64 : 0;
    st->pieces_from = st->fsdp[1] ? 0 : st->buckets ? micro - 1 : G_MAXUINT64;
    /* model.moe.overlap_ep_comm: the forwards after the first carry the
     * pairs, so the first forward and the last backward differ from the
     * rest. */
    st->paired = pc->layer_fb > 0;
    st->combined = tps_pipe_pair_extra(sc) > 0;
    if (st->paired)
        st->pieces_from = MIN(st->pieces_from, micro - 1);
    plain_range(st);
    for (guint s = 0; s < pp; s++) {
        st->lane[s].warmup = tps_pipe_warmup(sc, s, total);
        for (guint c = 0; c < vpp; c++) {
            for (guint b = 0; b < 2; b++) {
                /* Micro-batch 1 of many: neither the first nor the last. */
                const TpsPipeOp op = {c, 1, b};
                const guint n = tps_pipe_op_pieces(sc, pc, s, &op, G_MAXUINT64, st->pieces);
                /* (FSDP's ops in per-layer tasks: their sum, the least
                 * the op lasts.) */
                TpsTime d = MAX(st->pieces[0].ns, 1);
                for (guint k = 1; k < n; k++)
                    d += MAX(st->pieces[k].ns, 1);
                (b ? st->bwd_ns : st->fwd_ns)[s * vpp + c] = d;
            }
        }
    }
    out_init(st);
    for (guint s = 0; s < pp; s++)
        st->lane[s].arrive = st->arrive + (gsize)s * 2 * total;
    mark_no_input(st, pp, vpp);
}

/* The stages back before their first op (after a void in-order pass). */
static void
stages_reset(Stages *st, TpsPipeFigures *fig)
{
    const guint pp = st->pp;
    for (guint s = 0; s < pp; s++) {
        Lane *ln = &st->lane[s];
        ln->next = 0;
        ln->compute = ln->sent = 0;
        memset(ln->cursor, 0, sizeof ln->cursor);
    }
    memset(st->dp, 0, pp * sizeof *st->dp);
    memset(st->held, 0, 2 * pp * sizeof *st->held);
    memset(st->reduced, 0, pp * sizeof *st->reduced);
    memset(st->arrive, 0, (gsize)pp * 2 * st->total * sizeof *st->arrive);
    st->tasks = 0;
    fig->busy0 = 0;
    fig->gather_wait = 0;
    mark_no_input(st, pp, st->vpp);
}

static void
stages_clear(Stages *st)
{
    g_free(st->lane);
    g_free(st->fwd_ns);
    g_free(st->bwd_ns);
    g_free(st->dp);
    g_free(st->held);
    g_free(st->reduced);
    g_free(st->arrive);
    g_free(st->pieces);
    g_free(st->queue);
    g_free(st->queued);
}

/* Which flows are resolved alone (flow_alone()), and how long their
 * fluid phase lasts (r->alone): where every op lasts at least a flow's
 * fluid phase alone less its latency. */
static void
lone_setup(Replay *r, const Stages *st)
{
    const TpsScenario *sc = st->sc;
    const guint pp = st->pp, vpp = st->vpp;
    TpsTime shortest = TPS_TIME_NEVER;
    for (gsize i = 0; i < (gsize)pp * vpp; i++)
        shortest = MIN(shortest, MIN(st->fwd_ns[i], st->bwd_ns[i]));
    if (st->buckets) {
        /* The last micro-batch's backward, in gradient buckets. */
        for (guint s = 0; s < pp; s++)
            for (guint c = 0; c < vpp; c++) {
                const TpsPipeOp op = {c, st->shape.micro - 1, TRUE};
                const guint n = tps_pipe_op_pieces(sc, st->pc, s, &op, st->shape.micro, st->pieces);
                TpsTime d = 0;
                for (guint p = 0; p < n; p++)
                    d += MAX(st->pieces[p].ns, 1);
                shortest = MIN(shortest, d);
            }
    }
    const double caps[2] = {r->machine.nvlink_gbps, r->machine.nic_gbps};
    for (guint k = 0; k < 2; k++) {
        r->alone[k] = alone_ns(r, caps[k]);
        /* (And where now + it may be beyond a key: flow_alone().) */
        if (r->alone[k] > shortest + r->fixed[k] || r->alone[k] >= r->key_limit)
            r->alone[k] = 0;
    }
    /* A stage held to its share of the spine has NICs of its own rate:
     * no one time alone for every route across. */
    for (guint s = 0; s < sc->pp; s++)
        if (r->machine.place[s].pool_gbps != r->machine.nic_gbps)
            r->alone[1] = 0;
    for (guint32 q = 0; q < 2 * pp; q++) {
        Route *rt = &r->routes[q];
        rt->fixed = r->fixed[rt->near ? 0 : 1];
        rt->alone = r->alone[rt->near ? 0 : 1];
    }
}

/* The schedule in one pass, without time order, every flow alone on its
 * links: each stage runs its ops as far as their inputs are known, and a
 * stage runs again when a flow brings it an input. Where no two flows
 * are ever on one link at once this is the ordered replay's schedule to
 * the ns (each flow resolved alone at its entry, its end the engine's),
 * and checking each flow's interval against those before it on its
 * links is all it costs. TRUE where every stage ran its whole order
 * that way; FALSE at the first overlap (the flows would meet) or where a
 * flow could not be resolved alone in the ordered replay either (then
 * the figures are void: stages_reset() before the ordered replay). */
static gboolean
replay_in_order(Replay *r, Stages *st, TpsPipeFigures *fig)
{
    const guint pp = st->pp;
    for (guint32 q = 0; q < 2 * pp; q++)
        if (r->alone[r->routes[q].near ? 0 : 1] == 0)
            return FALSE;
    r->stride = st->total;
    r->entered = g_new(TpsTime, 2 * pp * r->stride);
    r->n_entered = g_new0(guint32, 2 * pp);
    r->peers = g_new(Peer, r->routes[2 * pp - 1].meets + r->routes[2 * pp - 1].n_meets);
    for (guint32 q = 0, n = 0; q < 2 * pp; q++) {
        Route *rt = &r->routes[q];
        rt->peers = n;
        for (guint32 i = rt->meets; i < rt->meets + rt->n_meets; i++) {
            const guint32 o = r->meets[i];
            if (o != q)
                r->peers[n++] = (Peer){.entered = r->entered + o * r->stride,
                                       .n = &r->n_entered[o],
                                       .alone = r->alone[r->routes[o].near ? 0 : 1]};
        }
        rt->n_peers = n - rt->peers;
    }
    st->queue = g_new(guint, pp);
    st->queued = g_new(gboolean, pp);
    for (guint s = 0; s < pp; s++) {
        st->queue[s] = s;
        st->queued[s] = TRUE;
    }
    st->queue_head = 0;
    st->queue_len = pp;
    while (st->queue_len > 0) {
        const guint s = st->queue[st->queue_head];
        st->queue_head = (st->queue_head + 1) % pp;
        st->queue_len--;
        st->queued[s] = FALSE;
        if (!pump_in_order(r, st, s, fig))
            return FALSE;
    }
    for (guint s = 0; s < pp; s++)
        if (st->lane[s].next != 2 * st->total)
            return FALSE; /* a deadlock: the ordered replay finds it */
    return TRUE;
}

/* The flows in time order: every event of an instant, then one
 * re-solve. A stage whose input arrives runs at once, as far as its
 * inputs are known: the flows it starts enter their links after this
 * instant (every chunk lasts at least 1 ns), and it touches no link, so
 * the instant's events and re-solve are the same as if it ran after
 * them. TRUE where every stage ran its whole order (else three flows
 * met on a link, or a deadlock: the engine names it). */
static gboolean
replay_ordered(Replay *r, Stages *st, TpsPipeFigures *fig)
{
    const guint pp = st->pp;
    Period pd;
    tps_period_init(&pd, st);
    for (guint s = 0; s < pp; s++)
        pump(r, st, s, fig);
    while (!r->void_) {
        if (r->heap_len == 0 && r->key[1] == ENTRY_NONE)
            break;
        const TpsTime entry = entry_first(r);
        const TpsTime now = r->heap_len == 0 ? entry : MIN(r->heap[0].when, entry);
        /* Ends before entries, as one batch: the engine handles them all
         * before its re-solve, so only the set left matters. */
        while (r->heap_len > 0 && r->heap[0].when == now) {
            const guint32 f = heap_pop(r);
            Flow *fl = &r->flows[f];
            st->arrive[fl->op] = now + 1;
            st->lane[fl->from].sent = MAX(st->lane[fl->from].sent, now);
            flow_leave(r, f);
            pump(r, st, fl->to, fig);
        }
        /* The entries one by one, each taken off its route before it is
         * looked at: those of the same instant still to come are first
         * on theirs, so a flow is not resolved alone beside them. */
        while (r->key[1] >> r->key_shift == now && !r->void_) {
            Pending p;
            const guint32 q = entry_pop(r, &p);
            TpsTime end;
            if (!flow_alone(r, q, now, &end)) {
                flow_enter(r, flow_new(r, q, p.op), now);
                continue;
            }
            /* Its input known now, for the stage's ops after `end`. */
            st->arrive[p.op] = end + 1;
            st->lane[q / 2].sent = MAX(st->lane[q / 2].sent, end);
            r->lone++;
            pump(r, st, r->routes[q].to, fig);
        }
        if (r->void_)
            break;
        if (r->n_dirty_flows > 0 || r->n_dirty_res > 0)
            replay_solve(r, now);
        if (pd.armed && r->heap_len == 0 && st->lane[0].next >= pd.at_op && !r->void_)
            tps_period_at(&pd, r, st, fig, now);
    }
    tps_period_clear(&pd);
    gboolean done = !r->void_;
    for (guint s = 0; s < pp; s++)
        done = done && st->lane[s].next == 2 * st->total;
    return done;
}

/* Without overlap, each stage's reductions after its last backward; the
 * end of the last reduction; the tasks of the schedule. */
static void
tail_reductions(Stages *st, TpsPipeFigures *fig)
{
    const TpsScenario *sc = st->sc;
    g_autoptr(GArray) reductions = g_array_new(FALSE, FALSE, sizeof(TpsTime));
    for (guint s = 0; s < st->pp; s++) {
        if (!sc->overlap_grad_reduce && tps_scenario_grad_ranks(sc) > 1 && !tps_fsdp_grads(sc)) {
            tps_pipe_tail_reductions(sc, s, reductions);
            st->dp[s] = st->lane[s].compute;
            for (guint k = 0; k < reductions->len; k++)
                st->dp[s] += MAX(g_array_index(reductions, TpsTime, k), 1);
            st->reduced[s] = reductions->len > 0;
            st->tasks += reductions->len;
        }
        if (st->reduced[s])
            fig->dp_end = MAX(fig->dp_end, st->dp[s]);
    }
}

/* The optimizer steps, on the engine, after a task per stream that ends
 * where the replayed one did; the step and the figures of the replay. */
static gboolean
optimizer_steps(const Replay *r, const Stages *st, TpsPipeFigures *fig, GError **error)
{
    const TpsScenario *sc = st->sc;
    const guint pp = st->pp;
    TpsPipe q = {.sc = sc};
    tps_pipe_engine(&q, &r->machine);
    for (guint s = 0; s < pp; s++) {
        tps_pipe_add_chunk(&q, s, TPS_KIND_GEMM, "replayed", st->lane[s].compute);
        if (st->reduced[s])
            tps_pipe_add_dp(&q, s, "replayed", st->dp[s]);
    }
    const TpsTaskId first_opt = tps_engine_n_tasks(q.engine);
    for (guint s = 0; s < pp; s++) {
        const double params = tps_stage_params(sc, s);
        tps_engine_stream_wait(q.engine, q.compute[s], tps_engine_record(q.engine, q.dp[s]));
        tps_pipe_optimizer_step(&q, s, params, tps_stage_optimizer_shard(sc, s));
    }
    TpsRunStats stats;
    if (!tps_engine_run(q.engine, &stats, error)) {
        g_prefix_error(error, "%s: pipeline schedule: ", sc->file != NULL ? sc->file : sc->name);
        tps_pipe_clear(&q);
        return FALSE;
    }
    const TpsTaskId n_tasks = tps_engine_n_tasks(q.engine);
    g_autofree TpsTime *opt_end = g_new0(TpsTime, pp);
    for (TpsTaskId id = first_opt; id < n_tasks; id++) {
        const TpsSpan *sp = tps_engine_span(q.engine, id);
        opt_end[sp->rank] = MAX(opt_end[sp->rank], sp->end);
    }
    fig->step = stats.makespan;
    for (guint s = 0; s < pp; s++) {
        const TpsTime before =
            MAX(MAX(st->lane[s].compute, st->lane[s].sent), st->reduced[s] ? st->dp[s] : 0);
        fig->optimizer = MAX(fig->optimizer, opt_end[s] - before);
        fig->step = MAX(fig->step, st->lane[s].sent);
    }
    fig->tasks = st->tasks + (n_tasks - first_opt);
    fig->events = stats.events;
    fig->shared = r->shared;
    fig->lone = r->lone;
    tps_pipe_clear(&q);
    return TRUE;
}

/* Replay the step of `micro` micro-batches per replica into `fig`: by the
 * in-order pass where `pass` tries it and no two flows meet, else in time
 * order; *replayed FALSE where three flows met on a link (the figures
 * are then void). FALSE with `error` set on an error. */
gboolean
tps_pipe_replay(const TpsScenario *sc, const TpsPieceTimes *pc, guint64 micro, TpsReplayPass pass,
                TpsPipeFigures *fig, gboolean *replayed, GError **error)
{
    memset(fig, 0, sizeof *fig);
    *replayed = FALSE;
    if (!tps_pipe_chunks_fit(sc, pc, error))
        return FALSE;
    Replay r;
    replay_init(&r, sc);
    /* A flow of no bytes would take the engine's other path. */
    if (!(r.bytes > 0.0))
        return replay_clear(&r, TRUE);
    TpsPieceTimes with_amax = *pc;
    tps_pipe_amax_times(sc, &with_amax);
    Stages st;
    stages_init(&st, sc, &with_amax, micro);
    lone_setup(&r, &st);
    const gboolean in_order = pass == TPS_REPLAY_IN_ORDER_FIRST ||
                              (pass == TPS_REPLAY_CHEAPEST && !tps_period_possible(&st));
    gboolean done = in_order && replay_in_order(&r, &st, fig);
    if (done) {
        fig->in_order = TRUE;
    } else {
        if (in_order) {
            stages_reset(&st, fig);
            r.lone = 0;
        }
        done = replay_ordered(&r, &st, fig);
    }
    if (!done) {
        stages_clear(&st);
        return replay_clear(&r, TRUE); /* (a deadlock: the engine names it) */
    }
    /* The last chunk's end, each stage's last being its latest. */
    for (guint s = 0; s < st.pp; s++)
        fig->compute_end = MAX(fig->compute_end, st.lane[s].compute);
    tail_reductions(&st, fig);
    const gboolean ok = optimizer_steps(&r, &st, fig, error);
    stages_clear(&st);
    *replayed = ok;
    return replay_clear(&r, ok);
}
