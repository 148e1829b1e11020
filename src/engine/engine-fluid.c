/* Fluid sharing of HBM and links: a task in its fluid phase holds a slot
 * with its usage of each bandwidth resource; concurrent tasks share each
 * resource max-min fairly (progressive filling), and a change is settled
 * locally when it leaves every resource it touches slack, else by
 * re-solving the connected component it touches. Rates move the tasks'
 * finish events (see engine-private.h for the layout).
 */
#include "engine/engine-private.h"

#include <math.h>

/* A resource loaded below (1 - this) of its capacity is slack. */
#define SLACK_EPSILON 1e-9

static void
mark_res_dirty(TpsEngine *engine, guint32 r)
{
    if (!engine->res[r].dirty) {
        engine->res[r].dirty = TRUE;
        idvec_push(&engine->dirty_res, r);
    }
}

static void
add_use(Fluid *fluid, guint32 res, double bytes)
{
    if (!(bytes > 0.0))
        return;
    for (guint k = 0; k < fluid->n_res; k++) {
        if (fluid->res[k] == res) {
            fluid->bytes[k] += bytes;
            return;
        }
    }
    g_assert(fluid->n_res < TASK_RES_MAX);
    fluid->res[fluid->n_res] = res;
    fluid->bytes[fluid->n_res] = bytes;
    fluid->n_res++;
}

/* A use of its own, beside any other of the same resource: a folded
 * machine's flow to its own rank, whose receiving end stands for a peer's
 * HBM (TpsMachine.folded). */
static void
add_use_apart(Fluid *fluid, guint32 res, double bytes)
{
    if (!(bytes > 0.0))
        return;
    g_assert(fluid->n_res < TASK_RES_MAX);
    fluid->res[fluid->n_res] = res;
    fluid->bytes[fluid->n_res] = bytes;
    fluid->n_res++;
}

/* A task that shares nothing: its rate can never change, so it simply
 * takes its floor (the fluid machinery would give the same end, at the
 * cost of a slot and a re-solve). */
static void
enter_floor(TpsEngine *engine, TpsTaskId id, Task *t)
{
    if (t->floor_ns <= 0) {
        eng_work_done(engine, id);
    } else {
        t->state = STATE_FLUID;
        eng_heap_schedule(engine, id, engine->now + t->floor_ns);
    }
}

/* A free fluid slot, or a new one. */
static guint32
take_fluid_slot(TpsEngine *engine)
{
    if (engine->fluid_free.len > 0)
        return engine->fluid_free.data[--engine->fluid_free.len];
    if (engine->n_fluids == engine->cap_fluids) {
        engine->cap_fluids = MAX(16, 2 * engine->cap_fluids);
        engine->fluids = g_renew(Fluid, engine->fluids, engine->cap_fluids);
    }
    guint32 f = engine->n_fluids++;
    /* A new slot's search mark must start below every epoch. */
    engine->fluids[f].mark = 0;
    return f;
}

/* Slot `f` made task `id`'s, at full remaining work and no use yet.
 * Field by field: clearing the whole slot (its per-resource arrays, of
 * which nothing from n_res on is ever read) cost a quarter of entering
 * the fluid phase. The search mark is kept: epochs only grow. */
static Fluid *
reset_fluid_slot(TpsEngine *engine, guint32 f, TpsTaskId id)
{
    Fluid *fluid = fluid_at(engine, f);
    fluid->task = id;
    fluid->n_res = 0;
    fluid->size = 0.0;
    fluid->rmax = 0.0;
    fluid->rate = -1.0;
    fluid->old_rate = 0.0;
    fluid->remaining = 1.0;
    fluid->last = engine->now;
    fluid->dirty = FALSE;
    fluid->frozen = FALSE;
    fluid->tail_pending = FALSE;
    fluid->replan = FALSE;
    return fluid;
}

/* The task's use of each resource: its rank's HBM, and for a flow both
 * ends' HBM and the links between them. */
