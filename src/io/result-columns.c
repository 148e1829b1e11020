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

/* The layout of a model scenario (issue 11: every row says which layout it
 * is, so that rows of sweeps and searches can be told apart). */
static guint64
layout_gpus(const TpsScenario *sc)
{
    return (guint64)sc->tp * sc->pp * sc->dp;
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

/* What a sweep of a model scenario calls time_ms: one layer, both passes. */
static double
layer_time_ms(const TpsScenario *sc, const TpsResult *r)
{
    (void)sc;
    return r->forward_ms + r->backward_ms;
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
    /* Over the reference strategy: megatron, or blocking SP for an op. */
    {.key = "gain",
     .scope = MODEL,
     .type = REAL,
     .outputs = TPS_COLUMN_JSON,
     .digits = 6,
     MEMBER(gain),
     TABLE(3, "vs megatron", "%", 1),
     .table_scale = TPS_TABLE_PERCENT,
     .table_signed = TRUE},
    {.key = "gain",
     .scope = OP,
     .type = REAL,
     .outputs = TPS_COLUMN_JSON,
     .digits = 6,
     MEMBER(gain),
     TABLE(3, "vs blocking", "%", 1),
     .table_scale = TPS_TABLE_PERCENT,
     .table_signed = TRUE},

    /* Model scenarios. */
    /* The layout (JSON: a "layout" object; the table of `run` says it in
     * the line under the results instead: eight more columns would not fit
     * a terminal). */
    LAYOUT_COUNT("layout.gpus", layout_gpus),
    LAYOUT_COUNT("layout.tp", layout_tp),
    LAYOUT_COUNT("layout.pp", layout_pp),
    LAYOUT_COUNT("layout.vpp", layout_vpp),
    LAYOUT_COUNT("layout.dp", layout_dp),
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
    {.key = "layer.forward_ms",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(forward_ms),
     TABLE(4, "layer fwd", "ms", 3),
     .metric = "forward_ms",
     .label = "layer forward (ms)"},
    {.key = "layer.backward_ms",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(backward_ms),
     TABLE(5, "layer bwd", "ms", 3),
     .metric = "backward_ms",
     .label = "layer backward (ms)"},
    {.key = "exposed_comm_ms",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(exposed_comm_ms),
     TABLE(6, "exposed comm", "ms", 3),
     .metric = "exposed_comm_ms",
     .label = "exposed TP communication per layer (ms)"},
    {.key = "tp_comm_ms",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(tp_comm_ms),
     TABLE(7, "TP comm", "ms", 3),
     .metric = "tp_comm_ms",
     .label = "TP communication busy time (ms)"},
    {.key = "mfu",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(mfu),
     TABLE(8, "MFU", "%", 1),
     .table_scale = TPS_TABLE_PERCENT},
    {.key = "memory_gib",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 4,
     MEMBER(memory_gib),
     TABLE(11, "memory", "GiB", 1)},
    {.key = "fits_memory",
     .scope = MODEL,
     .type = TPS_COLUMN_FLAG,
     .outputs = CSV_JSON,
     MEMBER(fits_memory),
     TABLE(12, "fits", "", 0)},
    {.key = "hfu",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(hfu),
     TABLE(9, "HFU", "%", 1),
     .table_scale = TPS_TABLE_PERCENT},
    {.key = "tokens_per_s",
     .scope = MODEL,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 1,
     MEMBER(tokens_per_s),
     TABLE(10, "tokens", "k/s", 1),
     .table_scale = TPS_TABLE_THOUSANDS},
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
     TABLE(4, "GEMM alone", "ms", 3)},
    {.key = "op.comm_ms",
     .scope = OP,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(op_comm_ms),
     TABLE(5, "comm", "ms", 3),
     .metric = "tp_comm_ms",
     .label = "TP communication busy time (ms)"},
    {.key = "op.overlap_efficiency",
     .scope = OP,
     .type = REAL,
     .outputs = CSV_JSON,
     .digits = 6,
     MEMBER(op_overlap_efficiency),
     TABLE(6, "overlap eff.", "", 3),
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
#undef LAYOUT_COUNT

gboolean
tps_result_column_applies(const TpsResultColumn *column, const TpsScenario *scenario)
{
    g_return_val_if_fail(column != NULL && scenario != NULL, FALSE);
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
        if (column->get != NULL)
            return column->get(scenario, result) != 0 ? 1.0 : 0.0;
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
