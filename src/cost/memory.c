/* Memory-bound kernels, launch cost, and the solo-time formula shared with
 * the engine.
 *
 * A memory-bound kernel (LayerNorm, GeLU, dropout, bias, residual add) is
 * split into CTAs of equal byte counts; one SM streams at most
 * hw->sm_mem_gbps (what its load/store path can pull through L2), so on s
 * SMs the kernel can never beat s * sm_mem_gbps, and on a whole GPU it is
 * bound by HBM instead. The HBM floor is not a separate term: the engine
 * divides hbm_bytes by the HBM share it gets.
 */
#include "cost/kernel-cost.h"

#include <math.h>
#include <string.h>

/* Bytes one CTA of an elementwise kernel moves: 64 KiB is 256 threads x
 * 16-byte vector accesses x 16 iterations, the order of what PyTorch and
 * Megatron fused kernels give a block. Smaller CTAs would only add waves of
 * no consequence; the cap on the CTA count keeps wave quantization below
 * 1/64 for big tensors. */
#define MEMORY_CTA_BYTES 65536.0
#define MEMORY_MAX_WAVES 64

double
tps_cost_hbm_gbps(const TpsHardware *hw)
{
    g_return_val_if_fail(hw != NULL, 0.0);
    return hw->hbm_gbps * hw->hbm_efficiency;
}

TpsTime
tps_cost_launch_ns(const TpsHardware *hw)
{
    g_return_val_if_fail(hw != NULL, 0);
    return tps_time_from_us(hw->launch_us);
}

TpsTime
tps_kernel_cost_solo_ns(const TpsHardware *hw, const TpsKernelCost *cost, guint sms)
{
    g_return_val_if_fail(hw != NULL && cost != NULL, 0);

    guint s = sms == 0 ? hw->sms : sms;
    if (cost->max_sms != 0 && cost->max_sms < s)
        s = cost->max_sms;
    TpsTime fluid = cost->floor_ns;
    if (cost->ctas > 0 && s > 0) {
        TpsTime waves = (TpsTime)((cost->ctas + s - 1) / s);
        fluid = MAX(fluid, waves * cost->wave_ns);
    }
    double hbm = tps_cost_hbm_gbps(hw);
    if (cost->hbm_bytes > 0.0 && hbm > 0.0)
        fluid = MAX(fluid, tps_time_from_ns(cost->hbm_bytes / hbm));
    return cost->fixed_ns + fluid;
}

void
tps_cost_memory(const TpsHardware *hw, double bytes, TpsKernelCost *out)
{
    g_return_if_fail(hw != NULL && out != NULL);

    memset(out, 0, sizeof(*out));
    if (!(bytes > 0.0))
        return;
    double ctas = ceil(bytes / MEMORY_CTA_BYTES);
    double max_ctas = (double)hw->sms * MEMORY_MAX_WAVES;
    if (ctas > max_ctas)
        ctas = max_ctas;
    if (ctas < 1.0)
        ctas = 1.0;
    out->ctas = (guint)ctas;
    out->wave_ns = tps_time_from_ns(bytes / ctas / hw->sm_mem_gbps);
    out->hbm_bytes = bytes;
}
