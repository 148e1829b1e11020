/* What the replay of the step (pipeline-replay.c) and its periodic jump
 * (pipeline-period.c) share: the replay's flows, links, routes and stages.
 * See pipeline-replay.c for the replay and docs/step-model.md. */
#pragma once

#include "sched/pipeline-private.h"

/* Link resources of a stage (the rank that holds them): NVLink and NIC,
 * out and in (the engine's RES_NVLINK_OUT .. RES_NIC_IN). */
enum {
    LINK_NVLINK_OUT,
    LINK_NVLINK_IN,
    LINK_NIC_OUT,
    LINK_NIC_IN,
    LINKS_PER_RANK
};

#define NO_FLOW G_MAXUINT32

/* A P2P flow in its fluid phase (the engine's Fluid: work left, rate,
 * when last advanced) until `when`, its end: one that did not meet the
 * test of flow_alone() (in its latency phase a flow is a Pending of its
 * route). */
typedef struct {
    gsize op;       /* the op that waits for it */
    guint from, to; /* its sender and its receiver */
    guint32 res[2];
    gboolean near;
    gboolean frozen;
    double remaining, rate, old_rate;
    TpsTime last, when;
    guint32 heap; /* position in the event heap, NO_FLOW when none */
    guint32 mark;
    guint32 route;
} Flow;

/* A flow in its latency phase: when it enters its links, the op that
 * waits for it. */
typedef struct {
    TpsTime when;
    gsize op;
} Pending;

/* A link resource: its capacity (bytes/ns), the flows on it (at most two,
 * see above; their number in its Link), and the scratch of the
 * progressive filling. */
typedef struct {
    double cap, used, coef, level;
    guint n_unfrozen;
    guint32 member[2];
    guint32 mark;
    gboolean dirty;
} Res;

/* What a flow resolved alone reads of a link resource, apart from its Res
 * (16 bytes a link, not 64: the links of the 1T-class step are 4 KiB,
 * not 16, and their reads missed the first-level cache about 1.5 times
 * an op): the number of flows on it and the end of the last flow
 * resolved alone on it. */
typedef struct {
    TpsTime lone_until;
    guint n;
} Link;

/* Where a stage's flows go, forward (to the next stage) or backward:
 * their receiver, their links, whether inside a node; and those of its
 * flows in their latency phase, a ring (`cap` a power of two) in the
 * order they started, which is the order they enter their links (a
 * stage's ops end one after the other, and a route's flows have the same
 * latency). A flow resolved alone never leaves its ring for a Flow: its
 * entry, its op and its route are all the replay reads of it. */
typedef struct {
    guint to;
    guint32 res[2];
    gboolean near;
    Pending *ring;
    guint32 head, len, cap;
    /* The routes through its links, itself among them (Replay.meets) */
    guint32 meets, n_meets;
    /* A flow's latency, and its fluid phase alone (Replay.fixed, alone);
     * the other routes through its links (Replay.peers). */
    TpsTime fixed, alone;
    guint32 peers, n_peers;
} Route;

/* In the in-order pass, another route through a route's links: its
 * entries so far and their number, its flows' fluid phase alone, and
 * the first of its entries that does not end before the route's latest
 * entry. */
typedef struct {
    const TpsTime *entered;
    const guint32 *n;
    TpsTime alone;
    guint32 seen;
} Peer;

/* A pending event: a flow's entry or end. */
typedef struct {
    TpsTime when;
    guint32 flow;
} HeapItem;

