/* Simulate one strategy of a scenario and reduce the recorded spans to the
 * figures of design.md's JSON result.
 *
 * What is simulated and what is composed (docs/step-model.md): one
 * transformer layer's forward and backward are simulated on every rank of
 * the TP group, two layers deep so that the measured layer starts with the
 * host launch queue and streams in steady state; the embedding, output
 * layer and loss are simulated as one graph, the optimizer step as another.
 * The step time composes them: micro-batches run in sequence on a single
 * pipeline stage holding all layers.
 */
#pragma once

#include <glib.h>

#include "cost/collective.h"
#include "engine/engine.h"
#include "sched/pipeline.h"
#include "sched/run-analysis.h"
#include "sched/scenario.h"
#include "sched/strategy.h"

/* One GEMM of the measured layer and its TP collective (--breakdown). */
typedef struct {
    gboolean present;
    TpsCollKind collective; /* TPS_COLL_COUNT: none */
    TpsMethod method;
    const char *schedule; /* how its collective ran, for people and scripts:
                             the method's name, or with method none
                             "nccl-side-stream" (Megatron's NCCL stream
                             beside the compute stream) or "blocking" (on
                             the compute stream); "none" without one */
    double time_ms;    /* from its first task's start to its last task's end */
    double gemm_ms;    /* busy time of its GEMM kernels (chunks included) */
    double comm_ms;    /* busy time of its communication kernels and copies */
    double exposed_ms; /* communication while no compute kernel runs */
    double efficiency; /* 1 - (time - G) / (C + G - G): G the unsplit GEMM alone,
                          C the blocking collective alone (Flux) */
    guint64 m, n, k;   /* its GEMM on one rank: C[m, n] = A[m, k] B[k, n] */
    double comm_bytes; /* its collective's whole buffer (as NCCL's message size); 0 without one */
    char note[200];    /* when its communication queued behind another on one
                          stream (serialised as the real system would): which */
} TpsGemmBreakdown;

/* A mixture of experts: the measured layer's routed part (forward and
 * backward), rank 0, in ms. Dispatch: the forward dispatch and the
 * backward's gradient of the combine (what goes to the experts: the
 * all-to-all or all-gather over EP and the ETP all-gather); combine: the
 * forward combine and the dispatch's gradient (the way back). */
typedef struct {
    gboolean present;
    double dispatch_ms, dispatch_exposed_ms; /* busy, and not under compute */
    double combine_ms, combine_exposed_ms;
    double experts_ms; /* the experts' GEMM kernels */
    /* model.moe.overlap_ep_comm: the figures above are those of the
     * combined forward and backward of one layer (two micro-batches), and
     * this its time; 0 without it. */
    double pair_ms;
} TpsMoeBreakdown;

/* Whether a result is tied with the fastest of its ranked set
 * (tps_results_mark_ties()): the band of their difference holds 0. */
typedef enum {
    TPS_TIE_UNRANKED = 0, /* not ranked against the others (a sweep's point, a skipped
                             strategy): the `tied` cell is empty */
    TPS_TIE_NO,           /* the fastest itself, or apart from it beyond the band */
    TPS_TIE_YES,
} TpsTie;

