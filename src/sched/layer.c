/* Graph builders for the layer, the head, the optimizer and op scenarios.
 *
 * Shapes follow Megatron (arXiv:2104.04473, arXiv:2205.05198): tokens
 * T = micro_batch x seq_len; with sequence parallelism the LayerNorm,
 * dropout and residual regions hold T/t tokens; column-parallel GEMMs
 * (QKV, FC1) produce n/t columns, row-parallel GEMMs (proj, FC2) consume k/t.
 * Backward splits every linear layer into a dgrad and a wgrad GEMM.
 */
#include "sched/layer.h"

#include <string.h>

#include "cost/kernel-cost.h"

void
tps_builder_machine(const TpsScenario *scenario, TpsMachine *machine)
{
    const TpsHardware *hw = &scenario->hardware;
    *machine = (TpsMachine){
        .ranks = scenario->tp,
        .gpus_per_node = hw->gpus_per_node,
        .sms = hw->sms,
        .hbm_gbps = tps_cost_hbm_gbps(hw),
        .nvlink_gbps = hw->nvlink_gbps * hw->nvlink_efficiency,
        .nic_gbps = hw->nic_gbps,
        .copy_engines = hw->copy_engines,
        .launch_ns = tps_cost_launch_ns(hw),
        /* Megatron's SP path needs CUDA_DEVICE_MAX_CONNECTIONS=1 so that a
         * collective is queued before the GEMM launched after it
         * (real-schedules.md section 1). */
        .single_hw_queue = TRUE,
    };
}

void
tps_builder_init(TpsBuilder *b, const TpsScenario *scenario, TpsStrategyId strategy)
{
    TpsMachine machine;

    memset(b, 0, sizeof(*b));
    g_assert(scenario->tp >= 1 && scenario->tp <= TPS_MAX_RANKS);
    tps_builder_machine(scenario, &machine);
    b->engine = tps_engine_new(&machine);
    b->scenario = scenario;
    b->hw = &scenario->hardware;
    b->strategy = strategy;
    b->ranks = scenario->tp;
    for (guint r = 0; r < b->ranks; r++) {
        b->main[r] = tps_engine_add_stream(b->engine, r, 0, "main");
        b->side[r] = tps_engine_add_stream(b->engine, r, 1, "nccl");
    }
}

void
tps_builder_clear(TpsBuilder *b)
{
    g_clear_pointer(&b->engine, tps_engine_free);
}

static void
op_add(TpsBuilder *b, const TpsStreamId *streams, TpsTaskKind kind, const char *name,
       const TpsKernelCost *cost, TpsOpIds *out)
{
    for (guint r = 0; r < b->ranks; r++) {
        TpsTaskSpec spec = {
            .kind = kind,
            .name = name,
            .rank = r,
            .stream = streams[r],
            .parent = TPS_TASK_NONE,
            .launch = TRUE,
            .ctas = cost->ctas,
            .max_sms = cost->max_sms,
            .wave_ns = cost->wave_ns,
            .fixed_ns = cost->fixed_ns,
            .floor_ns = cost->floor_ns,
            .hbm_bytes = cost->hbm_bytes,
            .flops = cost->flops,
            .bytes = cost->hbm_bytes,
        };
        TpsTaskId id = tps_engine_add(b->engine, &spec);
        if (out)
            out->id[r] = id;
    }
}

static void
op_gemm(TpsBuilder *b, const TpsStreamId *streams, const char *name, guint64 m, guint64 n,
        guint64 k, TpsOpIds *out)
{
    TpsKernelCost cost;
    tps_cost_gemm(b->hw, b->scenario->dtype, m, n, k, 0, &cost);
    op_add(b, streams, TPS_KIND_GEMM, name, &cost, out);
    b->gemm_count++;
}

static void
op_batched_gemm(TpsBuilder *b, const char *name, guint64 count, guint64 m, guint64 n, guint64 k)
{
    TpsKernelCost cost;
    tps_cost_batched_gemm(b->hw, b->scenario->dtype, count, m, n, k, 0, &cost);
    op_add(b, b->main, TPS_KIND_ATTENTION, name, &cost, NULL);
}

static void
op_memory(TpsBuilder *b, const char *name, double bytes)
{
    TpsKernelCost cost;
    tps_cost_memory(b->hw, bytes, &cost);
    op_add(b, b->main, TPS_KIND_MEMORY, name, &cost, NULL);
}

