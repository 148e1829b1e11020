/* Fused (flash) attention: FLOPs on tiles of queries, in waves.
 *
 * Forward: S = Q K^T and O = P V, 2 x 2 s^2 d FLOPs per head and sequence
 * (4 b h s^2 d). Backward: dV, dP, dQ, dK (4 matmuls) plus the recompute of
 * S (1): 2.5 x the forward, as counted by FlashAttention-2
 * (arXiv:2307.08691, section 4). Causal masking is not assumed.
 *
 * Work is split as FlashAttention-2 does: one CTA per block of 128 queries
 * (backward: per block of 128 keys) of one head of one sequence, so there
 * are b h ceil(s / 128) CTAs, one per SM at a time; a CTA runs at the
 * per-SM tensor peak times flash_{fwd,bwd}_efficiency.
 *
 * HBM bytes: forward reads Q, K, V and writes O (4 b s h d elements);
 * backward reads Q, K, V, O, dO and writes dQ, dK, dV (8 b s h d). K and V
 * are re-read by every query block, from L2. With grouped-query attention
 * K and V (and dK, dV) have kv_heads heads: forward (2 h + 2 kv) b s d
 * elements, backward (4 h + 4 kv) b s d.
 */
#include "cost/kernel-cost.h"

#include <string.h>

#define FLASH_BLOCK 128

void
tps_cost_flash_attention(const TpsHardware *hw, TpsDtype dtype, guint64 batch, guint64 heads,
                         guint64 seq, guint64 head_dim, gboolean backward, TpsKernelCost *out)
{
    tps_cost_flash_attention_gqa(hw, dtype, batch, heads, heads, seq, head_dim, backward, out);
}

void
tps_cost_flash_attention_gqa(const TpsHardware *hw, TpsDtype dtype, guint64 batch, guint64 heads,
                             guint64 kv_heads, guint64 seq, guint64 head_dim, gboolean backward,
                             TpsKernelCost *out)
{
    g_return_if_fail(hw != NULL && out != NULL && dtype < TPS_DTYPE_COUNT);

    memset(out, 0, sizeof(*out));
    if (batch == 0 || heads == 0 || seq == 0 || head_dim == 0)
        return;

    const double s = (double)seq, d = (double)head_dim;
    const double fwd_factor = 4.0, bwd_factor = 2.5 * 4.0;
    const double factor = backward ? bwd_factor : fwd_factor;
    const double efficiency = backward ? hw->flash_bwd_efficiency : hw->flash_fwd_efficiency;
    const guint64 blocks = (seq + FLASH_BLOCK - 1) / FLASH_BLOCK;
    const double peak_sm = hw->peak_tflops[dtype] * 1e3 / (double)hw->sms;
    /* One CTA: its block of rows (the last one may be partial, but the
     * kernel still runs the full block). */
    const double cta_flops = factor * (double)FLASH_BLOCK * s * d;

    out->ctas = (guint)MIN(batch * heads * blocks, (guint64)G_MAXUINT);
    out->wave_ns = tps_time_from_ns(cta_flops / (peak_sm * efficiency));
    out->flops = factor * (double)batch * (double)heads * s * s * d;
    const double per_head = (backward ? 4.0 : 2.0) * (double)tps_dtype_bytes(dtype) *
                            (double)batch * s * d;
    out->hbm_bytes = per_head * ((double)heads + (double)kv_heads);
}

void
tps_cost_flash_attention_block(const TpsHardware *hw, TpsDtype dtype, guint64 batch, guint64 heads,
                               guint64 kv_heads, guint64 sq, guint64 sk, guint64 head_dim,
                               gboolean causal, gboolean backward, TpsKernelCost *out)
{
    g_return_if_fail(hw != NULL && out != NULL && dtype < TPS_DTYPE_COUNT);
    g_return_if_fail(!causal || sq <= sk);

    memset(out, 0, sizeof(*out));
    if (batch == 0 || heads == 0 || sq == 0 || sk == 0 || head_dim == 0)
        return;

    const double d = (double)head_dim, bh = (double)batch * (double)heads;
    const double factor = backward ? 2.5 * 4.0 : 4.0;
    const double efficiency = backward ? hw->flash_bwd_efficiency : hw->flash_fwd_efficiency;
    const double peak_sm = hw->peak_tflops[dtype] * 1e3 / (double)hw->sms;
    /* Forward a CTA per block of queries runs over the keys; backward one
     * per block of keys over the queries. */
    const guint64 rows = backward ? sk : sq, across = backward ? sq : sk;
    const guint64 blocks = (rows + FLASH_BLOCK - 1) / FLASH_BLOCK;
    double cta_flops = factor * (double)FLASH_BLOCK * (double)across * d;
    out->flops = factor * bh * (double)sq * (double)sk * d;
    if (causal) {
        /* The queries are the last sq of the sk positions: query tile t of
         * n sees the m - n tiles before them whole and t + 1 of its own;
         * n (m - n) + n (n + 1) / 2 tiles in all, shared evenly over the
         * CTAs (forward n, backward m; at sq = sk, (n + 1) / 2 each). */
        const double n = (double)((sq + FLASH_BLOCK - 1) / FLASH_BLOCK);
        const double m = (double)((sk + FLASH_BLOCK - 1) / FLASH_BLOCK);
        const double tiles = n * (m - n) + n * (n + 1.0) / 2.0;
        const double tile_flops = factor * (double)FLASH_BLOCK * (double)FLASH_BLOCK * d;
        cta_flops = tile_flops * tiles / (double)blocks;
        out->flops = bh * tile_flops * tiles;
    }
    out->ctas = (guint)MIN(batch * heads * blocks, (guint64)G_MAXUINT);
    out->wave_ns = tps_time_from_ns(cta_flops / (peak_sm * efficiency));
    /* Forward: Q and O of sq rows, K and V of sk; backward: Q, O, dO, dQ
     * and K, V, dK, dV. */
    const double per = (backward ? 2.0 : 1.0) * (double)tps_dtype_bytes(dtype) * (double)batch * d;
    out->hbm_bytes = per * (2.0 * (double)sq * (double)heads + 2.0 * (double)sk * (double)kv_heads);
}
