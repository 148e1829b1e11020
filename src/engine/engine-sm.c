/* SM pools: each rank's running SM users in hand-out order (priority,
 * then start order), the hand-out itself, the solo rate that waves of CTAs
 * on the SMs a task holds allow, and a kernel's partial last wave, which
 * gives back the SMs it no longer fills.
 */
#include "engine/engine-private.h"

#include <math.h>
#include <string.h>

static inline void
mark_sms_dirty(TpsEngine *engine, guint rank)
{
    if (!engine->ranks[rank].sm_dirty) {
        engine->ranks[rank].sm_dirty = TRUE;
        idvec_push(&engine->sm_dirty, rank);
    }
}

void
eng_sm_remove(TpsEngine *engine, TpsTaskId id, guint rank)
{
    Rank *r = &engine->ranks[rank];
    guint32 *users = r->sm_users.data, n = r->sm_users.len;
    for (guint i = 0; i < n; i++) {
        if (users[i] == id) {
            memmove(users + i, users + i + 1, sizeof(guint32) * (n - i - 1));
            r->sm_users.len--;
            break;
        }
    }
    mark_sms_dirty(engine, rank);
}

/* Insert in hand-out order: higher priority first, then start order (the
 * new task started last, so it goes after every task of its priority). */
void
eng_sm_insert(TpsEngine *engine, TpsTaskId id, guint rank, gint32 priority)
{
    Rank *r = &engine->ranks[rank];
    idvec_push(&r->sm_users, id); /* room for one more */
    guint32 *users = r->sm_users.data;
    guint i = r->sm_users.len - 1;
    for (; i > 0 && task_at(engine, users[i - 1])->priority < priority; i--)
        users[i] = users[i - 1];
    users[i] = id;
    mark_sms_dirty(engine, rank);
}

/* Hand out SMs on ranks whose set of SM users changed. */
void
eng_assign_sms(TpsEngine *engine)
{
    guint sms = engine->machine.sms;
    for (guint d = 0; d < engine->sm_dirty.len; d++) {
        Rank *r = &engine->ranks[engine->sm_dirty.data[d]];
        r->sm_dirty = FALSE;
        guint free = sms;
        const guint32 *users = r->sm_users.data;
        for (guint i = 0; i < r->sm_users.len; i++) {
            Task *t = task_at(engine, users[i]);
            guint want = t->tail_ctas > 0 ? t->tail_ctas : t->ctas;
            guint demand = MIN(want, t->max_sms > 0 ? MIN(t->max_sms, sms) : sms);
            guint got = MIN(demand, free);
            free -= got;
            if (!(t->flags & FLAG_SMS_RECORDED)) {
                t->flags |= FLAG_SMS_RECORDED;
                t->span.sms = got;
            }
            if (got > 0 && !(t->flags & FLAG_RAN_RECORDED)) {
                /* A kernel started with every SM taken waits for one:
                 * figures draw it from here, not from its start. */
                t->flags |= FLAG_RAN_RECORDED;
                t->span.run_start = engine->now;
            }
            if (got != t->alloc) {
                t->alloc = got;
                if (t->fluid != NONE32)
                    mark_fluid_dirty(engine, t->fluid);
            }
        }
    }
    engine->sm_dirty.len = 0;
}

double
eng_solo_rate(const Task *t)
{
    double span_ns = 0.0;
    if (t->ctas > 0) {
        if (t->alloc == 0)
            return 0.0;
        if (t->tail_ctas > 0) /* the last 1/W of the work: its CTAs in waves of alloc */
            span_ns = (double)t->tail_waves * (double)((t->tail_ctas + t->alloc - 1) / t->alloc) *
                      (double)t->wave_ns;
        else
            span_ns = (double)((t->ctas + t->alloc - 1) / t->alloc) * (double)t->wave_ns;
    }
    span_ns = MAX(span_ns, (double)t->floor_ns);
    return span_ns > 0.0 ? 1.0 / span_ns : INFINITY;
}

/* A kernel reaches its last, partial wave: it keeps only the SMs its
 * remaining CTAs fill, at the same rate; the others go back to the pool. */
void
eng_enter_tail(TpsEngine *engine, TpsTaskId id)
{
    Task *t = task_at(engine, id);
    Fluid *fluid = fluid_at(engine, t->fluid);
    advance(fluid, engine->now);
    fluid->tail_pending = FALSE;
    guint32 waves = (t->ctas + t->alloc - 1) / t->alloc;
    t->tail_waves = waves;
    t->tail_ctas = t->ctas - (waves - 1) * t->alloc;
    mark_sms_dirty(engine, t->span.rank);
    mark_fluid_dirty(engine, t->fluid);
    /* Its rate does not change by itself, so its end is due now; a re-solve
     * that changes the rate moves it. */
    if (fluid->rate > 0.0 && !isinf(fluid->rate))
        eng_heap_schedule(engine, id,
                          engine->now +
                              tps_time_from_ns(fluid->remaining / fluid->rate - ROUNDING_SLACK_NS));
}
