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
#include "engine/run.h"
#include "sched/scenario.h"

/* Times of the simulated pieces, one micro-batch each. */
typedef struct {
    TpsTime layer_fwd, layer_bwd; /* one layer on one TP group, recompute in bwd */
    TpsTime emb_fwd, emb_bwd;     /* embedding (first stage) */
    TpsTime head_fwd, head_bwd;   /* final LayerNorm, output layer, loss (last stage) */
    TpsTime recompute_fwd;        /* full recompute: the layer forward re-run inside bwd */
    /* A model that mixes dense and MoE layers (tps_scenario_mixes_layers()):
     * layer_fwd and layer_bwd are an MoE layer's, these a dense layer's
     * (0 where the model does not mix). */
    TpsTime dense_fwd, dense_bwd;
    /* model.moe.overlap_ep_comm: one layer's forward of a micro-batch and
     * its backward of the one before, as one graph (tps_layer_forward_backward());
     * 0 without it. */
    TpsTime layer_fb;
    /* And with dense layers mixed in: a dense layer's forward beside a
     * dense layer's backward, beside an MoE layer's, and an MoE layer's
     * forward beside a dense layer's backward (0 where the model does not
     * mix). */
    TpsTime dense_fb, dense_moe_fb, moe_dense_fb;
    /* Set by the step frame itself (tps_pipe_amax_times(); callers leave
     * 0): delayed scaling's amax reduction and update at the end of a
     * model chunk's forward and of its backward. */
    TpsTime amax_fwd, amax_bwd;
} TpsPieceTimes;

/* Memory of one GPU of a stage, in bytes (docs/step-model.md, "Memory"). */
typedef struct {
    double weights_grads; /* bf16 weights and fp32 main gradients */
    double optimizer;     /* fp32 master weights and Adam moments (sharded over dp
                             with the distributed optimizer) */
    double activations;   /* peak over the schedule */
    /* Overheads: */
    double fragmentation; /* the caching allocator's rounding of the activation tensors */
    double context;       /* the process's CUDA context */
    double nccl;          /* NCCL's buffers, for every communicator the GPU is in */
    double nvls;          /* of them, the NVLS communicators' buffers */
    double userbuffers;   /* Transformer Engine's userbuffers (strategies that use them:
                             tps_stage_memory_add_userbuffers()) */
    double total;
} TpsStageMemory;

typedef struct {
    TpsTime step;            /* one iteration: pipeline, DP reduction, optimizer */
    TpsTime compute_end;     /* the last forward/backward chunk of any stage */
    double bubble_fraction;  /* stage 0: idle share of [0, compute_end] */
    TpsTime dp_exposed;      /* from compute_end to the end of the last DP reduction */
    TpsTime optimizer;       /* the slowest stage's optimizer step (and param gather) */
    TpsTime param_gather_exposed; /* with overlap_param_gather: how long stage 0's first
                                     forwards wait for their buckets' all-gathers */
    guint busiest_stage;     /* the stage with the most memory per GPU */
    TpsStageMemory memory;   /* of that stage */
    guint64 tasks, events;   /* of the simulated schedule */
    guint64 micro_simulated; /* micro-batches per replica simulated (or replayed) */
    guint64 cycle;           /* when the schedule was extrapolated from a shorter one:
                                the micro-batches after which it repeats (else 0) */
    TpsTime period;          /* and the time that cycle takes */
    guint64 shared;          /* when replayed: the instants at which flows sharing a link
                                changed their rates (0: every flow was alone) */
    guint64 lone;            /* when replayed: the flows resolved alone, without events
                                (their end the engine's for a flow alone on its links) */
    gboolean in_order;       /* when replayed: by the in-order pass, no two flows having
                                been on one link at once */
    guint64 periods;         /* when replayed in time order: the steady periods jumped
                                over, their state moved on at once (pipeline-period.c) */
    guint64 part_ops;        /* and stage 0's ops moved on beyond them, to the copy of a
                                state kept within the period compared */
    guint64 cycle_from;      /* the first micro-batch of the first cycle compared */
} TpsStepResult;

/* Most forward and backward chunks (pp x vpp x micro-batches x 2) one
 * simulated schedule may hold: about 300 MB of engine tasks and edges, and
 * a few seconds. */
#define TPS_PIPELINE_MAX_OPS (G_GUINT64_CONSTANT(1) << 20)

/* Simulate one iteration of `scenario` with the given piece times: by
 * replay where it applies (tps_pipeline_simulate_replay()), else by
 * tps_pipeline_simulate_periodic(). Both are exact: the step of every
 * micro-batch simulated on the engine, to the nanosecond. */
