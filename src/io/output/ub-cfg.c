/* Userbuffers configuration files written from a strategy (see ub-cfg.h). */
#include "io/output/ub-cfg.h"

#include <string.h>

#include "sched/method.h"

/* The Megatron switch that turns a slot's overlap off (its group: the
 * all-gather overlaps, the reduce-scatter overlaps, the bulk dgrad and the
 * bulk wgrad overlaps). */
static const char *
disabling_switch(TpsGemmSlot slot)
{
    switch (slot) {
    case TPS_GEMM_QKV_FPROP:
    case TPS_GEMM_FC1_FPROP:
    case TPS_GEMM_PROJ_DGRAD:
    case TPS_GEMM_FC2_DGRAD:
        return "--disable-tp-comm-overlap-ag";
    case TPS_GEMM_PROJ_FPROP:
    case TPS_GEMM_FC2_FPROP:
        return "--disable-tp-comm-overlap-rs";
    case TPS_GEMM_QKV_DGRAD:
    case TPS_GEMM_FC1_DGRAD:
        return "--disable-tp-comm-bulk-dgrad";
    default:
        return "--disable-tp-comm-bulk-wgrad";
    }
}

char *
tps_ub_cfg_format(const TpsScenario *scenario, const TpsStrategy *strategy, gboolean *incomplete)
{
    g_return_val_if_fail(scenario != NULL && strategy != NULL, NULL);
    TpsOverlapConfig cfg[TPS_GEMM_SLOT_COUNT];
    tps_strategy_overlap(strategy, scenario, cfg);
    g_autofree char *origin = g_strdup_printf("strategy %s", strategy->name);
    return tps_ub_cfg_format_table(scenario, cfg, origin, incomplete);
}

char *
tps_ub_cfg_format_table(const TpsScenario *scenario, const TpsOverlapConfig *cfg,
                        const char *origin, gboolean *incomplete)
{
    g_return_val_if_fail(scenario != NULL && cfg != NULL && origin != NULL, NULL);
    GString *s = g_string_new(NULL);
    g_string_append_printf(s,
                           "# Transformer Engine userbuffers configuration (Megatron-LM: "
                           "--tp-comm-overlap --tp-comm-overlap-cfg FILE)\n"
                           "# written by tpsim: %s of scenario %s on %s, tp %u\n",
                           origin, scenario->name != NULL ? scenario->name : "-",
                           scenario->hardware.name != NULL ? scenario->hardware.name : "-",
                           scenario->tp);
    gboolean missing = FALSE;
    /* A dgrad that reduce-scatters (ring_exchange, pipeline) drops its
     * wgrad in TE: not a GEMM to switch off. */
    for (guint i = 0; i < TPS_GEMM_OP; i++) {
        const TpsOverlapConfig *c = &cfg[i];
        const char *name = tps_gemm_slot_names[i];
        if (c->method == TPS_METHOD_NONE) {
            gboolean dropped =
                (i == TPS_GEMM_QKV_WGRAD &&
                 tps_method_info(cfg[TPS_GEMM_QKV_DGRAD].method)->gemm_rs != NULL) ||
                (i == TPS_GEMM_FC1_WGRAD &&
                 tps_method_info(cfg[TPS_GEMM_FC1_DGRAD].method)->gemm_rs != NULL);
            if (!dropped) {
                g_string_append_printf(s,
                                       "# %s: not overlapped in %s; TE overlaps it with its "
                                       "default method unless Megatron runs with %s\n",
                                       name, origin, disabling_switch((TpsGemmSlot)i));
                missing = TRUE;
            }
            continue;
        }
        const TpsMethodInfo *info = tps_method_info(c->method);
        g_string_append_printf(s, "%s:\n  method: %s\n", name, info->name);
        if (c->num_sm != 0)
            g_string_append_printf(s, "  num_sm: %u\n", c->num_sm);
        g_string_append_printf(s, "  cga_size: %u\n", c->cga_size);
        g_string_append_printf(s, "  set_sm_margin: %s\n", c->set_sm_margin ? "true" : "false");
        if (info->has_splits && c->num_splits != 0)
            g_string_append_printf(s, "  num_splits: %u\n", c->num_splits);
        g_string_append_printf(s, "  aggregate: %s\n", c->aggregate ? "true" : "false");
        g_string_append_printf(s, "  use_ce: %s\n", c->use_ce ? "true" : "false");
    }
    if (incomplete != NULL)
        *incomplete = missing;
    return g_string_free(s, FALSE);
}
