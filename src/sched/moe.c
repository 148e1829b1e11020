/* The routed part of a mixture-of-experts layer: see moe.h.
 *
 * Megatron-Core's MoELayer (moe_layer.py) with its alltoall dispatcher
 * (MoEAlltoAllTokenDispatcher): the router scores each of the rank's L
 * tokens (its sequence shard under sequence parallelism) against every
 * expert, keeps the top_k, and the tokens are permuted into one row per
 * (token, expert) pair grouped by expert; an all-to-all over the EP group
 * sends each expert's rows to the rank holding it; with expert tensor
 * parallelism (etp > 1) the rows are all-gathered over the ETP group (each
 * ETP rank holds a column shard of every local expert); the rows are
 * sorted by local expert, run through the experts' FC1, activation and
 * FC2, sorted back, reduce-scattered over ETP, sent back by the second
 * all-to-all and summed per token weighted by the router's probabilities.
 * The allgather dispatcher (MoEAllGatherTokenDispatcher) all-gathers every
 * token over the ETP x EP group instead, each rank picks the rows of its
 * local experts, and the outputs are reduce-scattered back. The flex
 * dispatcher (MoEFlexTokenDispatcher on DeepEP) sends each token once per
 * destination rank in one fused kernel (cost/alltoall-flex.h), the
 * receiving rank permutes the tokens into its experts' rows and back, and
 * the combine kernel sums each token's outputs.
 *
 * Load: the busiest expert gets `skew` times the mean rows (load_imbalance,
 * capped by capacity_factor, beyond which Megatron drops tokens); the
 * slice is taken to be the rank that holds it, so its expert GEMMs and
 * the bytes it receives are skew times the mean, and every other rank
 * waits for it at the next all-to-all.
 *
 * The EP group spans ranks the layer's machine does not simulate: its
 * all-to-all runs as flows from the slice to the machine's stand-ins of
 * the EP peers (sched/placement.h TpsEpSets, builder.h
 * tps_builder_ep_a2a), sharing NVLink ports and NIC pools with whatever
 * else moves at the time, and alone taking the closed form's time
 * (cost/alltoall.h). The allgather dispatcher's ETP x EP collectives are
 * kernels of their closed-form time on the group's shape
 * (cost/collective.h), holding their channels' SMs and moving their bytes
 * through HBM, not sharing links in the engine (assumption). The ETP
 * collectives run on the engine when the ETP group is the TP group
 * (etp = tp), as the TP ones do.
 */
#include "sched/moe.h"

#include <math.h>
#include <string.h>

#include "cost/alltoall-flex.h"
#include "cost/alltoall.h"
#include "cost/collective-ce.h"
#include "cost/kernel-cost.h"
#include "sched/layer.h"

void
tps_moe_shape(const TpsScenario *sc, TpsMoeShape *m)
{
    const TpsMoe *moe = &sc->moe;
    const guint64 seq = sc->seq_len / MAX(sc->cp, 1u);
    const guint64 tokens = sc->micro_batch * seq;
    m->experts = moe->experts;
    m->ep = MAX(sc->ep, 1u);
    m->etp = tps_scenario_etp(sc);
    m->local_experts = MAX(moe->experts / m->ep, 1u);
    m->top_k = moe->top_k;
    m->tokens = (double)(sc->sp ? tokens / sc->tp : tokens);
    m->skew = moe->load_imbalance;
    if (moe->capacity_factor > 0.0)
        m->skew = MIN(m->skew, MAX(moe->capacity_factor, 1.0));
    m->rows_sent = m->tokens * m->top_k;
    m->rows = m->rows_sent * m->etp * m->skew;
    m->m = (guint64)ceil(m->rows / m->local_experts);
    m->h = sc->hidden;
    m->ffn_local = moe->ffn_hidden / m->etp;
    m->fc1_local = (sc->mlp == TPS_MLP_SWIGLU ? 2 : 1) * m->ffn_local;
    m->elt = tps_dtype_bytes(sc->dtype);
    m->a2a_bytes = m->rows_sent * m->h * m->elt * m->skew;
    m->etp_bytes = m->etp > 1 ? m->rows * m->h * m->elt : 0.0;
    m->gather_bytes = m->tokens * m->etp * m->ep * m->h * m->elt;
}