void
tps_builder_collective(TpsBuilder *b, const TpsStreamId *streams, TpsCollKind kind, double bytes,
              const char *name, TpsOpIds *out)
{
    const guint n = b->ranks;
    TpsCollPlan plan;
    TpsOpIds containers;
    g_autofree TpsTaskId *flows = NULL;

    if (n < 2)
        return;
    tps_coll_plan(b->hw, kind, bytes, n, &plan);
    b->coll_bytes[kind] += bytes;
    b->coll_count[kind]++;

    for (guint r = 0; r < n; r++) {
        TpsTaskSpec spec = {
            .kind = TPS_KIND_COMM,
            .name = name,
            .rank = r,
            .stream = streams[r],
            .parent = TPS_TASK_NONE,
            .launch = TRUE,
            .container = TRUE,
            .ctas = plan.channels,
            .bytes = plan.step_bytes * plan.steps,
        };
        containers.id[r] = tps_engine_add(b->engine, &spec);
    }

    /* Step s of rank r sends to r+1 the chunk it received at step s-1 from
     * r-1 (all-gather: forwards it; reduce-scatter: adds its own part
     * first). The receiver must be inside its kernel too. */
    g_autofree char *flow_name = g_strdup_printf("%s.step", name);
    TpsTime floor_ns = tps_time_from_ns(plan.step_bytes / plan.rate_cap_gbps);
    flows = g_new(TpsTaskId, (gsize)n * plan.steps);
    for (guint s = 0; s < plan.steps; s++) {
        for (guint r = 0; r < n; r++) {
            guint dst = (r + 1) % n;
            TpsTaskSpec spec = {
                .kind = TPS_KIND_FLOW,
                .name = flow_name,
                .rank = r,
                .stream = TPS_STREAM_NONE,
                .parent = containers.id[r],
                .fixed_ns = plan.step_latency_ns + (s == 0 ? plan.base_ns : 0),
                .floor_ns = floor_ns,
                .dst_rank = dst,
                .link_bytes = plan.wire_bytes,
                .bytes = plan.step_bytes,
            };
            TpsTaskId id = tps_engine_add(b->engine, &spec);
            flows[s * n + r] = id;
            if (s == 0) {
                tps_engine_after_start(b->engine, id, containers.id[dst]);
            } else {
                tps_engine_after(b->engine, id, flows[(s - 1) * n + r]);
                tps_engine_after(b->engine, id, flows[(s - 1) * n + (r + n - 1) % n]);
            }
        }
    }
    if (out)
        *out = containers;
}

/* Each rank's `stream` waits for the op `on` (cudaStreamWaitEvent). */
static void
op_wait(TpsBuilder *b, const TpsStreamId *streams, const TpsOpIds *on)
{
    for (guint r = 0; r < b->ranks; r++)
        tps_engine_stream_wait(b->engine, streams[r], on->id[r]);
}

/* The last op on each rank's `stream`. */
static void
op_record(TpsBuilder *b, const TpsStreamId *streams, TpsOpIds *out)
{
    for (guint r = 0; r < b->ranks; r++)
        out->id[r] = tps_engine_record(b->engine, streams[r]);
}

void
tps_builder_mark(TpsBuilder *b, const char *name, TpsOpIds *out)
{
    for (guint r = 0; r < b->ranks; r++) {
        TpsTaskSpec spec = {
            .kind = TPS_KIND_MARKER,
            .name = name,
            .rank = r,
            .stream = b->main[r],
            .parent = TPS_TASK_NONE,
        };
        out->id[r] = tps_engine_add(b->engine, &spec);
    }
}

/* ---- shapes ---- */

typedef struct {
    guint64 t, tokens, local_tokens, h, f, heads_local, head_dim, seq, batch;
    double elt; /* bytes per element */
    gboolean sp;
} Shape;

static void
shape_of(const TpsBuilder *b, Shape *s)
{
    const TpsScenario *sc = b->scenario;
    s->t = sc->tp;
    s->batch = sc->micro_batch;
    s->seq = sc->seq_len;
    s->tokens = sc->micro_batch * sc->seq_len;
    s->sp = sc->sp;
    s->local_tokens = sc->sp ? s->tokens / s->t : s->tokens;
    s->h = sc->hidden;
    s->f = sc->ffn_hidden;
    s->heads_local = sc->heads / s->t;
    s->head_dim = sc->hidden / sc->heads;
    s->elt = tps_dtype_bytes(sc->dtype);
}