static void
add_task_uses(const TpsEngine *engine, const Task *t, Fluid *fluid)
{
    guint32 src = t->span.rank, dst = t->dst_rank;
    /* hbm_gbps <= 0: HBM is not modelled on this machine (the pipeline
     * frame, whose tasks carry their own times), and flows do not pass
     * through it. */
    const gboolean hbm = engine->machine.hbm_gbps > 0.0;
    if (hbm)
        add_use(fluid, src * RES_PER_RANK + RES_HBM, t->hbm_bytes);
    if (t->link_bytes > 0.0) {
        const TpsMachine *m = &engine->machine;
        gboolean same_node = tps_machine_domain(m, src) == tps_machine_domain(m, dst);
        if (hbm) {
            add_use(fluid, src * RES_PER_RANK + RES_HBM, t->link_bytes);
            if (m->folded)
                add_use_apart(fluid, dst * RES_PER_RANK + RES_HBM, t->link_bytes);
            else
                add_use(fluid, dst * RES_PER_RANK + RES_HBM, t->link_bytes);
        }
        /* NVLink is per GPU; the NICs a rank's traffic leaves its domain
         * through are one pool resource, held by one rank, since NCCL
         * spreads a ring's channels over all of them. */
        guint32 src_link = same_node ? src : tps_machine_pool(m, src);
        guint32 dst_link = same_node ? dst : tps_machine_pool(m, dst);
        add_use(fluid, src_link * RES_PER_RANK + (same_node ? RES_NVLINK_OUT : RES_NIC_OUT),
                t->link_bytes);
        add_use(fluid, dst_link * RES_PER_RANK + (same_node ? RES_NVLINK_IN : RES_NIC_IN),
                t->link_bytes);
    }
}

/* Slot `f` a member of each resource it uses, each resource marked dirty,
 * its size its largest use and its share of each resource that use's
 * part of it. */
static void
join_resources(TpsEngine *engine, guint32 f, Fluid *fluid)
{
    for (guint k = 0; k < fluid->n_res; k++) {
        Resource *res = &engine->res[fluid->res[k]];
        if (res->n_members == res->cap_members) {
            res->cap_members = MAX(8, 2 * res->cap_members);
            res->members = g_renew(Member, res->members, res->cap_members);
        }
        fluid->slot[k] = res->n_members;
        res->members[res->n_members++] = (Member){.fluid = f, .k = k};
        fluid->size = MAX(fluid->size, fluid->bytes[k]);
        mark_res_dirty(engine, fluid->res[k]);
    }
    for (guint k = 0; k < fluid->n_res; k++)
        fluid->share[k] = fluid->bytes[k] / fluid->size;
}

/* Enter the fluid phase. Rates come from the next re-solve, except for a
 * task that needs nothing at all, which ends at once. */
void
eng_enter_fluid(TpsEngine *engine, TpsTaskId id)
{
    Task *t = task_at(engine, id);
    const gboolean shares = t->ctas > 0 || t->link_bytes > 0.0 ||
                            (t->hbm_bytes > 0.0 && engine->machine.hbm_gbps > 0.0);
    if (!shares) {
        enter_floor(engine, id, t);
        return;
    }
    guint32 f = take_fluid_slot(engine);
    Fluid *fluid = reset_fluid_slot(engine, f, id);
    t->fluid = f;
    t->state = STATE_FLUID;
    add_task_uses(engine, t, fluid);
    join_resources(engine, f, fluid);
    mark_fluid_dirty(engine, f);
}

void
eng_leave_fluid(TpsEngine *engine, Task *t)
{
    guint32 f = t->fluid;
    Fluid *fluid = fluid_at(engine, f);
    for (guint k = 0; k < fluid->n_res; k++) {
        Resource *res = &engine->res[fluid->res[k]];
        Member *members = res->members;
        guint32 slot = fluid->slot[k], last = --res->n_members;
        if (slot != last) {
            members[slot] = members[last];
            fluid_at(engine, members[slot].fluid)->slot[members[slot].k] = slot;
        }
        mark_res_dirty(engine, fluid->res[k]);
        res->left_load += MAX(fluid->rate, 0.0) * fluid->bytes[k];
    }
    fluid->task = NONE32;
    fluid->n_res = 0;
    idvec_push(&engine->fluid_free, f);
    t->fluid = NONE32;
}