static char *
opname(guint index, const char *what)
{
    /* As sched/layer.c names its ops. */
    if (index >= 1000u)
        return g_strdup_printf("l%ur.%s", index - 1000u, what);
    return g_strdup_printf("l%u.%s", index, what);
}

static void
memory(TpsBuilder *b, guint index, const char *what, double bytes)
{
    g_autofree char *name = opname(index, what);
    tps_builder_memory(b, b->main, name, bytes, NULL);
}

/* A communication kernel of a closed-form duration over a group the
 * machine does not simulate: `channels` CTAs for `ns`, its send and
 * receive buffers (2 x bytes) through HBM. */
static void
group_kernel(TpsBuilder *b, const TpsStreamId *streams, const char *name, TpsTime ns,
             guint channels, double bytes, TpsOpIds *out)
{
    TpsKernelCost cost = {
        .ctas = channels,
        .max_sms = channels,
        .floor_ns = ns,
        .hbm_bytes = 2.0 * bytes,
    };
    tps_builder_kernel(b, streams, TPS_KIND_COMM, name, &cost, out);
}

/* The flex dispatcher's (DeepEP's) exchange: its fused kernel
 * (cost/alltoall-flex.h) for the busiest rank's tokens. The forward
 * dispatch first exchanges the receive counts (DeepEP's notify kernel,
 * costed as the group's latency) and the host waits for them before it
 * can size and launch the dispatch (fused_a2a.py: "the CPU will wait for
 * GPU's signal"); the others reuse the dispatch's layout. */
static void
flex(TpsBuilder *b, const TpsStreamId *streams, const char *name, gboolean notify, TpsOpIds *out)
{
    TpsMoeShape m;
    tps_moe_shape(b->scenario, &m);
    TpsFlexPlan plan;
    const TpsMoe *moe = &b->scenario->moe;
    /* With etp > 1 the group is ETP x EP (tps_flex_plan_etp()). */
    const TpsGroupShape *group = m.etp > 1 ? &b->etp_ep_shape : &b->ep_shape;
    tps_flex_plan_etp(m.tokens * m.skew, (double)m.h * m.elt, m.experts, m.top_k,
                      moe->router_groups, moe->router_group_topk, group, m.etp, &plan);
    if (notify) {
        g_autofree char *counts = g_strdup_printf("%s_notify", name);
        TpsOpIds done;
        group_kernel(b, streams, counts, tps_alltoall_latency_ns(b->hw, group), plan.sms, 0.0,
                     &done);
        tps_builder_host_sync(b, &done);
    }
    tps_builder_ep_flex(b, streams, &plan, name, out);
}

static void
alltoall(TpsBuilder *b, guint index, const TpsStreamId *streams, const char *what, double bytes,
         TpsOpIds *out)
{
    if (b->ep_shape.ranks < 2)
        return;
    g_autofree char *name = opname(index, what);
    if (b->scenario->moe.dispatcher == TPS_MOE_FLEX) {
        flex(b, streams, name, strcmp(what, "dispatch") == 0, out);
        return;
    }
    tps_builder_ep_a2a(b, streams, bytes, name, out);
}

/* A ring collective over an expert group: on the engine when the group is
 * the machine's TP group, else in closed form on its shape. */
static void
expert_collective(TpsBuilder *b, guint index, const TpsStreamId *streams, const char *what,
                  TpsCollKind kind, double bytes, const TpsGroupShape *shape, TpsOpIds *out)
{
    if (shape->ranks < 2)
        return;
    g_autofree char *name = opname(index, what);
    if (shape == &b->etp_shape && shape->ranks == b->ranks) {
        tps_builder_collective(b, streams, kind, bytes, name, out);
        return;
    }
    if (tps_ce_coll_applies(b->hw, kind, shape)) {
        /* By copy engines: no SMs; each rank's shard read n times and the
         * n shards written (cost/collective-ce.h). */
        TpsKernelCost cost = {
            .floor_ns = tps_coll_group_ns(b->hw, kind, bytes, shape),
            .hbm_bytes = 2.0 * bytes,
        };
        tps_builder_kernel(b, streams, TPS_KIND_COPY, name, &cost, out);
        return;
    }
    TpsCollPlan plan;
    tps_coll_plan_group(b->hw, kind, bytes, shape, &plan);
    group_kernel(b, streams, name, tps_coll_time_ns(b->hw, &plan), plan.channels, bytes, out);
}