gboolean tps_pipeline_simulate(const TpsScenario *scenario, const TpsPieceTimes *pieces,
                               TpsStepResult *result, GError **error);

/* The step replayed without the engine up to the optimizer step: chunks and
 * DP reductions share nothing, so each lasts its own time from when its
 * stream and inputs allow; P2P flows share links, so they alone go through
 * an event loop that reproduces the engine's max-min sharing and rounding
 * exactly, as long as no three flows are on one link at once. The
 * optimizer steps run on the engine. *replayed is FALSE (and the result
 * void) where three flows met or the schedule has more than
 * TPS_PIPELINE_MAX_OPS chunks. See docs/step-model.md. */
gboolean tps_pipeline_simulate_replay(const TpsScenario *scenario, const TpsPieceTimes *pieces,
                                      TpsStepResult *result, gboolean *replayed, GError **error);

/* The schedule's steady state repeats: after the warm-up, every stage
 * alternates one forward and one backward, in the same order every period
 * of g micro-batches (g = 1 for 1F1B, pp when interleaved). So when the
 * step has more micro-batches than it takes to see that, a shorter schedule
 * is simulated (warm-up, a few steady periods, cool-down, DP reduction,
 * optimizer) and, once every task of two consecutive cycles of one or a few
 * periods is found to run exactly one cycle after its copy in the previous
 * one, the step is extended by the cycle's time for each cycle left out:
 * exact to the nanosecond, and the memory and time do not grow with the
 * micro-batches.
 * Where no periodic regime shows, every micro-batch is simulated, up to
 * TPS_PIPELINE_MAX_OPS chunks, beyond which it is an input error naming
 * training.global_batch. See docs/step-model.md. */
gboolean tps_pipeline_simulate_periodic(const TpsScenario *scenario, const TpsPieceTimes *pieces,
                                        TpsStepResult *result, GError **error);

/* The forward and backward chunks of the shortest schedule
 * tps_pipeline_simulate_periodic() runs for `micro` micro-batches per replica (at
 * most TPS_PIPELINE_MAX_OPS for validation to accept the layout). */
guint64 tps_pipeline_min_ops(guint pp, guint vpp, guint64 micro);

/* The same, simulating every micro-batch (the reference the extrapolation
 * is tested against); an input error above TPS_PIPELINE_MAX_OPS chunks. */
