/* The extra kernels and bytes of an FP8 GEMM operand per Transformer
 * Engine recipe (model.fp8_recipe; docs/step-model.md "FP8 recipes"). */
#pragma once

#include "sched/scenario.h"

/* The kernels that quantize one operand of `elements` elements read in
 * `in` bytes each: bytes each kernel moves through HBM (0: no such
 * kernel). */
typedef struct {
    double amax;      /* the amax kernel: a read of the tensor (current scaling) */
    double scale;     /* the scale kernel: amax to scale and scale-inverse */
    double cast;      /* the cast (and transpose, or columnwise copy): read, write FP8 + scales */
    double scale_inv; /* of `cast`: the scale-inverse bytes written */
} TpsFp8Quant;

/* The bytes of the scale-inverse tensor of one FP8 copy of `elements`
 * elements: one fp32 a tensor (delayed, tensorwise), one fp32 a 1x128
 * block (blockwise activations and gradients) or a 128x128 block
 * (blockwise weights), one E8M0 byte a 1x32 block (mxfp8). */
double tps_fp8_scale_bytes(TpsFp8Recipe recipe, double elements, gboolean weight);

/* Quantize `elements` read at `in` bytes into a rowwise copy, and a
 * columnwise one (a transpose on Hopper, MXFP8's columnwise-scaled copy)
 * when `columnwise`. */
void tps_fp8_quantize(TpsFp8Recipe recipe, double elements, double in, gboolean columnwise,
                      gboolean weight, TpsFp8Quant *out);

/* Whether the recipe computes a tensor's amax right before its cast, so a
 * sequence-parallel operand all-reduces it over the TP group (current
 * scaling only; delayed scaling reduces its amax history instead). */
gboolean tps_fp8_amax_before_cast(TpsFp8Recipe recipe);

/* The dense peak (TFLOP/s) of the FP8 GEMMs under `recipe`: MXFP8's
 * block-scaled rate (gpu.peak_tflops_mxfp8) under mxfp8, the FP8 one
 * (gpu.peak_tflops_fp8) under the per-tensor and blockwise recipes, which
 * scale outside the tensor cores. */
double tps_fp8_gemm_tflops(TpsFp8Recipe recipe, const TpsHardware *hw);
