/* The overlap-method table (see method.h).
 *
 * Slot rules are Transformer Engine's (initialize_ub, real-schedules.md
 * section 2): pipeline splits only a reduce-scatter, so it is rejected on
 * the GEMMs fed by an all-gather; bulk overlaps only communication that
 * does not depend on the GEMM beside it (the column-parallel backward);
 * wgrad GEMMs communicate nothing of their own, so only bulk applies there.
 * The table is indexed by TpsMethod rather than sorted by name: it is read
 * per GEMM while graphs are built, and four rows make a name search cheap.
 */
#include "sched/method.h"

#include <string.h>

#include "sched/overlap-private.h"

#define SLOT TPS_METHOD_SLOT

/* GEMMs fed by an all-gather (the column-parallel forward and the
 * row-parallel dgrad), GEMMs followed by a reduce-scatter (the
 * row-parallel forward), the column-parallel dgrad (the all-gather of the
 * saved input beside it, or its own reduce-scatter) and its wgrad. */
#define AG_SLOTS                                                                                   \
    (SLOT(TPS_GEMM_QKV_FPROP) | SLOT(TPS_GEMM_FC1_FPROP) | SLOT(TPS_GEMM_PROJ_DGRAD) |             \
     SLOT(TPS_GEMM_FC2_DGRAD))
#define RS_SLOTS (SLOT(TPS_GEMM_PROJ_FPROP) | SLOT(TPS_GEMM_FC2_FPROP))
#define DGRAD_SLOTS (SLOT(TPS_GEMM_QKV_DGRAD) | SLOT(TPS_GEMM_FC1_DGRAD))
#define WGRAD_SLOTS (SLOT(TPS_GEMM_QKV_WGRAD) | SLOT(TPS_GEMM_FC1_WGRAD))

static const TpsMethodInfo methods[] = {
    [TPS_METHOD_NONE] =
        {
            .id = TPS_METHOD_NONE,
            .name = "none",
            .summary = "no userbuffers overlap: blocking NCCL, or Megatron's NCCL side stream in "
                       "the backward",
            .slots = AG_SLOTS | RS_SLOTS | DGRAD_SLOTS | WGRAD_SLOTS,
            .ops = TPS_OPS_AG | TPS_OPS_RS,
            .defaults = {.method = TPS_METHOD_NONE, .cga_size = 2, .use_ce = TRUE},
        },
    [TPS_METHOD_RING_EXCHANGE] =
        {
            .id = TPS_METHOD_RING_EXCHANGE,
            .name = "ring_exchange",
            .summary = "userbuffers P2P ring: one GEMM chunk per rank while the next shard or "
                       "partial sum moves (copy engine by default)",
            .slots = AG_SLOTS | RS_SLOTS | DGRAD_SLOTS,
            .ops = TPS_OPS_AG | TPS_OPS_RS,
            .rejected = "method 'ring_exchange' only applies to GEMMs with an all-gather or "
                        "reduce-scatter of their own",
            .has_splits = TRUE,
            .splits_per_rank = TRUE,
            .defaults =
                {.method = TPS_METHOD_RING_EXCHANGE, .num_sm = 1, .cga_size = 1, .use_ce = TRUE},
            .ag_gemm = tps_overlap_ring_exchange_ag,
            .gemm_rs = tps_overlap_ring_exchange_rs,
        },
    [TPS_METHOD_PIPELINE] =
        {
            .id = TPS_METHOD_PIPELINE,
            .name = "pipeline",
            .summary = "GEMM in num_splits chunks, each reduce-scattered by SM-based kernels while "
                       "the next computes",
            .slots = RS_SLOTS | DGRAD_SLOTS,
            .ops = TPS_OPS_RS,
            .rejected =
                "method 'pipeline' is not allowed for all-gather layers (Transformer Engine "
                "rejects it); use ring_exchange",
            .has_splits = TRUE,
            .has_sms = TRUE,
            .defaults = {.method = TPS_METHOD_PIPELINE,
                         .num_splits = 4,
                         .num_sm = 16,
                         .cga_size = 2,
                         .set_sm_margin = TRUE,
                         .use_ce = TRUE},
            .gemm_rs = tps_overlap_pipeline_rs,
        },
    [TPS_METHOD_BULK] =
        {
            .id = TPS_METHOD_BULK,
            .name = "bulk",
            .summary = "an independent all-gather or reduce-scatter as one SM-based kernel beside "
                       "the GEMM",
            .slots = DGRAD_SLOTS | WGRAD_SLOTS,
            .ops = 0,
            .rejected = "method 'bulk' only applies to qkv_dgrad, fc1_dgrad, qkv_wgrad and "
                        "fc1_wgrad, whose communication does not depend on the GEMM",
            .has_sms = TRUE,
            .defaults = {.method = TPS_METHOD_BULK,
                         .num_sm = 16,
                         .cga_size = 2,
                         .set_sm_margin = TRUE,
                         .use_ce = TRUE},
            .bulk = tps_overlap_bulk,
        },
};
G_STATIC_ASSERT(G_N_ELEMENTS(methods) == TPS_METHOD_COUNT);