static char *
opname(guint index, const char *what)
{
    return g_strdup_printf("l%u.%s", index, what);
}

/* LayerNorm forward: read x, write y (plus per-token statistics, small). */
static double
ln_fwd_bytes(const Shape *s)
{
    return 2.0 * s->local_tokens * s->h * s->elt;
}

/* LayerNorm backward: read dy, x; write dx; plus the residual gradient add
 * (read the other branch's gradient): 4 tensors. */
static double
ln_bwd_bytes(const Shape *s)
{
    return 4.0 * s->local_tokens * s->h * s->elt;
}

/* Fused bias + dropout + residual add: read the GEMM output and the
 * residual, write the sum and a one-byte dropout mask. */
static double
bda_fwd_bytes(const Shape *s)
{
    return (3.0 * s->elt + 1.0) * s->local_tokens * s->h;
}

/* Dropout backward: read the gradient and the mask, write the gradient. */
static double
bda_bwd_bytes(const Shape *s)
{
    return (2.0 * s->elt + 1.0) * s->local_tokens * s->h;
}

/* The all-gather into a column-parallel GEMM (forward) or the
 * reduce-scatter/all-reduce after a row-parallel GEMM. */
static void
tp_enter(TpsBuilder *b, const Shape *s, guint index, const char *what)
{
    if (!s->sp)
        return; /* classic TP: the input is replicated, f is identity */
    g_autofree char *name = opname(index, what);
    tps_builder_collective(b, b->main, TPS_COLL_ALL_GATHER, (double)s->tokens * s->h * s->elt, name, NULL);
}

static void
tp_exit(TpsBuilder *b, const Shape *s, guint index, const char *what)
{
    g_autofree char *name = opname(index, what);
    tps_builder_collective(b, b->main, s->sp ? TPS_COLL_REDUCE_SCATTER : TPS_COLL_ALL_REDUCE,
                  (double)s->tokens * s->h * s->elt, name, NULL);
}

static void
attention_forward(TpsBuilder *b, const Shape *s, guint index)
{
    const guint64 count = s->batch * s->heads_local;
    if (b->scenario->attention == TPS_ATTENTION_FLASH) {
        TpsKernelCost cost;
        g_autofree char *name = opname(index, "attn_fwd");
        tps_cost_flash_attention(b->hw, b->scenario->dtype, s->batch, s->heads_local, s->seq,
                                 s->head_dim, FALSE, &cost);
        op_add(b, b->main, TPS_KIND_ATTENTION, name, &cost, NULL);
        return;
    }
    /* Megatron's unfused core: scores = Q K^T, scale-mask-softmax, dropout,
     * context = P V. */
    const double scores = (double)count * s->seq * s->seq;
    g_autofree char *qk = opname(index, "attn_qk");
    g_autofree char *sm = opname(index, "attn_softmax");
    g_autofree char *dr = opname(index, "attn_dropout");
    g_autofree char *av = opname(index, "attn_av");
    op_batched_gemm(b, qk, count, s->seq, s->seq, s->head_dim);
    op_memory(b, sm, 2.0 * s->elt * scores);
    op_memory(b, dr, (2.0 * s->elt + 1.0) * scores);
    op_batched_gemm(b, av, count, s->seq, s->head_dim, s->seq);
}

static void
attention_backward(TpsBuilder *b, const Shape *s, guint index)
{
    const guint64 count = s->batch * s->heads_local;
    if (b->scenario->attention == TPS_ATTENTION_FLASH) {
        TpsKernelCost cost;
        g_autofree char *name = opname(index, "attn_bwd");
        tps_cost_flash_attention(b->hw, b->scenario->dtype, s->batch, s->heads_local, s->seq,
                                 s->head_dim, TRUE, &cost);
        op_add(b, b->main, TPS_KIND_ATTENTION, name, &cost, NULL);
        return;
    }
    const double scores = (double)count * s->seq * s->seq;
    g_autofree char *dv = opname(index, "attn_dv");
    g_autofree char *dp = opname(index, "attn_dp");
    g_autofree char *dd = opname(index, "attn_dropout_bwd");
    g_autofree char *ds = opname(index, "attn_softmax_bwd");
    g_autofree char *dq = opname(index, "attn_dq");
    g_autofree char *dk = opname(index, "attn_dk");
    op_batched_gemm(b, dv, count, s->seq, s->head_dim, s->seq); /* dV = P^T dO */
    op_batched_gemm(b, dp, count, s->seq, s->seq, s->head_dim); /* dP = dO V^T */
    op_memory(b, dd, (2.0 * s->elt + 1.0) * scores);
    op_memory(b, ds, 3.0 * s->elt * scores); /* read P, dP; write dS */
    op_batched_gemm(b, dq, count, s->seq, s->head_dim, s->seq); /* dQ = dS K */
    op_batched_gemm(b, dk, count, s->seq, s->head_dim, s->seq); /* dK = dS^T Q */
}

