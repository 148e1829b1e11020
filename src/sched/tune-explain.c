/* Whether overlap pays, and when it does not, the mechanism that loses
 * (tune.h). The overlapped GEMM slot that loses most against no
 * userbuffers is taken apart with the cost model: the SMs its margin
 * takes (the unsplit GEMM on SMs - num_sm against all SMs), its small
 * chunks (the chunks alone on those SMs against the unsplit GEMM there),
 * its launches (the kernels it adds, each one host launch) and the
 * contention with its communication (the GEMM's simulated busy time beyond
 * its chunks alone: SMs and HBM shared with the kernels and copies beside
 * it). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cost/kernel-cost.h"
#include "sched/method.h"
#include "sched/tune-private.h"

typedef enum {
    LOSS_SMS,
    LOSS_CHUNKS,
    LOSS_LAUNCH,
    LOSS_CONTENTION,
    LOSS_COUNT
} Loss;

static const char *const loss_names[] = {
    [LOSS_SMS] = "SMs taken by the margin",
    [LOSS_CHUNKS] = "small chunks",
    [LOSS_LAUNCH] = "launch cost",
    [LOSS_CONTENTION] = "HBM and SM contention with its communication",
};

static double
solo_ms(const TpsScenario *sc, guint64 m, guint64 n, guint64 k, guint sms)
{
    TpsKernelCost cost;
    tps_cost_gemm(&sc->hardware, sc->dtype, MAX(m, 1), MAX(n, 1), MAX(k, 1), sms, &cost);
    return (double)tps_kernel_cost_solo_ns(&sc->hardware, &cost,
                                           sms != 0 ? sms : sc->hardware.sms) /
           1e6;
}

/* The chunks the method splits the GEMM [m, n] x k into (count, shape)
 * and the kernels it launches beyond the GEMM and its NCCL collective. */
static void
chunks_of(const TpsScenario *sc, const TpsOverlapConfig *c, guint64 m, guint64 n, guint *count,
          guint64 *cm, guint64 *cn, guint *extra_launches)
{
    const guint t = sc->tp;
    *count = 1, *cm = m, *cn = n, *extra_launches = 1; /* bulk: the copy into the buffer */
    if (c->method == TPS_METHOD_PIPELINE) {
        *count = MAX(c->num_splits, 1u), *cn = n / *count;
        *extra_launches = 2 * *count - 2; /* chunk GEMMs and RS kernels for one GEMM and NCCL */
    } else if (c->method == TPS_METHOD_RING_EXCHANGE) {
        const gboolean agg = c->aggregate && t % 2 == 0 && t > 2;
        *count = agg ? t / 2 : t, *cm = agg ? 2 * (m / t) : m / t;
        /* per step a send, its flag and a receive kernel */
        *extra_launches = *count - 1 + 3 * (*count - 1);
    }
}

/* The losses of slot `s` of `e` against no userbuffers, in ms per layer. */
static void
slot_losses(const TpsScenario *sc, const TpsTuneEntry *e, const TpsResult *none, guint s,
            double loss[LOSS_COUNT])
{
    const TpsOverlapConfig *c = &e->cfg[s];
    const TpsGemmBreakdown *g = &none->gemms[s];
    const guint sms = sc->hardware.sms;
    const guint allowed = c->set_sm_margin && c->num_sm < sms ? sms - c->num_sm : sms;
    guint count, extra;
    guint64 cm, cn;
    chunks_of(sc, c, g->m, g->n, &count, &cm, &cn, &extra);
    const double full = solo_ms(sc, g->m, g->n, g->k, 0);
    const double margin = solo_ms(sc, g->m, g->n, g->k, allowed == sms ? 0 : allowed);
    const double chunks = count * solo_ms(sc, cm, cn, g->k, allowed == sms ? 0 : allowed);
    loss[LOSS_SMS] = margin - full;
    loss[LOSS_CHUNKS] = chunks - margin;
    loss[LOSS_LAUNCH] = extra * sc->hardware.host_launch_us * 1e-3;
    loss[LOSS_CONTENTION] = e->result.gemms[s].gemm_ms - chunks;
}

/* The class of work whose residuals make most of the band of none - r. */
static guint
widest_class(const TpsScenario *sc, const TpsResult *none, const TpsResult *r)
{
    const TpsHardware *hw = &sc->hardware;
    guint widest = 0;
    double most = -1;
    double sn = 0, sr = 0;
    for (guint c = 0; c < TPS_BAND_COUNT; c++)
        sn += none->band_parts_ns[c], sr += r->band_parts_ns[c];
    for (guint c = 0; c < TPS_BAND_COUNT; c++) {
        const double d = (sn > 0 ? none->band_parts_ns[c] * none->step_time_s / sn : 0) -
                         (sr > 0 ? r->band_parts_ns[c] * r->step_time_s / sr : 0);
        const double width =
            fabs(d / (1 + hw->band_p10_pct[c] / 100) - d / (1 + hw->band_p90_pct[c] / 100));
        if (width > most)
            most = width, widest = c;
    }
    return widest;
}

