/* Scenario defaults, name tables and cleanup (see scenario.h). */
#include "sched/scenario.h"

#include <string.h>

/* Indexed by TpsGemmSlot; the order is the one of real-schedules.md
 * section 2, and the names are the keys of `overlap:` in scenario files. */
const char *const tps_gemm_slot_names[] = {
    [TPS_GEMM_QKV_FPROP] = "qkv_fprop",
    [TPS_GEMM_FC1_FPROP] = "fc1_fprop",
    [TPS_GEMM_PROJ_FPROP] = "proj_fprop",
    [TPS_GEMM_FC2_FPROP] = "fc2_fprop",
    [TPS_GEMM_PROJ_DGRAD] = "proj_dgrad",
    [TPS_GEMM_FC2_DGRAD] = "fc2_dgrad",
    [TPS_GEMM_QKV_DGRAD] = "qkv_dgrad",
    [TPS_GEMM_FC1_DGRAD] = "fc1_dgrad",
    [TPS_GEMM_QKV_WGRAD] = "qkv_wgrad",
    [TPS_GEMM_FC1_WGRAD] = "fc1_wgrad",
    [TPS_GEMM_OP] = "op",
    [TPS_GEMM_SLOT_COUNT] = NULL,
};
G_STATIC_ASSERT(G_N_ELEMENTS(tps_gemm_slot_names) == TPS_GEMM_SLOT_COUNT + 1);

void
tps_scenario_init(TpsScenario *scenario)
{
    g_return_if_fail(scenario != NULL);

    memset(scenario, 0, sizeof *scenario);
    scenario->seed = 1;

    scenario->vocab = 51200;
    scenario->dtype = TPS_DTYPE_BF16;
    scenario->attention = TPS_ATTENTION_FLASH;
    /* hidden, heads, layers, seq_len are required for model scenarios and
     * ffn_hidden / global_batch default to values derived from others: the
     * loader fills them in once the rest is known (0 = not given). */

    scenario->micro_batch = 1;
    scenario->recompute = TPS_RECOMPUTE_NONE;
    scenario->overlap_grad_reduce = TRUE;

    scenario->tp = 1;
    scenario->pp = 1;
    scenario->vpp = 1;
    scenario->dp = 1;
    scenario->sp = FALSE;

    scenario->op_kind = TPS_OP_AG_GEMM;

    for (guint i = 0; i < TPS_GEMM_SLOT_COUNT; i++) {
        TpsOverlapConfig *config = &scenario->overlap[i];
        config->method = TPS_METHOD_NONE;
        config->cga_size = 2;
        config->use_ce = TRUE;
    }
}

void
tps_scenario_clear(TpsScenario *scenario)
{
    if (scenario == NULL)
        return;
    g_clear_pointer(&scenario->name, g_free);
    g_clear_pointer(&scenario->hardware_ref, g_free);
    g_clear_pointer(&scenario->file, g_free);
    g_clear_pointer(&scenario->strategies, g_strfreev);
    tps_hardware_clear(&scenario->hardware);
    /* Whatever tps_hardware_clear() leaves behind, a second clear must be
     * harmless (destructors accept cleared objects). */
    memset(&scenario->hardware, 0, sizeof scenario->hardware);
}