static void
visit_fluid(TpsEngine *engine, guint32 f)
{
    Fluid *fluid = fluid_at(engine, f);
    if (fluid->task == NONE32 || fluid->mark == engine->epoch)
        return;
    fluid->mark = engine->epoch;
    idvec_push(&engine->comp_fluid, f);
}

static void
visit_res(TpsEngine *engine, guint32 r)
{
    if (engine->res[r].mark == engine->epoch)
        return;
    engine->res[r].mark = engine->epoch;
    idvec_push(&engine->comp_res, r);
}

/* Collect the component of fluid tasks and resources reachable from what
 * changed. Cheaper than re-solving every fluid task, and exact: tasks in
 * other components share no resource with the changed ones. */
static void
collect_component(TpsEngine *engine)
{
    engine->epoch++;
    engine->comp_fluid.len = 0;
    engine->comp_res.len = 0;
    for (guint i = 0; i < engine->dirty_fluid.len; i++) {
        guint32 f = engine->dirty_fluid.data[i];
        fluid_at(engine, f)->dirty = FALSE;
        visit_fluid(engine, f);
    }
    for (guint i = 0; i < engine->dirty_res.len; i++) {
        guint32 r = engine->dirty_res.data[i];
        engine->res[r].dirty = FALSE;
        engine->res[r].left_load = 0.0;
        visit_res(engine, r);
    }
    engine->dirty_fluid.len = 0;
    engine->dirty_res.len = 0;

    guint i = 0, j = 0;
    while (i < engine->comp_fluid.len || j < engine->comp_res.len) {
        for (; i < engine->comp_fluid.len; i++) {
            Fluid *fluid = fluid_at(engine, engine->comp_fluid.data[i]);
            for (guint k = 0; k < fluid->n_res; k++)
                visit_res(engine, fluid->res[k]);
        }
        for (; j < engine->comp_res.len; j++) {
            const Resource *res = &engine->res[engine->comp_res.data[j]];
            for (guint m = 0; m < res->n_members; m++)
                visit_fluid(engine, res->members[m].fluid);
        }
    }
}

/* Fix a task's rate: its usage becomes fixed load on its resources. */
static void
freeze(TpsEngine *engine, Fluid *fluid, double rate)
{
    fluid->frozen = TRUE;
    fluid->rate = rate;
    for (guint k = 0; k < fluid->n_res; k++) {
        Resource *res = &engine->res[fluid->res[k]];
        res->used += rate * fluid->bytes[k];
        res->coef -= fluid->share[k];
        res->n_unfrozen--;
    }
}

/* Max-min fair shares in bytes/ns by progressive filling: every unfrozen
 * task runs at level x / size; raise x until a task reaches its solo limit
 * (freeze it) or a resource saturates (freeze all its unfrozen tasks). The
 * loop runs once per distinct bottleneck, usually once or twice. Each
 * resource keeps the summed share of its unfrozen tasks, updated as they
 * freeze, so a round is one pass over tasks and one over resources. */
