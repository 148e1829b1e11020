/* Context parallelism with K/V all-gathered (cp_comm allgather; the
 * declarations in cp-ring.h, beside the ring's). */
#include "sched/cp-ring.h"

#include "cost/kernel-cost.h"

/* The simulated slice is CP rank 0's TP group (cp-ring.c). */
#define SLICE_CP_RANK 0u

static char *
op_name(const TpsCpAttn *a, const char *what)
{
    return g_strdup_printf("%s%s", a->prefix, what);
}

/* NCCL's ring all-gather (or reduce-scatter) of one K/V block per CP rank:
 * one kernel on the CP stream of cp - 1 steps, each a transfer of one
 * block to the ring neighbour, after everything on the compute stream so
 * far; the compute stream waits for it. */
static void
ring_collective(TpsBuilder *b, const TpsCpAttn *a, const char *what)
{
    const guint cp = a->ring;
    g_autofree char *name = op_name(a, what);
    TpsOpIds ready, step;
    tps_builder_record(b, b->main, &ready);
    tps_builder_wait(b, b->cp, &ready);
    tps_builder_cp_ring(b, tps_cp_kv_bytes(a), cp - 1, name, &step);
    tps_builder_wait(b, b->main, &step);
}

/* The gathered K/V (or dK/dV) reordered between rank order and sequence
 * order: read and write all cp blocks. */
static void
reorder(TpsBuilder *b, const TpsCpAttn *a, const char *what)
{
    g_autofree char *name = op_name(a, what);
    tps_builder_memory(b, b->main, name, 2.0 * a->ring * tps_cp_kv_bytes(a), NULL);
}

/* Query chunk `chunk` (of 2 cp) against the K/V it sees: up to its own end
 * under the causal mask, the whole sequence without. */
static void
chunk_block(TpsBuilder *b, const TpsStreamId *streams, const TpsCpAttn *a, guint chunk,
            gboolean backward)
{
    const TpsScenario *sc = b->scenario;
    const guint64 keys = (sc->causal ? chunk + 1 : 2 * a->ring) * a->chunk;
    TpsKernelCost cost;
    g_autofree char *name = op_name(a, backward ? "attn_bwd" : "attn_fwd");
    tps_cost_flash_attention_block(b->hw, tps_dtype_compute(sc->dtype), a->batch, a->heads,
                                   a->kv_heads, a->chunk, keys, a->head_dim, sc->causal, backward,
                                   &cost);
    tps_builder_kernel(b, streams, TPS_KIND_ATTENTION, name, &cost, NULL);
}

/* Bytes of `rows` tokens of the queries' width. */
static double
q_bytes(const TpsCpAttn *a, guint64 rows)
{
    return (double)a->batch * (double)rows * (double)a->heads * (double)a->head_dim * a->elt;
}

/* The two local chunks on the compute stream and TE's second stream, both
 * after what the compute stream did so far; the compute stream waits for
 * both. Backward each adds its dK/dV into the gathered buffers. */
static void
two_chunks(TpsBuilder *b, const TpsCpAttn *a, gboolean backward)
{
    const TpsStreamId *streams[2] = {b->main, b->cp_attn};
    guint chunks[2];
    tps_cp_chunks(a->ring, SLICE_CP_RANK, chunks);
    TpsOpIds ready, done;
    tps_builder_record(b, b->main, &ready);
    tps_builder_wait(b, b->cp_attn, &ready);
    g_autofree char *dot = op_name(a, "attn_bwd_dot_do_o");
    g_autofree char *conv = op_name(a, "attn_bwd_convert_dq");
    g_autofree char *dkv = op_name(a, "cp_dkv_sum");
    for (guint j = 0; j < 2; j++) {
        if (backward)
            tps_builder_memory(b, streams[j], dot, 2.0 * q_bytes(a, a->chunk), NULL);
        chunk_block(b, streams[j], a, chunks[j], backward);
        if (!backward)
            continue;
        tps_builder_memory(b, streams[j], conv, 3.0 * q_bytes(a, a->chunk), NULL);
        /* Read the chunk's dK/dV and the buffer's, write the sum, over the
         * keys it saw. */
        const guint64 keys = (b->scenario->causal ? chunks[j] + 1 : 2 * a->ring);
        tps_builder_memory(b, streams[j], dkv, 3.0 * keys * tps_cp_kv_bytes(a) / 2.0, NULL);
    }
    tps_builder_record(b, b->cp_attn, &done);
    tps_builder_wait(b, b->main, &done);
}

void
tps_cp_allgather_forward(TpsBuilder *b, const TpsCpAttn *a)
{
    ring_collective(b, a, "cp_kv_ag");
    reorder(b, a, "cp_kv_reorder");
    two_chunks(b, a, FALSE);
}

void
tps_cp_allgather_backward(TpsBuilder *b, const TpsCpAttn *a)
{
    ring_collective(b, a, "cp_kv_ag");
    reorder(b, a, "cp_kv_reorder");
    two_chunks(b, a, TRUE);
    reorder(b, a, "cp_dkv_reorder");
    ring_collective(b, a, "cp_dkv_rs");
}
