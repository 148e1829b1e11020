/* The graph builders of each overlap method, for the method table
 * (method.c) to point at. Callers outside the table go through
 * tps_overlap_ag_gemm / tps_overlap_gemm_rs, which pick the builder of the
 * configuration's method and fall back to blocking NCCL on one rank.
 * Preconditions: more than one rank.
 */
#pragma once

#include "sched/overlap.h"

/* Ring exchange: copy-engine (or SM) sends of each shard to the next rank,
 * GEMM chunks on up to three streams, optionally aggregated in pairs. */
void tps_overlap_ring_exchange_ag(TpsBuilder *b, const TpsGemmShape *gemm,
                                  const TpsOverlapConfig *cfg);

/* Ring exchange: one partial GEMM per owner, each partial sent to its
 * owner, then one reduction. */
void tps_overlap_ring_exchange_rs(TpsBuilder *b, const TpsGemmShape *gemm,
                                  const TpsOverlapConfig *cfg);

/* Pipeline chunks: num_splits GEMM chunks, each reduce-scattered by an
 * SM-based kernel while the next one computes. */
void tps_overlap_pipeline_rs(TpsBuilder *b, const TpsGemmShape *gemm, const TpsOverlapConfig *cfg);