static void
fill(TpsEngine *engine)
{
    const guint32 *comp = engine->comp_fluid.data;
    guint n = engine->comp_fluid.len;
    const guint32 *comp_res = engine->comp_res.data;
    guint n_res = engine->comp_res.len;
    guint unfrozen = 0;

    for (guint j = 0; j < n_res; j++) {
        Resource *res = &engine->res[comp_res[j]];
        res->used = 0.0;
        res->coef = 0.0;
        res->n_unfrozen = 0;
    }
    for (guint i = 0; i < n; i++) {
        Fluid *fluid = fluid_at(engine, comp[i]);
        fluid->frozen = FALSE;
        for (guint k = 0; k < fluid->n_res; k++) {
            Resource *res = &engine->res[fluid->res[k]];
            res->coef += fluid->share[k];
            res->n_unfrozen++;
        }
        if (fluid->size <= 0.0 || fluid->rmax <= 0.0)
            freeze(engine, fluid, fluid->rmax);
        else
            unfrozen++;
    }

    while (unfrozen > 0) {
        double level = INFINITY;
        for (guint i = 0; i < n; i++) {
            const Fluid *fluid = fluid_at(engine, comp[i]);
            if (!fluid->frozen)
                level = MIN(level, fluid->rmax * fluid->size);
        }
        for (guint j = 0; j < n_res; j++) {
            Resource *res = &engine->res[comp_res[j]];
            /* Where this resource saturates; decided for every resource
             * before any task freezes, so component order does not matter. */
            res->level =
                res->n_unfrozen > 0 ? tps_fluid_level(res->cap, res->used, res->coef) : INFINITY;
            level = MIN(level, res->level);
        }
        if (isinf(level)) {
            /* Only unbounded tasks on unbounded resources: cannot happen
             * with finite capacities, but never loop forever. */
            for (guint i = 0; i < n; i++) {
                Fluid *fluid = fluid_at(engine, comp[i]);
                if (!fluid->frozen)
                    freeze(engine, fluid, INFINITY);
            }
            break;
        }
        double bound = level * (1.0 + TPS_FLUID_LEVEL_EPSILON);
        for (guint i = 0; i < n; i++) {
            Fluid *fluid = fluid_at(engine, comp[i]);
            if (fluid->frozen)
                continue;
            gboolean hit = fluid->rmax * fluid->size <= bound;
            for (guint k = 0; k < fluid->n_res && !hit; k++)
                hit = engine->res[fluid->res[k]].level <= bound;
            if (hit) {
                freeze(engine, fluid, MIN(level / fluid->size, fluid->rmax));
                unfrozen--;
            }
        }
    }
}

/* Work left before a kernel enters its last wave, when that wave is
 * partial (it then frees the SMs it no longer fills, which the block
 * scheduler hands to the kernels queued beside it); < 0 when it has no
 * such point ahead. */
static double
work_to_tail(const TpsEngine *engine, const Fluid *fluid)
{
    const Task *t = task_at(engine, fluid->task);
    if (t->ctas == 0 || t->tail_ctas > 0 || t->alloc == 0 || t->wave_ns <= 0)
        return -1.0;
    /* A kernel that gained SMs mid-run (engine-sm.c, gain_sms): its tail
     * starts when the CTAs then in flight end, if that was tracked. */
    if (t->regrant_ctas > 0)
        return t->regrant_tail > 0.0 ? fluid->remaining - t->regrant_tail : -1.0;
    guint32 waves = (t->ctas + t->alloc - 1) / t->alloc;
    if (waves < 2 || t->ctas - (waves - 1) * t->alloc >= t->alloc)
        return -1.0;
    return fluid->remaining - 1.0 / waves;
}

/* Move the finish event of a task whose rate was just recomputed. */
static void
reschedule(TpsEngine *engine, Fluid *fluid)
{
    TpsTime now = engine->now;
    /* An unchanged rate keeps its event: no drift from re-rounding; unless
     * its task gained SMs, which moves the start of its last CTAs. */
    if (fluid->rate == fluid->old_rate && !fluid->replan)
        return;
    fluid->replan = FALSE;
    fluid->tail_pending = FALSE;
    if (fluid->remaining <= TPS_FLUID_WORK_EPSILON || isinf(fluid->rate)) {
        eng_heap_schedule(engine, fluid->task, now);
    } else if (fluid->rate > 0.0) {
        double work = fluid->remaining;
        double tail = work_to_tail(engine, fluid);
        if (tail > TPS_FLUID_WORK_EPSILON) {
            work = tail;
            fluid->tail_pending = TRUE;
        }
        TpsTime dt = tps_fluid_duration(work, fluid->rate);
        if (dt >= TPS_TIME_NEVER - now)
            eng_heap_remove(engine, fluid->task);
        else
            eng_heap_schedule(engine, fluid->task, now + dt);
    } else {
        eng_heap_remove(engine, fluid->task); /* stalled until something changes */
    }
}

