/* The training step around the layer: pipeline stages (1F1B, interleaved
 * 1F1B), point-to-point activation and gradient transfers between stages,
 * data-parallel gradient reduction (overlapped with the last backward as
 * Megatron does), the optimizer step, and the memory of every stage.
 *
 * The pipeline is simulated on the engine, one engine rank per pipeline
 * stage (its TP group collapsed: the TP ranks of a stage run the same
 * program, the layer simulation already accounts for them). Each stage runs
 * its forward and backward chunks in the order of Megatron's schedule;
 * chunks take the simulated time of their layers (composed: identical
 * layers and micro-batches have identical times) and wait for the
 * activation or gradient flow from the neighbouring stage over NVLink or
 * InfiniBand. See docs/step-model.md.
 */
#pragma once

#include <glib.h>

#include "core/time.h"
#include "sched/scenario.h"

/* Times of the simulated pieces, one micro-batch each. */
typedef struct {
    TpsTime layer_fwd, layer_bwd; /* one layer on one TP group, recompute in bwd */
    TpsTime emb_fwd, emb_bwd;     /* embedding (first stage) */
    TpsTime head_fwd, head_bwd;   /* final LayerNorm, output layer, loss (last stage) */
    TpsTime recompute_fwd;        /* full recompute: the layer forward re-run inside bwd */
} TpsPieceTimes;

/* Memory of one GPU of a stage, in bytes. */
typedef struct {
    double weights_grads; /* bf16 weights and fp32 main gradients */
    double optimizer;     /* fp32 master weights and Adam moments (sharded over dp
                             with the distributed optimizer) */
    double activations;   /* peak over the schedule */
    double total;
} TpsStageMemory;

typedef struct {
    TpsTime step;               /* one iteration: pipeline, DP reduction, optimizer */
    TpsTime compute_end;        /* the last forward/backward chunk of any stage */
    double bubble_fraction;     /* stage 0: idle share of [0, compute_end] */
    TpsTime dp_exposed;         /* from compute_end to the end of the last DP reduction */
    TpsTime optimizer;          /* the slowest stage's optimizer step (and param gather) */
    guint busiest_stage;        /* the stage with the most memory per GPU */
    TpsStageMemory memory;      /* of that stage */
    guint64 tasks, events;
} TpsStepResult;

/* Simulate one iteration of `scenario` with the given piece times. */
gboolean tps_pipeline_simulate(const TpsScenario *scenario, const TpsPieceTimes *pieces,
                               TpsStepResult *result, GError **error);

/* One forward or backward chunk of a stage: the model chunk (0 .. vpp-1)
 * and the micro-batch. */
typedef struct {
    guint chunk;
    guint64 mb;
    gboolean backward;
} TpsPipeOp;

/* The order of stage `stage`'s chunks in Megatron's schedule (1F1B, or
 * interleaved 1F1B when vpp > 1): 2 x micro x vpp TpsPipeOp. */
GArray *tps_pipeline_order(guint pp, guint vpp, guint64 micro, guint stage);

/* Memory per GPU of `stage` (0-based) under the scenario's schedule. */
void tps_pipeline_stage_memory(const TpsScenario *scenario, guint stage, TpsStageMemory *out);

/* Activation bytes one layer keeps for one micro-batch on one GPU
 * (arXiv:2205.05198 section 4). */
double tps_layer_activation_bytes(const TpsScenario *scenario);

/* Parameters one GPU of `stage` holds. */
double tps_stage_params(const TpsScenario *scenario, guint stage);
