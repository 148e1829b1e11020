/* Dependency graphs of TP work: the transformer layer (forward and
 * backward), the model's head and tail (embedding, final LayerNorm, output
 * layer and loss), the optimizer step, and single-op scenarios, each built
 * for every rank of the TP group on one engine.
 *
 * Every rank runs the same program: operations are added rank by rank in
 * host issue order, so the engine's launch queue sees what a real rank
 * would launch. Collectives are NCCL ring kernels: per rank a container
 * task holding the channels' SMs, and one flow per ring step, each step
 * waiting for the previous step's data from the left neighbour.
 */
#pragma once

#include <glib.h>

#include "cost/collective.h"
#include "engine/engine.h"
#include "sched/scenario.h"
#include "sched/strategy.h"

#define TPS_MAX_RANKS 64

/* One operation on every rank. */
typedef struct {
    TpsTaskId id[TPS_MAX_RANKS];
} TpsOpIds;

/* Builder state: the engine and the streams of each rank. */
typedef struct {
    TpsEngine *engine;
    const TpsScenario *scenario;
    const TpsHardware *hw;
    TpsStrategyId strategy;
    guint ranks;
    TpsStreamId main[TPS_MAX_RANKS]; /* the compute stream */
    TpsStreamId side[TPS_MAX_RANKS]; /* the NCCL side stream (higher priority) */
    /* Collective volume added, by kind, in bytes per rank (for the analytic
     * volume checks). */
    double coll_bytes[TPS_COLL_COUNT];
    guint coll_count[TPS_COLL_COUNT];
    guint gemm_count; /* GEMM kernels added on rank 0 */
} TpsBuilder;

/* The machine of the TP group of `scenario` (ranks = tp). */
void tps_builder_machine(const TpsScenario *scenario, TpsMachine *machine);

/* Create the engine and the streams. Free with tps_builder_clear(). */
void tps_builder_init(TpsBuilder *b, const TpsScenario *scenario, TpsStrategyId strategy);
void tps_builder_clear(TpsBuilder *b);

/* Markers: a zero-work task on each rank's main stream; after it ends every
 * op added before it on main has ended. */
void tps_builder_mark(TpsBuilder *b, const char *name, TpsOpIds *out);

/* An NCCL ring collective of `bytes` (the full buffer of each rank) on
 * each rank's `streams[r]`; `out` (may be NULL) receives the kernels. */
void tps_builder_collective(TpsBuilder *b, const TpsStreamId *streams, TpsCollKind kind,
                            double bytes, const char *name, TpsOpIds *out);

/* Layer `index` forward / backward (names prefixed "l<index>."). */
void tps_layer_forward(TpsBuilder *b, guint index);
void tps_layer_backward(TpsBuilder *b, guint index);

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