/* For tps_yaml_enum's suggestions and the writers, which take a
 * NULL-terminated list; test-overlap pins that it spells the table. */
const char *const tps_method_names[] = {
    [TPS_METHOD_NONE] = "none",         [TPS_METHOD_RING_EXCHANGE] = "ring_exchange",
    [TPS_METHOD_PIPELINE] = "pipeline", [TPS_METHOD_BULK] = "bulk",
    [TPS_METHOD_COUNT] = NULL,
};
G_STATIC_ASSERT(G_N_ELEMENTS(tps_method_names) == TPS_METHOD_COUNT + 1);

const TpsMethodInfo *
tps_method_info(TpsMethod method)
{
    g_return_val_if_fail((guint)method < TPS_METHOD_COUNT, &methods[TPS_METHOD_NONE]);
    return &methods[method];
}

TpsMethod
tps_method_te_default(TpsGemmSlot slot, TpsOpKind op_kind)
{
    switch (slot) {
    case TPS_GEMM_QKV_FPROP:
    case TPS_GEMM_FC1_FPROP:
    case TPS_GEMM_PROJ_DGRAD:
    case TPS_GEMM_FC2_DGRAD:
        return TPS_METHOD_RING_EXCHANGE;
    case TPS_GEMM_PROJ_FPROP:
    case TPS_GEMM_FC2_FPROP:
        return TPS_METHOD_PIPELINE;
    case TPS_GEMM_QKV_DGRAD:
    case TPS_GEMM_FC1_DGRAD:
    case TPS_GEMM_QKV_WGRAD:
    case TPS_GEMM_FC1_WGRAD:
        return TPS_METHOD_BULK;
    case TPS_GEMM_OP:
        return op_kind == TPS_OP_AG_GEMM ? TPS_METHOD_RING_EXCHANGE : TPS_METHOD_PIPELINE;
    default:
        return TPS_METHOD_NONE;
    }
}

const TpsMethodInfo *
tps_method_lookup(const char *name)
{
    g_return_val_if_fail(name != NULL, NULL);
    for (guint i = 0; i < G_N_ELEMENTS(methods); i++)
        if (strcmp(methods[i].name, name) == 0)
            return &methods[i];
    return NULL;
}

gboolean
tps_method_allows(const TpsMethodInfo *method, TpsGemmSlot slot, TpsOpKind op_kind)
{
    g_return_val_if_fail(method != NULL && slot < TPS_GEMM_SLOT_COUNT, FALSE);
    if (slot == TPS_GEMM_OP)
        return (method->ops & (1u << op_kind)) != 0;
    return (method->slots & SLOT(slot)) != 0;
}

char *
tps_method_join(guint which, const char *quote)
{
    GString *s = g_string_new(NULL);
    guint n = 0, seen = 0;
    for (guint i = 0; i < G_N_ELEMENTS(methods); i++)
        n += (which >> i) & 1u;
    for (guint i = 0; i < G_N_ELEMENTS(methods); i++) {
        if (!((which >> i) & 1u))
            continue;
        if (seen > 0)
            g_string_append(s, seen + 1 == n ? " or " : ", ");
        g_string_append_printf(s, "%s%s%s", quote, methods[i].name, quote);
        seen++;
    }
    return g_string_free(s, FALSE);
}