gboolean tps_pipeline_simulate_full(const TpsScenario *scenario, const TpsPieceTimes *pieces,
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
/* The same with `warmup` warm-up forwards (at most micro vpp): the
 * combined interleaved 1F1B runs one more (pipeline-pair.c). */
GArray *tps_pipeline_order_warmup(guint pp, guint vpp, guint64 micro, guint stage, guint64 warmup);

/* Memory per GPU of `stage` (0-based) under the scenario's schedule, all
 * but the userbuffers (which depend on the strategy). */
void tps_pipeline_stage_memory(const TpsScenario *scenario, guint stage, TpsStageMemory *out);

/* The bytes of Transformer Engine's userbuffers for the overlap
 * configuration `overlap` (tps_strategy_overlap()): initialize_ub
 * registers one buffer of seq_len x micro_batch x hidden elements per GEMM
 * it overlaps (1 byte under fp8 where it gathers, else 2; a ring-exchange
 * reduce-scatter's of 2 tp - 1 chunks of rows / tp). */
double tps_userbuffers_bytes(const TpsScenario *scenario,
                             const TpsOverlapConfig overlap[TPS_GEMM_SLOT_COUNT]);

/* Add those of a strategy to `memory`. */
void tps_stage_memory_add_userbuffers(const TpsScenario *scenario,
                                      const TpsOverlapConfig overlap[TPS_GEMM_SLOT_COUNT],
                                      TpsStageMemory *memory);

/* Context parallelism's buffers while one layer's attention runs, in
 * bytes, by cp_comm: the ring's (the larger of forward's and backward's),
 * the all-gathered K/V and dK/dV, the all-to-all's received Q, K, V (with
 * the ring's on the head shards under a2a+p2p); 0 without CP. */
double tps_cp_buffer_bytes(const TpsScenario *scenario);

/* The tensors one layer keeps for its backward, for one micro-batch on one
 * GPU (arXiv:2205.05198 section 4.1): their sizes in bytes into `bytes`,
 * and their number. */
#define TPS_LAYER_MAX_TENSORS 24
guint tps_layer_activation_tensors(const TpsScenario *scenario,
                                   double bytes[TPS_LAYER_MAX_TENSORS]);

/* Activation bytes one layer keeps for one micro-batch on one GPU: the sum
 * of those tensors. */
double tps_layer_activation_bytes(const TpsScenario *scenario);

/* Warm-up forwards of `stage` in Megatron's schedule, before the clamp to
 * the number of chunks (tps_pipeline_order()). */
guint64 tps_pipeline_raw_warmup(guint pp, guint vpp, guint stage);
/* The combined interleaved 1F1B (pipeline-pair.c): the warm-up forwards
 * it adds to Megatron's interleaved schedule (1 with
 * model.moe.overlap_ep_comm and pp > 1, else 0); stage `stage`'s warm-up
 * with them, clamped to the `total` ops of each kind. */
guint64 tps_pipe_pair_extra(const TpsScenario *sc);
guint64 tps_pipe_warmup(const TpsScenario *sc, guint stage, guint64 total);

/* Parameters of one layer on one GPU (its TP shard). */
double tps_layer_params_per_gpu(const TpsScenario *scenario);

/* A per-layer figure (one of the functions below, of one layer) over `n`
 * layers of which `dense` are the dense layers of a model that mixes
 * dense and MoE layers: (n - dense) per_layer(scenario) + dense
 * per_layer(its dense layer); n per_layer(scenario) when dense is 0. */
double tps_layers_sum(const TpsScenario *scenario, guint n, guint dense,
                      double (*per_layer)(const TpsScenario *scenario));
/* Over the layers of `stage`. */
double tps_stage_layers_sum(const TpsScenario *scenario, guint stage,
                            double (*per_layer)(const TpsScenario *scenario));

/* Parameters one GPU of `stage` holds. */
double tps_stage_params(const TpsScenario *scenario, guint stage);

/* The model's parameters, counted once (not per GPU: tp, pp and the
 * output layer's copy of a tied embedding do not count): what a model
 * card states. */
double tps_model_params(const TpsScenario *scenario);

/* Parameters of one layer on one GPU that are GEMM weights (what
 * Transformer Engine casts to FP8 under dtype fp8). */
double tps_layer_gemm_params_per_gpu(const TpsScenario *scenario);

/* Of those, the routed experts' (with their biases): experts / ep experts
 * split over etp; 0 for a dense layer. Their gradients are reduced over
 * the expert data-parallel group. */
double tps_layer_expert_params_per_gpu(const TpsScenario *scenario);

/* The parameters of `stage` whose optimizer states one GPU holds: all,
 * or with the distributed optimizer the dense ones over the DP group and
 * the experts' over the expert DP group. */
double tps_stage_optimizer_shard(const TpsScenario *scenario, guint stage);

/* ---- the schedule as data, for figures (render/step-figure.h) ---- */

/* One forward or backward chunk of a drawn schedule: its stage, model
 * chunk (0 .. vpp-1) and micro-batch, its task(s) in the run (the last
 * micro-batch's backward is split into gradient buckets: first .. last on
 * the stage's compute stream) and the P2P transfer that brought its input
 * (TPS_TASK_NONE for the first forward and the last backward). */
typedef struct {
    guint stage, chunk;
    guint64 mb;
    gboolean backward;
    TpsTaskId first, last, arrival;
} TpsStepOp;

/* A simulated schedule: what tps_pipeline_simulate() ran, as a TpsRun of
 * one rank per stage with streams "compute" (chunks and the optimizer) and
 * "dp" (gradient reductions); P2P transfers are flows from the sending
 * stage (dst_rank the receiver), DP reductions communication kernels,
 * optimizer tasks every task from first_optimizer on.
 *
 * When the step has few micro-batches every one is simulated and drawn
 * (micro == micro_step). Otherwise the schedule is the shorter one the
 * step was extrapolated from (result.cycle > 0): its micro-batches from
 * result.cycle_from repeat every result.cycle micro-batches, and the step
 * holds (micro_step - micro) / result.cycle more cycles of
 * result.period each, which a figure must say rather than hide. */
typedef struct {
    TpsRun *run;
    GArray *ops; /* TpsStepOp */
    TpsTaskId first_optimizer;
    guint pp, vpp;
    guint64 micro;      /* micro-batches per replica in `run` */
    guint64 micro_step; /* micro-batches per replica of the step */
    TpsStepResult result; /* of the whole step (tps_pipeline_simulate()) */
} TpsStepSchedule;

/* The schedule of one step of `scenario`, its times unchanged from
 * tps_pipeline_simulate()'s (which it runs). */
gboolean tps_pipeline_schedule(const TpsScenario *scenario, const TpsPieceTimes *pieces,
                               TpsStepSchedule **schedule, GError **error);
void tps_step_schedule_free(TpsStepSchedule *schedule);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TpsStepSchedule, tps_step_schedule_free)