typedef struct {
    const TpsScenario *sc;
    TpsMachine machine;
    double bytes;     /* of every flow */
    TpsTime fixed[2]; /* a flow's latency inside a node [0], across [1] */
    /* A flow's fluid phase alone on its links, inside a node [0], across
     * [1]; 0 where no flow may be resolved alone (see flow_alone()). */
    TpsTime alone[2];
    Res *res;      /* per link resource */
    Link *link;    /* per link resource */
    Route *routes; /* per stage: forward, backward */
    Flow *flows;   /* a pool, reused as flows end */
    guint32 n_flows, cap_flows;
    guint32 *free_flows, n_free;
    HeapItem *heap; /* the ends of flows in their fluid phase, by time */
    guint32 heap_len;
    /* The routes by the entry of their first flow: a tournament (a winner
     * tree: node i holds the least of the keys of nodes 2i and 2i + 1;
     * leaf `leaves + q`, implicit, route q's key, first[q]; node 1 the
     * first of all), updated along one path when a route's first flow
     * changes. */
    gint64 *first;  /* per route: the key of its first flow (entry_key()), ENTRY_NONE when none */
    gint64 *key;    /* per node: the least key of its subtree */
    guint32 leaves;
    guint key_shift;    /* a key's bits of route: log2(leaves) */
    TpsTime key_limit;  /* the entries a key holds are below it (else the replay is void) */
    guint32 *meets; /* per route, the routes it meets on its links */
    /* Scratch of the re-solve, as the engine's (flows: cap_flows long;
     * resources: one per link resource). */
    guint32 *dirty_flows, *dirty_res, *comp, *comp_res;
    guint32 n_dirty_flows, n_dirty_res, n_comp, n_comp_res;
    guint32 epoch;
    /* The in-order pass (replay_in_order()): per route the entries of its
     * flows so far, in order (`stride` apart), their number, and per
     * entry of `meets` the first of the other route's entries that may
     * still overlap one of this route's. */
    TpsTime *entered;
    guint32 *n_entered;
    Peer *peers;
    gsize stride;
    gboolean void_; /* three flows met on a link, or a link without bandwidth */
    guint64 shared; /* re-solves of more than one flow */
    guint64 lone;   /* flows resolved alone, without events */
} Replay;

/* A route's key in the tournament: the entry `t` of its first flow and
 * the route `q`, in one integer (the entry in the high bits, the route in
 * the low key_shift), so that keys order by entry, then route (t below
 * key_limit); ENTRY_NONE for a route without a flow. */
#define ENTRY_NONE G_MAXINT64

static inline gint64
entry_key(const Replay *r, TpsTime t, guint32 q)
{
    return (gint64)((guint64)t << r->key_shift) | q;
}

/* The first entry of all, TPS_TIME_NEVER where no route holds a flow. */
static inline TpsTime
entry_first(const Replay *r)
{
    return r->key[1] == ENTRY_NONE ? TPS_TIME_NEVER : r->key[1] >> r->key_shift;
}

/* Route `q`'s key from its ring: that of its first flow, or ENTRY_NONE
 * (void where the entry is beyond what a key holds). */
static inline void
route_first(Replay *r, guint32 q)
{
    const Route *rt = &r->routes[q];
    if (rt->len == 0) {
        r->first[q] = ENTRY_NONE;
        return;
    }
    const TpsTime t = rt->ring[rt->head].when;
    if (t >= r->key_limit)
        r->void_ = TRUE;
    r->first[q] = entry_key(r, t, q);
}

/* The next forward (or backward) of a stage, as interleaved_op() numbers
 * them (a stage's order as tps_pipeline_order() lists it: its warm-up
 * forwards, then one forward and one backward, then the backwards), kept
 * up to date by steps rather than divisions (a division of
 * each op was a tenth of the replay). */
typedef struct {
    guint64 base; /* the first micro-batch of the current group of pp */
    guint q, c;   /* the micro-batch in the group, the model chunk in order */
    guint64 n;    /* the forwards (backwards) before it: base vpp + c pp + q */
} Cursor;

static inline void
cursor_step(Cursor *cu, guint pp, guint vpp)
{
    cu->n++;
    if (++cu->q == pp) {
        cu->q = 0;
        if (++cu->c == vpp) {
            cu->c = 0;
            cu->base += pp;
        }
    }
}

/* Where a route's ops' outputs go (out_init()). */
typedef struct {
    const TpsTime *ns; /* by model chunk: the stage's ops in one piece this way */
    gsize base;        /* the receiving stage's first op in Stages.arrive */
    guint64 warmup;    /* the receiving stage's warm-up */
    guint64 wrap;      /* pp where the outputs go round the pipeline, else 0 */
    guint silent;      /* the model chunk whose output stays (vpp: none) */
} Out;

/* A stage of the replay: the next op of its order, its warm-up, when its
 * compute stream is free, its last flow's end, and per direction
 * (forward, backward) its cursor and where its outputs go: together, as
 * pump_ops() reads them. */
typedef struct {
    guint64 next, warmup;
    TpsTime compute, sent;
    TpsTime *arrive; /* its ops' inputs in Stages.arrive */
    Cursor cursor[2];
    Out out[2];
} Lane;

/* The replay's stages: per stage its Lane, when its DP stream is free,
 * whether it reduced gradients; per op, by stage and position in the stage's order (see
 * position()), the end of the flow that brings its input plus 1, 0 until
 * known, 1 for an op that waits for no flow (mark_no_input()): a stage
 * reads them in its order, from memory it just read. */
