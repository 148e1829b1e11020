/* Dependency graphs of a training step's pieces: the transformer layer
 * (forward and backward), the embedding, the model's head (final
 * LayerNorm, output layer and loss), the optimizer step, and single-op
 * scenarios. Shapes follow Megatron; every rank runs the same program.
 */
#pragma once

#include <glib.h>

#include "sched/builder.h"

/* Added to a layer index for recomputed work (selective: the attention
 * core; full: the whole forward), named "l<index>r.". */
#define TPS_LAYER_RECOMPUTE 1000u

/* Layer `index` forward / backward (names prefixed "l<index>."). */
void tps_layer_forward(TpsBuilder *b, guint index);
void tps_layer_backward(TpsBuilder *b, guint index);

/* Under dtype fp8, one FP8 GEMM operand of `elements` bf16 elements
 * quantized by the scenario's recipe (its rowwise copy, and when
 * `columnwise` the transposed or columnwise one), named "l<index>.<what>",
 * with no amax reduction over TP; nothing otherwise. */
void tps_layer_fp8_operand(TpsBuilder *b, guint index, const char *what, double elements,
                           gboolean columnwise);
/* Layer `fwd`'s forward of one micro-batch and layer `bwd`'s backward of
 * the one before as one graph (model.moe.overlap_ep_comm: Megatron's
 * TransformerLayerSchedulePlan.run, model_chunk_schedule_plan.py), the
 * all-to-alls on the moe stream beside the other micro-batch's compute:
 *   compute: pre_dispatch fwd | experts bwd -> experts fwd | pre_dispatch bwd
 *   comm:    combine bwd | dispatch fwd -> dispatch bwd | combine fwd
 * `chain`: the forward micro-batch's last op (its previous layer's
 * combine, on the moe stream; TPS_TASK_NONE ids at first), waited for by
 * this forward, and set to this layer's combine. */
void tps_layer_forward_backward(TpsBuilder *b, guint fwd, guint bwd, TpsOpIds *chain);
/* The same where either layer may be dense (`fwd_moe`, `bwd_moe` FALSE;
 * model.moe.layer_freq): a dense layer's nodes are its attention and its
 * MLP on the compute stream, its dispatch and combine no-ops (Megatron's
 * NoopScheduleNode, fine_grained_callables.py); `chain` is then the
 * forward's MLP. */
void tps_layer_forward_backward_kinds(TpsBuilder *b, guint fwd, gboolean fwd_moe, guint bwd,
                                      gboolean bwd_moe, TpsOpIds *chain);

/* Embedding (forward and backward as asked), the final LayerNorm, output
 * layer and cross-entropy loss. */
void tps_head_forward(TpsBuilder *b);
void tps_head_backward(TpsBuilder *b);
void tps_embedding_forward(TpsBuilder *b);
void tps_embedding_backward(TpsBuilder *b);

/* The optimizer step over this rank's `params` parameters (mixed precision
 * Adam: fp32 master weights and moments). */
void tps_optimizer_step(TpsBuilder *b, double params);

/* A single AG+GEMM or GEMM+RS (op scenarios). */
void tps_op_graph(TpsBuilder *b);
/* The op's GEMM alone (for gemm_ms). */
void tps_op_gemm_alone(TpsBuilder *b);