/* Whether resource `r` is slack after the change with the changed tasks at
 * their solo rates, and was nobody's bottleneck before it. */
static gboolean
stays_slack(const TpsEngine *engine, guint32 r)
{
    const Resource *res = &engine->res[r];
    double limit = res->cap * (1.0 - SLACK_EPSILON);
    double before = res->left_load, after = 0.0;
    gboolean all_capped = TRUE;
    for (guint m = 0; m < res->n_members; m++) {
        const Fluid *fluid = fluid_at(engine, res->members[m].fluid);
        double bytes = fluid->bytes[res->members[m].k];
        if (fluid->dirty) {
            after += fluid->rmax * bytes;
            before += MAX(fluid->rate, 0.0) * bytes;
        } else {
            after += fluid->rate * bytes;
            before += fluid->rate * bytes;
            all_capped = all_capped && fluid->rate == fluid->rmax;
        }
    }
    if (!(after <= limit))
        return FALSE;
    /* Slack before the change, or everyone still on it runs at its own
     * cap: either way it was nobody's bottleneck. */
    return before <= limit || all_capped;
}

/* The common case, without touching the component: every resource the
 * change touches stays slack and was nobody's bottleneck. Then the changed
 * tasks run at their solo rates and every other task keeps its rate, since
 * each of those is at its cap or bottlenecked on a resource the change did
 * not touch; that is the max-min fair allocation the full re-solve would
 * find. Returns FALSE (having changed nothing but the solo rates) when the
 * full re-solve is needed. */
static gboolean
update_locally(TpsEngine *engine)
{
    const IdVec *dirty = &engine->dirty_fluid;
    for (guint i = 0; i < dirty->len; i++) {
        Fluid *fluid = fluid_at(engine, dirty->data[i]);
        if (fluid->task == NONE32)
            continue;
        fluid->rmax = eng_solo_rate(task_at(engine, fluid->task));
        if (fluid->size > 0.0 && isinf(fluid->rmax))
            return FALSE; /* only a fair share bounds it */
    }
    for (guint i = 0; i < engine->dirty_res.len; i++)
        if (!stays_slack(engine, engine->dirty_res.data[i]))
            return FALSE;
    for (guint i = 0; i < dirty->len; i++) {
        const Fluid *fluid = fluid_at(engine, dirty->data[i]);
        for (guint k = 0; fluid->task != NONE32 && k < fluid->n_res; k++)
            if (!engine->res[fluid->res[k]].dirty && !stays_slack(engine, fluid->res[k]))
                return FALSE; /* (dirty ones were checked above) */
    }

    for (guint i = 0; i < dirty->len; i++) {
        Fluid *fluid = fluid_at(engine, dirty->data[i]);
        fluid->dirty = FALSE;
        if (fluid->task == NONE32)
            continue;
        advance(fluid, engine->now);
        fluid->rate = fluid->rmax;
        reschedule(engine, fluid);
    }
    for (guint i = 0; i < engine->dirty_res.len; i++) {
        engine->res[engine->dirty_res.data[i]].dirty = FALSE;
        engine->res[engine->dirty_res.data[i]].left_load = 0.0;
    }
    engine->dirty_fluid.len = 0;
    engine->dirty_res.len = 0;
    return TRUE;
}

void
eng_solve(TpsEngine *engine)
{
    if (engine->dirty_fluid.len == 0 && engine->dirty_res.len == 0)
        return;
    if (engine->incremental && update_locally(engine)) {
        engine->local_updates++;
        return;
    }
    collect_component(engine);
    if (engine->comp_fluid.len == 0)
        return;
    engine->rate_updates++;

    TpsTime now = engine->now;
    const guint32 *comp = engine->comp_fluid.data;
    guint n = engine->comp_fluid.len;
    for (guint i = 0; i < n; i++) {
        Fluid *fluid = fluid_at(engine, comp[i]);
        advance(fluid, now);
        fluid->rmax = eng_solo_rate(task_at(engine, fluid->task));
    }

    fill(engine);

    for (guint i = 0; i < n; i++)
        reschedule(engine, fluid_at(engine, comp[i]));
}
