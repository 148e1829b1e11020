/* Ring attention over the CP group (cp-ring.h). */
#include "sched/cp-ring.h"

#include "cost/kernel-cost.h"

void
tps_cp_chunks(guint cp, guint rank, guint chunks[2])
{
    g_return_if_fail(cp >= 1 && rank < cp && chunks != NULL);
    chunks[0] = rank;
    chunks[1] = 2 * cp - 1 - rank;
}

void
tps_cp_block(guint cp, guint rank, guint step, gboolean causal, TpsCpBlock *block)
{
    g_return_if_fail(cp >= 1 && rank < cp && block != NULL);
    guint q[2], kv[2];
    tps_cp_chunks(cp, rank, q);
    tps_cp_chunks(cp, (rank + cp - step % cp) % cp, kv);
    *block = (TpsCpBlock){0};
    gboolean q_used[2] = {FALSE, FALSE}, kv_used[2] = {FALSE, FALSE};
    /* A query chunk after a key chunk sees all of it, the same chunk its
     * lower triangle, an earlier one nothing (the causal mask). */
    for (guint x = 0; x < 2; x++)
        for (guint y = 0; y < 2; y++) {
            if (causal && q[x] < kv[y])
                continue;
            block->diagonal |= causal && q[x] == kv[y];
            q_used[x] = kv_used[y] = TRUE;
        }
    block->q_chunks = (guint)q_used[0] + q_used[1];
    block->kv_chunks = (guint)kv_used[0] + kv_used[1];
}

double
tps_cp_kv_bytes(const TpsCpAttn *a)
{
    return 2.0 * (double)a->batch * 2.0 * (double)a->chunk * (double)a->kv_heads *
           (double)a->head_dim * a->elt;
}

/* The simulated slice is CP rank 0's TP group; every CP rank does the same
 * work per step (Megatron's load balancing), and the ring goes in lockstep. */
#define SLICE_CP_RANK 0u

static char *
op_name(const TpsCpAttn *a, const char *what)
{
    return g_strdup_printf("%s%s", a->prefix, what);
}

/* Bytes of `rows` tokens of the queries' width (Q, O, dO, dQ). */
static double
q_bytes(const TpsCpAttn *a, guint64 rows)
{
    return (double)a->batch * (double)rows * (double)a->heads * (double)a->head_dim * a->elt;
}

/* Bytes of K and V (or dK and dV) of `rows` tokens. */
static double
kv_bytes(const TpsCpAttn *a, guint64 rows)
{
    return 2.0 * (double)a->batch * (double)rows * (double)a->kv_heads * (double)a->head_dim *
           a->elt;
}

static void
block_kernel(TpsBuilder *b, const TpsStreamId *streams, const TpsCpAttn *a, const TpsCpBlock *blk,
             gboolean backward)
{
    TpsKernelCost cost;
    g_autofree char *name = op_name(a, backward ? "attn_bwd" : "attn_fwd");
    tps_cost_flash_attention_block(b->hw, tps_dtype_compute(b->scenario->dtype), a->batch, a->heads,
                                   a->kv_heads, blk->q_chunks * a->chunk, blk->kv_chunks * a->chunk,
                                   a->head_dim, blk->diagonal, backward, &cost);
    tps_builder_kernel(b, streams, TPS_KIND_ATTENTION, name, &cost, NULL);
}

/* The merge of step s's statistics into the running ones, after its block
 * (step 0: their first copy, with flash_attn_fwd_out_correction_init;
 * then flash_attn_fwd_softmax_lse_correction: read the running and the
 * step's fp32 LSE, write the running). */
static void
lse_correction(TpsBuilder *b, const TpsStreamId *streams, const TpsCpAttn *a, guint64 rows, guint s,
               TpsOpIds *out)
{
    g_autofree char *name = op_name(a, "cp_lse_correction");
    const double bytes = (s == 0 ? 2.0 : 3.0) * 4.0 * (double)a->batch * (double)a->heads * rows;
    tps_builder_memory(b, streams, name, bytes, out);
}

/* Forward as TE's loop issues it: iteration s sends block s on (receiving
 * block s + 1), runs block s on stream s % 2 once it has arrived, then
 * merges step s - 1's statistics on that step's stream, after step s - 2's
 * merge (the merges are serial; a block can run beside the merge of the
 * one before, and beside the block before when its K/V is in). With one
 * hardware queue a kernel starts no earlier than the one launched before
 * it: this order is what lets a send start as the block before it does. */
