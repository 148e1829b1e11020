/* The result columns (see result-columns.h). */
#include "io/output/result-columns.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

static const char *
scenario_name(const TpsScenario *sc, const TpsResult *r)
{
    (void)r;
    return sc->name;
}

static const char *
hardware_name(const TpsScenario *sc, const TpsResult *r)
{
    (void)r;
    return sc->hardware.name;
}

static const char *
hardware_file(const TpsScenario *sc, const TpsResult *r)
{
    (void)r;
    return sc->hardware_file ? sc->hardware_file : "";
}

static const char *
hardware_sha256(const TpsScenario *sc, const TpsResult *r)
{
    (void)r;
    return sc->hardware_sha256 ? sc->hardware_sha256 : "";
}

static const char *
strategy_name(const TpsScenario *sc, const TpsResult *r)
{
    (void)sc;
    return r->strategy->name;
}

/* The layout of a model scenario (issue 11: every row says which layout it
 * is, so that rows of sweeps and searches can be told apart). */
static guint64
layout_gpus(const TpsScenario *sc)
{
    return (guint64)sc->tp * sc->pp * sc->dp * MAX(sc->cp, 1u);
}

static guint64
layout_tp(const TpsScenario *sc)
{
    return sc->tp;
}

static guint64
layout_pp(const TpsScenario *sc)
{
    return sc->pp;
}

static guint64
layout_vpp(const TpsScenario *sc)
{
    return sc->vpp;
}

static guint64
layout_dp(const TpsScenario *sc)
{
    return sc->dp;
}

static guint64
layout_cp(const TpsScenario *sc)
{
    return MAX(sc->cp, 1u);
}

static guint64
layout_ep(const TpsScenario *sc)
{
    return MAX(sc->ep, 1u);
}

static guint64
layout_etp(const TpsScenario *sc)
{
    return tps_scenario_etp(sc);
}

static const char *
layout_cp_comm(const TpsScenario *sc, const TpsResult *r)
{
    (void)r;
    return tps_cp_comm_names[MIN((guint)sc->cp_comm, TPS_CP_COMM_COUNT - 1)];
}

static guint64
layout_micro_batch(const TpsScenario *sc)
{
    return sc->micro_batch;
}

static const char *
layout_recompute(const TpsScenario *sc, const TpsResult *r)
{
    (void)r;
    static const char *const names[] = {"none", "selective", "full"};
    return names[MIN((guint)sc->recompute, G_N_ELEMENTS(names) - 1)];
}

static double
layout_distributed_optimizer(const TpsScenario *sc, const TpsResult *r)
{
    (void)r;
    return sc->distributed_optimizer ? 1.0 : 0.0;
}

/* Why a strategy was not simulated ("" for a result); CSV only: a JSON
 * result has a "skipped" member only when it was skipped, and the table a
 * line of its own. */
static const char *
skipped_reason(const TpsScenario *sc, const TpsResult *r)
{
    (void)sc;
    return r->skipped;
}

/* What a sweep of a model scenario calls time_ms: one layer, both passes. */
static double
layer_time_ms(const TpsScenario *sc, const TpsResult *r)
{
    (void)sc;
    return r->forward_ms + r->backward_ms;
}

/* The table's `step +-`: the larger distance from the prediction to an end
 * of its band (the band is not symmetric; JSON and CSV give both ends). */
static double
step_spread_s(const TpsScenario *sc, const TpsResult *r)
{
    (void)sc;
    return MAX(r->step_time_s_high - r->step_time_s, r->step_time_s - r->step_time_s_low);
}

static double
op_spread_ms(const TpsScenario *sc, const TpsResult *r)
{
    (void)sc;
    return MAX(r->op_time_ms_high - r->op_time_ms, r->op_time_ms - r->op_time_ms_low);
}

/* Over the reference strategy (megatron, or sp-blocking for an op), from
 * the gain (reference time / this time - 1), whose throughput percentage
 * read as time saved overstated the saving (+38.1% for 27.6% less time). */