typedef struct {
    const TpsStrategy *strategy;
    /* Not simulated: why the strategy does not apply (tps_strategy_usable());
     * empty for a simulated result. Writers show only the name and this. */
    char skipped[240];
    double gain; /* reference time / this time - 1 (megatron for model
                    scenarios, sp-blocking for op scenarios); NAN if none */

    /* Model scenarios. */
    double step_time_s;
    /* Its error band (docs/validation.md), and the measured layer's band as
     * fractions of its time (forward + backward), which the step takes. */
    double step_time_s_low, step_time_s_high;
    double band_low, band_high;
    /* The measured layer's (op scenarios: the op's) time per class of work
     * (ns per TpsBandClass), whose band band_low/high is; a difference of
     * two results is banded from them (tps_result_difference()). */
    double band_parts_ns[TPS_BAND_COUNT];
    double forward_ms;      /* one layer, one micro-batch, one TP group */
    double backward_ms;     /* recompute included */
    double exposed_comm_ms; /* TP communication of that layer not under compute */
    double tp_comm_ms;      /* busy time of that layer's TP communication */
    double cp_exposed_ms;   /* context parallelism's exchange (its CP stream) of that
                               layer not under compute (0 without CP) */
    double cp_comm_ms;      /* busy time of that exchange */
    double ep_exposed_ms;   /* a mixture of experts: the dispatch and combine (the
                               all-to-alls or all-gathers over EP and the ETP
                               collectives) of that layer not under compute, apart from
                               exposed_comm_ms and tp_comm_ms */
    double ep_comm_ms;      /* their busy time */
    /* A model that mixes dense and MoE layers (the layer above is an MoE
     * one): a dense layer's forward and backward, as forward_ms and
     * backward_ms; 0 otherwise. */
    double dense_forward_ms, dense_backward_ms;
    double mfu;
    double hfu; /* hardware FLOPs: recompute counted */
    double model_tflops_per_gpu; /* model FLOPs per second per GPU, in TFLOP/s */
    double tokens_per_s;
    double memory_gib; /* the busiest GPU's */
    gboolean fits_memory;
    double memory_headroom_gib; /* gpu.memory_gib less memory_gib: negative when it does
                                   not fit */
    guint memory_stage; /* the pipeline stage of that GPU */
    double memory_weights_gib, memory_optimizer_gib, memory_activations_gib;
    double memory_overheads_gib; /* CUDA context, NCCL and userbuffers buffers, allocator
                                    fragmentation */
    /* The overheads one by one (memory_nvls_gib is part of memory_nccl_gib). */
    double memory_context_gib, memory_nccl_gib, memory_nvls_gib, memory_userbuffers_gib,
        memory_fragmentation_gib;
    double head_ms;              /* embedding + output layer + loss, forward and backward */
    double optimizer_ms;
    double bubble_fraction; /* idle share of the first stage during the pipeline */
    double dp_exposed_ms;   /* data-parallel reduction after the last backward */
    double param_gather_exposed_ms; /* overlap_param_gather: the first stage's wait for
                                       parameter all-gathers in its first forwards */
    double compute_end_s;   /* the end of the last forward or backward chunk of any stage */
    guint64 micro_batches;

    /* Op scenarios. */
    double op_time_ms;
    double op_time_ms_low, op_time_ms_high; /* its error band */
    double op_gemm_ms;
    double op_comm_ms;
    double op_overlap_efficiency;

    /* Per GEMM of the measured layer (model scenarios), or the op's GEMM
     * (gemms[TPS_GEMM_OP], op scenarios). */
    TpsGemmBreakdown gemms[TPS_GEMM_SLOT_COUNT];
    /* With context parallelism, the attention core forward ([0]) and
     * backward ([1]) with its CP exchange (collective none, schedule the
     * cp_comm; efficiency 1 - exposed / comm): --breakdown's rows
     * attn_fwd and attn_bwd. */
    TpsGemmBreakdown cp_attention[2];
    TpsMoeBreakdown moe; /* model.moe only */

    /* What the engine did for the layer (or op) graph. */
    TpsRunStats stats;
    guint tasks;

    TpsTie tied; /* against the fastest of its set; set by tps_results_mark_ties() */
} TpsResult;

/* The difference a - b of two results of one scenario (their step times,
 * op scenarios: op times), in seconds (op scenarios: ms), and its band
 * (tps_band_of_difference()): each result's layer (op) parts scaled to its
 * step, as its own band is, so the classes of work in which a and b
 * differ make the band and the work they share cancels. */
void tps_result_difference(const TpsScenario *scenario, const TpsResult *a, const TpsResult *b,
                           double *diff, double *low, double *high);

/* Whether a and b are tied: the band of a - b holds 0, so the model cannot
 * say which one is faster. */
gboolean tps_result_tied(const TpsScenario *scenario, const TpsResult *a, const TpsResult *b);