void
tps_moe_route_forward(TpsBuilder *b, guint index)
{
    TpsMoeShape m;
    tps_moe_shape(b->scenario, &m);
    const double L = m.tokens, E = m.experts, k = m.top_k;
    /* The router's linear layer [L, h] x [h, E], a plain torch linear in
     * the activations' dtype (bf16 under fp8: not a TE module). */
    g_autofree char *router = opname(index, "router");
    tps_builder_gemm_dtype(b, b->main, router, tps_dtype_compute(b->scenario->dtype), (guint64)L,
                           m.experts, m.h, 0, NULL);
    /* Softmax and top-k: read the logits, write the fp32 scores and the
     * routing map (a byte per token and expert), the top_k probabilities
     * (fp32) and indices (int64) per token; the auxiliary load-balancing
     * loss reads the scores again (assumption: one kernel each). */
    memory(b, index, "router_topk", L * E * (m.elt + 4.0 + 1.0) + L * k * 12.0);
    memory(b, index, "router_aux_loss", L * E * 4.0);
    /* The permutation (moe_utils.permute): a gather of one row per
     * (token, expert) pair, read and written. The allgather dispatcher
     * permutes after its gather (tps_moe_to_experts). */
    if (b->scenario->moe.dispatcher == TPS_MOE_ALLTOALL)
        memory(b, index, "permute", 2.0 * m.rows_sent * m.h * m.elt);
}

void
tps_moe_to_experts_exchange(TpsBuilder *b, guint index, const TpsStreamId *streams,
                            const char *what, TpsOpIds *out)
{
    TpsMoeShape m;
    tps_moe_shape(b->scenario, &m);
    if (b->scenario->moe.dispatcher == TPS_MOE_ALLGATHER) {
        g_autofree char *ag = g_strdup_printf("%s_ag", what);
        expert_collective(b, index, streams, ag, TPS_COLL_ALL_GATHER, m.gather_bytes,
                          &b->etp_ep_shape, out);
        return;
    }
    alltoall(b, index, streams, what, m.a2a_bytes, out);
}

void
tps_moe_to_experts_etp(TpsBuilder *b, guint index, const TpsStreamId *streams, const char *what,
                       TpsOpIds *out)
{
    /* flex: DeepEP's dispatch sends each token to every ETP rank itself
     * (tps_flex_plan_etp()), and its combine sums their partial outputs. */
    if (b->scenario->moe.dispatcher != TPS_MOE_ALLTOALL)
        return;
    TpsMoeShape m;
    tps_moe_shape(b->scenario, &m);
    g_autofree char *ag = g_strdup_printf("%s_etp_ag", what);
    expert_collective(b, index, streams, ag, TPS_COLL_ALL_GATHER, m.etp_bytes, &b->etp_shape, out);
}

void
tps_moe_to_experts(TpsBuilder *b, guint index, const TpsStreamId *streams, const char *what,
                   TpsOpIds *out)
{
    tps_moe_to_experts_exchange(b, index, streams, what, out);
    tps_moe_to_experts_etp(b, index, streams, what, out);
}

void
tps_moe_from_experts(TpsBuilder *b, guint index, const TpsStreamId *streams, const char *what,
                     TpsOpIds *out)
{
    TpsMoeShape m;
    tps_moe_shape(b->scenario, &m);
    if (b->scenario->moe.dispatcher == TPS_MOE_ALLGATHER) {
        g_autofree char *rs = g_strdup_printf("%s_rs", what);
        expert_collective(b, index, streams, rs, TPS_COLL_REDUCE_SCATTER, m.gather_bytes,
                          &b->etp_ep_shape, out);
        return;
    }
    g_autofree char *rs = g_strdup_printf("%s_etp_rs", what);
    if (b->scenario->moe.dispatcher == TPS_MOE_ALLTOALL)
        expert_collective(b, index, streams, rs, TPS_COLL_REDUCE_SCATTER, m.etp_bytes,
                          &b->etp_shape, out);
    alltoall(b, index, streams, what, m.a2a_bytes, out);
}

