/* Communication-overlap methods for one TP GEMM, built as the production
 * systems run them (real-schedules.md section 2.1): Transformer Engine's
 * userbuffers ring exchange (all-gather and reduce-scatter), pipeline-chunk
 * reduce-scatter and bulk overlap, and blocking NCCL.
 *
 * A GEMM is described on one rank: [m, k] x [k, n]. For an all-gather
 * layer, the input rows m are gathered from t shards of m/t rows; for a
 * reduce-scatter layer, the output [m, n] is a partial sum whose m/t-row
 * slices are reduced on their owners.
 */
#pragma once

#include <glib.h>

#include "sched/builder.h"

typedef struct {
    const char *name; /* task-name prefix, e.g. "l1.qkv_fprop" */
    guint64 m, n, k;
    /* All-gather layers fed by a LayerNorm (QKV, FC1 forward): Transformer
     * Engine's fused LayerNorm writes its output straight into the
     * userbuffer's local chunk, so nothing is copied in, and the local
     * shard is copied out after the ring for the backward pass (A100-era TE
     * 1.x: split_overlap_ag's B_copy; the backward gathers it again). */
    gboolean ln_input;
} TpsGemmShape;

/* All-gather of the input along m, then the GEMM, by the ag_gemm builder
 * of cfg's method in the method table (method.h): today ring exchange
 * (copy-engine sends, chunked GEMMs on up to three streams, optionally
 * aggregated); blocking NCCL for a method without one (none) or one rank. */
void tps_overlap_ag_gemm(TpsBuilder *b, const TpsGemmShape *gemm, const TpsOverlapConfig *cfg);

/* The GEMM, then the reduce-scatter of its output along m, by the gemm_rs
 * builder of cfg's method: pipeline chunks with SM-based reduce-scatter
 * kernels, or ring exchange (P2P partial sums sent to their owners, then
 * one reduction); blocking NCCL for a method without one or one rank. */
void tps_overlap_gemm_rs(TpsBuilder *b, const TpsGemmShape *gemm, const TpsOverlapConfig *cfg);

/* A userbuffers bulk all-gather or reduce-scatter over a buffer of
 * `bytes` per rank (the gathered or unreduced size), on the communication
 * stream, started after main's work so far. For an all-gather the local
 * shard is first copied into the buffer on main. `out` gets the kernels. */
void tps_overlap_bulk(TpsBuilder *b, TpsCollKind kind, double bytes, const TpsOverlapConfig *cfg,
                      const char *name, TpsOpIds *out);

/* SMs the GEMM beside an SM-based communication kernel may use (0: all). */
guint tps_overlap_gemm_sms(const TpsBuilder *b, const TpsOverlapConfig *cfg);
