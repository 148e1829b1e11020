/* The layouts of a model on a fixed number of GPUs (`tpsim search`,
 * docs/search.md): every tensor, pipeline and data-parallel split, virtual
 * stages, micro-batch size, recompute mode, distributed optimizer and
 * strategy preset that applies; the ones whose memory cannot fit are
 * pruned with the closed-form memory model (sched/stage-memory.c) before
 * anything is simulated, the others are simulated and ranked.
 *
 * The rules between values are tps_scenario_validate()'s: the enumeration
 * proposes the divisors the layout needs and asks it about every
 * candidate, so a rule added there (a new model key) prunes here too.
 *
 * A TpsSearch is read-only once built; tps_search_evaluate() may be called
 * from several threads at once (the pieces cache inside is locked).
 */
#pragma once

#include <glib.h>

#include "sched/scenario.h"
#include "sched/simulate.h"
#include "sched/strategy.h"

typedef enum {
    TPS_OBJECTIVE_STEP_TIME,      /* the shortest step first */
    TPS_OBJECTIVE_TOKENS_PER_GPU, /* the most tokens per second per GPU first */
} TpsObjective;

/* One point of the space. */
typedef struct {
    guint tp, pp, vpp, dp;
    guint cp;          /* context parallelism (0 or 1: none) */
    TpsCpComm cp_comm; /* its exchange: p2p; a2a where the heads divide by tp x
                          cp; a2a+p2p with the a2a group filling the NVLink
                          domain (tps_search_hierarchical_a2a()); beside cp, so
                          that the layout has no padding (layouts compare as
                          bytes) */
    guint ep, etp;     /* expert parallel and expert tensor parallel sizes (a mixture of
                          experts; dense: 1 and 0) */
    guint64 micro_batch;
    TpsRecompute recompute;
    gboolean distributed_optimizer;
    const TpsStrategy *strategy; /* also fixes parallel.sp: tp-allreduce without, the others with */
} TpsLayout;

/* What an evaluated point gives: the result columns of a search and the
 * figures that explain a difference between two layouts. */
typedef struct {
    TpsLayout layout;
    guint index;         /* in the enumeration order: the last tie-break */
    gboolean fits;       /* memory (analytic, before simulating) within the GPU's */
    gboolean simulated;  /* FALSE for a layout pruned by memory (times are NAN) */
    double memory_gib;   /* the busiest GPU's, userbuffers included */
    double memory_headroom_gib; /* gpu.memory_gib less that (negative: does not fit) */
    double step_time_s;
    double tokens_per_s_per_gpu;
    double mfu;                  /* against the dense BF16 peak (tps_mfu_peak_tflops()) */
    double model_tflops_per_gpu; /* model FLOPs per second per GPU, TFLOP/s */
    /* Per step, on the busiest pipeline stage, in seconds: */
    double bubble_s;      /* stage 0 idle inside the pipeline */
    double exposed_tp_s;  /* TP communication not under compute */
    double dp_exposed_s;  /* data-parallel reduction after the last backward */
    double recompute_s;   /* the layers' time attributed to recompute by FLOPs */
    double optimizer_s;   /* the optimizer step */
} TpsSearchRow;

/* Why layouts were not simulated: counts for messages. */
typedef struct {
    guint64 candidates;      /* layouts proposed (tp x pp dividing the GPUs) */
    guint64 invalid;         /* refused by tps_scenario_validate() */
    guint64 presets_skipped; /* strategy presets that do not apply to a layout */
    guint64 no_memory;       /* pruned: memory beyond the GPU's */
    char *first_invalid;     /* the first refusal's message, or NULL */
} TpsSearchCounts;

typedef struct {
    guint gpus;
    gboolean allow_cross_node_tp; /* tp beyond one node's GPUs */
    guint max_cp;                 /* enumerate context parallelism up to this size
                                     (0 or 1: none, as before it) */
    gboolean all;                 /* keep the layouts that do not fit, as rows */
    TpsObjective objective;
} TpsSearchOptions;

typedef struct TpsSearch TpsSearch;

/* --max-cp's default: the largest power of two cp up to
 * TPS_SEARCH_DEFAULT_MAX_CP that leaves each CP rank at least
 * TPS_SEARCH_CP_TOKENS tokens of the sequence; 1 (no context
 * parallelism, the search as before it) for sequences under twice that.
 * Assumption, from tpsim's own figures (docs/step-model.md, "Context
 * parallelism"): with 8K tokens a rank, the ring of Llama 3 70B at TP8
 * hides whole under its blocks; at 4K or fewer, the per-step host costs
 * start to show. 16 is the largest CP a published run used (Llama 3 at
 * 128K). */