static double
speedup(const TpsScenario *sc, const TpsResult *r)
{
    (void)sc;
    return 1.0 + r->gain; /* reference time / this time; NAN stays NAN */
}

static double
time_saved(const TpsScenario *sc, const TpsResult *r)
{
    (void)sc;
    return r->gain / (1.0 + r->gain); /* 1 - this time / reference time */
}

/* The cluster's tokens per second over its GPUs (tp x pp x dp), the figure
 * that compares across cluster sizes. */
static double
tokens_per_gpu(const TpsScenario *sc, const TpsResult *r)
{
    return r->tokens_per_s / ((double)sc->tp * sc->pp * sc->dp * MAX(sc->cp, 1u));
}

/* The peak MFU and HFU are of, per GPU (TFLOP/s). */
static double
mfu_peak(const TpsScenario *sc, const TpsResult *r)
{
    (void)r;
    return tps_mfu_peak_tflops(&sc->hardware);
}

/* Tied with the fastest of the run (TpsTie): 1, 0, or NaN where the
 * result was not ranked (an empty cell, JSON null). */
static double
tied_with_fastest(const TpsScenario *sc, const TpsResult *r)
{
    (void)sc;
    return r->tied == TPS_TIE_UNRANKED ? NAN : r->tied == TPS_TIE_YES ? 1.0 : 0.0;
}

#define MEMBER(m) .offset = offsetof(TpsResult, m), .size = sizeof(((TpsResult *)NULL)->m)
#define MODEL TPS_COLUMN_MODEL
#define OP TPS_COLUMN_OP
#define BOTH TPS_COLUMN_BOTH
#define CSV_JSON (TPS_COLUMN_CSV | TPS_COLUMN_JSON)
#define REAL TPS_COLUMN_REAL
#define LAYOUT_COUNT(k, fn)                                                                        \
    {.key = k,                                                                                     \
     .scope = TPS_COLUMN_MODEL,                                                                    \
     .type = TPS_COLUMN_COUNT,                                                                     \
     .outputs = TPS_COLUMN_CSV | TPS_COLUMN_JSON,                                                  \
     .count = fn,                                                                                  \
     .of_scenario = TRUE}
#define TABLE(pos, h, u, d) .table_pos = pos, .head = h, .unit = u, .table_digits = d

/* Rows of both kinds first, then model scenarios', then op scenarios'; the
 * JSON of design.md ("JSON result") fixes the order within each kind. */