void
tps_layer_forward(TpsBuilder *b, guint index)
{
    Shape s;
    shape_of(b, &s);
    g_autofree char *ln1 = opname(index, "ln1");
    g_autofree char *qkv = opname(index, "qkv_fprop");
    g_autofree char *proj = opname(index, "proj_fprop");
    g_autofree char *bda1 = opname(index, "bda1");
    g_autofree char *ln2 = opname(index, "ln2");
    g_autofree char *fc1 = opname(index, "fc1_fprop");
    g_autofree char *gelu = opname(index, "gelu");
    g_autofree char *fc2 = opname(index, "fc2_fprop");
    g_autofree char *bda2 = opname(index, "bda2");

    /* Forward is blocking in every preset of this version: the collective
     * sits on the compute stream between its producer and consumer. */
    op_memory(b, ln1, ln_fwd_bytes(&s));
    tp_enter(b, &s, index, "qkv_fprop.ag");
    op_gemm(b, b->main, qkv, s.tokens, 3 * s.h / s.t, s.h, NULL);
    attention_forward(b, &s, index);
    op_gemm(b, b->main, proj, s.tokens, s.h, s.h / s.t, NULL);
    tp_exit(b, &s, index, s.sp ? "proj_fprop.rs" : "proj_fprop.ar");
    op_memory(b, bda1, bda_fwd_bytes(&s));
    op_memory(b, ln2, ln_fwd_bytes(&s));
    tp_enter(b, &s, index, "fc1_fprop.ag");
    op_gemm(b, b->main, fc1, s.tokens, s.f / s.t, s.h, NULL);
    /* Bias + GeLU over the FC1 output: read and write. */
    op_memory(b, gelu, 2.0 * s.elt * s.tokens * (s.f / s.t));
    op_gemm(b, b->main, fc2, s.tokens, s.h, s.f / s.t, NULL);
    tp_exit(b, &s, index, s.sp ? "fc2_fprop.rs" : "fc2_fprop.ar");
    op_memory(b, bda2, bda_fwd_bytes(&s));
}

/* Backward of a column-parallel linear layer (QKV or FC1): dgrad and wgrad
 * GEMMs, the all-gather of the saved sequence-sharded input (wgrad needs the
 * full input) and the reduce-scatter (all-reduce without SP) of grad_input.
 * `n_local` is the layer's output width on this rank. */
static void
column_backward(TpsBuilder *b, const Shape *s, guint index, const char *gemm, guint64 n_local)
{
    g_autofree char *dgrad = g_strdup_printf("l%u.%s_dgrad", index, gemm);
    g_autofree char *wgrad = g_strdup_printf("l%u.%s_wgrad", index, gemm);
    g_autofree char *ag = g_strdup_printf("l%u.%s_wgrad.ag", index, gemm);
    g_autofree char *rs = g_strdup_printf("l%u.%s_dgrad.%s", index, gemm, s->sp ? "rs" : "ar");
    const double full = (double)s->tokens * s->h * s->elt;
    const TpsCollKind exit_kind = s->sp ? TPS_COLL_REDUCE_SCATTER : TPS_COLL_ALL_REDUCE;

    if (b->strategy != TPS_STRATEGY_MEGATRON) {
        /* Everything on the compute stream, in Megatron's launch order. */
        if (s->sp)
            tps_builder_collective(b, b->main, TPS_COLL_ALL_GATHER, full, ag, NULL);
        op_gemm(b, b->main, dgrad, s->tokens, s->h, n_local, NULL);
        tps_builder_collective(b, b->main, exit_kind, full, rs, NULL);
        op_gemm(b, b->main, wgrad, s->h, n_local, s->tokens, NULL);
        return;
    }

    /* Megatron (LinearWithGradAccumulationAndAsyncCommunication): the
     * all-gather of the saved input runs on the NCCL stream under dgrad;
     * the reduce-scatter of grad_input runs there under wgrad. One hardware
     * queue keeps each collective ahead of the GEMM launched after it, so
     * its channels take their SMs before the GEMM fills the GPU. */
    TpsOpIds before, ag_ids, dgrad_ids, rs_ids;
    op_record(b, b->main, &before);
    op_wait(b, b->side, &before);
    tps_builder_collective(b, b->side, TPS_COLL_ALL_GATHER, full, ag, &ag_ids);
    op_gemm(b, b->main, dgrad, s->tokens, s->h, n_local, &dgrad_ids);
    op_wait(b, b->side, &dgrad_ids);
    tps_builder_collective(b, b->side, exit_kind, full, rs, &rs_ids);
    op_wait(b, b->main, &ag_ids);
    op_gemm(b, b->main, wgrad, s->h, n_local, s->tokens, NULL);
    /* grad_input is returned only once its reduce-scatter has finished. */
    op_wait(b, b->main, &rs_ids);
}