/* Mark each of `results` (ranked: tps_results_rank(), the first simulated
 * one the fastest) tied or not with the fastest: TPS_TIE_YES where
 * tps_result_tied() holds, TPS_TIE_NO for the fastest itself and the
 * others, TPS_TIE_UNRANKED for a skipped strategy. */
void tps_results_mark_ties(const TpsScenario *scenario, TpsResult *results, guint n);

/* Simulate `strategy` (an implemented preset that applies). On a deadlock
 * or an invalid combination returns FALSE with the error set. */
gboolean tps_simulate(const TpsScenario *scenario, const TpsStrategy *strategy, TpsResult *result,
                      GError **error);

/* tps_simulate(), keeping the finished run of the layer graph (model
 * scenarios: layers l0 and l1, forward then backward, with the windows of
 * the measured layer l1 forward, l0 backward) or of the op graph (the whole
 * op in the forward window) in `*record`, labelled with the preset name. */
gboolean tps_simulate_record(const TpsScenario *scenario, const TpsStrategy *strategy,
                             TpsResult *result, TpsRun **record, GError **error);

/* The pipeline schedule of one training step of a model scenario under
 * `strategy` (tps_pipeline_schedule()): the layer, embedding and head
 * pieces simulated as tps_simulate() does, then the step around them, its
 * times those of tps_simulate()'s result. An input error for op
 * scenarios. */
gboolean tps_simulate_step_schedule(const TpsScenario *scenario, const TpsStrategy *strategy,
                                    TpsStepSchedule **schedule, GError **error);

/* A cache of the simulated pieces (layer, embedding and head graphs) of
 * model scenarios, keyed by what they depend on, so that step
 * configurations that differ only in pp, vpp, dp or the global batch are
 * evaluated without simulating the layer again, and the embedding/head
 * graph, which has no GEMM slot, once for every overlap table (tpsim
 * tune). The hits and misses counted are the layer's. Threads may share one: it
 * is locked, and two threads missing the same key both simulate it (the
 * simulation is deterministic, the first entry stays). */
typedef struct TpsSimCache TpsSimCache;

TpsSimCache *tps_sim_cache_new(void);
void tps_sim_cache_free(TpsSimCache *cache);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TpsSimCache, tps_sim_cache_free)
void tps_sim_cache_stats(const TpsSimCache *cache, guint64 *hits, guint64 *misses);

/* tps_simulate_record() through `cache` (may be NULL; never used when a
 * record is asked for). */
gboolean tps_simulate_cached(const TpsScenario *scenario, const TpsStrategy *strategy,
                             TpsSimCache *cache, TpsResult *result, TpsRun **record,
                             GError **error);

/* The times of the pieces of a model scenario's step under `strategy`
 * (the layer, embedding and head graphs), as tps_simulate() simulates them
 * before the step around them: for the tests, which run that step both
 * replayed and on the engine. */
gboolean tps_simulate_pieces(const TpsScenario *scenario, const TpsStrategy *strategy,
                             TpsPieceTimes *pieces, GError **error);

/* Sort results from fastest to slowest (step time, or op time), the
 * skipped ones last by name, and fill each one's gain over `reference`
 * (may be NULL: gains are NAN; NAN for the skipped). */
void tps_results_rank(TpsResult *results, guint n, const TpsResult *reference);

/* Model FLOPs of one iteration (no recompute), and the hardware FLOPs
 * (recompute included). */
double tps_model_flops_per_iteration(const TpsScenario *scenario);
double tps_hardware_flops_per_iteration(const TpsScenario *scenario);

/* The peak MFU and HFU are taken against, in TFLOP/s per GPU: the dense
 * BF16 tensor-core peak (gpu.peak_tflops.bf16) whatever the GEMMs' dtype,
 * as Megatron-LM, NeMo and the Llama 3 paper report MFU (an FP8 run is
 * measured against the same peak as its BF16 counterpart, so a faster
 * run shows a higher MFU). */
double tps_mfu_peak_tflops(const TpsHardware *hw);