const TpsResultColumn tps_result_columns[] = {
    {.key = "scenario",
     .scope = BOTH,
     .type = TPS_COLUMN_TEXT,
     .outputs = TPS_COLUMN_CSV,
     .text = scenario_name,
     .of_scenario = TRUE},
    {.key = "hardware",
     .scope = BOTH,
     .type = TPS_COLUMN_TEXT,
     .outputs = TPS_COLUMN_CSV,
     .text = hardware_name,
     .of_scenario = TRUE},
    {.key = "strategy",
     .scope = BOTH,
     .type = TPS_COLUMN_TEXT,
     .outputs = CSV_JSON,
     .text = strategy_name,
     TABLE(1, "strategy", "", 0)},
    {.key = "skipped",
     .scope = BOTH,
     .type = TPS_COLUMN_TEXT,
     .outputs = TPS_COLUMN_CSV,
     .text = skipped_reason},
    /* Over the reference strategy: megatron, or blocking SP for an op. */
    {.key = "time_saved",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     .get = time_saved,
     TABLE(4, "saved vs megatron", "% time", 1),
     .table_scale = TPS_TABLE_PERCENT,
     .table_signed = TRUE},
    {.key = "time_saved",
     .scope = OP,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     .get = time_saved,
     TABLE(4, "saved vs blocking", "% time", 1),
     .table_scale = TPS_TABLE_PERCENT,
     .table_signed = TRUE},
    {.key = "speedup",
     .scope = BOTH,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     .get = speedup,
     TABLE(5, "speedup", "x", 2)},

    /* Model scenarios. */
    /* The layout (JSON: a "layout" object; the table of `run` says it in
     * the line under the results instead: eight more columns would not fit
     * a terminal). */
    LAYOUT_COUNT("layout.gpus", layout_gpus),
    LAYOUT_COUNT("layout.tp", layout_tp),
    LAYOUT_COUNT("layout.pp", layout_pp),
    LAYOUT_COUNT("layout.vpp", layout_vpp),
    LAYOUT_COUNT("layout.dp", layout_dp),
    {.key = "layout.cp",
     .scope = MODEL,
     .type = TPS_COLUMN_COUNT,
     .outputs = CSV_JSON,
     .count = layout_cp,
     .of_scenario = TRUE,
     .cp_only = TRUE},
    {.key = "layout.cp_comm",
     .scope = MODEL,
     .type = TPS_COLUMN_TEXT,
     .outputs = CSV_JSON,
     .text = layout_cp_comm,
     .of_scenario = TRUE,
     .cp_only = TRUE},
    {.key = "layout.ep",
     .scope = MODEL,
     .type = TPS_COLUMN_COUNT,
     .outputs = CSV_JSON,
     .count = layout_ep,
     .of_scenario = TRUE,
     .moe_only = TRUE},
    {.key = "layout.etp",
     .scope = MODEL,
     .type = TPS_COLUMN_COUNT,
     .outputs = CSV_JSON,
     .count = layout_etp,
     .of_scenario = TRUE,
     .moe_only = TRUE},
    LAYOUT_COUNT("layout.micro_batch", layout_micro_batch),
    {.key = "layout.recompute",
     .scope = MODEL,
     .type = TPS_COLUMN_TEXT,
     .outputs = CSV_JSON,
     .text = layout_recompute,
     .of_scenario = TRUE},
    {.key = "layout.distributed_optimizer",
     .scope = MODEL,
     .type = TPS_COLUMN_FLAG,
     .outputs = CSV_JSON,
     .get = layout_distributed_optimizer,
     .of_scenario = TRUE},
    /* A metric only (written nowhere: both passes are); first, so that
     * the default metric leads the list of names. */
    {.key = "time_ms",
     .scope = MODEL,
     .type = REAL,
     .get = layer_time_ms,
     .metric = "time_ms",
     .label = "layer forward + backward (ms)"},
    {.key = "step_time_s",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(step_time_s),
     TABLE(2, "step", "s", 3),
     .metric = "step_time_s",
     .label = "training step (s)"},
    /* The error band (docs/validation.md, "Error bands"). */
    {.key = "step_time_s_low",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(step_time_s_low)},
    {.key = "step_time_s_high",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(step_time_s_high)},
    {.key = "step_spread_s",
     .scope = MODEL,
     .type = REAL,
     .get = step_spread_s,
     TABLE(3, "step +-", "s", 3)},
    /* Per layer: one transformer layer, one micro-batch, one TP group, beside
     * the step's seconds; the CSV names say so (CSV has no objects). */
    {.key = "layer.forward_ms",
     .csv = "layer_forward_ms",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(forward_ms),
     TABLE(6, "layer fwd", "ms", 3),
     .metric = "forward_ms",
     .label = "layer forward (ms)"},
    {.key = "layer.backward_ms",
     .csv = "layer_backward_ms",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(backward_ms),
     TABLE(7, "layer bwd", "ms", 3),
     .metric = "backward_ms",
     .label = "layer backward (ms)"},
    /* A dense layer of a model that mixes dense and MoE layers (the two
     * above are an MoE layer's). */
    {.key = "layer.dense_forward_ms",
     .csv = "layer_dense_forward_ms",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(dense_forward_ms),
     .mixed_only = TRUE},
    {.key = "layer.dense_backward_ms",
     .csv = "layer_dense_backward_ms",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(dense_backward_ms),
     .mixed_only = TRUE},
    {.key = "layer.exposed_comm_ms",
     .csv = "layer_exposed_comm_ms",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(exposed_comm_ms),
     TABLE(8, "exposed comm/layer", "ms", 3),
     .metric = "exposed_comm_ms",
     .label = "exposed TP communication per layer (ms)"},
    {.key = "layer.tp_comm_ms",
     .csv = "layer_tp_comm_ms",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(tp_comm_ms),
     TABLE(9, "TP comm/layer", "ms", 3),
     .metric = "tp_comm_ms",
     .label = "TP communication busy time per layer (ms)"},
    /* Context parallelism's exchange of the same layer (its CP stream). */
    {.key = "layer.cp_exposed_ms",
     .csv = "layer_cp_exposed_ms",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(cp_exposed_ms),
     .cp_only = TRUE,
     .metric = "cp_exposed_ms",
     .label = "exposed CP communication per layer (ms)"},
    {.key = "layer.cp_comm_ms",
     .csv = "layer_cp_comm_ms",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(cp_comm_ms),
     .cp_only = TRUE,
     .metric = "cp_comm_ms",
     .label = "CP communication busy time per layer (ms)"},
    {.key = "layer.ep_exposed_ms",
     .csv = "layer_ep_exposed_ms",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(ep_exposed_ms),
     .moe_only = TRUE},
    {.key = "layer.ep_comm_ms",
     .csv = "layer_ep_comm_ms",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(ep_comm_ms),
     .moe_only = TRUE},
    /* MFU and HFU against the dense BF16 peak (tps_mfu_peak_tflops()),
     * which mfu_peak_tflops states, also under fp8. */
    {.key = "mfu",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(mfu),
     TABLE(10, "MFU", "% bf16", 1),
     .table_scale = TPS_TABLE_PERCENT},
    {.key = "memory_gib",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 4,
     MEMBER(memory_gib),
     TABLE(14, "memory", "GiB", 1)},
    {.key = "fits_memory",
     .scope = MODEL,
     .type = TPS_COLUMN_FLAG,
     .outputs = CSV_JSON,
     MEMBER(fits_memory),
     TABLE(15, "fits", "", 0)},
    /* What is left of the memory CUDA can allocate (gpu.memory_gib) on the
     * busiest GPU; negative: by how much it does not fit. */
    {.key = "memory_headroom_gib",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 4,
     MEMBER(memory_headroom_gib),
     TABLE(16, "headroom", "GiB", 1)},
    {.key = "hfu",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(hfu),
     TABLE(12, "HFU", "% bf16", 1),
     .table_scale = TPS_TABLE_PERCENT},
    {.key = "model_tflops_per_gpu",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 3,
     MEMBER(model_tflops_per_gpu),
     TABLE(11, "model", "TFLOP/s", 1)},
    {.key = "mfu_peak_tflops",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 1,
     .get = mfu_peak},
    {.key = "tokens_per_s_per_gpu",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 1,
     .get = tokens_per_gpu,
     TABLE(13, "tokens/GPU", "1/s", 0)},
    /* The whole cluster's (all tp x pp x dp GPUs). */
    {.key = "tokens_per_s_cluster",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 1,
     MEMBER(tokens_per_s)},
    {.key = "memory.stage",
     .scope = MODEL,
     .type = TPS_COLUMN_COUNT,
     .outputs = TPS_COLUMN_JSON,
     MEMBER(memory_stage)},
    {.key = "memory.weights_grads_gib",
     .scope = MODEL,
     .type = REAL,
     .outputs = TPS_COLUMN_JSON,
     .digits = 4,
     MEMBER(memory_weights_gib)},
    {.key = "memory.optimizer_gib",
     .scope = MODEL,
     .type = REAL,
     .outputs = TPS_COLUMN_JSON,
     .digits = 4,
     MEMBER(memory_optimizer_gib)},
    {.key = "memory.activations_gib",
     .scope = MODEL,
     .type = REAL,
     .outputs = TPS_COLUMN_JSON,
     .digits = 4,
     MEMBER(memory_activations_gib)},
    {.key = "memory.overheads_gib",
     .scope = MODEL,
     .type = REAL,
     .outputs = TPS_COLUMN_JSON,
     .digits = 4,
     MEMBER(memory_overheads_gib)},
    {.key = "memory.context_gib",
     .scope = MODEL,
     .type = REAL,
     .outputs = TPS_COLUMN_JSON,
     .digits = 4,
     MEMBER(memory_context_gib)},
    {.key = "memory.nccl_gib",
     .scope = MODEL,
     .type = REAL,
     .outputs = TPS_COLUMN_JSON,
     .digits = 4,
     MEMBER(memory_nccl_gib)},
    {.key = "memory.nvls_gib",
     .scope = MODEL,
     .type = REAL,
     .outputs = TPS_COLUMN_JSON,
     .digits = 4,
     MEMBER(memory_nvls_gib)},
    {.key = "memory.userbuffers_gib",
     .scope = MODEL,
     .type = REAL,
     .outputs = TPS_COLUMN_JSON,
     .digits = 4,
     MEMBER(memory_userbuffers_gib)},
    {.key = "memory.fragmentation_gib",
     .scope = MODEL,
     .type = REAL,
     .outputs = TPS_COLUMN_JSON,
     .digits = 4,
     MEMBER(memory_fragmentation_gib)},
    {.key = "pipeline.micro_batches",
     .scope = MODEL,
     .type = TPS_COLUMN_COUNT,
     .outputs = TPS_COLUMN_JSON,
     MEMBER(micro_batches)},
    {.key = "pipeline.bubble_fraction",
     .scope = MODEL,
     .type = REAL,
     .outputs = TPS_COLUMN_JSON,
     .digits = 6,
     MEMBER(bubble_fraction)},
    {.key = "pipeline.dp_exposed_ms",
     .scope = MODEL,
     .type = REAL,
     .outputs = TPS_COLUMN_JSON,
     .digits = 6,
     MEMBER(dp_exposed_ms)},
    {.key = "pipeline.param_gather_exposed_ms",
     .scope = MODEL,
     .type = REAL,
     .outputs = TPS_COLUMN_JSON,
     .digits = 6,
     MEMBER(param_gather_exposed_ms)},
    {.key = "pipeline.optimizer_ms",
     .scope = MODEL,
     .type = REAL,
     .outputs = TPS_COLUMN_JSON,
     .digits = 6,
     MEMBER(optimizer_ms)},

    /* Op scenarios. */
    {.key = "op.time_ms",
     .scope = OP,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(op_time_ms),
     TABLE(2, "time", "ms", 3),
     .metric = "time_ms",
     .label = "time of the op (ms)"},
    {.key = "op.time_ms_low",
     .scope = OP,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(op_time_ms_low)},
    {.key = "op.time_ms_high",
     .scope = OP,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(op_time_ms_high)},
    {.key = "op.time_spread_ms",
     .scope = OP,
     .type = REAL,
     .get = op_spread_ms,
     TABLE(3, "time +-", "ms", 3)},
    {.key = "op.gemm_ms",
     .scope = OP,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(op_gemm_ms),
     TABLE(6, "GEMM alone", "ms", 3)},
    {.key = "op.comm_ms",
     .scope = OP,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(op_comm_ms),
     TABLE(7, "comm", "ms", 3),
     .metric = "tp_comm_ms",
     .label = "TP communication busy time (ms)"},
    {.key = "op.overlap_efficiency",
     .scope = OP,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(op_overlap_efficiency),
     TABLE(8, "overlap eff.", "", 3),
     .metric = "overlap_efficiency",
     .label = "overlap efficiency (1 = fully hidden)"},

    /* Where the hardware model was read from (JSON: in the head). */
    {.key = "hardware_file",
     .scope = BOTH,
     .type = TPS_COLUMN_TEXT,
     .outputs = TPS_COLUMN_CSV,
     .text = hardware_file,
     .of_scenario = TRUE},
    {.key = "hardware_sha256",
     .scope = BOTH,
     .type = TPS_COLUMN_TEXT,
     .outputs = TPS_COLUMN_CSV,
     .text = hardware_sha256,
     .of_scenario = TRUE},
    /* Last: added after the columns above were published (issue 25). */
    {.key = "tied",
     .scope = BOTH,
     .type = TPS_COLUMN_FLAG,
     .outputs = CSV_JSON,
     .get = tied_with_fastest,
     .ranked_only = TRUE},
};

