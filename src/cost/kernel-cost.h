/* Cost models: the durations and resource demands of GPU work, from a
 * hardware model. Every function fills a TpsKernelCost, which maps one to
 * one onto the work fields of an engine task (engine/engine.h):
 *
 *   solo time on s SMs = fixed_ns + max(ceil(ctas / s) * wave_ns, floor_ns,
 *                                       hbm_bytes / hbm_capacity, ...)
 *
 * so contention (fewer SMs, shared HBM or links) changes the time through
 * the engine, never through a fixed slowdown factor here.
 */
#pragma once

#include <glib.h>

#include "core/time.h"
#include "cost/hardware.h"

typedef struct {
    guint ctas;           /* CTAs of the kernel (0: no SMs) */
    guint max_sms;        /* SMs it may use at most (0: all) */
    TpsTime wave_ns;      /* one wave of CTAs */
    TpsTime fixed_ns;     /* latency before the bandwidth phase */
    TpsTime floor_ns;     /* lower bound of the bandwidth phase */
    double hbm_bytes;     /* bytes through HBM */
    double flops;         /* for reports */
    guint tile_m, tile_n; /* GEMM: chosen tile */
    guint split_k;        /* GEMM: slices of k (1: not split) */
} TpsKernelCost;

/* Achievable HBM bandwidth in bytes/ns. */
double tps_cost_hbm_gbps(const TpsHardware *hw);

/* Launch overhead of one kernel alone (gpu.launch_us): the launch term of
 * analytic references. The simulated host charges the host section per op
 * (sched/builder.c). */
TpsTime tps_cost_launch_ns(const TpsHardware *hw);

/* Solo duration of a cost on `sms` SMs and the full HBM (what the engine
 * gives it alone on an idle GPU). */
TpsTime tps_kernel_cost_solo_ns(const TpsHardware *hw, const TpsKernelCost *cost, guint sms);

/* GEMM C[m,n] = A[m,k] B[k,n] in `dtype`, on at most `max_sms` SMs (0: all).
 * Picks the tile and split-k configuration with the shortest time (as cuBLAS
 * heuristics do), with wave quantization on the SMs it may use; the
 * kernel's latency is its fixed phase (cost/gemm.c, docs/cost-model.md). */
void tps_cost_gemm(const TpsHardware *hw, TpsDtype dtype, guint64 m, guint64 n, guint64 k,
                   guint max_sms, TpsKernelCost *out);

/* What a GEMM's operands hold, for the power its tensor cores draw: data
 * (training's activations and weights: every simulated GEMM), or an A
 * operand of zeros (a measurement's artifact that a dataset declares, e.g.
 * vidur's down projections, calib/validate.c). */
typedef enum {
    TPS_GEMM_OPERANDS_DATA,
    TPS_GEMM_OPERANDS_ZERO_A,
} TpsGemmOperands;

/* tps_cost_gemm() of a GEMM whose operands are `operands`: with zeros in A
 * each active SM draws gemm.power_zero_operand of its power, so the
 * power-limited clock allows more of them (cost/gemm.c, power_clock). */
void tps_cost_gemm_operands(const TpsHardware *hw, TpsDtype dtype, TpsGemmOperands operands,
                            guint64 m, guint64 n, guint64 k, guint max_sms, TpsKernelCost *out);

/* How a measured GEMM ran: what its operands held, and how long the GPU
 * had run load since it last idled when the kernel ran (`loaded_us`; 0:
 * sustained load, as in training's back-to-back kernels). A measurement's
 * artifacts that a dataset declares (calib/validate.c). */
typedef struct {
    TpsGemmOperands operands;
    double loaded_us;
    /* The kernel the library chose for this shape, where a measurement
     * recorded it (tpsim-gpubench's `algos`, calib/measurements.h): its
     * tile and k split. 0 in all three: the model's own choice. A tile
     * the model has no efficiency for is the caller's to refuse. */
    guint tile_m, tile_n, split_k;
} TpsGemmRun;

