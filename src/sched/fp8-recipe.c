/* FP8 recipes as Transformer Engine quantizes operands (TE main as of
 * 2026-08, transformer_engine/common/recipe/__init__.py and the
 * quantizers of transformer_engine/pytorch/tensor/):
 *   - DelayedScaling: the scale comes from the amax history, so the cast
 *     (fused with its transpose and the amax update) is the only kernel;
 *   - Float8CurrentScaling (tensorwise): an amax kernel reads the tensor,
 *     a small kernel turns it into scale and scale-inverse, then the cast
 *     and transpose;
 *   - Float8BlockScaling: fp32 scales per 1x128 block (activations and
 *     gradients) or 128x128 block (weights), computed in the quantize
 *     kernel, which writes the rowwise copy and the columnwise one from
 *     the high-precision input (the recipe's docstring);
 *   - MXFP8BlockScaling: one E8M0 scale per 32 elements
 *     (MXFP8_BLOCK_SCALING_SIZE = 32, pytorch/constants.py), rowwise and
 *     columnwise copies written by one kernel. */
#include "sched/fp8-recipe.h"

enum {
    BLOCK_1D = 128,       /* Float8BlockQuantizer.block_len */
    BLOCK_2D = 128 * 128, /* its 2D (weight) blocks */
    MX_BLOCK = 32,        /* MXFP8_BLOCK_SCALING_SIZE */
};

double
tps_fp8_scale_bytes(TpsFp8Recipe recipe, double elements, gboolean weight)
{
    switch (recipe) {
    case TPS_FP8_BLOCKWISE:
        return 4.0 * elements / (weight ? BLOCK_2D : BLOCK_1D);
    case TPS_FP8_MXFP8:
        return elements / MX_BLOCK;
    case TPS_FP8_DELAYED:
    case TPS_FP8_TENSORWISE:
    default:
        return 4.0;
    }
}

gboolean
tps_fp8_amax_before_cast(TpsFp8Recipe recipe)
{
    return recipe == TPS_FP8_TENSORWISE;
}

void
tps_fp8_quantize(TpsFp8Recipe recipe, double elements, double in, gboolean columnwise,
                 gboolean weight, TpsFp8Quant *out)
{
    const double copies = columnwise ? 2.0 : 1.0;
    out->scale_inv = copies * tps_fp8_scale_bytes(recipe, elements, weight);
    out->cast = in * elements + copies * elements + out->scale_inv;
    out->amax = 0.0;
    out->scale = 0.0;
    if (tps_fp8_amax_before_cast(recipe)) {
        /* Read the tensor, write one fp32 amax; the scale kernel reads it
         * and writes scale and scale-inverse (fp32 each). */
        out->amax = in * elements + 4.0;
        out->scale = 12.0;
    }
}

double
tps_fp8_gemm_tflops(TpsFp8Recipe recipe, const TpsHardware *hw)
{
    return recipe == TPS_FP8_MXFP8 ? hw->peak_tflops_mxfp8 : hw->peak_tflops[TPS_DTYPE_FP8];
}
