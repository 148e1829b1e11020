/* GEMM HBM traffic: operands re-read per wave, what L2 catches of them.
 *
 * A GEMM's CTAs run in waves of `s` tiles (one per SM). The tiles of a
 * wave advance through k together, so the k-slices of the A row-panels and
 * B column-panels they share are fetched once per wave and served to the
 * others from L2; the wave's footprint is the bytes of its distinct panels,
 *
 *   W = (rows x tm + cols x tn) x k x dtype_bytes,
 *
 * for the most compact block of rows x cols tiles that holds the wave's
 * tiles (the swizzled rasterisation of CUTLASS and cuBLAS kernels aims at
 * such blocks). Waves that follow re-read panels their predecessors read.
 * Between two uses of a panel slice about one wave's footprint of other
 * operand data passes through L2, so the re-read hits when W fits in the
 * L2 capacity that shared data can use (L, gpu.l2_shared_mib), and
 * otherwise a fraction L / W of it survives (what random replacement
 * keeps of a cyclic stream larger than the cache):
 *
 *   no reuse  R_w = sum over waves of W
 *   reads     R   = R_c + (R_w - R_c) x (1 - min(1, L / W_full)),
 *                   R_c = (m k + k n) x dtype_bytes (compulsory)
 *   traffic   R + m n x dtype_bytes (C written once)
 *
 * One wave reads every panel once: its traffic is the compulsory one.
 * Reuse further than the next wave is treated like reuse by the next one,
 * so when the operands are many times L2 this is a lower bound.
 */
#include "cost/kernel-cost.h"

#include <math.h>

#define MIB 1048576.0

/* The elements along m and n of the panels a block of `tiles` tiles
 * reads, for the most compact block (rows x ceil(tiles / rows) tiles) the
 * grid of gm x gn tiles allows. */
static double
wave_panel_elements(guint64 tiles, guint64 gm, guint64 gn, guint tile_m, guint tile_n, guint64 m,
                    guint64 n)
{
    double best = INFINITY;
    guint64 max_rows = MIN(gm, tiles);
    for (guint64 rows = 1; rows <= max_rows; rows++) {
        guint64 cols = (tiles + rows - 1) / rows;
        if (cols > gn)
            continue;
        double span_m = MIN((double)rows * tile_m, (double)m);
        double span_n = MIN((double)cols * tile_n, (double)n);
        best = MIN(best, span_m + span_n);
    }
    return isinf(best) ? (double)m + (double)n : best;
}

double
tps_cost_gemm_traffic(const TpsHardware *hw, TpsDtype dtype, guint64 count, guint64 m, guint64 n,
                      guint64 k, guint tile_m, guint tile_n, guint max_sms)
{
    g_return_val_if_fail(hw != NULL && dtype < TPS_DTYPE_COUNT, 0.0);
    if (count == 0 || m == 0 || n == 0 || k == 0 || tile_m == 0 || tile_n == 0)
        return 0.0;

    const double elt = tps_dtype_gemm_bytes(dtype), out_elt = tps_dtype_bytes(dtype);
    const guint s = (max_sms == 0 || max_sms > hw->sms) ? hw->sms : max_sms;
    const guint64 gm = (m + tile_m - 1) / tile_m, gn = (n + tile_n - 1) / tile_n;
    const guint64 tiles = gm * gn;
    const double compulsory = ((double)m + (double)n) * (double)k * elt;
    double reads = compulsory;

    /* Each product of a batch reads its own operands: its waves are counted
     * as if it ran alone on the SMs. */
    if (s > 0 && tiles > s) {
        guint64 waves = (tiles + s - 1) / s;
        guint64 last = tiles - (waves - 1) * s;
        double full = wave_panel_elements(s, gm, gn, tile_m, tile_n, m, n) * (double)k * elt;
        double tail = wave_panel_elements(last, gm, gn, tile_m, tile_n, m, n) * (double)k * elt;
        double no_reuse = (double)(waves - 1) * full + tail;
        double l2 = hw->l2_shared_mib * MIB;
        double hit = full > 0.0 ? MIN(1.0, l2 / full) : 1.0;
        reads = compulsory + MAX(no_reuse - compulsory, 0.0) * (1.0 - hit);
    }
    return (double)count * (reads + (double)m * (double)n * out_elt);
}
