/* Context parallelism by all-to-all (cp_comm a2a, DeepSpeed Ulysses, and
 * the a2a half of a2a+p2p; the declarations in cp-ring.h). */
#include "sched/cp-ring.h"

#include "cost/kernel-cost.h"
#include "sched/placement.h"

static char *
op_name(const TpsCpAttn *a, const char *what)
{
    return g_strdup_printf("%s%s", a->prefix, what);
}

/* Bytes of a rank's own `heads` x head_dim rows over its two chunks (Q, O
 * and their gradients with the query heads; K, V with the K/V heads). */
static double
rows_bytes(const TpsCpAttn *a, guint64 heads)
{
    return (double)a->batch * 2.0 * (double)a->chunk * (double)heads * (double)a->head_dim * a->elt;
}

/* One all-to-all'd tensor of Transformer Engine's
 * flash_attn_a2a_communicate: its copy into the send layout on the compute
 * stream (before attention, [b, s, cp, h / cp, d] moved to [cp, b, s, ...]:
 * one copy; after it, the chunks reordered back into CP rank order:
 * movedim and index_select, two), the all-to-all on the CP stream (NCCL
 * orders it after the compute stream's work so far), the copy of what it
 * received into the layout attention takes on TE's cp_stream once it is in
 * (before: movedim and index_select, two copies; after: one). */
typedef struct {
    const char *name;
    double bytes; /* the tensor on one rank, which it sends a2a - 1 / a2a of */
} A2aTensor;

static void
a2a_prep(TpsBuilder *b, const TpsCpAttn *a, const A2aTensor *t, gboolean before)
{
    g_autofree char *name = op_name(a, "cp_a2a_prep");
    tps_builder_memory(b, b->main, name, (before ? 2.0 : 4.0) * t->bytes, NULL);
}

static void
a2a_send(TpsBuilder *b, const TpsCpAttn *a, const A2aTensor *t, guint size, TpsOpIds *done)
{
    g_autofree char *name = op_name(a, t->name);
    TpsOpIds ready;
    tps_builder_record(b, b->main, &ready);
    tps_builder_wait(b, b->cp, &ready);
    tps_builder_cp_a2a(b, t->bytes / size, name, done);
}

static void
a2a_post(TpsBuilder *b, const TpsCpAttn *a, const A2aTensor *t, gboolean before,
         const TpsOpIds *done)
{
    g_autofree char *name = op_name(a, "cp_a2a_reorder");
    tps_builder_wait(b, b->cp_attn, done);
    tps_builder_memory(b, b->cp_attn, name, (before ? 4.0 : 2.0) * t->bytes, NULL);
}

/* The tensors in TE's issue order: all-to-all i - 1, then (before
 * attention) the reorder of i - 2 and the copy of i, or (after) the copy
 * of i and the reorder of i - 2; the compute stream then waits for the
 * cp_stream. */
static void
a2a_communicate(TpsBuilder *b, const TpsCpAttn *a, const A2aTensor *t, guint n, gboolean before)
{
    const guint size = tps_cp_a2a_size(b->scenario);
    TpsOpIds done[3];
    g_return_if_fail(n <= G_N_ELEMENTS(done));
    TpsOpIds ready;
    tps_builder_record(b, b->main, &ready);
    tps_builder_wait(b, b->cp_attn, &ready);
    for (guint i = 0; i < n + 2; i++) {
        if (i > 0 && i <= n)
            a2a_send(b, a, &t[i - 1], size, &done[i - 1]);
        if (before && i > 1)
            a2a_post(b, a, &t[i - 2], before, &done[i - 2]);
        if (i < n)
            a2a_prep(b, a, &t[i], before);
        if (!before && i > 1)
            a2a_post(b, a, &t[i - 2], before, &done[i - 2]);
    }
    TpsOpIds posted;
    tps_builder_record(b, b->cp_attn, &posted);
    tps_builder_wait(b, b->main, &posted);
}

/* The shape after the all-to-all: a2a times the tokens, 1 / a2a of the
 * heads; under a2a+p2p the ring's chunks are seq / (2 cp / cp_a2a). */
static TpsCpAttn
head_shards(const TpsBuilder *b, const TpsCpAttn *a)
{
    const guint size = tps_cp_a2a_size(b->scenario);
    TpsCpAttn h = *a;
    h.heads = a->heads / size;
    h.kv_heads = a->kv_heads / size;
    h.ring = b->scenario->cp / size;
    h.chunk = a->chunk * size;
    return h;
}

/* Attention over the gathered tokens with one kernel (a2a: every token of
 * the sequence, in order, so the causal mask is the plain one), with
 * FlashAttention-2's two memory-bound kernels around the backward (as
 * without CP, sched/layer.c). */
static void
full_attention(TpsBuilder *b, const TpsCpAttn *h, gboolean backward)
{
    const TpsScenario *sc = b->scenario;
    const guint64 seq = 2 * h->chunk;
    const TpsDtype dtype = tps_dtype_compute(sc->dtype);
    TpsKernelCost cost;
    if (sc->causal)
        tps_cost_flash_attention_block(b->hw, dtype, h->batch, h->heads, h->kv_heads, seq, seq,
                                       h->head_dim, TRUE, backward, &cost);
    else
        tps_cost_flash_attention_gqa(b->hw, dtype, h->batch, h->heads, h->kv_heads, seq,
                                     h->head_dim, backward, &cost);
    g_autofree char *name = op_name(h, backward ? "attn_bwd" : "attn_fwd");
    g_autofree char *dot = op_name(h, "attn_bwd_dot_do_o");
    g_autofree char *conv = op_name(h, "attn_bwd_convert_dq");
    const double x = rows_bytes(h, h->heads);
    if (backward)
        tps_builder_memory(b, b->main, dot, 2.0 * x, NULL); /* read dO, O */
    tps_builder_kernel(b, b->main, TPS_KIND_ATTENTION, name, &cost, NULL);
    if (backward)
        tps_builder_memory(b, b->main, conv, 3.0 * x, NULL); /* fp32 dQ in, bf16 out */
}

void
tps_cp_a2a_forward(TpsBuilder *b, const TpsCpAttn *a)
{
    const double q = rows_bytes(a, a->heads), kv = rows_bytes(a, a->kv_heads);
    const A2aTensor in[3] = {{"cp_a2a_q", q}, {"cp_a2a_k", kv}, {"cp_a2a_v", kv}};
    const A2aTensor out = {"cp_a2a_out", q};
    a2a_communicate(b, a, in, 3, TRUE);
    const TpsCpAttn h = head_shards(b, a);
    if (h.ring > 1)
        tps_cp_ring_forward(b, &h);
    else
        full_attention(b, &h, FALSE);
    a2a_communicate(b, a, &out, 1, FALSE);
}

void
tps_cp_a2a_backward(TpsBuilder *b, const TpsCpAttn *a)
{
    const double q = rows_bytes(a, a->heads), kv = rows_bytes(a, a->kv_heads);
    const A2aTensor in = {"cp_a2a_dout", q};
    const A2aTensor out[3] = {{"cp_a2a_dq", q}, {"cp_a2a_dk", kv}, {"cp_a2a_dv", kv}};
    a2a_communicate(b, a, &in, 1, TRUE);
    const TpsCpAttn h = head_shards(b, a);
    if (h.ring > 1)
        tps_cp_ring_backward(b, &h);
    else
        full_attention(b, &h, TRUE);
    a2a_communicate(b, a, out, 3, FALSE);
}
