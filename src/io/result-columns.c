/* The result columns (see result-columns.h). */
#include "io/result-columns.h"

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
strategy_name(const TpsScenario *sc, const TpsResult *r)
{
    (void)sc;
    return r->strategy->name;
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
    return r->tokens_per_s / ((double)sc->tp * sc->pp * sc->dp);
}

#define MEMBER(m) .offset = offsetof(TpsResult, m), .size = sizeof(((TpsResult *)NULL)->m)
#define MODEL TPS_COLUMN_MODEL
#define OP TPS_COLUMN_OP
#define BOTH TPS_COLUMN_BOTH
#define CSV_JSON (TPS_COLUMN_CSV | TPS_COLUMN_JSON)
#define REAL TPS_COLUMN_REAL
#define TABLE(pos, h, u, d) .table_pos = pos, .head = h, .unit = u, .table_digits = d

/* Rows of both kinds first, then model scenarios', then op scenarios'; the
 * JSON of design.md ("JSON result") fixes the order within each kind. */
const TpsResultColumn tps_result_columns[] = {
    {.key = "scenario",
     .scope = BOTH,
     .type = TPS_COLUMN_TEXT,
     .outputs = TPS_COLUMN_CSV,
     .text = scenario_name},
    {.key = "hardware",
     .scope = BOTH,
     .type = TPS_COLUMN_TEXT,
     .outputs = TPS_COLUMN_CSV,
     .text = hardware_name},
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
     TABLE(3, "saved vs megatron", "% time", 1),
     .table_scale = TPS_TABLE_PERCENT,
     .table_signed = TRUE},
    {.key = "time_saved",
     .scope = OP,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     .get = time_saved,
     TABLE(3, "saved vs blocking", "% time", 1),
     .table_scale = TPS_TABLE_PERCENT,
     .table_signed = TRUE},
    {.key = "speedup",
     .scope = BOTH,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     .get = speedup,
     TABLE(4, "speedup", "x", 2)},

    /* Model scenarios. */
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
    /* Per layer: one transformer layer, one micro-batch, one TP group, beside
     * the step's seconds; the CSV names say so (CSV has no objects). */
    {.key = "layer.forward_ms",
     .csv = "layer_forward_ms",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(forward_ms),
     TABLE(5, "layer fwd", "ms", 3),
     .metric = "forward_ms",
     .label = "layer forward (ms)"},
    {.key = "layer.backward_ms",
     .csv = "layer_backward_ms",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(backward_ms),
     TABLE(6, "layer bwd", "ms", 3),
     .metric = "backward_ms",
     .label = "layer backward (ms)"},
    {.key = "layer.exposed_comm_ms",
     .csv = "layer_exposed_comm_ms",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(exposed_comm_ms),
     TABLE(7, "exposed comm/layer", "ms", 3),
     .metric = "exposed_comm_ms",
     .label = "exposed TP communication per layer (ms)"},
    {.key = "layer.tp_comm_ms",
     .csv = "layer_tp_comm_ms",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(tp_comm_ms),
     TABLE(8, "TP comm/layer", "ms", 3),
     .metric = "tp_comm_ms",
     .label = "TP communication busy time per layer (ms)"},
    {.key = "mfu",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(mfu),
     TABLE(9, "MFU", "%", 1),
     .table_scale = TPS_TABLE_PERCENT},
    {.key = "memory_gib",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 4,
     MEMBER(memory_gib),
     TABLE(12, "memory", "GiB", 1)},
    {.key = "fits_memory",
     .scope = MODEL,
     .type = TPS_COLUMN_FLAG,
     .outputs = CSV_JSON,
     MEMBER(fits_memory),
     TABLE(13, "fits", "", 0)},
    {.key = "hfu",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(hfu),
     TABLE(10, "HFU", "%", 1),
     .table_scale = TPS_TABLE_PERCENT},
    {.key = "tokens_per_s_per_gpu",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 1,
     .get = tokens_per_gpu,
     TABLE(11, "tokens/GPU", "1/s", 0)},
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
    {.key = "op.gemm_ms",
     .scope = OP,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(op_gemm_ms),
     TABLE(5, "GEMM alone", "ms", 3)},
    {.key = "op.comm_ms",
     .scope = OP,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(op_comm_ms),
     TABLE(6, "comm", "ms", 3),
     .metric = "tp_comm_ms",
     .label = "TP communication busy time (ms)"},
    {.key = "op.overlap_efficiency",
     .scope = OP,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(op_overlap_efficiency),
     TABLE(7, "overlap eff.", "", 3),
     .metric = "overlap_efficiency",
     .label = "overlap efficiency (1 = fully hidden)"},
};

const guint tps_result_n_columns = G_N_ELEMENTS(tps_result_columns);

#undef MEMBER
#undef MODEL
#undef OP
#undef BOTH
#undef CSV_JSON
#undef REAL
#undef TABLE

gboolean
tps_result_column_applies(const TpsResultColumn *column, const TpsScenario *scenario)
{
    g_return_val_if_fail(column != NULL && scenario != NULL, FALSE);
    return (column->scope & (scenario->is_op ? TPS_COLUMN_OP : TPS_COLUMN_MODEL)) != 0;
}

guint64
tps_result_column_count(const TpsResultColumn *column, const TpsResult *result)
{
    g_return_val_if_fail(column != NULL && result != NULL, 0);
    g_return_val_if_fail(column->type == TPS_COLUMN_COUNT, 0);
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
        return (double)tps_result_column_count(column, result);
    case TPS_COLUMN_FLAG:
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
