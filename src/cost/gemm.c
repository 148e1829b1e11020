/* GEMM cost: output tiles on SMs, in waves.
 *
 * C[m,n] is cut into tm x tn output tiles, one CTA each, one CTA per SM (the
 * large-tile CUTLASS/cuBLAS kernels fill an SM's shared memory). A CTA
 * computes 2 tm tn k FLOPs at the per-SM tensor peak times the tile's
 * main-loop efficiency, and pays a prologue/epilogue worth k_overhead more
 * k-iterations (filling the shared-memory pipeline, writing C):
 *
 *   wave_ns = 2 tm tn (k + k_overhead) / (peak_per_sm x efficiency)
 *   time    = ceil(tiles / sms) x wave_ns
 *
 * so the time steps up as the tile count crosses a multiple of the SMs the
 * kernel gets (wave quantization). The tile configuration with the shortest
 * time on the SMs allowed is chosen, as cuBLAS heuristics do; ties keep the
 * first listed. HBM traffic (cost/gemm-traffic.c) adds to the compulsory
 * bytes the operand panels each wave re-reads that L2 does not keep.
 */
#include "cost/kernel-cost.h"

#include <math.h>
#include <string.h>

static double
peak_flops_per_sm_ns(const TpsHardware *hw, TpsDtype dtype)
{
    /* TFLOP/s = 1e3 FLOP/ns */
    return hw->peak_tflops[dtype] * 1e3 / (double)hw->sms;
}

static guint
usable_sms(const TpsHardware *hw, guint max_sms)
{
    return (max_sms == 0 || max_sms > hw->sms) ? hw->sms : max_sms;
}

/* Fills the tile choice of `count` independent m x n x k products. */
static void
gemm_tiles(const TpsHardware *hw, TpsDtype dtype, guint64 count, guint64 m, guint64 n,
           guint64 k, guint max_sms, TpsKernelCost *out)
{
    memset(out, 0, sizeof(*out));
    out->max_sms = max_sms;
    if (count == 0 || m == 0 || n == 0 || k == 0)
        return;

    const guint sms = usable_sms(hw, max_sms);
    const double peak = peak_flops_per_sm_ns(hw, dtype);
    const double bytes = (double)tps_dtype_bytes(dtype) * (double)count *
                         ((double)m * (double)k + (double)k * (double)n + (double)m * (double)n);
    const double hbm = tps_cost_hbm_gbps(hw);
    double best = INFINITY;

    for (guint i = 0; i < hw->n_tiles; i++) {
        const TpsGemmTile *t = &hw->tiles[i];
        guint64 tiles = count * ((m + t->m - 1) / t->m) * ((n + t->n - 1) / t->n);
        double wave = 2.0 * t->m * t->n * ((double)k + hw->k_overhead) / (peak * t->efficiency);
        TpsTime wave_ns = tps_time_from_ns(wave);
        double waves = (double)((tiles + sms - 1) / sms);
        double time = MAX(waves * (double)wave_ns, bytes / hbm);
        if (time < best && tiles <= G_MAXUINT) {
            best = time;
            out->ctas = (guint)tiles;
            out->wave_ns = wave_ns;
            out->tile_m = t->m;
            out->tile_n = t->n;
        }
    }
    /* The choice above weighs the compulsory bytes (cuBLAS heuristics do
     * not see L2 misses); the traffic the engine shares HBM by counts the
     * panels each wave re-reads. */
    out->hbm_bytes = tps_cost_gemm_traffic(hw, dtype, count, m, n, k, out->tile_m, out->tile_n,
                                           max_sms);
    out->flops = 2.0 * (double)count * (double)m * (double)n * (double)k;
}

void
tps_cost_gemm(const TpsHardware *hw, TpsDtype dtype, guint64 m, guint64 n, guint64 k,
              guint max_sms, TpsKernelCost *out)
{
    g_return_if_fail(hw != NULL && out != NULL && dtype < TPS_DTYPE_COUNT);
    gemm_tiles(hw, dtype, 1, m, n, k, max_sms, out);
}

void
tps_cost_batched_gemm(const TpsHardware *hw, TpsDtype dtype, guint64 count, guint64 m,
                      guint64 n, guint64 k, guint max_sms, TpsKernelCost *out)
{
    g_return_if_fail(hw != NULL && out != NULL && dtype < TPS_DTYPE_COUNT);
    gemm_tiles(hw, dtype, count, m, n, k, max_sms, out);
}
