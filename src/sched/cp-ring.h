/* Context parallelism's ring attention (parallel.cp_comm p2p), as
 * Transformer Engine's AttnFuncWithCPAndKVP2P runs it
 * (transformer_engine/pytorch/attention/dot_product_attention/
 * context_parallel.py).
 *
 * The sequence is cut into 2 x cp chunks; CP rank i holds chunks i and
 * 2cp - 1 - i (Megatron's causal load balancing: with a causal mask every
 * rank then has as much work). Attention runs in cp steps: at step s a
 * rank holds the K/V of CP rank (i - s) mod cp, computes flash attention
 * of its queries against that block, and meanwhile sends the block to the
 * next rank and receives the following one, on the CP stream. The partial
 * outputs are merged by their softmax statistics (the LSE correction after
 * each step, the output correction after the last). Backward goes around
 * the ring again with the K/V blocks and the dK/dV partial sums.
 *
 * Under a causal mask (model.causal) a step computes only the chunk pairs
 * the mask keeps (a query chunk after the key chunk whole, the same chunk
 * its lower triangle); without, every pair.
 */
#pragma once

#include <glib.h>

#include "sched/builder.h"

/* The chunks (of 2 cp) CP rank `rank` holds, in order. */
void tps_cp_chunks(guint cp, guint rank, guint chunks[2]);

/* The flash-attention kernel of one ring step: the queries and keys it
 * runs on, in chunks (0 when the mask leaves nothing), and whether it is
 * the causal diagonal block (sq == sk, lower triangle). */
typedef struct {
    guint q_chunks, kv_chunks;
    gboolean diagonal;
} TpsCpBlock;

/* The block of CP rank `rank` at ring step `step` (it holds the K/V of CP
 * rank (rank - step) mod cp), with or without a causal mask. */
void tps_cp_block(guint cp, guint rank, guint step, gboolean causal, TpsCpBlock *block);

/* The shape of attention on one rank of the layer's slice. */
typedef struct {
    guint64 batch, heads, kv_heads, head_dim; /* heads and K/V heads on this rank */
    guint64 chunk;                            /* tokens of one chunk: seq / (2 ring) */
    guint ring;                               /* CP ranks on the ring: cp, or cp / cp_a2a
                                                 under a2a+p2p */
    double elt;                               /* bytes per element */
    const char *prefix;                       /* op names: "l<index>." or "l<index>r." */
} TpsCpAttn;

/* The bytes of one K/V block a rank sends at a ring step: K and V of its
 * two chunks. */
double tps_cp_kv_bytes(const TpsCpAttn *a);

/* The ring, forward and backward, on the layer's slice (after the Q, K, V
 * copies; before the output copy, forward; backward, after the incoming
 * gradient's copy and before the dQ/dK/dV join). */
void tps_cp_ring_forward(TpsBuilder *b, const TpsCpAttn *a);
void tps_cp_ring_backward(TpsBuilder *b, const TpsCpAttn *a);

/* cp_comm allgather, as Transformer Engine's AttnFuncWithCPAndKVAllGather
 * runs it (sched/cp-allgather.c): K/V all-gathered over the CP group
 * before attention (NCCL's ring: cp - 1 steps, each one rank's K/V block to
 * the ring neighbour, on the CP stream; the compute stream waits for it),
 * reordered into sequence order, then one block per local query chunk on
 * two streams, each against the K/V up to its own end (under a causal
 * mask; all of it without). Backward gathers K/V again, runs the two
 * chunks' backward, sums dK/dV into the gathered layout and
 * reduce-scatters them over the CP group (cp - 1 steps). */
void tps_cp_allgather_forward(TpsBuilder *b, const TpsCpAttn *a);
void tps_cp_allgather_backward(TpsBuilder *b, const TpsCpAttn *a);

/* cp_comm a2a (DeepSpeed Ulysses), as Transformer Engine's
 * AttnFuncWithCPAndQKVOA2A runs it (sched/cp-a2a.c): Q, K and V each
 * all-to-all'd over the a2a group (sequence shards to head shards: after
 * it a rank holds a2a times the tokens and 1 / a2a of the heads), each
 * between a copy into the send layout on the compute stream and the
 * reorder of the received chunks on TE's cp_stream; attention over the
 * gathered tokens; the output all-to-all'd back the same way. Backward:
 * the incoming gradient forward, the attention backward, dQ, dK, dV back.
 * `a` is the shape before the all-to-all (the rank's own tokens and heads).
 * Under a2a+p2p (cp_a2a < cp) the attention between is ring attention
 * over the cp / cp_a2a ranks of the ring group on the head shards. */
void tps_cp_a2a_forward(TpsBuilder *b, const TpsCpAttn *a);
void tps_cp_a2a_backward(TpsBuilder *b, const TpsCpAttn *a);