/* The local experts' GEMM [m, k] x [k, n] each: one grouped GEMM
 * (model.moe.grouped_gemm: TE's GroupedLinear / grouped_gemm, costed as
 * one kernel of local_experts problems through the GEMM model's tiles and
 * waves), or one GEMM per expert in turn (SequentialMLP). */
static void
expert_gemm(TpsBuilder *b, const TpsMoeShape *m, guint index, const char *what, guint64 gm,
            guint64 gn, guint64 gk)
{
    g_autofree char *name = opname(index, what);
    if (!b->scenario->moe.grouped_gemm) {
        for (guint e = 0; e < m->local_experts; e++)
            tps_builder_gemm(b, b->main, name, gm, gn, gk, 0, NULL);
        return;
    }
    TpsKernelCost cost;
    /* (gemm_hw: under fp8 the recipe's FP8 rate, MXFP8's block-scaled one
     * under mxfp8.) */
    tps_cost_batched_gemm(b->gemm_hw, b->scenario->dtype, m->local_experts, gm, gn, gk, 0, &cost);
    tps_builder_kernel(b, b->main, TPS_KIND_GEMM, name, &cost, NULL);
    b->gemm_count++;
}

/* Sorting the received rows by local expert and back (sort_chunks_by_idxs:
 * a copy, under the alltoall dispatcher with several local experts); the
 * allgather dispatcher's selection of its experts' rows from the gathered
 * tokens and the scatter back (read and write the rows; the scatter also
 * writes the gathered buffer). */
static void
sort_rows(TpsBuilder *b, const TpsMoeShape *m, guint index, const char *what, gboolean back)
{
    const double rows = m->rows * m->h * m->elt;
    if (b->scenario->moe.dispatcher == TPS_MOE_FLEX) {
        /* The flex dispatcher receives each token once per rank and
         * permutes it into its local experts' rows there (and back):
         * get_permuted/restored_hidden_states_by_experts. */
        if (m->ep > 1) {
            const gboolean bwd = g_str_has_suffix(what, "_bwd");
            const char *op =
                back ? (bwd ? "permute_bwd" : "unpermute") : (bwd ? "unpermute_bwd" : "permute");
            memory(b, index, op, 2.0 * rows);
        }
        return;
    }
    if (b->scenario->moe.dispatcher == TPS_MOE_ALLGATHER) {
        memory(b, index, what, back ? rows + m->gather_bytes : 2.0 * rows);
        return;
    }
    if (m->ep > 1 && m->local_experts > 1)
        memory(b, index, what, 2.0 * rows);
}

/* Under dtype fp8, the rows of `cols` columns a grouped GEMM takes as its
 * FP8 operand (an expert GEMM's input forward, its output gradient
 * backward): Transformer Engine's GroupedLinear quantizes them for all
 * local experts at once (tex.split_quantize, one quantizer per expert,
 * rowwise for the GEMM and columnwise for the wgrad:
 * pytorch/module/grouped_linear.py), by the scenario's recipe (one pass
 * of each kernel over every expert's rows: assumption); the expert
 * weights' FP8 copies are made once a step (sched/pipeline.c). */
static void
expert_operand(TpsBuilder *b, const TpsMoeShape *m, guint index, const char *what, guint64 cols)
{
    /* SequentialMLP: each expert's TE Linear quantizes its own rows. */
    const guint passes = b->scenario->moe.grouped_gemm ? 1u : m->local_experts;
    for (guint e = 0; e < passes; e++)
        tps_layer_fp8_operand(b, index, what,
                              (double)m->m * (m->local_experts / passes) * (double)cols, TRUE);
}

void
tps_moe_experts_forward(TpsBuilder *b, guint index)
{
    TpsMoeShape m;
    tps_moe_shape(b->scenario, &m);
    const gboolean swiglu = b->scenario->mlp == TPS_MLP_SWIGLU;
    sort_rows(b, &m, index, "sort_rows", FALSE);
    expert_operand(b, &m, index, "expert_fc1_input_cast", m.h);
    expert_gemm(b, &m, index, "expert_fc1", m.m, m.fc1_local, m.h);
    /* As the dense MLP's fused activation: read FC1's output, write FC2's
     * input. */
    memory(b, index, swiglu ? "expert_swiglu" : "expert_gelu",
           (swiglu ? 3.0 : 2.0) * m.elt * (double)m.m * m.local_experts * m.ffn_local);
    expert_operand(b, &m, index, "expert_fc2_input_cast", m.ffn_local);
    expert_gemm(b, &m, index, "expert_fc2", m.m, m.h, m.ffn_local);
    sort_rows(b, &m, index, "unsort_rows", TRUE);
}

