/* Graph builders for the layer, the head, the optimizer and op scenarios.
 *
 * Shapes follow Megatron (arXiv:2104.04473, arXiv:2205.05198): tokens
 * T = micro_batch x seq_len; with sequence parallelism the LayerNorm,
 * dropout and residual regions hold T/t tokens; column-parallel GEMMs
 * (QKV, FC1) produce n/t columns, row-parallel GEMMs (proj, FC2) consume k/t.
 * Backward splits every linear layer into a dgrad and a wgrad GEMM.
 */
#include "sched/layer.h"

#include "sched/cp-ring.h"
#include "sched/method.h"
#include "sched/moe.h"
#include "sched/overlap.h"

#include <string.h>

#include "sched/fp8-recipe.h"

/* ---- shapes ---- */

typedef struct {
    guint64 t, tokens, local_tokens, h, f, heads_local, head_dim, seq, batch;
    guint64 kv_local; /* K/V heads on this rank (grouped-query attention) */
    guint64 qkv_local; /* QKV's output columns on this rank: (heads + 2 kv_heads) d / t */
    guint64 fc1_local; /* FC1's output columns on this rank: f / t, 2 f / t gated */
    guint64 attn_local; /* the attention output's columns on this rank: heads d / t (h / t
                           unless model.head_dim sets d) */
    double elt;        /* bytes per element */
    gboolean sp;
} Shape;

static void
shape_of(const TpsBuilder *b, Shape *s)
{
    const TpsScenario *sc = b->scenario;
    s->t = sc->tp;
    s->batch = sc->micro_batch;
    /* With context parallelism a rank holds seq / cp of each sequence (two
     * chunks of seq / 2cp): every op but attention's exchange runs on them. */
    s->seq = sc->seq_len / MAX(sc->cp, 1u);
    s->tokens = sc->micro_batch * s->seq;
    s->sp = sc->sp;
    s->local_tokens = sc->sp ? s->tokens / s->t : s->tokens;
    s->h = sc->hidden;
    s->f = sc->ffn_hidden;
    s->heads_local = sc->heads / s->t;
    s->head_dim = tps_scenario_head_dim(sc);
    s->attn_local = s->heads_local * (sc->mla ? sc->v_head_dim : s->head_dim);
    s->kv_local = tps_scenario_kv_heads(sc) / s->t;
    s->qkv_local = (s->heads_local + 2 * s->kv_local) * s->head_dim;
    s->fc1_local = (sc->mlp == TPS_MLP_SWIGLU ? 2 : 1) * s->f / s->t;
    s->elt = tps_dtype_bytes(sc->dtype);
}

/* An id set that refers to no task on any rank (waiting on it is a no-op). */
static void
ops_none(TpsOpIds *ids)
{
    for (guint r = 0; r < G_N_ELEMENTS(ids->id); r++)
        ids->id[r] = TPS_TASK_NONE;
}

static char *
opname(guint index, const char *what)
{
    /* Recomputed work is added under index + TPS_LAYER_RECOMPUTE and named
     * "l<index>r." so that timelines and breakdowns tell it apart. */
    if (index >= TPS_LAYER_RECOMPUTE)
        return g_strdup_printf("l%ur.%s", index - TPS_LAYER_RECOMPUTE, what);
    return g_strdup_printf("l%u.%s", index, what);
}

/* Under dtype fp8 (Transformer Engine 1.x with delayed scaling, the
 * default recipe; transformer_engine/pytorch/module/layernorm_linear.py
 * and linear.py): the FP8 GEMMs need their operands cast, and Hopper's FP8
 * GEMMs take only the TN layout, so each operand that a backward GEMM
 * reads transposed is kept transposed too. The weights' FP8 copies and
 * their transposes are made once a step (the first micro-batch) and
 * cached (sched/pipeline.c); per micro-batch:
 *   - the LayerNorm before QKV and FC1 writes its output in FP8 (one byte
 *     instead of two);
 *   - the inputs of the projection and FC2 are cast and transposed in one
 *     kernel (fp8_cast_transpose_fused: read two bytes, write one + one);
 *   - backward, each GEMM's incoming gradient is cast and transposed the
 *     same way (with the bias gradient fused when there is one), and the
 *     saved FP8 LayerNorm outputs are transposed for the wgrad GEMMs
 *     (fp8_transpose: read one, write one).
 * The LayerNorm's FP8 output is what SP all-gathers, forward and again
 * backward (1 byte an element; overlap.c's ag_elt()); the gradients'
 * all-gathers and every reduce-scatter stay bf16. model.fp8_recipe's other
 * recipes change these kernels (fp8_operand(), ln_quantize()). The amax
 * reductions of delayed scaling (one all-reduce over the tensor x
 * data-parallel group after each forward and backward of the fp8_autocast
 * region, per micro-batch and model chunk) are the step frame's
 * (pipeline.c, tps_pipe_amax_times()). */
static gboolean
is_fp8(const TpsBuilder *b)
{
    return b->scenario->dtype == TPS_DTYPE_FP8;
}

/* A cast (and transpose) kernel of `elements` under fp8: read `in` bytes,
 * write `out` bytes per element. */
static void
fp8_kernel(TpsBuilder *b, guint index, const char *what, double elements, double in, double out)
{
    if (!is_fp8(b))
        return;
    g_autofree char *name = opname(index, what);
    tps_builder_memory(b, b->main, name, (in + out) * elements, NULL);
}

static TpsFp8Recipe
recipe(const TpsBuilder *b)
{
    return b->scenario->fp8_recipe;
}

/* One FP8 operand of `elements` read at `in` bytes, quantized by the
 * scenario's recipe (sched/fp8-recipe.c) into its rowwise copy and, when
 * `columnwise`, the transposed or columnwise one. Delayed scaling is one
 * fused cast (fp8_kernel). Current scaling adds the amax kernel, the
 * all-reduce of the amax over the TP group when `reduce` (Transformer
 * Engine sets the TP group as the amax reduction group of a
 * column-parallel layer's input and a row-parallel layer's output
 * gradient under sequence parallelism: pytorch/module/linear.py,
 * layernorm_linear.py; 4 bytes, through the collective model) and the
 * scale kernel, then the cast. */
static void
fp8_operand(TpsBuilder *b, const Shape *s, guint index, const char *what, double elements,
            gboolean columnwise, gboolean reduce)
{
    if (!is_fp8(b))
        return;
    if (recipe(b) == TPS_FP8_DELAYED) {
        fp8_kernel(b, index, what, elements, s->elt, columnwise ? 2.0 : 1.0);
        return;
    }
    TpsFp8Quant q;
    tps_fp8_quantize(recipe(b), elements, s->elt, columnwise, FALSE, &q);
    if (q.amax > 0.0) {
        g_autofree char *amax = g_strdup_printf("%s_amax", what);
        g_autofree char *name = opname(index, amax);
        tps_builder_memory(b, b->main, name, q.amax, NULL);
    }
    if (q.amax > 0.0 && reduce && s->sp && s->t > 1) {
        g_autofree char *red = g_strdup_printf("%s_amax_reduce", what);
        g_autofree char *name = opname(index, red);
        tps_builder_collective(b, b->main, TPS_COLL_ALL_REDUCE, 4.0, name, NULL);
    }
    if (q.scale > 0.0) {
        g_autofree char *scale = g_strdup_printf("%s_scale", what);
        g_autofree char *name = opname(index, scale);
        tps_builder_memory(b, b->main, name, q.scale, NULL);
    }
    g_autofree char *name = opname(index, what);
    tps_builder_memory(b, b->main, name, q.cast, NULL);
}

void
tps_layer_fp8_operand(TpsBuilder *b, guint index, const char *what, double elements,
                      gboolean columnwise)
{
    const Shape s = {.elt = tps_dtype_bytes(b->scenario->dtype)};
    fp8_operand(b, &s, index, what, elements, columnwise, FALSE);
}

/* The wgrad copy of a gathered FP8 LayerNorm output: a transpose of the
 * rowwise copy (read one, write one byte), with its columnwise scales
 * under the block recipes (assumption: made from the gathered rowwise
 * copy at a transpose's cost). */
static void
fp8_input_transpose(TpsBuilder *b, guint index, const char *what, double elements)
{
    const double scales = recipe(b) == TPS_FP8_BLOCKWISE || recipe(b) == TPS_FP8_MXFP8
                              ? tps_fp8_scale_bytes(recipe(b), elements, FALSE) / elements
                              : 0.0;
    fp8_kernel(b, index, what, elements, 1.0, 1.0 + scales);
}

/* LayerNorm forward: read x, write y (plus per-token statistics, small);
 * y in FP8 under fp8 when it feeds an FP8 GEMM. */
static double
ln_fwd_bytes(const Shape *s)
{
    return 2.0 * s->local_tokens * s->h * s->elt;
}

static double
ln_fwd_fp8_bytes(const TpsBuilder *b, const Shape *s)
{
    /* Delayed scaling's scale is known before the LayerNorm runs, so it
     * writes FP8; the other recipes quantize its bf16 output after it
     * (ln_quantize; assumption for blockwise and mxfp8). */
    if (!is_fp8(b) || recipe(b) != TPS_FP8_DELAYED)
        return ln_fwd_bytes(s);
    return (s->elt + 1.0) * s->local_tokens * s->h;
}

/* Under a recipe other than delayed: the LayerNorm's bf16 output
 * quantized rowwise on the rank's own tokens (what sequence parallelism
 * all-gathers in FP8), its amax all-reduced over the TP group under
 * current scaling. */
static void
ln_quantize(TpsBuilder *b, const Shape *s, guint index, const char *what)
{
    if (is_fp8(b) && recipe(b) != TPS_FP8_DELAYED)
        fp8_operand(b, s, index, what, (double)s->local_tokens * s->h, FALSE, TRUE);
}

/* LayerNorm backward: read dy, x; write dx (Transformer Engine's kernel;
 * the per-token statistics are small). */
static double
ln_bwd_bytes(const Shape *s)
{
    return 3.0 * s->local_tokens * s->h * s->elt;
}