typedef struct {
    const TpsScenario *sc;
    const TpsPieceTimes *pc;
    TpsPipe shape;
    guint64 total;
    Lane *lane;               /* per stage */
    TpsTime *fwd_ns, *bwd_ns; /* per stage and model chunk: an op in one piece */
    TpsTime *dp;
    TpsTime *held; /* per stage: the ends of its last two FSDP units (0: none) */
    gboolean *reduced;
    TpsTime *arrive;
    TpsPipePiece *pieces;
    guint64 tasks;
    guint pp, vpp;
    gboolean buckets; /* the last micro-batch's backwards in gradient buckets */
    gboolean fsdp[2]; /* every forward (backward) in FSDP's per-layer tasks
                         (tps_fsdp_layer_op()) */
    gboolean prefetch; /* and those ops' units after their prefetched all-gathers
                          (FSDP's sharded parameters) */
    /* The micro-batches whose forwards (backwards) run in prefetched or
     * gathered pieces: those below pieces_below[0] ([1]); the backwards
     * from pieces_from on run in reduced pieces. */
    guint64 pieces_below[2], pieces_from;
    /* The micro-batches whose forwards (backwards) run in one piece: from
     * plain_lo[0] ([1]), plain_span[0] ([1]) of them (plain_range()). */
    guint64 plain_lo[2], plain_span[2];
    gboolean paired;  /* model.moe.overlap_ep_comm: forward mb 0 in pieces too */
    gboolean combined; /* and pp > 1: the combined interleaved 1F1B, every op in
                          its pieces, a steady forward after both inputs */
    gboolean gathers; /* the first micro-batch's forwards after their buckets'
                         parameter all-gathers */
    /* The in-order pass: the stages whose inputs came since they last
     * ran, a ring of pp, and whether each is in it. */
    guint *queue, queue_head, queue_len;
    gboolean *queued;
} Stages;

/* The position in stage `s`'s order (tps_pipeline_order()) of its
 * `i`-th forward (or backward): the warm-up forwards, then one forward
 * and one backward, then the backwards. */
static inline guint64
position(const Stages *st, guint s, guint64 i, gboolean backward)
{
    const guint64 w = st->lane[s].warmup, total = st->total;
    if (!backward)
        return i < w ? i : 2 * i - w;
    return i < total - w ? w + 2 * i + 1 : total + i;
}

/* Whether op `k` of a stage's order is a backward (the warm-up forwards,
 * then one forward and one backward, then the backwards). */
static inline gboolean
order_backward(guint64 k, guint64 warmup, guint64 total)
{
    return k < warmup ? FALSE : k < 2 * total - warmup ? ((k - warmup) & 1) : TRUE;
}

/* The ordered replay's jump over its steady state (pipeline-period.c):
 * the ops whose kinds repeat (per stage), the period in ops, and the
 * states kept at the last instants compared, `step` of stage 0's ops
 * apart, over PERIOD_CYCLES periods (a ring of `slots`, `cur` the latest,
 * `kept` how many in a row): their words, each stage's next op, the
 * instant, the counters. */
#define PERIOD_CYCLES 4

/* A state's words: a growable array written word by word. */
typedef struct {
    gint64 *v;
    guint len, cap;
} PeriodWords;

typedef struct {
    PeriodWords words;
    guint64 *next;
    /* Per stage: the last op whose input may be known (known_bound()),
     * and its cursors' counts (forward, backward). */
    guint64 *bound, *cursor_n;
    TpsTime at, busy0;
    guint64 tasks, lone, shared;
} PeriodState;

typedef struct {
    guint64 period;
    guint64 step; /* stage 0's ops from one state compared to the next */
    guint64 *lo, *hi;
    gboolean armed; /* still looking for a cycle to jump over */
    guint64 at_op;  /* compare at the first instant after stage 0 has run this many ops */
    guint kept, cur, slots;
    PeriodState *state;
    PeriodWords words; /* the state now, before it is kept */
    guint64 *bound;    /* per stage, known_bound() of the state now */
} Period;

/* Set up (and free) the jump of the ordered replay of `st`. */
void tps_period_init(Period *pd, const Stages *st);
void tps_period_clear(Period *pd);
/* Whether stage 0 has steady ops enough for a jump (two periods to
 * compare, one to jump over). */
gboolean tps_period_possible(const Stages *st);
/* At instant `now`, handled whole, with no flow in its fluid phase and
 * stage 0 at or past pd->at_op ops: compare the state with those kept,
 * and where it repeats one, move it on by as many cycles as stay steady;
 * else keep it. */
void tps_period_at(Period *pd, Replay *r, Stages *st, TpsPipeFigures *fig, TpsTime now);