/* tps_cost_gemm() of a GEMM run as `run` says: after loaded_us of load the
 * clock is still between the tiles' clock and the sustained one
 * (gemm.power_sustained, gemm.power_tau_ms; cost/gemm.c, power_settled);
 * with run->tile_m set, on that tile and run->split_k slices of k only. */
void tps_cost_gemm_run(const TpsHardware *hw, TpsDtype dtype, const TpsGemmRun *run, guint64 m,
                       guint64 n, guint64 k, guint max_sms, TpsKernelCost *out);
/* Whether gemm.tiles holds a tile_m x tile_n tile (what a recorded
 * kernel's tile needs before tps_cost_gemm_run can take it). */
gboolean tps_cost_gemm_has_tile(const TpsHardware *hw, guint tile_m, guint tile_n);

/* A memory-bound kernel moving `bytes` through HBM (reads + writes). */
void tps_cost_memory(const TpsHardware *hw, double bytes, TpsKernelCost *out);

/* Fused (flash) attention core for `batch` sequences of `seq` tokens and
 * `heads` heads of `head_dim` on this rank; forward or backward. Causal
 * masking is not assumed (GPT-style Megatron runs compute the full square in
 * the FLOP count of arXiv:2104.04473). */
void tps_cost_flash_attention(const TpsHardware *hw, TpsDtype dtype, guint64 batch, guint64 heads,
                              guint64 seq, guint64 head_dim, gboolean backward, TpsKernelCost *out);
/* The same with grouped-query attention: `kv_heads` K/V heads (dividing
 * `heads`) shared by the query heads of their group. The FLOPs are those
 * of `heads` heads; only K, V (and their gradients) move fewer bytes. */
void tps_cost_flash_attention_gqa(const TpsHardware *hw, TpsDtype dtype, guint64 batch,
                                  guint64 heads, guint64 kv_heads, guint64 seq, guint64 head_dim,
                                  gboolean backward, TpsKernelCost *out);

/* One block of flash attention: `sq` queries against `sk` keys (context
 * parallelism's per-step blocks, and a causal sequence). Non-causal: every
 * 128 x 128 tile computed. `causal` (sq <= sk, the queries the last sq of
 * the sk positions, the mask aligned bottom-right): the kernel skips the
 * tiles above the diagonal and computes the diagonal ones whole, n (m - n)
 * + n (n + 1) / 2 tiles of n = sq / 128, m = sk / 128 (at sq = sk, n (n +
 * 1) / 2); the CTAs (one per query block forward, per key block backward)
 * then run unequal lengths, costed as their mean. */
void tps_cost_flash_attention_block(const TpsHardware *hw, TpsDtype dtype, guint64 batch,
                                    guint64 heads, guint64 kv_heads, guint64 sq, guint64 sk,
                                    guint64 head_dim, gboolean causal, gboolean backward,
                                    TpsKernelCost *out);

/* HBM bytes of `count` GEMMs [m,k]x[k,n] cut into tile_m x tile_n tiles on
 * at most `max_sms` SMs (0: all): the compulsory operands and output, plus
 * the operand panels each wave re-reads that L2 (gpu.l2_shared_mib) does
 * not keep from the waves before it (cost/gemm-traffic.c,
 * docs/cost-model.md). tps_cost_gemm() fills hbm_bytes with it. */
double tps_cost_gemm_traffic(const TpsHardware *hw, TpsDtype dtype, guint64 count, guint64 m,
                             guint64 n, guint64 k, guint tile_m, guint tile_n, guint max_sms);

/* Batched GEMM: `count` independent [m,k]x[k,n] products in one kernel
 * (unfused attention's QK^T and attention x V). */
void tps_cost_batched_gemm(const TpsHardware *hw, TpsDtype dtype, guint64 count, guint64 m,
                           guint64 n, guint64 k, guint max_sms, TpsKernelCost *out);