/* The second kernel of a LayerNorm backward: the sum of the per-CTA partial
 * dgamma and dbeta (fp32, one row per SM). RMSNorm has no beta (and no mean
 * to subtract: one reduction fewer per token, which a memory-bound kernel
 * does not feel): its kernels move the same bytes but for dbeta's
 * partials. */
static double
ln_finalize_bytes(const TpsBuilder *b, const Shape *s)
{
    const double params = b->scenario->norm == TPS_NORM_RMSNORM ? 1.0 : 2.0;
    return params * 4.0 * s->h * b->hw->sms;
}

/* A residual stream tensor (the sequence-sharded hidden states). */
static double
residual_bytes(const Shape *s)
{
    return (double)s->local_tokens * s->h * s->elt;
}

/* Autograd adds the two gradients of a tensor used twice (the residual
 * stream feeds the LayerNorm and the residual add): read both, write the
 * sum. */
static double
grad_add_bytes(const Shape *s)
{
    return 3.0 * residual_bytes(s);
}

/* The gradient of a bias added outside its GEMM (the row-parallel biases
 * in bias-dropout-add, FC1's in bias-GeLU): a sum over the tokens of a
 * `width`-wide gradient of `tokens` rows, one read. */
static double
bias_grad_bytes(const Shape *s, guint64 tokens, guint64 width)
{
    return (double)tokens * width * s->elt;
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

/* Whether the slot's method builds its own graph for an AG+GEMM (or a
 * GEMM+RS): then one Transformer Engine op issues it from C++, a library
 * op on the host (builder.h); otherwise NCCL and the GEMM are framework
 * ops of their own. */
static gboolean
library_ag(const TpsBuilder *b, const TpsOverlapConfig *cfg)
{
    return b->ranks > 1 && tps_method_info(cfg->method)->ag_gemm != NULL;
}

static gboolean
library_rs(const TpsBuilder *b, const TpsOverlapConfig *cfg)
{
    return b->ranks > 1 && tps_method_info(cfg->method)->gemm_rs != NULL;
}

static void
overlap_ag_gemm(TpsBuilder *b, const TpsGemmShape *g, const TpsOverlapConfig *cfg)
{
    const gboolean library = library_ag(b, cfg);
    if (library)
        tps_builder_library_begin(b);
    tps_overlap_ag_gemm(b, g, cfg);
    if (library)
        tps_builder_library_end(b);
}

static void
overlap_gemm_rs(TpsBuilder *b, const TpsGemmShape *g, const TpsOverlapConfig *cfg)
{
    const gboolean library = library_rs(b, cfg);
    if (library)
        tps_builder_library_begin(b);
    tps_overlap_gemm_rs(b, g, cfg);
    if (library)
        tps_builder_library_end(b);
}

/* Column-parallel forward (QKV, FC1): the all-gather of the
 * sequence-sharded input (SP) into the GEMM, by the slot's method. */
static void
column_forward(TpsBuilder *b, const Shape *s, TpsGemmSlot slot, const char *name, guint64 n_local)
{
    /* QKV and FC1 take the LayerNorm's output (TE's LayerNormLinear). */
    TpsGemmShape g = {name, s->tokens, n_local, s->h, TRUE};
    /* Gathered as the LayerNorm wrote it: FP8 under fp8 (overlap.c). */
    const double gathered = (double)tps_dtype_gemm_bytes(b->scenario->dtype);
    b->slot = slot;
    tps_builder_note_slot(b, slot, g.m, g.n, g.k, s->sp ? TPS_COLL_ALL_GATHER : TPS_COLL_COUNT,
                          (double)s->tokens * s->h * gathered);
    if (s->sp)
        overlap_ag_gemm(b, &g, &b->overlap[slot]);
    else
        tps_builder_gemm(b, b->main, name, g.m, g.n, g.k, 0, NULL);
    b->slot = TPS_GEMM_SLOT_COUNT;
}

/* Row-parallel forward (projection, FC2): the GEMM and the reduce-scatter
 * (SP) or all-reduce of its output. */
static void
row_forward(TpsBuilder *b, const Shape *s, TpsGemmSlot slot, const char *name, guint64 k_local)
{
    TpsGemmShape g = {name, s->tokens, s->h, k_local};
    b->slot = slot;
    tps_builder_note_slot(b, slot, g.m, g.n, g.k,
                          s->sp ? TPS_COLL_REDUCE_SCATTER : TPS_COLL_ALL_REDUCE,
                          (double)s->tokens * s->h * s->elt);
    if (s->sp) {
        overlap_gemm_rs(b, &g, &b->overlap[slot]);
    } else {
        g_autofree char *ar = g_strdup_printf("%s.ar", name);
        tps_builder_gemm(b, b->main, name, g.m, g.n, g.k, 0, NULL);
        tps_builder_collective(b, b->main, TPS_COLL_ALL_REDUCE, (double)s->tokens * s->h * s->elt,
                               ar, NULL);
    }
    b->slot = TPS_GEMM_SLOT_COUNT;
}

/* The fused attention kernel, forward or backward, and the copies around
 * it. Megatron's tensors are [s, b, heads, d]; Transformer Engine's flash
 * backend takes [b, s, heads, d] (transformer_engine/pytorch/attention/
 * dot_product_attention/backends.py): forward, Q, K and V are each
 * transposed into a contiguous copy and the output back; backward, the
 * incoming gradient is made contiguous, and the Q, K and V gradients are
 * joined into the mixed QKV gradient (one kernel). FlashAttention-2's
 * backward is three kernels: dO.O row sums, the main kernel, and the
 * conversion of its fp32 dQ accumulator to bf16. */
/* The attention core on one rank: one kernel over the sequence, or with
 * context parallelism the ring of cp blocks (sched/cp-ring.h). */
static void
attention_core(TpsBuilder *b, const Shape *s, guint index, gboolean backward)
{
    const TpsScenario *sc = b->scenario;
    if (sc->cp > 1) {
        g_autofree char *prefix = opname(index, "");
        const TpsCpAttn a = {
            .batch = s->batch,
            .heads = s->heads_local,
            .kv_heads = s->kv_local,
            .head_dim = s->head_dim,
            .chunk = sc->seq_len / (2 * sc->cp),
            .elt = s->elt,
            .prefix = prefix,
            .ring = sc->cp,
        };
        typedef void (*CpAttention)(TpsBuilder *, const TpsCpAttn *);
        static const CpAttention run[TPS_CP_COMM_COUNT][2] = {
            [TPS_CP_P2P] = {tps_cp_ring_forward, tps_cp_ring_backward},
            [TPS_CP_ALLGATHER] = {tps_cp_allgather_forward, tps_cp_allgather_backward},
            [TPS_CP_A2A] = {tps_cp_a2a_forward, tps_cp_a2a_backward},
            [TPS_CP_A2A_P2P] = {tps_cp_a2a_forward, tps_cp_a2a_backward},
        };
        run[sc->cp_comm][backward ? 1 : 0](b, &a);
        return;
    }
    TpsKernelCost cost;
    g_autofree char *name = opname(index, backward ? "attn_bwd" : "attn_fwd");
    const TpsDtype dtype = tps_dtype_compute(sc->dtype);
    if (sc->causal)
        tps_cost_flash_attention_block(b->hw, dtype, s->batch, s->heads_local, s->kv_local, s->seq,
                                       s->seq, s->head_dim, TRUE, backward, &cost);
    else
        tps_cost_flash_attention_gqa(b->hw, dtype, s->batch, s->heads_local, s->kv_local, s->seq,
                                     s->head_dim, backward, &cost);
    g_autofree char *dot = opname(index, "attn_bwd_dot_do_o");
    g_autofree char *dq = opname(index, "attn_bwd_convert_dq");
    const double x = (double)s->tokens * (s->heads_local * s->head_dim) * s->elt;
    if (backward)
        tps_builder_memory(b, b->main, dot, 2.0 * x, NULL); /* read dO, O */
    tps_builder_kernel(b, b->main, TPS_KIND_ATTENTION, name, &cost, NULL);
    if (backward)
        tps_builder_memory(b, b->main, dq, 3.0 * x, NULL); /* fp32 dQ in, bf16 out */
}

static void
flash_attention(TpsBuilder *b, const Shape *s, guint index, gboolean backward)
{
    /* One of Q and O, one of K and V (fewer heads with grouped-query
     * attention). */
    const double x = (double)s->tokens * (s->heads_local * s->head_dim) * s->elt;
    const double kv = (double)s->tokens * (s->kv_local * s->head_dim) * s->elt;
    if (!backward) {
        static const char *const qkv[3] = {"attn_q_copy", "attn_k_copy", "attn_v_copy"};
        for (guint i = 0; i < 3; i++) {
            g_autofree char *copy = opname(index, qkv[i]);
            tps_builder_memory(b, b->main, copy, 2.0 * (i == 0 ? x : kv), NULL);
        }
        attention_core(b, s, index, FALSE);
        g_autofree char *out = opname(index, "attn_out_copy");
        tps_builder_memory(b, b->main, out, 2.0 * x, NULL);
        return;
    }
    g_autofree char *dout = opname(index, "attn_dout_copy");
    g_autofree char *dqkv = opname(index, "attn_dqkv_cat");
    tps_builder_memory(b, b->main, dout, 2.0 * x, NULL);
    attention_core(b, s, index, TRUE);
    tps_builder_memory(b, b->main, dqkv, 2.0 * (x + 2.0 * kv), NULL); /* three in, one out */
}

/* Megatron's unfused core with grouped-query attention expands K and V to
 * one head per query head (repeat_interleave: read kv_heads, write heads);
 * backward sums the expanded gradients back (read heads, write kv_heads). */
static void
kv_expand(TpsBuilder *b, const Shape *s, guint index, gboolean backward)
{
    if (s->kv_local == s->heads_local)
        return;
    const double x = (double)s->tokens * (s->heads_local * s->head_dim) * s->elt;
    const double kv = (double)s->tokens * (s->kv_local * s->head_dim) * s->elt;
    static const char *const fwd[2] = {"attn_k_expand", "attn_v_expand"};
    static const char *const bwd[2] = {"attn_dk_reduce", "attn_dv_reduce"};
    for (guint i = 0; i < 2; i++) {
        g_autofree char *name = opname(index, backward ? bwd[i] : fwd[i]);
        tps_builder_memory(b, b->main, name, x + kv, NULL);
    }
}

/* Rotary position embedding (model.position_embedding: rope), Megatron's
 * apply_rotary_pos_emb on Q and then on K (Transformer Engine's fused
 * kernel): each reads and writes its tensor; backward the same on the
 * gradients. */
static void
rope(TpsBuilder *b, const Shape *s, guint index, gboolean backward)
{
    if (b->scenario->position != TPS_POSITION_ROPE)
        return;
    const double x = (double)s->tokens * (s->heads_local * s->head_dim) * s->elt;
    const double kv = (double)s->tokens * (s->kv_local * s->head_dim) * s->elt;
    g_autofree char *q = opname(index, backward ? "rope_q_bwd" : "rope_q");
    g_autofree char *k = opname(index, backward ? "rope_k_bwd" : "rope_k");
    tps_builder_memory(b, b->main, q, 2.0 * x, NULL);
    tps_builder_memory(b, b->main, k, 2.0 * kv, NULL);
}

static void
attention_forward(TpsBuilder *b, const Shape *s, guint index)
{
    const guint64 count = s->batch * s->heads_local;
    if (b->scenario->attention == TPS_ATTENTION_FLASH) {
        flash_attention(b, s, index, FALSE);
        return;
    }
    /* Megatron's unfused core: scores = Q K^T, scale-mask-softmax, dropout,
     * context = P V. */
    const double scores = (double)count * s->seq * s->seq;
    kv_expand(b, s, index, FALSE);
    g_autofree char *qk = opname(index, "attn_qk");
    g_autofree char *sm = opname(index, "attn_softmax");
    g_autofree char *dr = opname(index, "attn_dropout");
    g_autofree char *av = opname(index, "attn_av");
    tps_builder_batched_gemm(b, qk, count, s->seq, s->seq, s->head_dim);
    tps_builder_memory(b, b->main, sm, 2.0 * s->elt * scores, NULL);
    tps_builder_memory(b, b->main, dr, (2.0 * s->elt + 1.0) * scores, NULL);
    tps_builder_batched_gemm(b, av, count, s->seq, s->head_dim, s->seq);
}

static void
attention_backward(TpsBuilder *b, const Shape *s, guint index)
{
    const guint64 count = s->batch * s->heads_local;
    if (b->scenario->attention == TPS_ATTENTION_FLASH) {
        flash_attention(b, s, index, TRUE);
        return;
    }
    const double scores = (double)count * s->seq * s->seq;
    g_autofree char *dv = opname(index, "attn_dv");
    g_autofree char *dp = opname(index, "attn_dp");
    g_autofree char *dd = opname(index, "attn_dropout_bwd");
    g_autofree char *ds = opname(index, "attn_softmax_bwd");
    g_autofree char *dq = opname(index, "attn_dq");
    g_autofree char *dk = opname(index, "attn_dk");
    tps_builder_batched_gemm(b, dv, count, s->seq, s->head_dim, s->seq); /* dV = P^T dO */
    tps_builder_batched_gemm(b, dp, count, s->seq, s->seq, s->head_dim); /* dP = dO V^T */
    tps_builder_memory(b, b->main, dd, (2.0 * s->elt + 1.0) * scores, NULL);
    tps_builder_memory(b, b->main, ds, 3.0 * s->elt * scores, NULL);     /* read P, dP; write dS */
    tps_builder_batched_gemm(b, dq, count, s->seq, s->head_dim, s->seq); /* dQ = dS K */
    tps_builder_batched_gemm(b, dk, count, s->seq, s->head_dim, s->seq); /* dK = dS^T Q */
    kv_expand(b, s, index, TRUE);
}

/* Megatron's --qk-layernorm (model.qk_norm): a norm over each head of Q
 * and of K after QKV (Transformer Engine's kernel over head_dim): read
 * and write each; backward read the gradient and the input, write the
 * input's gradient. */
static void
qk_norm(TpsBuilder *b, const Shape *s, guint index, gboolean backward)
{
    if (!b->scenario->qk_norm)
        return;
    const double x = (double)s->tokens * (s->heads_local * s->head_dim) * s->elt;
    const double kv = (double)s->tokens * (s->kv_local * s->head_dim) * s->elt;
    const double passes = backward ? 3.0 : 2.0;
    g_autofree char *q = opname(index, backward ? "q_norm_bwd" : "q_norm");
    g_autofree char *k = opname(index, backward ? "k_norm_bwd" : "k_norm");
    tps_builder_memory(b, b->main, q, passes * x, NULL);
    tps_builder_memory(b, b->main, k, passes * kv, NULL);
}

/* The first half of an MLP of s->f columns (the dense MLP, or the shared
 * experts of an MoE layer): FC1 with its all-gather, and the activation
 * (ops named `fc1`, `act`). */
static void
mlp_fc1_forward(TpsBuilder *b, const Shape *s, const char *fc1, const char *act)
{
    const gboolean swiglu = b->scenario->mlp == TPS_MLP_SWIGLU;
    column_forward(b, s, TPS_GEMM_FC1_FPROP, fc1, s->fc1_local);
    /* Bias + GeLU over the FC1 output: read and write. (Bias +) SwiGLU
     * (Megatron's fused bias_swiglu): read the gate and up halves, write
     * silu(gate) x up, the FC2 input. */
    tps_builder_memory(b, b->main, act, (swiglu ? 3.0 : 2.0) * s->elt * s->tokens * (s->f / s->t),
                       NULL);
}

/* Its second half: FC2 with its reduce-scatter (FP8 ops prefixed
 * `prefix`). */
static void
mlp_fc2_forward(TpsBuilder *b, const Shape *s, guint index, const char *prefix, const char *fc2)
{
    g_autofree char *cast = g_strdup_printf("%sfc2_input_cast", prefix);
    fp8_operand(b, s, index, cast, (double)s->tokens * (s->f / s->t), TRUE, FALSE);
    row_forward(b, s, TPS_GEMM_FC2_FPROP, fc2, s->f / s->t);
}

/* The shape of the shared experts: a dense MLP of shared_ffn_hidden
 * columns over the TP group (Megatron's SharedExpertMLP). */
static void
shared_shape(const TpsBuilder *b, const Shape *s, Shape *shared)
{
    *shared = *s;
    shared->f = b->scenario->moe.shared_ffn_hidden;
    shared->fc1_local = (b->scenario->mlp == TPS_MLP_SWIGLU ? 2 : 1) * shared->f / s->t;
}

/* The MoE layer in place of the MLP (sched/moe.h), the shared experts
 * beside it and their outputs added. With model.moe.shared_expert_overlap
 * (Megatron's --moe-shared-expert-overlap) the dispatch runs beside the
 * shared experts' FC1 and the combine beside their FC2, the all-to-alls
 * on a stream of their own (Megatron puts the shared experts on the
 * second stream instead: the same concurrency); otherwise everything is
 * on the compute stream in Megatron's order: router, dispatch, experts,
 * combine, shared experts. */
static void
moe_forward(TpsBuilder *b, const Shape *s, guint index)
{
    const gboolean shared = b->scenario->moe.shared_ffn_hidden > 0;
    const gboolean overlap = b->scenario->moe.shared_expert_overlap;
    Shape sh;
    shared_shape(b, s, &sh);
    g_autofree char *fc1 = opname(index, "shared_fc1_fprop");
    g_autofree char *act =
        opname(index, b->scenario->mlp == TPS_MLP_SWIGLU ? "shared_swiglu" : "shared_gelu");
    g_autofree char *fc2 = opname(index, "shared_fc2_fprop");
    g_autofree char *add = opname(index, "shared_add");
    const TpsStreamId *comm = overlap ? b->moe : b->main;
    TpsOpIds before, done;
    ops_none(&done);
    tps_moe_route_forward(b, index);
    if (overlap) {
        tps_builder_record(b, b->main, &before);
        tps_builder_wait(b, b->moe, &before);
    }
    /* Issued in this order into the one hardware queue
     * (CUDA_DEVICE_MAX_CONNECTIONS=1): the all-to-all, the shared FC1,
     * then the ETP all-gather, which waits for the all-to-all on its
     * stream and would hold back what is queued after it. */
    tps_moe_to_experts_exchange(b, index, comm, "dispatch", &done);
    if (overlap)
        mlp_fc1_forward(b, &sh, fc1, act);
    tps_moe_to_experts_etp(b, index, comm, "dispatch", &done);
    if (overlap)
        tps_builder_wait(b, b->main, &done);
    tps_moe_experts_forward(b, index);
    if (overlap) {
        tps_builder_record(b, b->main, &before);
        tps_builder_wait(b, b->moe, &before);
    }
    tps_moe_from_experts(b, index, comm, "combine", &done);
    if (overlap) {
        mlp_fc2_forward(b, &sh, index, "shared_", fc2);
        tps_builder_wait(b, b->main, &done);
    } else if (shared) {
        mlp_fc1_forward(b, &sh, fc1, act);
        mlp_fc2_forward(b, &sh, index, "shared_", fc2);
    }
    tps_moe_unpermute_forward(b, index, b->main);
    if (shared)
        tps_builder_memory(b, b->main, add, 3.0 * residual_bytes(s), NULL);
}

/* ---- multi-head latent attention ----
 *
 * Megatron's MLASelfAttention (megatron/core/transformer/
 * multi_latent_attention.py, model.multi_latent_attention) with its
 * Transformer Engine layer spec: the down projections linear_q_down_proj
 * [h, q_lora_rank] and linear_kv_down_proj [h, kv_lora_rank +
 * qk_pos_emb_head_dim] are TELinear in parallel_mode "duplicated" (the
 * weight whole on every TP rank) on the rank's own tokens (T/t with SP,
 * T without); with SP the rotary part of K (k_pos_emb, one head shared by
 * all) is all-gathered (gather_from_sequence_parallel_region). The up
 * projections are column-parallel with their latent norm fused
 * (TELayerNormColumnParallelLinear: the norm on the rank's tokens, then
 * SP's all-gather of the latent, q_lora_rank or kv_lora_rank wide, not of
 * h): linear_q_up_proj to heads x (qk_head_dim + qk_pos_emb_head_dim),
 * linear_kv_up_proj to heads x (qk_head_dim + v_head_dim). Without a Q
 * latent (q_lora_rank 0) linear_q_proj is column-parallel from h. The
 * core attention has Q and K heads of qk_head_dim + qk_pos_emb_head_dim
 * and V heads of v_head_dim; linear_proj is row-parallel from heads x
 * v_head_dim. The up projections take the qkv slots (their methods, their
 * breakdown rows). */
static void column_backward(TpsBuilder *b, const Shape *s, guint index, const char *gemm,
                            TpsGemmSlot dslot, TpsGemmSlot wslot, guint64 n_local);

static void
mla_latents(const TpsScenario *sc, const Shape *s, Shape *q, Shape *kv)
{
    *q = *s;
    *kv = *s;
    q->h = sc->q_lora_rank;
    kv->h = sc->kv_lora_rank;
}

/* The rotary channels of Q (every head) and of K (one head, on the
 * gathered tokens): read and write each, forward and backward. */
static void
mla_rope(TpsBuilder *b, const Shape *s, guint index, gboolean backward)
{
    const double r = (double)b->scenario->qk_pos_emb_head_dim;
    g_autofree char *q = opname(index, backward ? "rope_q_bwd" : "rope_q");
    g_autofree char *k = opname(index, backward ? "rope_k_bwd" : "rope_k");
    tps_builder_memory(b, b->main, q, 2.0 * s->tokens * s->heads_local * r * s->elt, NULL);
    tps_builder_memory(b, b->main, k, 2.0 * s->tokens * r * s->elt, NULL);
}

/* The fused attention kernel at Q, K heads of dq and V, O heads of dv:
 * its FLOPs (Q K^T at dq, P V at dv), waves and bytes are each linear in
 * the head size (cost/attention.c), so the kernel is the mean of the
 * kernels at dq and at dv. */
static void
mla_attention_core(TpsBuilder *b, const Shape *s, guint index, gboolean backward)
{
    const TpsScenario *sc = b->scenario;
    const TpsDtype dtype = tps_dtype_compute(sc->dtype);
    const guint64 dims[2] = {tps_scenario_mla_qk_dim(sc), sc->v_head_dim};
    TpsKernelCost part[2], cost;
    for (guint i = 0; i < 2; i++)
        tps_cost_flash_attention_block(b->hw, dtype, s->batch, s->heads_local, s->heads_local,
                                       s->seq, s->seq, dims[i], sc->causal, backward, &part[i]);
    cost = part[0];
    cost.wave_ns = (part[0].wave_ns + part[1].wave_ns) / 2;
    cost.hbm_bytes = 0.5 * (part[0].hbm_bytes + part[1].hbm_bytes);
    cost.flops = 0.5 * (part[0].flops + part[1].flops);
    g_autofree char *name = opname(index, backward ? "attn_bwd" : "attn_fwd");
    tps_builder_kernel(b, b->main, TPS_KIND_ATTENTION, name, &cost, NULL);
}

/* The core with its copies (as flash_attention()): Q and K dq wide, V and
 * O dv wide. */
static void
mla_attention(TpsBuilder *b, const Shape *s, guint index, gboolean backward)
{
    const double per = (double)s->tokens * s->heads_local * s->elt;
    const double xq = per * (double)tps_scenario_mla_qk_dim(b->scenario);
    const double xv = per * (double)b->scenario->v_head_dim;
    if (!backward) {
        static const char *const qkv[3] = {"attn_q_copy", "attn_k_copy", "attn_v_copy"};
        for (guint i = 0; i < 3; i++) {
            g_autofree char *copy = opname(index, qkv[i]);
            tps_builder_memory(b, b->main, copy, 2.0 * (i < 2 ? xq : xv), NULL);
        }
        mla_attention_core(b, s, index, FALSE);
        g_autofree char *out = opname(index, "attn_out_copy");
        tps_builder_memory(b, b->main, out, 2.0 * xv, NULL);
        return;
    }
    g_autofree char *dout = opname(index, "attn_dout_copy");
    g_autofree char *dot = opname(index, "attn_bwd_dot_do_o");
    g_autofree char *dq = opname(index, "attn_bwd_convert_dq");
    g_autofree char *dqkv = opname(index, "attn_dqkv_cat");
    tps_builder_memory(b, b->main, dout, 2.0 * xv, NULL);
    tps_builder_memory(b, b->main, dot, 2.0 * xv, NULL); /* read dO, O */
    mla_attention_core(b, s, index, TRUE);
    tps_builder_memory(b, b->main, dq, 3.0 * xq, NULL); /* fp32 dQ in, bf16 out */
    tps_builder_memory(b, b->main, dqkv, 2.0 * (2.0 * xq + xv), NULL);
}

/* A latent's norm (qk_norm) on the rank's own tokens: read and write
 * forward, read two and write one backward. */
static void
mla_norm(TpsBuilder *b, const Shape *latent, guint index, const char *what, gboolean backward)
{
    if (!b->scenario->qk_norm || latent->h == 0)
        return;
    g_autofree char *name = opname(index, what);
    tps_builder_memory(b, b->main, name,
                       (backward ? 3.0 : 2.0) * latent->local_tokens * latent->h * latent->elt,
                       NULL);
}

/* The rotary part of K across the TP group (SP): all-gathered forward,
 * its gradient reduce-scattered backward. */
static void
mla_k_pe_exchange(TpsBuilder *b, const Shape *s, guint index, gboolean backward)
{
    if (!s->sp)
        return;
    g_autofree char *name = opname(index, backward ? "k_pe_grad.rs" : "k_pe.ag");
    const double bytes = (double)s->tokens * b->scenario->qk_pos_emb_head_dim * s->elt;
    tps_builder_collective(b, b->main, backward ? TPS_COLL_REDUCE_SCATTER : TPS_COLL_ALL_GATHER,
                           bytes, name, NULL);
}

/* The up projections share the qkv slots: a slot's breakdown row spans
 * both, so its references (the GEMM and the collective alone) are both
 * projections': the second one's note (tps_builder_note_slot) plus the
 * first one's, saved. Its m, n, k are the second's. */
typedef struct {
    TpsTime gemm, comm;
    double bytes;
} SlotNote;

static void
slot_save(const TpsBuilder *b, TpsGemmSlot slot, SlotNote *n)
{
    n->gemm = b->slot_gemm_alone[slot];
    n->comm = b->slot_comm_alone[slot];
    n->bytes = b->slot_bytes[slot];
}

static void
slot_add(TpsBuilder *b, TpsGemmSlot slot, const SlotNote *n)
{
    if (!b->recording)
        return;
    b->slot_gemm_alone[slot] += n->gemm;
    b->slot_comm_alone[slot] += n->comm;
    b->slot_bytes[slot] += n->bytes;
}

static void
mla_forward(TpsBuilder *b, const Shape *s, guint index)
{
    const TpsScenario *sc = b->scenario;
    Shape lq, lkv;
    mla_latents(sc, s, &lq, &lkv);
    const guint64 nq = s->heads_local * tps_scenario_mla_qk_dim(sc);
    const guint64 nkv = s->heads_local * (sc->qk_head_dim + sc->v_head_dim);
    g_autofree char *qd = opname(index, "q_down_fprop");
    g_autofree char *kvd = opname(index, "kv_down_fprop");
    g_autofree char *qu = opname(index, sc->q_lora_rank > 0 ? "q_up_fprop" : "q_fprop");
    g_autofree char *kvu = opname(index, "kv_up_fprop");
    if (sc->q_lora_rank > 0)
        tps_builder_gemm(b, b->main, qd, s->local_tokens, sc->q_lora_rank, s->h, 0, NULL);
    tps_builder_gemm(b, b->main, kvd, s->local_tokens, sc->kv_lora_rank + sc->qk_pos_emb_head_dim,
                     s->h, 0, NULL);
    mla_k_pe_exchange(b, s, index, FALSE);
    if (sc->q_lora_rank > 0) {
        mla_norm(b, &lq, index, "q_norm", FALSE);
        column_forward(b, &lq, TPS_GEMM_QKV_FPROP, qu, nq);
    } else {
        column_forward(b, s, TPS_GEMM_QKV_FPROP, qu, nq);
    }
    SlotNote q_note;
    slot_save(b, TPS_GEMM_QKV_FPROP, &q_note);
    mla_norm(b, &lkv, index, "kv_norm", FALSE);
    column_forward(b, &lkv, TPS_GEMM_QKV_FPROP, kvu, nkv);
    slot_add(b, TPS_GEMM_QKV_FPROP, &q_note);
    mla_rope(b, s, index, FALSE);
    mla_attention(b, s, index, FALSE);
}

/* A down projection's backward on the rank's own tokens: dgrad [T/t, h],
 * wgrad [h, n]. */
static void
mla_down_backward(TpsBuilder *b, const Shape *s, guint index, const char *what, guint64 n)
{
    g_autofree char *d = g_strdup_printf("l%u.%s_dgrad", index, what);
    g_autofree char *w = g_strdup_printf("l%u.%s_wgrad", index, what);
    tps_builder_gemm(b, b->main, d, s->local_tokens, s->h, n, 0, NULL);
    tps_builder_gemm(b, b->main, w, s->h, n, s->local_tokens, 0, NULL);
}

/* Autograd's reverse of mla_forward (after the projection's backward):
 * the attention, the rotary parts, the KV then the Q up projection, the
 * rotary K's gradient back to the rank's tokens, the down projections,
 * and the sum of the input's two gradients (the Q and the KV paths). */
static void
mla_backward(TpsBuilder *b, const Shape *s, guint index)
{
    const TpsScenario *sc = b->scenario;
    Shape lq, lkv;
    mla_latents(sc, s, &lq, &lkv);
    const guint64 nq = s->heads_local * tps_scenario_mla_qk_dim(sc);
    const guint64 nkv = s->heads_local * (sc->qk_head_dim + sc->v_head_dim);
    if (sc->recompute == TPS_RECOMPUTE_SELECTIVE)
        mla_attention(b, s, index + TPS_LAYER_RECOMPUTE, FALSE);
    mla_attention(b, s, index, TRUE);
    mla_rope(b, s, index, TRUE);
    column_backward(b, &lkv, index, "kv_up", TPS_GEMM_QKV_DGRAD, TPS_GEMM_QKV_WGRAD, nkv);
    SlotNote kv_notes[2];
    slot_save(b, TPS_GEMM_QKV_DGRAD, &kv_notes[0]);
    slot_save(b, TPS_GEMM_QKV_WGRAD, &kv_notes[1]);
    mla_norm(b, &lkv, index, "kv_norm_bwd", TRUE);
    if (sc->q_lora_rank > 0) {
        column_backward(b, &lq, index, "q_up", TPS_GEMM_QKV_DGRAD, TPS_GEMM_QKV_WGRAD, nq);
        mla_norm(b, &lq, index, "q_norm_bwd", TRUE);
    } else {
        column_backward(b, s, index, "q", TPS_GEMM_QKV_DGRAD, TPS_GEMM_QKV_WGRAD, nq);
    }
    slot_add(b, TPS_GEMM_QKV_DGRAD, &kv_notes[0]);
    slot_add(b, TPS_GEMM_QKV_WGRAD, &kv_notes[1]);
    /* Backward the two projections interleave (KV dgrad, KV wgrad, Q
     * dgrad, Q wgrad): each slot's span holds the other slot's GEMMs too,
     * so its overlap efficiency is not defined (no reference). */
    if (b->recording) {
        b->slot_comm_alone[TPS_GEMM_QKV_DGRAD] = 0;
        b->slot_comm_alone[TPS_GEMM_QKV_WGRAD] = 0;
    }
    mla_k_pe_exchange(b, s, index, TRUE);
    mla_down_backward(b, s, index, "kv_down", sc->kv_lora_rank + sc->qk_pos_emb_head_dim);
    if (sc->q_lora_rank > 0)
        mla_down_backward(b, s, index, "q_down", sc->q_lora_rank);
    g_autofree char *add = opname(index, "qkv_grad_add");
    tps_builder_memory(b, b->main, add, grad_add_bytes(s), NULL);
}

/* Megatron's layer, as Megatron-core with Transformer Engine runs it
 * (megatron/core/transformer/transformer_layer.py): input LayerNorm, QKV
 * (all-gather with SP), attention, projection (reduce-scatter with SP),
 * bias-dropout-add (one kernel: jit_fuser is torch.compile since PyTorch
 * 2.2, megatron/core/jit.py), pre-MLP LayerNorm, FC1, bias-GeLU (one fused
 * kernel), FC2, bias-dropout-add. GEMM biases other than the row-parallel
 * ones (added in bias-dropout-add) and FC1's (added in bias-GeLU) are in the
 * GEMM's epilogue. With training.cuda_graphs each pass of a layer is one
 * captured graph (Megatron's per-layer graphs). */
/* The forward up to the MLP: input LayerNorm, QKV, attention,
 * projection, bias-dropout-add, pre-MLP LayerNorm. */
static void
layer_forward_attention(TpsBuilder *b, const Shape *s, guint index)
{
    g_autofree char *ln1 = opname(index, "ln1");
    g_autofree char *qkv = opname(index, "qkv_fprop");
    g_autofree char *proj = opname(index, "proj_fprop");
    g_autofree char *bda1 = opname(index, "bda1");
    g_autofree char *ln2 = opname(index, "ln2");
    const double tokens = (double)s->tokens;
    tps_builder_memory(b, b->main, ln1, ln_fwd_fp8_bytes(b, s), NULL);
    ln_quantize(b, s, index, "ln1_out_cast");
    if (b->scenario->mla) {
        mla_forward(b, s, index);
    } else {
        column_forward(b, s, TPS_GEMM_QKV_FPROP, qkv, s->qkv_local);
        qk_norm(b, s, index, FALSE);
        rope(b, s, index, FALSE);
        attention_forward(b, s, index);
    }
    fp8_operand(b, s, index, "proj_input_cast", tokens * s->attn_local, TRUE, FALSE);
    row_forward(b, s, TPS_GEMM_PROJ_FPROP, proj, s->attn_local);
    tps_builder_memory(b, b->main, bda1, bda_fwd_bytes(s), NULL);
    tps_builder_memory(b, b->main, ln2, ln_fwd_fp8_bytes(b, s), NULL);
    ln_quantize(b, s, index, "ln2_out_cast");
}

/* A dense layer's MLP half of the forward: FC1, its activation, FC2 and
 * the bias-dropout-add. */
static void
dense_mlp_forward(TpsBuilder *b, const Shape *s, guint index)
{
    g_autofree char *fc1 = opname(index, "fc1_fprop");
    g_autofree char *act = opname(index, b->scenario->mlp == TPS_MLP_SWIGLU ? "swiglu" : "gelu");
    g_autofree char *fc2 = opname(index, "fc2_fprop");
    g_autofree char *bda2 = opname(index, "bda2");
    mlp_fc1_forward(b, s, fc1, act);
    mlp_fc2_forward(b, s, index, "", fc2);
    tps_builder_memory(b, b->main, bda2, bda_fwd_bytes(s), NULL);
}

/* Megatron's layer, as Megatron-core with Transformer Engine runs it
 * (megatron/core/transformer/transformer_layer.py): input LayerNorm, QKV
 * (all-gather with SP), attention, projection (reduce-scatter with SP),
 * bias-dropout-add (one kernel: jit_fuser is torch.compile since PyTorch
 * 2.2, megatron/core/jit.py), pre-MLP LayerNorm, FC1, bias-GeLU (one fused
 * kernel), FC2, bias-dropout-add. GEMM biases other than the row-parallel
 * ones (added in bias-dropout-add) and FC1's (added in bias-GeLU) are in the
 * GEMM's epilogue. With training.cuda_graphs each pass of a layer is one
 * captured graph (Megatron's per-layer graphs). */
void
tps_layer_forward(TpsBuilder *b, guint index)
{
    Shape s;
    shape_of(b, &s);
    if (b->scenario->cuda_graphs)
        tps_builder_graph_begin(b);
    layer_forward_attention(b, &s, index);
    if (tps_scenario_is_moe(b->scenario)) {
        g_autofree char *bda2 = opname(index, "bda2");
        moe_forward(b, &s, index);
        tps_builder_memory(b, b->main, bda2, bda_fwd_bytes(&s), NULL);
    } else {
        dense_mlp_forward(b, &s, index);
    }
    if (b->scenario->cuda_graphs)
        tps_builder_graph_end(b);
}

/* A column-parallel backward as its slots' methods build it: its op
 * names, its collectives' sizes, and which overlap each slot runs. */
typedef struct {
    char *dgrad, *wgrad, *ag, *rs;
    double full;     /* grad_input */
    double gathered; /* the saved input, gathered again */
    TpsCollKind exit_kind;
    TpsGemmSlot dslot, wslot;
    guint64 n_local;
    const TpsOverlapConfig *dcfg, *wcfg;
    const TpsMethodInfo *dmethod, *wmethod;
    gboolean dgrad_rs, bulk_ag, bulk_rs;
} ColumnBwd;

static void
column_bwd_plan(const TpsBuilder *b, const Shape *s, guint index, const char *gemm,
                TpsGemmSlot dslot, TpsGemmSlot wslot, guint64 n_local, ColumnBwd *c)
{
    c->dgrad = g_strdup_printf("l%u.%s_dgrad", index, gemm);
    c->wgrad = g_strdup_printf("l%u.%s_wgrad", index, gemm);
    c->ag = g_strdup_printf("l%u.%s_dgrad.ag", index, gemm);
    c->rs = g_strdup_printf("l%u.%s_wgrad.%s", index, gemm, s->sp ? "rs" : "ar");
    c->full = (double)s->tokens * s->h * s->elt;
    /* The saved input gathered again: the LayerNorm's FP8 output under
     * fp8 (TE 1.x gathers ln_out as saved; its bulk userbuffer for
     * qkv_dgrad and fc1_dgrad is an FP8 buffer), bf16 otherwise. */
    c->gathered = (double)s->tokens * s->h * tps_dtype_gemm_bytes(b->scenario->dtype);
    c->exit_kind = s->sp ? TPS_COLL_REDUCE_SCATTER : TPS_COLL_ALL_REDUCE;
    c->dslot = dslot;
    c->wslot = wslot;
    c->n_local = n_local;
    c->dcfg = &b->overlap[dslot];
    c->wcfg = &b->overlap[wslot];
    c->dmethod = tps_method_info(c->dcfg->method);
    c->wmethod = tps_method_info(c->wcfg->method);
    /* The method table says which kind of overlap each slot's method
     * builds: a GEMM+RS builder on dgrad splits dgrad's own
     * reduce-scatter, a bulk builder runs the independent collective
     * beside the GEMM. */
    c->dgrad_rs = s->sp && c->dmethod->gemm_rs != NULL;
    c->bulk_ag = s->sp && !c->dgrad_rs && c->dmethod->bulk != NULL;
    c->bulk_rs = s->sp && !c->dgrad_rs && c->wmethod->bulk != NULL;
}

static void
column_bwd_clear(ColumnBwd *c)
{
    g_free(c->dgrad);
    g_free(c->wgrad);
    g_free(c->ag);
    g_free(c->rs);
}

/* dgrad hides the all-gather of the saved input, or its own
 * reduce-scatter; wgrad hides the reduce-scatter otherwise. */
static void
column_bwd_note_slots(TpsBuilder *b, const Shape *s, const ColumnBwd *c)
{
    tps_builder_note_slot(
        b, c->dslot, s->tokens, s->h, c->n_local,
        c->dgrad_rs ? TPS_COLL_REDUCE_SCATTER : (s->sp ? TPS_COLL_ALL_GATHER : TPS_COLL_COUNT),
        c->dgrad_rs ? c->full : c->gathered);
    tps_builder_note_slot(b, c->wslot, s->h, c->n_local, s->tokens,
                          c->dgrad_rs ? TPS_COLL_COUNT : c->exit_kind, c->full);
}

/* Everything on the compute stream, in Megatron's launch order. */
static void
column_bwd_blocking(TpsBuilder *b, const Shape *s, const ColumnBwd *c)
{
    b->slot = c->dslot;
    if (s->sp)
        tps_builder_collective(b, b->main, TPS_COLL_ALL_GATHER, c->gathered, c->ag, NULL);
    tps_builder_gemm(b, b->main, c->dgrad, s->tokens, s->h, c->n_local, 0, NULL);
    b->slot = c->wslot;
    tps_builder_collective(b, b->main, c->exit_kind, c->full, c->rs, NULL);
    tps_builder_gemm(b, b->main, c->wgrad, s->h, c->n_local, s->tokens, 0, NULL);
    b->slot = TPS_GEMM_SLOT_COUNT;
}

/* dgrad, with the all-gather of the saved input beside it. A bulk
 * overlap is issued from inside the GEMM's op (a library op). */
static void
column_bwd_dgrad(TpsBuilder *b, const Shape *s, const ColumnBwd *c, TpsOpIds *ag_ids,
                 TpsOpIds *dgrad_ids)
{
    b->slot = c->dslot;
    if (c->bulk_ag) {
        tps_builder_library_begin(b);
        c->dmethod->bulk(b, TPS_COLL_ALL_GATHER, c->gathered, c->dcfg, c->ag, ag_ids);
    } else if (s->sp) {
        /* Megatron (LinearWithGradAccumulationAndAsyncCommunication): NCCL
         * on its side stream, queued before the GEMM (one hardware queue),
         * so its channels take their SMs first. */
        TpsOpIds before;
        tps_builder_record(b, b->main, &before);
        tps_builder_wait(b, b->side, &before);
        tps_builder_collective(b, b->side, TPS_COLL_ALL_GATHER, c->gathered, c->ag, ag_ids);
    }
    if (c->dgrad_rs) {
        TpsGemmShape g = {c->dgrad, s->tokens, s->h, c->n_local};
        overlap_gemm_rs(b, &g, c->dcfg);
    } else {
        tps_builder_gemm(b, b->main, c->dgrad, s->tokens, s->h, c->n_local,
                         c->bulk_ag ? tps_overlap_gemm_sms(b, c->dcfg) : 0, dgrad_ids);
    }
    if (c->bulk_ag)
        tps_builder_library_end(b);
}

/* wgrad, with the reduce-scatter of grad_input beside it; grad_input is
 * returned only once its reduce-scatter has finished. */
static void
column_bwd_wgrad(TpsBuilder *b, const Shape *s, const ColumnBwd *c, const TpsOpIds *ag_ids,
                 const TpsOpIds *dgrad_ids)
{
    TpsOpIds rs_ids;
    ops_none(&rs_ids);
    b->slot = c->wslot;
    gboolean have_rs = FALSE;
    if (c->bulk_rs) {
        tps_builder_library_begin(b);
        c->wmethod->bulk(b, TPS_COLL_REDUCE_SCATTER, c->full, c->wcfg, c->rs, &rs_ids);
        have_rs = TRUE;
    } else if (!c->dgrad_rs) {
        tps_builder_wait(b, b->side, dgrad_ids);
        tps_builder_collective(b, b->side, c->exit_kind, c->full, c->rs, &rs_ids);
        have_rs = TRUE;
    }
    if (s->sp)
        tps_builder_wait(b, b->main, ag_ids);
    tps_builder_gemm(b, b->main, c->wgrad, s->h, c->n_local, s->tokens,
                     c->bulk_rs ? tps_overlap_gemm_sms(b, c->wcfg) : 0, NULL);
    if (c->bulk_rs)
        tps_builder_library_end(b);
    if (have_rs)
        tps_builder_wait(b, b->main, &rs_ids);
    b->slot = TPS_GEMM_SLOT_COUNT;
}

/* Backward of a column-parallel linear layer (QKV or FC1): dgrad and wgrad
 * GEMMs, the all-gather of the saved sequence-sharded input (wgrad needs
 * the full input) and the reduce-scatter (all-reduce without SP) of
 * grad_input. `n_local` is the layer's output width on this rank.
 *
 * By the slots' methods (their builders in the method table): `none` is
 * Megatron's NCCL side stream (or all blocking under sp-blocking); `bulk`
 * on dgrad runs the all-gather as a userbuffers kernel beside dgrad, `bulk`
 * on wgrad the reduce-scatter beside wgrad; a pipeline or ring-exchange
 * dgrad overlaps the reduce-scatter with dgrad itself (and the wgrad has
 * nothing left to hide; the all-gather stays on NCCL's side stream). */
static void
column_backward(TpsBuilder *b, const Shape *s, guint index, const char *gemm, TpsGemmSlot dslot,
                TpsGemmSlot wslot, guint64 n_local)
{
    ColumnBwd c;
    column_bwd_plan(b, s, index, gemm, dslot, wslot, n_local, &c);
    column_bwd_note_slots(b, s, &c);
    if (b->strategy == TPS_STRATEGY_SP_BLOCKING || b->strategy == TPS_STRATEGY_TP_ALLREDUCE) {
        column_bwd_blocking(b, s, &c);
    } else {
        /* A collective over one rank adds nothing (tp 1 with sp: true,
         * which Megatron accepts and runs without communication) and sets
         * no ids: the waits on an id that nothing set are then no-ops. */
        TpsOpIds ag_ids, dgrad_ids;
        ops_none(&ag_ids);
        ops_none(&dgrad_ids);
        column_bwd_dgrad(b, s, &c, &ag_ids, &dgrad_ids);
        column_bwd_wgrad(b, s, &c, &ag_ids, &dgrad_ids);
    }
    column_bwd_clear(&c);
}

/* Backward of a row-parallel linear layer (proj or FC2): the all-gather of
 * the sequence-sharded grad_output (SP) into the dgrad GEMM, by the slot's
 * method; wgrad uses the local input. `k_local` is the layer's input width
 * on this rank. */
static void
row_backward(TpsBuilder *b, const Shape *s, guint index, const char *gemm, TpsGemmSlot slot,
             guint64 k_local)
{
    g_autofree char *dgrad = g_strdup_printf("l%u.%s_dgrad", index, gemm);
    g_autofree char *wgrad = g_strdup_printf("l%u.%s_wgrad", index, gemm);
    TpsGemmShape g = {dgrad, s->tokens, k_local, s->h};

    b->slot = slot;
    tps_builder_note_slot(b, slot, g.m, g.n, g.k, s->sp ? TPS_COLL_ALL_GATHER : TPS_COLL_COUNT,
                          (double)s->tokens * s->h * s->elt);
    if (s->sp)
        overlap_ag_gemm(b, &g, &b->overlap[slot]);
    else
        tps_builder_gemm(b, b->main, dgrad, g.m, g.n, g.k, 0, NULL);
    b->slot = TPS_GEMM_SLOT_COUNT;
    tps_builder_gemm(b, b->main, wgrad, k_local, s->h, s->tokens, 0, NULL);
}

/* The backward of a LayerNorm (two kernels) and the sum of the residual
 * stream's two gradients. */
static void
ln_backward(TpsBuilder *b, const Shape *s, guint index, const char *ln)
{
    g_autofree char *main = opname(index, ln);
    g_autofree char *fin = g_strdup_printf("%s_finalize", main);
    g_autofree char *add = g_strdup_printf("%s_residual_add", main);
    tps_builder_memory(b, b->main, main, ln_bwd_bytes(s), NULL);
    tps_builder_memory(b, b->main, fin, ln_finalize_bytes(b, s), NULL);
    tps_builder_memory(b, b->main, add, grad_add_bytes(s), NULL);
}

/* Names of an MLP's backward ops, prefixed `prefix` (the shared experts'
 * "shared_"). */
#define PREFIXED(what) g_strdup_printf("%s%s", prefix, what)

/* The backward of an MLP's second half (the dense MLP, or the shared
 * experts: names prefixed `prefix`): FC2's bias gradient and GEMMs, the
 * activation's backward. */
static void
mlp_fc2_backward(TpsBuilder *b, const Shape *s, guint index, const char *prefix)
{
    const gboolean swiglu = b->scenario->mlp == TPS_MLP_SWIGLU;
    const double tokens = (double)s->tokens;
    g_autofree char *fc2 = PREFIXED("fc2");
    g_autofree char *fc2_bias_name = PREFIXED("fc2_bias_grad");
    g_autofree char *act_name = PREFIXED(swiglu ? "swiglu_bwd" : "gelu_bwd");
    g_autofree char *fc2_cast = PREFIXED("fc2_grad_cast");
    g_autofree char *fc2_bias = opname(index, fc2_bias_name);
    g_autofree char *act = opname(index, act_name);
    /* Without biases (model.bias: false) there is no bias gradient to sum. */
    if (b->scenario->bias)
        tps_builder_memory(b, b->main, fc2_bias, bias_grad_bytes(s, s->local_tokens, s->h), NULL);
    fp8_operand(b, s, index, fc2_cast, tokens * s->h, TRUE, TRUE);
    row_backward(b, s, index, fc2, TPS_GEMM_FC2_DGRAD, s->f / s->t);
    /* GeLU backward: read dy and the saved input, write dx. SwiGLU: read
     * dy (f wide) and the saved gate and up halves (2 f), write their
     * gradients (2 f). */
    tps_builder_memory(b, b->main, act, (swiglu ? 5.0 : 3.0) * s->elt * s->tokens * (s->f / s->t),
                       NULL);
}

/* Its first half: FC1's bias gradient and GEMMs. */
static void
mlp_fc1_backward(TpsBuilder *b, const Shape *s, guint index, const char *prefix)
{
    const double tokens = (double)s->tokens;
    g_autofree char *fc1 = PREFIXED("fc1");
    g_autofree char *fc1_bias_name = PREFIXED("fc1_bias_grad");
    g_autofree char *fc1_cast = PREFIXED("fc1_grad_cast");
    g_autofree char *fc1_transpose = PREFIXED("fc1_input_transpose");
    g_autofree char *fc1_bias = opname(index, fc1_bias_name);
    if (b->scenario->bias)
        tps_builder_memory(b, b->main, fc1_bias, bias_grad_bytes(s, s->tokens, s->fc1_local), NULL);
    fp8_operand(b, s, index, fc1_cast, tokens * s->fc1_local, TRUE, FALSE);
    fp8_input_transpose(b, index, fc1_transpose, tokens * s->h);
    column_backward(b, s, index, fc1, TPS_GEMM_FC1_DGRAD, TPS_GEMM_FC1_WGRAD, s->fc1_local);
}
#undef PREFIXED

/* The backward of an MLP of s->f columns, FC2 then FC1. */
static void
mlp_backward(TpsBuilder *b, const Shape *s, guint index, const char *prefix)
{
    mlp_fc2_backward(b, s, index, prefix);
    mlp_fc1_backward(b, s, index, prefix);
}

/* The MoE layer's backward with model.moe.shared_expert_overlap, in the
 * order Megatron's autograd launches it (shared_experts.py sets the
 * sequence numbers of the all-to-alls' outputs so that their backward is
 * launched first, and _BackwardStreamWait holds the shared FC1's backward
 * until the routed experts' has been issued; token_dispatcher.py:
 * "Backward launch order: probs A2A -> tokens A2A -> shared experts fc1"):
 * the unpermutation's backward, the combine's gradient (its all-to-all,
 * then the shared experts' FC2 backward beside it, then its ETP
 * all-gather), the routed experts, the dispatch's gradient (its ETP
 * reduce-scatter and all-to-all) beside the shared FC1's backward. The
 * all-to-alls are on their own stream, as in the forward. */
static void
moe_backward_overlapped(TpsBuilder *b, const Shape *s, guint index)
{
    Shape sh;
    shared_shape(b, s, &sh);
    TpsOpIds before, done;
    ops_none(&done);
    tps_moe_unpermute_backward(b, index, b->main);
    tps_builder_record(b, b->main, &before);
    tps_builder_wait(b, b->moe, &before);
    tps_moe_to_experts_exchange(b, index, b->moe, "combine_bwd", &done);
    mlp_fc2_backward(b, &sh, index, "shared_");
    tps_moe_to_experts_etp(b, index, b->moe, "combine_bwd", &done);
    tps_builder_wait(b, b->main, &done);
    tps_moe_experts_backward(b, index);
    tps_builder_record(b, b->main, &before);
    tps_builder_wait(b, b->moe, &before);
    tps_moe_from_experts(b, index, b->moe, "dispatch_bwd", &done);
    mlp_fc1_backward(b, &sh, index, "shared_");
    tps_builder_wait(b, b->main, &done);
    g_autofree char *add = opname(index, "shared_grad_add");
    tps_builder_memory(b, b->main, add, grad_add_bytes(s), NULL);
    tps_moe_route_backward(b, index);
}

/* The MoE layer's backward (autograd's order, the reverse of
 * moe_forward's): the shared experts, the unpermutation, the combine's
 * gradient to the experts, the experts, the dispatch's gradient back, the
 * permutation and the router; all on the compute stream, or with the
 * shared expert overlap as moe_backward_overlapped() issues it. */
static void
moe_backward(TpsBuilder *b, const Shape *s, guint index)
{
    if (b->scenario->moe.shared_expert_overlap) {
        moe_backward_overlapped(b, s, index);
        return;
    }
    if (b->scenario->moe.shared_ffn_hidden > 0) {
        Shape sh;
        shared_shape(b, s, &sh);
        mlp_backward(b, &sh, index, "shared_");
        g_autofree char *add = opname(index, "shared_grad_add");
        tps_builder_memory(b, b->main, add, grad_add_bytes(s), NULL);
    }
    tps_moe_unpermute_backward(b, index, b->main);
    tps_moe_to_experts(b, index, b->main, "combine_bwd", NULL);
    tps_moe_experts_backward(b, index);
    tps_moe_from_experts(b, index, b->main, "dispatch_bwd", NULL);
    tps_moe_route_backward(b, index);
}

/* The backward from the pre-MLP LayerNorm's on: the LayerNorm, the
 * first bias-dropout-add, the projection, the attention (recomputed first
 * under selective recompute), QKV and the input LayerNorm. */
static void
layer_backward_attention(TpsBuilder *b, const Shape *s, guint index)
{
    /* Without biases (model.bias: false) there is no bias gradient to sum. */
    const gboolean bias = b->scenario->bias;
    g_autofree char *bda1 = opname(index, "bda1_bwd");
    g_autofree char *proj_bias = opname(index, "proj_bias_grad");
    const double tokens = (double)s->tokens;
    ln_backward(b, s, index, "ln2_bwd");
    tps_builder_memory(b, b->main, bda1, bda_bwd_bytes(s), NULL);
    if (bias)
        tps_builder_memory(b, b->main, proj_bias, bias_grad_bytes(s, s->local_tokens, s->h), NULL);
    fp8_operand(b, s, index, "proj_grad_cast", tokens * s->h, TRUE, TRUE);
    row_backward(b, s, index, "proj", TPS_GEMM_PROJ_DGRAD, s->attn_local);
    /* Selective recompute re-runs the attention core's forward (the part
     * whose activations are large and cheap to recompute) right before its
     * backward (arXiv:2205.05198 section 5). */
    if (b->scenario->mla) {
        mla_backward(b, s, index);
        ln_backward(b, s, index, "ln1_bwd");
        return;
    }
    if (b->scenario->recompute == TPS_RECOMPUTE_SELECTIVE)
        attention_forward(b, s, index + TPS_LAYER_RECOMPUTE);
    attention_backward(b, s, index);
    rope(b, s, index, TRUE);
    qk_norm(b, s, index, TRUE);
    fp8_operand(b, s, index, "qkv_grad_cast", tokens * s->qkv_local, TRUE, FALSE);
    fp8_input_transpose(b, index, "qkv_input_transpose", tokens * s->h);
    column_backward(b, s, index, "qkv", TPS_GEMM_QKV_DGRAD, TPS_GEMM_QKV_WGRAD, s->qkv_local);
    ln_backward(b, s, index, "ln1_bwd");
}

/* A dense layer's MLP half of the backward: the bias-dropout-add's, then
 * the MLP's. */
static void
dense_mlp_backward(TpsBuilder *b, const Shape *s, guint index)
{
    g_autofree char *bda2 = opname(index, "bda2_bwd");
    tps_builder_memory(b, b->main, bda2, bda_bwd_bytes(s), NULL);
    mlp_backward(b, s, index, "");
}

void
tps_layer_backward(TpsBuilder *b, guint index)
{
    Shape s;
    shape_of(b, &s);
    if (b->scenario->cuda_graphs)
        tps_builder_graph_begin(b);
    if (tps_scenario_is_moe(b->scenario)) {
        g_autofree char *bda2 = opname(index, "bda2_bwd");
        tps_builder_memory(b, b->main, bda2, bda_bwd_bytes(&s), NULL);
        moe_backward(b, &s, index);
    } else {
        dense_mlp_backward(b, &s, index);
    }
    layer_backward_attention(b, &s, index);
    if (b->scenario->cuda_graphs)
        tps_builder_graph_end(b);
}

/* ---- the combined forward and backward (model.moe.overlap_ep_comm) ---- */

/* The shared experts' forward (pre_dispatch's part of them). */
static void
shared_forward(TpsBuilder *b, const Shape *s, guint index)
{
    if (b->scenario->moe.shared_ffn_hidden == 0)
        return;
    Shape sh;
    shared_shape(b, s, &sh);
    g_autofree char *fc1 = opname(index, "shared_fc1_fprop");
    g_autofree char *act =
        opname(index, b->scenario->mlp == TPS_MLP_SWIGLU ? "shared_swiglu" : "shared_gelu");
    g_autofree char *fc2 = opname(index, "shared_fc2_fprop");
    mlp_fc1_forward(b, &sh, fc1, act);
    mlp_fc2_forward(b, &sh, index, "shared_", fc2);
}

/* The combine node's forward on `comm`: the way back from the experts,
 * the unpermutation, the shared experts' add and the residual's. */
static void
combine_forward_node(TpsBuilder *b, const Shape *s, guint index, const TpsStreamId *comm)
{
    tps_moe_from_experts(b, index, comm, "combine", NULL);
    tps_moe_unpermute_forward(b, index, comm);
    g_autofree char *add = opname(index, "shared_add");
    if (b->scenario->moe.shared_ffn_hidden > 0)
        tps_builder_memory(b, comm, add, 3.0 * residual_bytes(s), NULL);
    g_autofree char *bda2 = opname(index, "bda2");
    tps_builder_memory(b, comm, bda2, bda_fwd_bytes(s), NULL);
}

/* And its backward: the residual's, the unpermutation's, the combine's
 * gradient to the experts. */
static void
combine_backward_node(TpsBuilder *b, const Shape *s, guint index, const TpsStreamId *comm)
{
    g_autofree char *bda2 = opname(index, "bda2_bwd");
    tps_builder_memory(b, comm, bda2, bda_bwd_bytes(s), NULL);
    tps_moe_unpermute_backward(b, index, comm);
    tps_moe_to_experts(b, index, comm, "combine_bwd", NULL);
}

/* The pre_dispatch node's backward: of an MoE layer the shared experts'
 * and their gradient's add, the permutation's and the router's, then the
 * attention half; of a dense layer the attention half alone
 * (fine_grained_callables.py: a dense layer's pre_dispatch is its
 * attention). */
static void
pre_dispatch_backward_node(TpsBuilder *b, const Shape *s, guint index, gboolean moe)
{
    if (moe && b->scenario->moe.shared_ffn_hidden > 0) {
        Shape sh;
        shared_shape(b, s, &sh);
        mlp_backward(b, &sh, index, "shared_");
        g_autofree char *add = opname(index, "shared_grad_add");
        tps_builder_memory(b, b->main, add, grad_add_bytes(s), NULL);
    }
    if (moe)
        tps_moe_route_backward(b, index);
    layer_backward_attention(b, s, index);
}

/* The pre_dispatch node's forward: the attention half, and of an MoE
 * layer the router, the permutation and the shared experts. */
static void
pre_dispatch_forward_node(TpsBuilder *b, const Shape *s, guint index, gboolean moe)
{
    layer_forward_attention(b, s, index);
    if (!moe)
        return;
    tps_moe_route_forward(b, index);
    shared_forward(b, s, index);
}

/* The mlp node's forward on the compute stream: an MoE layer's experts;
 * a dense layer's MLP with its bias-dropout-add (Megatron's
 * _forward_mlp: a dense layer has no dispatch or combine node, its
 * NoopScheduleNode). */
static void
mlp_forward_node(TpsBuilder *b, const Shape *s, guint index, gboolean moe)
{
    if (moe)
        tps_moe_experts_forward(b, index);
    else
        dense_mlp_forward(b, s, index);
}

/* And its backward: the experts'; a dense layer's bias-dropout-add and
 * MLP. */
static void
mlp_backward_node(TpsBuilder *b, const Shape *s, guint index, gboolean moe)
{
    if (moe)
        tps_moe_experts_backward(b, index);
    else
        dense_mlp_backward(b, s, index);
}

/* `to` waits for the last op issued so far on `from`. */
static void
hand_over(TpsBuilder *b, const TpsStreamId *from, const TpsStreamId *to)
{
    TpsOpIds ev;
    tps_builder_record(b, from, &ev);
    tps_builder_wait(b, to, &ev);
}

/* `to` waits for the op `on` where `on` is an MoE layer's (a dense
 * layer's dispatch and combine are no-ops, and so their waits). */
static void
wait_if(TpsBuilder *b, gboolean moe, const TpsStreamId *to, const TpsOpIds *on)
{
    if (moe)
        tps_builder_wait(b, to, on);
}

void
tps_layer_forward_backward(TpsBuilder *b, guint fwd, guint bwd, TpsOpIds *chain)
{
    tps_layer_forward_backward_kinds(b, fwd, TRUE, bwd, TRUE, chain);
}

/* In Megatron's issue order (TransformerLayerSchedulePlan.run): combine
 * backward, pre_dispatch forward, mlp backward, dispatch forward,
 * dispatch backward, mlp forward, combine forward, pre_dispatch backward,
 * each node after the one of its micro-batch before it. The issue order
 * matters where the host blocks: the flex dispatcher's dispatch waits on
 * the host for its counts (sched/moe.c, flex()), the experts' backward
 * already queued. */
void
tps_layer_forward_backward_kinds(TpsBuilder *b, guint fwd, gboolean fwd_moe, guint bwd,
                                 gboolean bwd_moe, TpsOpIds *chain)
{
    Shape s;
    shape_of(b, &s);
    const TpsStreamId *comm = b->moe;
    TpsOpIds combine_bwd, pre_fwd, mlp_bwd, dispatch, dispatch_bwd;
    tps_builder_wait(b, b->main, chain);
    if (bwd_moe) {
        hand_over(b, b->main, comm); /* the backward's input: the last op on main */
        combine_backward_node(b, &s, bwd, comm);
        tps_builder_record(b, comm, &combine_bwd);
    }
    pre_dispatch_forward_node(b, &s, fwd, fwd_moe);
    tps_builder_record(b, b->main, &pre_fwd);
    wait_if(b, bwd_moe, b->main, &combine_bwd);
    mlp_backward_node(b, &s, bwd, bwd_moe);
    tps_builder_record(b, b->main, &mlp_bwd);
    if (fwd_moe) {
        tps_builder_wait(b, comm, &pre_fwd);
        tps_moe_to_experts(b, fwd, comm, "dispatch", NULL);
        tps_builder_record(b, comm, &dispatch);
    }
    if (bwd_moe) {
        tps_builder_wait(b, comm, &mlp_bwd);
        tps_moe_from_experts(b, bwd, comm, "dispatch_bwd", NULL);
        tps_builder_record(b, comm, &dispatch_bwd);
    }
    wait_if(b, fwd_moe, b->main, &dispatch);
    mlp_forward_node(b, &s, fwd, fwd_moe);
    if (fwd_moe) {
        hand_over(b, b->main, comm);
        combine_forward_node(b, &s, fwd, comm);
        tps_builder_record(b, comm, chain);
    } else {
        tps_builder_record(b, b->main, chain);
    }
    wait_if(b, bwd_moe, b->main, &dispatch_bwd);
    pre_dispatch_backward_node(b, &s, bwd, bwd_moe);
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
    tps_builder_memory(b, b->main, "embedding", 2.0 * s.elt * s.tokens * s.h, NULL);
    tps_builder_collective(b, b->main, s.sp ? TPS_COLL_REDUCE_SCATTER : TPS_COLL_ALL_REDUCE,
                           (double)s.tokens * s.h * s.elt, s.sp ? "embedding.rs" : "embedding.ar",
                           NULL);
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
    tps_builder_memory(b, b->main, "embedding_bwd", 3.0 * s.elt * s.tokens * s.h, NULL);
}

void
tps_head_forward(TpsBuilder *b)
{
    Shape s;
    shape_of(b, &s);
    const guint64 vocab_local = b->scenario->vocab / s.t;
    tps_builder_memory(b, b->main, "final_ln", ln_fwd_bytes(&s), NULL);
    if (s.sp)
        tps_builder_collective(b, b->main, TPS_COLL_ALL_GATHER, (double)s.tokens * s.h * s.elt,
                               "logits.ag", NULL);
    /* The output layer is Megatron's own ColumnParallelLinear, not a
     * Transformer Engine module: bf16 under fp8. */
    tps_builder_gemm_dtype(b, b->main, "logits", tps_dtype_compute(b->scenario->dtype), s.tokens,
                           vocab_local, s.h, 0, NULL);
    /* Vocab-parallel cross entropy: read the logits (max, sum of exp,
     * target logit), with two small all-reduces of per-token scalars. */
    tps_builder_memory(b, b->main, "cross_entropy", 1.0 * s.elt * s.tokens * vocab_local, NULL);
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
    tps_builder_memory(b, b->main, "cross_entropy_bwd", 2.0 * s.elt * s.tokens * vocab_local, NULL);
    const TpsDtype dtype = tps_dtype_compute(b->scenario->dtype);
    tps_builder_gemm_dtype(b, b->main, "logits_dgrad", dtype, s.tokens, s.h, vocab_local, 0, NULL);
    tps_builder_collective(b, b->main, s.sp ? TPS_COLL_REDUCE_SCATTER : TPS_COLL_ALL_REDUCE,
                           (double)s.tokens * s.h * s.elt,
                           s.sp ? "logits_dgrad.rs" : "logits_dgrad.ar", NULL);
    tps_builder_gemm_dtype(b, b->main, "logits_wgrad", dtype, vocab_local, s.h, s.tokens, 0, NULL);
    tps_builder_memory(b, b->main, "final_ln_bwd", ln_bwd_bytes(&s), NULL);
}

void
tps_optimizer_step(TpsBuilder *b, double params)
{
    /* Fused Adam over fp32 master weights: read grad (fp32), master, m, v;
     * write master, m, v and the bf16 copy of the weight: 30 bytes per
     * parameter (Megatron's mixed-precision optimizer). */
    tps_builder_memory(b, b->main, "optimizer", 30.0 * params, NULL);
}

/* ---- op scenarios ---- */

void
tps_op_graph(TpsBuilder *b)
{
    const TpsScenario *sc = b->scenario;
    const double elt = tps_dtype_bytes(sc->dtype);
    b->slot = TPS_GEMM_OP;
    if (sc->op_kind == TPS_OP_AG_GEMM) {
        /* Input [m, k] gathered along m; weight [k, n/t]. */
        TpsGemmShape g = {"op.gemm", sc->m, sc->n / sc->tp, sc->k};
        tps_builder_note_slot(b, TPS_GEMM_OP, g.m, g.n, g.k, TPS_COLL_ALL_GATHER,
                              (double)sc->m * sc->k * elt);
        overlap_ag_gemm(b, &g, &b->overlap[TPS_GEMM_OP]);
    } else {
        /* Input [m, k/t], weight [k/t, n]; output [m, n] reduce-scattered. */
        TpsGemmShape g = {"op.gemm", sc->m, sc->n, sc->k / sc->tp};
        tps_builder_note_slot(b, TPS_GEMM_OP, g.m, g.n, g.k, TPS_COLL_REDUCE_SCATTER,
                              (double)sc->m * sc->n * elt);
        overlap_gemm_rs(b, &g, &b->overlap[TPS_GEMM_OP]);
    }
    b->slot = TPS_GEMM_SLOT_COUNT;
}

void
tps_op_gemm_alone(TpsBuilder *b)
{
    const TpsScenario *sc = b->scenario;
    if (sc->op_kind == TPS_OP_AG_GEMM)
        tps_builder_gemm(b, b->main, "op.gemm", sc->m, sc->n / sc->tp, sc->k, 0, NULL);
    else
        tps_builder_gemm(b, b->main, "op.gemm", sc->m, sc->n, sc->k / sc->tp, 0, NULL);
}