void
tps_cp_ring_forward(TpsBuilder *b, const TpsCpAttn *a)
{
    const guint cp = a->ring;
    const gboolean causal = b->scenario->causal;
    const TpsStreamId *streams[2] = {b->main, b->cp_attn};
    g_autofree char *send = op_name(a, "cp_kv");
    g_autofree char *merge = op_name(a, "cp_out_correction");
    TpsOpIds ready, recv, merged;
    /* The first block sent is the one the K/V copies just wrote; both
     * compute streams start after them. */
    tps_builder_record(b, b->main, &ready);
    tps_builder_wait(b, b->cp, &ready);
    tps_builder_wait(b, b->cp_attn, &ready);
    TpsCpBlock prev = {0};
    for (guint s = 0; s <= cp; s++) {
        TpsCpBlock blk = {0};
        if (s < cp) {
            TpsOpIds next;
            if (s + 1 < cp)
                tps_builder_cp_sendrecv(b, tps_cp_kv_bytes(a), send, &next);
            if (s > 0)
                tps_builder_wait(b, streams[s % 2], &recv);
            tps_cp_block(cp, SLICE_CP_RANK, s, causal, &blk);
            block_kernel(b, streams[s % 2], a, &blk, FALSE);
            recv = next;
        }
        if (s > 0) {
            const TpsStreamId *on = streams[(s - 1) % 2];
            if (s > 1)
                tps_builder_wait(b, on, &merged);
            lse_correction(b, on, a, prev.q_chunks * a->chunk, s - 1, &merged);
        }
        prev = blk;
    }
    tps_builder_wait(b, b->main, &merged);
    /* The output merge after the last step, one kernel per step
     * (flash_attn_fwd_out_correction_init: read the step's output, write
     * the result; then flash_attn_fwd_out_correction: read both, write;
     * assumption: the output in the dtype of Q, as TE allocates it). */
    for (guint s = 0; s < cp; s++) {
        TpsCpBlock blk;
        tps_cp_block(cp, SLICE_CP_RANK, s, causal, &blk);
        tps_builder_memory(b, b->main, merge,
                           (s == 0 ? 2.0 : 3.0) * q_bytes(a, blk.q_chunks * a->chunk), NULL);
    }
}

/* What backward step s sends (TE's p2p_comm_buffers): the K/V block in
 * hand at the first step, K/V and the dK/dV partial sums in between, only
 * the dK/dV sums at the last. */
static double
bwd_send_bytes(const TpsCpAttn *a, guint cp, guint s)
{
    const double kv = tps_cp_kv_bytes(a);
    return s == 0 || s == cp - 1 ? kv : 2.0 * kv;
}

/* One backward step's kernels on the compute stream: FlashAttention-2's
 * dO.O row sums, the main kernel and the conversion of its fp32 dQ, the
 * sum of dQ (a copy at the first step); then, once the step's transfer
 * has brought the dK/dV partial sums of the block in hand, their sum with
 * this step's. */
static void
bwd_step(TpsBuilder *b, const TpsCpAttn *a, const TpsCpBlock *blk, guint s, const TpsOpIds *comm)
{
    g_autofree char *dot = op_name(a, "attn_bwd_dot_do_o");
    g_autofree char *conv = op_name(a, "attn_bwd_convert_dq");
    g_autofree char *dq = op_name(a, "cp_dq_sum");
    g_autofree char *dkv = op_name(a, "cp_dkv_sum");
    const double qb = q_bytes(a, blk->q_chunks * a->chunk);
    const double kvb = kv_bytes(a, blk->kv_chunks * a->chunk);
    const double sum = s == 0 ? 2.0 : 3.0;
    tps_builder_memory(b, b->main, dot, 2.0 * qb, NULL);
    block_kernel(b, b->main, a, blk, TRUE);
    tps_builder_memory(b, b->main, conv, 3.0 * qb, NULL);
    tps_builder_memory(b, b->main, dq, sum * qb, NULL);
    tps_builder_wait(b, b->main, comm);
    tps_builder_memory(b, b->main, dkv, sum * kvb, NULL);
}

void
tps_cp_ring_backward(TpsBuilder *b, const TpsCpAttn *a)
{
    const guint cp = a->ring;
    const gboolean causal = b->scenario->causal;
    g_autofree char *send = op_name(a, "cp_kv_dkv");
    for (guint s = 0; s < cp; s++) {
        /* Issued at the top of the step, after the compute stream has
         * waited for the previous transfer (its K/V block is this step's):
         * NCCL orders it after everything on the compute stream so far,
         * the dK/dV sums it carries included. */
        TpsOpIds ready, comm;
        tps_builder_record(b, b->main, &ready);
        tps_builder_wait(b, b->cp, &ready);
        tps_builder_cp_sendrecv(b, bwd_send_bytes(a, cp, s), send, &comm);
        TpsCpBlock blk;
        tps_cp_block(cp, SLICE_CP_RANK, s, causal, &blk);
        bwd_step(b, a, &blk, s, &comm);
    }
}