/* Backward of a row-parallel linear layer (proj or FC2): the all-gather of
 * the sequence-sharded grad_output (SP) before dgrad; wgrad uses the local
 * input. `k_local` is the layer's input width on this rank. */
static void
row_backward(TpsBuilder *b, const Shape *s, guint index, const char *gemm, guint64 k_local)
{
    g_autofree char *dgrad = g_strdup_printf("l%u.%s_dgrad", index, gemm);
    g_autofree char *wgrad = g_strdup_printf("l%u.%s_wgrad", index, gemm);
    g_autofree char *ag = g_strdup_printf("l%u.%s_dgrad.ag", index, gemm);

    if (s->sp)
        tps_builder_collective(b, b->main, TPS_COLL_ALL_GATHER, (double)s->tokens * s->h * s->elt, ag,
                      NULL);
    op_gemm(b, b->main, dgrad, s->tokens, k_local, s->h, NULL);
    op_gemm(b, b->main, wgrad, k_local, s->h, s->tokens, NULL);
}

void
tps_layer_backward(TpsBuilder *b, guint index)
{
    Shape s;
    shape_of(b, &s);
    g_autofree char *bda2 = opname(index, "bda2_bwd");
    g_autofree char *gelu = opname(index, "gelu_bwd");
    g_autofree char *ln2 = opname(index, "ln2_bwd");
    g_autofree char *bda1 = opname(index, "bda1_bwd");
    g_autofree char *ln1 = opname(index, "ln1_bwd");

    op_memory(b, bda2, bda_bwd_bytes(&s));
    row_backward(b, &s, index, "fc2", s.f / s.t);
    /* GeLU backward: read dy and the saved input, write dx. */
    op_memory(b, gelu, 3.0 * s.elt * s.tokens * (s.f / s.t));
    column_backward(b, &s, index, "fc1", s.f / s.t);
    op_memory(b, ln2, ln_bwd_bytes(&s));
    op_memory(b, bda1, bda_bwd_bytes(&s));
    row_backward(b, &s, index, "proj", s.h / s.t);
    /* Selective recompute re-runs the attention core's forward (the part
     * whose activations are large and cheap to recompute) right before its
     * backward (arXiv:2205.05198 section 5). */
    if (b->scenario->recompute == TPS_RECOMPUTE_SELECTIVE)
        attention_forward(b, &s, index + 100);
    attention_backward(b, &s, index);
    column_backward(b, &s, index, "qkv", 3 * s.h / s.t);
    op_memory(b, ln1, ln_bwd_bytes(&s));
}

/* ---- embedding, head, optimizer ---- */

void
tps_embedding_forward(TpsBuilder *b)
{
    Shape s;
    shape_of(b, &s);
    /* Vocab-parallel lookup: each rank gathers the rows it owns for all T
     * tokens (zeros elsewhere), then the partial embeddings are summed: an
     * all-reduce without SP, a reduce-scatter into the sequence shards with
     * SP (Megatron's VocabParallelEmbedding). */
    op_memory(b, "embedding", 2.0 * s.elt * s.tokens * s.h);
    tps_builder_collective(b, b->main, s.sp ? TPS_COLL_REDUCE_SCATTER : TPS_COLL_ALL_REDUCE,
                  (double)s.tokens * s.h * s.elt, s.sp ? "embedding.rs" : "embedding.ar", NULL);
}