const guint tps_result_n_columns = G_N_ELEMENTS(tps_result_columns);

#undef MEMBER
#undef MODEL
#undef OP
#undef BOTH
#undef CSV_JSON
#undef REAL
#undef TABLE
#undef LAYOUT_COUNT

gboolean
tps_result_column_applies(const TpsResultColumn *column, const TpsScenario *scenario)
{
    g_return_val_if_fail(column != NULL && scenario != NULL, FALSE);
    if (column->cp_only && scenario->cp <= 1 && !scenario->cp_columns)
        return FALSE;
    if (column->moe_only && !tps_scenario_is_moe(scenario))
        return FALSE;
    if (column->mixed_only && !tps_scenario_mixes_layers(scenario))
        return FALSE;
    return (column->scope & (scenario->is_op ? TPS_COLUMN_OP : TPS_COLUMN_MODEL)) != 0;
}

guint64
tps_result_column_count(const TpsResultColumn *column, const TpsScenario *scenario,
                        const TpsResult *result)
{
    g_return_val_if_fail(column != NULL && result != NULL, 0);
    g_return_val_if_fail(column->type == TPS_COLUMN_COUNT, 0);
    if (column->count != NULL)
        return column->count(scenario);
    if (column->size == sizeof(guint64))
        return G_STRUCT_MEMBER(guint64, result, column->offset);
    g_return_val_if_fail(column->size == sizeof(guint), 0);
    return G_STRUCT_MEMBER(guint, result, column->offset);
}