void
tps_moe_experts_backward(TpsBuilder *b, guint index)
{
    TpsMoeShape m;
    tps_moe_shape(b->scenario, &m);
    const gboolean swiglu = b->scenario->mlp == TPS_MLP_SWIGLU;
    sort_rows(b, &m, index, "unsort_rows_bwd", FALSE);
    expert_operand(b, &m, index, "expert_fc2_grad_cast", m.h);
    expert_gemm(b, &m, index, "expert_fc2_dgrad", m.m, m.ffn_local, m.h);
    expert_gemm(b, &m, index, "expert_fc2_wgrad", m.ffn_local, m.h, m.m);
    memory(b, index, swiglu ? "expert_swiglu_bwd" : "expert_gelu_bwd",
           (swiglu ? 5.0 : 3.0) * m.elt * (double)m.m * m.local_experts * m.ffn_local);
    expert_operand(b, &m, index, "expert_fc1_grad_cast", m.fc1_local);
    expert_gemm(b, &m, index, "expert_fc1_dgrad", m.m, m.h, m.fc1_local);
    expert_gemm(b, &m, index, "expert_fc1_wgrad", m.h, m.fc1_local, m.m);
    sort_rows(b, &m, index, "sort_rows_bwd", TRUE);
}

void
tps_moe_unpermute_forward(TpsBuilder *b, guint index, const TpsStreamId *streams)
{
    /* flex: the combine sums the tokens' rows (cost/alltoall-flex.h). */
    if (b->scenario->moe.dispatcher == TPS_MOE_FLEX)
        return;
    TpsMoeShape m;
    tps_moe_shape(b->scenario, &m);
    /* Read each token's top_k rows (and probabilities), write the token. */
    g_autofree char *name = opname(index, "unpermute");
    tps_builder_memory(b, streams, name, (m.rows_sent + m.tokens) * m.h * m.elt, NULL);
}

void
tps_moe_unpermute_backward(TpsBuilder *b, guint index, const TpsStreamId *streams)
{
    /* flex: the combine sums the tokens' rows (cost/alltoall-flex.h). */
    if (b->scenario->moe.dispatcher == TPS_MOE_FLEX)
        return;
    TpsMoeShape m;
    tps_moe_shape(b->scenario, &m);
    /* Read the tokens' gradient and the saved rows (for the probabilities'
     * gradient), write the rows' gradient. */
    g_autofree char *name = opname(index, "unpermute_bwd");
    tps_builder_memory(b, streams, name, (m.tokens + 2.0 * m.rows_sent) * m.h * m.elt, NULL);
}

void
tps_moe_route_backward(TpsBuilder *b, guint index)
{
    TpsMoeShape m;
    tps_moe_shape(b->scenario, &m);
    const double L = m.tokens, E = m.experts;
    const TpsDtype dtype = tps_dtype_compute(b->scenario->dtype);
    /* The permutation's backward: a scatter-add of the rows into their
     * tokens (read the rows, write the tokens). */
    if (b->scenario->moe.dispatcher == TPS_MOE_ALLTOALL)
        memory(b, index, "permute_bwd", (m.rows_sent + L) * m.h * m.elt);
    /* Softmax, top-k and auxiliary loss backward: read the scores and
     * their gradient, write the logits' gradient. */
    memory(b, index, "router_topk_bwd", L * E * (4.0 + 4.0 + m.elt));
    g_autofree char *dgrad = opname(index, "router_dgrad");
    g_autofree char *wgrad = opname(index, "router_wgrad");
    tps_builder_gemm_dtype(b, b->main, dgrad, dtype, (guint64)L, m.h, m.experts, 0, NULL);
    tps_builder_gemm_dtype(b, b->main, wgrad, dtype, m.experts, m.h, (guint64)L, 0, NULL);
    /* The router's input gradient added to the experts' (read both,
     * write the sum). */
    memory(b, index, "router_grad_add", 3.0 * L * m.h * m.elt);
}