void
tps_embedding_backward(TpsBuilder *b)
{
    Shape s;
    shape_of(b, &s);
    if (s.sp)
        tps_builder_collective(b, b->main, TPS_COLL_ALL_GATHER, (double)s.tokens * s.h * s.elt,
                      "embedding_bwd.ag", NULL);
    /* Scatter-add of the token gradients into the local vocab rows. */
    op_memory(b, "embedding_bwd", 3.0 * s.elt * s.tokens * s.h);
}

void
tps_head_forward(TpsBuilder *b)
{
    Shape s;
    shape_of(b, &s);
    const guint64 vocab_local = b->scenario->vocab / s.t;
    op_memory(b, "final_ln", ln_fwd_bytes(&s));
    if (s.sp)
        tps_builder_collective(b, b->main, TPS_COLL_ALL_GATHER, (double)s.tokens * s.h * s.elt,
                      "logits.ag", NULL);
    op_gemm(b, b->main, "logits", s.tokens, vocab_local, s.h, NULL);
    /* Vocab-parallel cross entropy: read the logits (max, sum of exp,
     * target logit), with two small all-reduces of per-token scalars. */
    op_memory(b, "cross_entropy", 1.0 * s.elt * s.tokens * vocab_local);
    tps_builder_collective(b, b->main, TPS_COLL_ALL_REDUCE, 4.0 * s.tokens, "loss.ar_max", NULL);
    tps_builder_collective(b, b->main, TPS_COLL_ALL_REDUCE, 4.0 * s.tokens, "loss.ar_sum", NULL);
}

void
tps_head_backward(TpsBuilder *b)
{
    Shape s;
    shape_of(b, &s);
    const guint64 vocab_local = b->scenario->vocab / s.t;
    /* Softmax gradient written over the logits. */
    op_memory(b, "cross_entropy_bwd", 2.0 * s.elt * s.tokens * vocab_local);
    op_gemm(b, b->main, "logits_dgrad", s.tokens, s.h, vocab_local, NULL);
    tps_builder_collective(b, b->main, s.sp ? TPS_COLL_REDUCE_SCATTER : TPS_COLL_ALL_REDUCE,
                  (double)s.tokens * s.h * s.elt, s.sp ? "logits_dgrad.rs" : "logits_dgrad.ar",
                  NULL);
    op_gemm(b, b->main, "logits_wgrad", vocab_local, s.h, s.tokens, NULL);
    op_memory(b, "final_ln_bwd", ln_bwd_bytes(&s));
}

void
tps_optimizer_step(TpsBuilder *b, double params)
{
    /* Fused Adam over fp32 master weights: read grad (fp32), master, m, v;
     * write master, m, v and the bf16 copy of the weight: 30 bytes per
     * parameter (Megatron's mixed-precision optimizer). */
    op_memory(b, "optimizer", 30.0 * params);
}

/* ---- op scenarios ---- */

void
tps_op_graph(TpsBuilder *b)
{
    const TpsScenario *sc = b->scenario;
    const double elt = tps_dtype_bytes(sc->dtype);
    if (sc->op_kind == TPS_OP_AG_GEMM) {
        /* Input [m, k] gathered along m; weight [k, n/t]. */
        tps_builder_collective(b, b->main, TPS_COLL_ALL_GATHER, (double)sc->m * sc->k * elt, "op.ag",
                      NULL);
        op_gemm(b, b->main, "op.gemm", sc->m, sc->n / sc->tp, sc->k, NULL);
    } else {
        /* Input [m, k/t], weight [k/t, n]; output [m, n] reduce-scattered. */
        op_gemm(b, b->main, "op.gemm", sc->m, sc->n, sc->k / sc->tp, NULL);
        tps_builder_collective(b, b->main, TPS_COLL_REDUCE_SCATTER, (double)sc->m * sc->n * elt, "op.rs",
                      NULL);
    }
}

void
tps_op_gemm_alone(TpsBuilder *b)
{
    const TpsScenario *sc = b->scenario;
    if (sc->op_kind == TPS_OP_AG_GEMM)
        op_gemm(b, b->main, "op.gemm", sc->m, sc->n / sc->tp, sc->k, NULL);
    else
        op_gemm(b, b->main, "op.gemm", sc->m, sc->n, sc->k / sc->tp, NULL);
}