/* The overlapped entry to explain: the fastest one with a group on. */
static const TpsTuneEntry *
fastest_overlapped(const TpsTuneReport *r)
{
    for (guint i = 0; i < r->ranked->len; i++) {
        const TpsTuneEntry *e = &g_array_index(r->ranked, TpsTuneEntry, i);
        for (guint g = 0; g < TPS_TUNE_GROUP_COUNT; g++)
            if (e->group_on[g])
                return e;
    }
    return NULL;
}

static void
describe(const TpsOverlapConfig *c, char *out, gsize size)
{
    const TpsMethodInfo *m = tps_method_info(c->method);
    if (c->method == TPS_METHOD_PIPELINE)
        g_snprintf(out, size, "pipeline, %u splits, %u SMs%s", c->num_splits, c->num_sm,
                   c->set_sm_margin ? ", margin" : "");
    else if (c->method == TPS_METHOD_BULK)
        g_snprintf(out, size, "bulk, %u SMs%s", c->num_sm, c->set_sm_margin ? ", margin" : "");
    else
        g_snprintf(out, size, "%s%s%s%s", m->name, c->aggregate ? ", aggregate" : "",
                   c->use_ce ? "" : ", SM sends", c->set_sm_margin ? ", margin" : "");
}

void
tps_tune_explain(const TpsScenario *sc, TpsTuneReport *r)
{
    const TpsTuneEntry *e = fastest_overlapped(r);
    r->overlap_pays = e != NULL && e == tps_tune_best(r) && e->beats_none;
    r->verdict[0] = '\0';
    if (r->overlap_pays)
        return;
    if (e == NULL) {
        g_strlcpy(r->verdict, "no configuration with overlap was simulated", sizeof r->verdict);
        return;
    }
    /* The slot that loses most against its time without userbuffers. */
    guint worst = TPS_GEMM_OP;
    double worst_loss = -INFINITY;
    for (guint s = 0; s < TPS_GEMM_OP; s++) {
        if (e->cfg[s].method == TPS_METHOD_NONE)
            continue;
        double d = e->result.gemms[s].time_ms - r->none.gemms[s].time_ms;
        if (d > worst_loss)
            worst_loss = d, worst = s;
    }
    g_autofree char *head =
        e->gain_high < 0
            ? g_strdup_printf("the fastest overlapped configuration is %.2f%% slower than no "
                              "userbuffers (band [%+.2f%%, %+.2f%%])",
                              -100 * e->gain, 100 * e->gain_low, 100 * e->gain_high)
            : g_strdup_printf("the fastest overlapped configuration %s %.2f%% against no "
                              "userbuffers, inside its band [%+.2f%%, %+.2f%%]",
                              e->gain < 0 ? "loses" : "gains", 100 * fabs(e->gain),
                              100 * e->gain_low, 100 * e->gain_high);
    if (worst == TPS_GEMM_OP || worst_loss <= 0) {
        /* No GEMM loses: the band is too wide to tell. */
        g_snprintf(r->verdict, sizeof r->verdict,
                   "%s; every overlapped GEMM is faster than with NCCL, but the gain is not "
                   "beyond the model's uncertainty (the %s residuals of the work it changes "
                   "make most of the band)",
                   head, tps_band_class_names[widest_class(sc, &r->none, &e->result)]);
        return;
    }
    double loss[LOSS_COUNT];
    slot_losses(sc, e, &r->none, worst, loss);
    guint most = 0;
    for (guint l = 1; l < LOSS_COUNT; l++)
        if (loss[l] > loss[most])
            most = l;
    char cfg[96];
    describe(&e->cfg[worst], cfg, sizeof cfg);
    g_snprintf(r->verdict, sizeof r->verdict,
               "%s; it loses most on %s (%s): %+.3f ms per layer against NCCL, of which SMs "
               "taken %.3f ms, small chunks %.3f ms, launch cost %.3f ms, HBM and SM contention "
               "%.3f ms: %s loses",
               head, tps_gemm_slot_names[worst], cfg, worst_loss, loss[LOSS_SMS], loss[LOSS_CHUNKS],
               loss[LOSS_LAUNCH], loss[LOSS_CONTENTION], loss_names[most]);
}