double
tps_result_column_number(const TpsResultColumn *column, const TpsScenario *scenario,
                         const TpsResult *result)
{
    g_return_val_if_fail(column != NULL && result != NULL, NAN);
    switch (column->type) {
    case TPS_COLUMN_REAL:
        if (column->get != NULL)
            return column->get(scenario, result);
        g_return_val_if_fail(column->size == sizeof(double), NAN);
        return G_STRUCT_MEMBER(double, result, column->offset);
    case TPS_COLUMN_COUNT:
        return (double)tps_result_column_count(column, scenario, result);
    case TPS_COLUMN_FLAG:
        if (column->get != NULL) {
            const double v = column->get(scenario, result);
            return isnan(v) ? NAN : v != 0 ? 1.0 : 0.0;
        }
        g_return_val_if_fail(column->size == sizeof(gboolean), NAN);
        return G_STRUCT_MEMBER(gboolean, result, column->offset) ? 1.0 : 0.0;
    case TPS_COLUMN_TEXT:
        break;
    }
    g_return_val_if_reached(NAN);
}

const char *
tps_result_column_csv_name(const TpsResultColumn *column)
{
    g_return_val_if_fail(column != NULL, NULL);
    if (column->csv != NULL)
        return column->csv;
    const char *dot = strrchr(column->key, '.');
    return dot != NULL ? dot + 1 : column->key;
}

const char **
tps_result_metric_names(void)
{
    GPtrArray *names = g_ptr_array_new();
    for (guint i = 0; i < tps_result_n_columns; i++) {
        const char *metric = tps_result_columns[i].metric;
        if (metric == NULL)
            continue;
        gboolean seen = FALSE;
        for (guint j = 0; j < names->len && !seen; j++)
            seen = strcmp(g_ptr_array_index(names, j), metric) == 0;
        if (!seen)
            g_ptr_array_add(names, (gpointer)metric);
    }
    g_ptr_array_add(names, NULL);
    return (const char **)g_ptr_array_free(names, FALSE);
}

const TpsResultColumn *
tps_result_metric_lookup(const char *name, const TpsScenario *scenario)
{
    g_return_val_if_fail(name != NULL && scenario != NULL, NULL);
    for (guint i = 0; i < tps_result_n_columns; i++) {
        const TpsResultColumn *column = &tps_result_columns[i];
        if (column->metric != NULL && strcmp(column->metric, name) == 0 &&
            tps_result_column_applies(column, scenario))
            return column;
    }
    return NULL;
}