#define TPS_SEARCH_DEFAULT_MAX_CP 16u
#define TPS_SEARCH_CP_TOKENS 8192u
guint tps_search_default_max_cp(const TpsScenario *base);

/* The a2a size a search gives a2a+p2p at `tp`: the CP ranks of one NVLink
 * domain (domain GPUs / tp; Megatron's hierarchical groups are consecutive
 * CP ranks), so that the all-to-all stays on NVLink and the ring crosses
 * domains. */
guint tps_search_hierarchical_a2a(const TpsHardware *hw, guint tp);

/* Enumerate the layouts of `base` (a model scenario, its hardware model
 * resolved) on options->gpus GPUs, and prune the ones that cannot fit
 * (unless options->all). Errors (TPS_ERROR_INPUT): an op scenario, a GPU
 * count that no layout divides, no layout left (saying what removed them).
 * The scenario is copied. */
TpsSearch *tps_search_new(const TpsScenario *base, const TpsSearchOptions *options,
                          GError **error);
void tps_search_free(TpsSearch *search);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TpsSearch, tps_search_free)

/* The layouts kept, in enumeration order (tp, pp, vpp, micro-batch,
 * recompute, distributed optimizer, strategy table order). */
guint tps_search_n_points(const TpsSearch *search);
const TpsLayout *tps_search_layout(const TpsSearch *search, guint index);
const TpsSearchCounts *tps_search_counts(const TpsSearch *search);
const TpsScenario *tps_search_scenario(const TpsSearch *search);

/* The point's key: "tp8-pp4-vpp2-mb1-none-dopt-megatron", unique in the
 * space and stable across runs (resume, shards). Newly allocated. */
char *tps_layout_key(const TpsLayout *layout);

/* Set the layout's values on `sc` (tp, pp, vpp, dp, micro_batch, recompute,
 * distributed optimizer, sp): nothing is allocated. */
void tps_layout_apply(const TpsLayout *layout, TpsScenario *sc);

/* Memory per GPU of the busiest stage of `sc` under `strategy`, in GiB:
 * what tps_simulate() reports as memory_gib, without simulating. */
double tps_layout_memory_gib(const TpsScenario *sc, const TpsStrategy *strategy);

/* Evaluate point `index`: its memory, and when it fits the simulated step,
 * into `row` and `result` (either may be NULL). A layout that does not fit
 * is not simulated: its result has the memory, fits_memory FALSE and NAN
 * times. Thread-safe. `use_cache` FALSE simulates the layer again (for
 * tests). */
gboolean tps_search_evaluate(TpsSearch *search, guint index, gboolean use_cache,
                             TpsSearchRow *row, TpsResult *result, GError **error);

/* The row of point `index` from its result (tps_search_evaluate()'s). */
void tps_search_row_from_result(const TpsSearch *search, guint index, const TpsResult *result,
                                TpsSearchRow *row);

/* Sort rows best first: fitting before not, simulated by the objective,
 * then the smaller memory, then the enumeration order. */
void tps_search_rank(TpsSearchRow *rows, guint n, TpsObjective objective);

/* The rows a search's table and --emit-ub-cfg need, kept as the rows
 * arrive, in any order: the best `keep` of the ranking
 * (tps_search_rank()'s order), the best row that fits and uses
 * userbuffers, and counts. Its memory is bounded by `keep`, not by the
 * number of rows (issue 11: memory flat in the number of layouts). */
typedef struct {
    TpsObjective objective;
    guint keep;
    GArray *rows;       /* TpsSearchRow, ranked, at most keep */
    gboolean has_best_ub;
    TpsSearchRow best_ub; /* the first in the ranking that is simulated, fits, uses userbuffers */
    guint64 n, simulated; /* rows seen, simulated */
    gboolean any_unfit;   /* a row that does not fit was seen */
} TpsSearchTop;

TpsSearchTop *tps_search_top_new(guint keep, TpsObjective objective);
void tps_search_top_add(TpsSearchTop *top, const TpsSearchRow *row);
void tps_search_top_free(TpsSearchTop *top);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TpsSearchTop, tps_search_top_free)

/* A paragraph on why `best` beats `second` (both simulated): the
 * differences in bubble, exposed TP and DP communication, recompute and
 * memory, largest first. Newly allocated. */
char *tps_search_explain(const TpsSearchRow *best, const TpsSearchRow *second);

/* Objective names, NULL-terminated, indexed by TpsObjective. */
extern const char *const tps_objective_names[];
