/* SM pools: each rank's running SM users in hand-out order (priority,
 * then start order), the hand-out itself, the solo rate that waves of CTAs
 * on the SMs a task holds allow, a kernel's partial last wave, which
 * gives back the SMs it no longer fills, and a running kernel that gains
 * SMs, which it fills CTA by CTA.
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

/* A running kernel gains SMs (another kernel beside it ended or entered
 * its last wave) and goes from `had` to `got`. The block scheduler hands
 * SMs over CTA by CTA: a CTA runs to its end on the SM it started on, and
 * the new SMs take the CTAs not started yet. So what the kernel has left
 * is CTAs, not a fraction of its waves. At its first gain it has run
 * e = (1 - w) ceil(C / had) waves of its C CTAs on `had` SMs, w its work
 * left: floor(e) x had CTAs have ended, n = min(had, the others) are in
 * flight with r = 1 - (e - floor(e)) of a wave left, U are not started.
 * At a later gain (C CTAs for work w0 then) x = C w / w0 CTAs' worth of
 * work is left, of which
 *
 *   in flight     n = min(had, ceil(x))
 *   not started   U = max(0, ceil(x - n)),   r = (x - U) / n
 *
 * With none left to start (U = 0) the new SMs have nothing to run: the
 * CTAs in flight end at the pace they had. Otherwise the time left is
 *
 *   left = max(r, 1)                           U <= got - n
 *          max(1, r + ceil((U - got + n) / got))   otherwise
 *
 * waves of wave_ns. The fluid work keeps going down evenly, so the rate
 * becomes w / (left x wave_ns) (eng_solo_rate) while it holds `got`. When
 * the U fit beside the n (first case), the n end after r of a wave and
 * give their SMs back, as a partial last wave does (eng_enter_tail): the
 * kernel then holds the U SMs of its last CTAs only.
 * Sharing waves fluidly instead would let a fraction of a wave done on a
 * few SMs shorten the next whole wave on many: a kernel that ran 12 of its
 * 96 CTAs on the 12 SMs another kernel left free, and gets 96 more when
 * that one ends, would finish the 84 others in 7/8 of a wave, not one.
 * The ceilings forgive a hundredth of a CTA, so that a nanosecond's
 * rounding of the events never costs a wave. */
static void
gain_sms(TpsEngine *engine, Task *t, guint had, guint got)
{
    const double slack = 0.01;
    Fluid *fluid = fluid_at(engine, t->fluid);
    advance(fluid, engine->now);
    double w = fluid->remaining;
    double c = t->regrant_ctas > 0 ? (double)t->regrant_ctas : (double)t->ctas;
    double w0 = t->regrant_ctas > 0 ? t->regrant_work : 1.0;
    gboolean first = t->regrant_ctas == 0;
    if (!first && w >= t->regrant_work * (1.0 - 1e-9)) {
        /* A second gain before any progress: the first one again, with
         * the SMs it has now, so that gains split over several steps of
         * one instant give what one would. */
        c = t->gain_ctas;
        w0 = t->gain_work;
        had = t->gain_had;
        first = t->gain_first;
    } else if (!first && t->regrant_fit) {
        /* Every CTA started at the last gain: the new SMs have nothing to
         * run, and it keeps its pace. */
        t->regrant_sms = got;
        return;
    }
    double x = w0 > 0.0 ? c * w / w0 : 0.0;
    if (x <= slack || w > w0) {
        t->regrant_ctas = 0;
        return;
    }
    t->gain_ctas = c;
    t->gain_work = w0;
    t->gain_had = had;
    t->gain_first = first;
    double running, unstarted, r;
    if (first) {
        /* First gain: it has run its waves on `had` SMs since its start,
         * e = (1 - w) ceil(C / had) of them. */
        double waves = ceil(c / (double)had);
        double e = (1.0 - w) * waves;
        double whole = floor(e + slack);
        double finished = MIN(whole * (double)had, c);
        running = MIN((double)had, c - finished);
        unstarted = MAX(0.0, c - finished - running);
        r = MIN(MAX(1.0 - (e - whole), 0.0), 1.0);
    } else {
        /* A later one: the fewest CTAs in flight the work allows. */
        running = MIN((double)had, ceil(x - slack));
        unstarted = MAX(0.0, ceil(x - running - slack));
        r = MIN(MAX((x - unstarted) / running, 0.0), 1.0);
    }
    if (running <= 0.0) {
        t->regrant_ctas = 0;
        return;
    }
    double span;
    if (unstarted <= 0.0) {
        /* The pace it has now (t->alloc is still what it held; after a
         * first gain of this instant, that gain's pace, which had no CTA
         * to start either). */
        double rate = eng_solo_rate(t);
        if (!(rate > 0.0) || isinf(rate)) {
            t->regrant_ctas = 0;
            return;
        }
        span = 1.0 / rate;
    } else {
        double left = unstarted <= (double)got - running
                          ? MAX(r, 1.0)
                          : MAX(1.0, r + ceil((unstarted - (double)got + running) / (double)got));
        span = left * (double)t->wave_ns / w;
    }
    t->regrant_tail = -1.0;
    t->regrant_new = (guint32)unstarted;
    t->regrant_fit = unstarted <= (double)got - running;
    if (unstarted > 0.0 && unstarted <= (double)got - running && r < 1.0)
        t->regrant_tail = w * (1.0 - r);
    t->regrant_ctas = (guint32)(running + unstarted);
    t->regrant_sms = got;
    t->regrant_work = w;
    t->regrant_span = span;
    fluid->replan = TRUE;
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
                if (got > t->alloc && t->alloc > 0 && t->tail_ctas == 0 && t->ctas > 0 &&
                    t->wave_ns > 0 && t->fluid != NONE32)
                    gain_sms(engine, t, t->alloc, got);
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
        if (t->regrant_ctas > 0 && (t->alloc == t->regrant_sms || t->tail_ctas > 0))
            /* since it gained SMs, and in its last CTAs after that */
            span_ns = t->regrant_span;
        else if (t->tail_ctas > 0) /* the last 1/W of the work: its CTAs in waves of alloc */
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
    if (t->regrant_ctas > 0) /* the CTAs in flight when it gained SMs ended */
        t->tail_ctas = MAX(t->regrant_new, 1u);
    mark_sms_dirty(engine, t->span.rank);
    mark_fluid_dirty(engine, t->fluid);
    /* Its rate does not change by itself, so its end is due now; a re-solve
     * that changes the rate moves it. */
    if (fluid->rate > 0.0 && !isinf(fluid->rate))
        eng_heap_schedule(engine, id,
                          engine->now + tps_fluid_duration(fluid->remaining, fluid->rate));
}
