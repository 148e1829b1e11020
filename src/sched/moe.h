/* The routed part of a mixture-of-experts layer (model.moe) as
 * Megatron-Core runs it (megatron/core/transformer/moe/: router.py,
 * token_dispatcher.py, experts.py): the router, the permutation of the
 * tokens by expert, their dispatch to the experts' ranks, the experts'
 * FFNs, and the way back. The layer (sched/layer.c) puts it in place of
 * the MLP and adds the shared experts. docs/step-model.md, "Mixture of
 * experts".
 */
#pragma once

#include <glib.h>

#include "sched/builder.h"

/* What one rank of the layer's slice computes and moves. */
typedef struct {
    guint experts, local_experts, top_k, ep, etp;
    double tokens;       /* L: the tokens this rank routes (its sequence shard) */
    double skew;         /* the busiest expert's tokens over the mean: load_imbalance,
                            at most capacity_factor when one is set */
    double rows_sent;    /* L x top_k: the token copies it dispatches */
    double rows;         /* the rows its local experts compute, busiest rank:
                            L x top_k x etp x skew */
    guint64 m;           /* rows of each local expert's GEMMs: ceil(rows / local_experts) */
    guint64 h;           /* model.hidden */
    guint64 ffn_local;   /* FC2's input columns: moe.ffn_hidden / etp */
    guint64 fc1_local;   /* FC1's output columns: ffn_local, twice with SwiGLU */
    double elt;          /* bytes per element */
    double a2a_bytes;    /* alltoall: what the busiest rank exchanges, per all-to-all:
                            rows_sent x h x elt x skew */
    double etp_bytes;    /* alltoall with etp > 1: the ETP all-gather's gathered buffer,
                            rows x h x elt */
    double gather_bytes; /* allgather: the ETP x EP all-gather's gathered buffer,
                            L x etp x ep x h x elt */
} TpsMoeShape;

void tps_moe_shape(const TpsScenario *scenario, TpsMoeShape *m);

/* Forward: the router (GEMM, softmax and top-k, the auxiliary loss) and,
 * under the alltoall dispatcher, the permutation. */
void tps_moe_route_forward(TpsBuilder *b, guint index);
/* The communication to the experts (forward dispatch, backward the
 * combine's gradient), on each rank's `streams[r]`; `out` gets the last
 * kernel (may be NULL). `what`: "dispatch" or "combine_bwd". */
void tps_moe_to_experts(TpsBuilder *b, guint index, const TpsStreamId *streams, const char *what,
                        TpsOpIds *out);
/* Its two parts, in order: the exchange over EP (the all-to-all, or the
 * allgather dispatcher's ETP x EP all-gather) and the ETP all-gather. */
void tps_moe_to_experts_exchange(TpsBuilder *b, guint index, const TpsStreamId *streams,
                                 const char *what, TpsOpIds *out);
void tps_moe_to_experts_etp(TpsBuilder *b, guint index, const TpsStreamId *streams,
                            const char *what, TpsOpIds *out);
/* From the experts (forward combine, backward the dispatch's gradient). */
void tps_moe_from_experts(TpsBuilder *b, guint index, const TpsStreamId *streams, const char *what,
                          TpsOpIds *out);
/* The local experts' FFNs on the main stream: the rows sorted by local
 * expert, FC1, the activation, FC2, the rows put back in arrival order. */
void tps_moe_experts_forward(TpsBuilder *b, guint index);
void tps_moe_experts_backward(TpsBuilder *b, guint index);
/* The tokens' outputs: the weighted sum of their experts' rows, on each
 * rank's `streams[r]` (the compute stream, or the all-to-alls' under
 * model.moe.overlap_ep_comm, where the combine node holds it). */
void tps_moe_unpermute_forward(TpsBuilder *b, guint index, const TpsStreamId *streams);
void tps_moe_unpermute_backward(TpsBuilder *b, guint index, const TpsStreamId *streams);
/* Backward of the permutation and of the router. */
void tps_moe_route_backward(TpsBuilder *b, guint index);
