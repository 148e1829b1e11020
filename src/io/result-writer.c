#include "io/result-writer.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#include "core/error.h"

#include "version.h"

const char *const tps_format_names[] = {"table", "csv", "json", NULL};

/* Round for output so that the JSON stays readable and stable. */
static double
round_to(double v, double digits)
{
    double scale = pow(10.0, digits);
    return round(v * scale) / scale;
}

static const char *
coll_short(TpsCollKind kind)
{
    static const char *const names[] = {"AG", "RS", "AR", "-"};
    return names[MIN((guint)kind, (guint)TPS_COLL_COUNT)];
}

static void
json_double_or_null(JsonBuilder *jb, const char *member, double v, double digits)
{
    json_builder_set_member_name(jb, member);
    if (isnan(v))
        json_builder_add_null_value(jb);
    else
        json_builder_add_double_value(jb, round_to(v, digits));
}

static void
json_breakdown(JsonBuilder *jb, const TpsResult *r)
{
    json_builder_set_member_name(jb, "gemms");
    json_builder_begin_array(jb);
    for (guint slot = 0; slot < TPS_GEMM_SLOT_COUNT; slot++) {
        const TpsGemmBreakdown *g = &r->gemms[slot];
        if (!g->present)
            continue;
        json_builder_begin_object(jb);
        json_builder_set_member_name(jb, "gemm");
        json_builder_add_string_value(jb, tps_gemm_slot_names[slot]);
        json_builder_set_member_name(jb, "collective");
        if (g->collective == TPS_COLL_COUNT)
            json_builder_add_null_value(jb);
        else
            json_builder_add_string_value(jb, tps_coll_kind_names[g->collective]);
        json_builder_set_member_name(jb, "method");
        json_builder_add_string_value(jb, tps_method_names[g->method]);
        json_double_or_null(jb, "time_ms", g->time_ms, 6);
        json_double_or_null(jb, "gemm_ms", g->gemm_ms, 6);
        json_double_or_null(jb, "comm_ms", g->comm_ms, 6);
        json_double_or_null(jb, "exposed_ms", g->exposed_ms, 6);
        json_double_or_null(jb, "overlap_efficiency", g->efficiency, 6);
        if (g->note[0]) {
            json_builder_set_member_name(jb, "note");
            json_builder_add_string_value(jb, g->note);
        }
        json_builder_end_object(jb);
    }
    json_builder_end_array(jb);
}

static char *
format_json(const TpsScenario *sc, const TpsResult *results, guint n, gboolean breakdown)
{
    g_autoptr(JsonBuilder) jb = json_builder_new();
    json_builder_begin_object(jb);
    json_builder_set_member_name(jb, "tool");
    json_builder_add_string_value(jb, "tpsim");
    json_builder_set_member_name(jb, "version");
    json_builder_add_string_value(jb, TPS_VERSION);
    json_builder_set_member_name(jb, "scenario");
    json_builder_add_string_value(jb, sc->name);
    json_builder_set_member_name(jb, "hardware");
    json_builder_add_string_value(jb, sc->hardware.name);
    json_builder_set_member_name(jb, "seed");
    json_builder_add_int_value(jb, (gint64)sc->seed);
    json_builder_set_member_name(jb, "results");
    json_builder_begin_array(jb);
    for (guint i = 0; i < n; i++) {
        const TpsResult *r = &results[i];
        json_builder_begin_object(jb);
        json_builder_set_member_name(jb, "strategy");
        json_builder_add_string_value(jb, r->strategy->name);
        json_double_or_null(jb, "gain", r->gain, 6);
        if (sc->is_op) {
            json_builder_set_member_name(jb, "op");
            json_builder_begin_object(jb);
            json_double_or_null(jb, "time_ms", r->op_time_ms, 6);
            json_double_or_null(jb, "gemm_ms", r->op_gemm_ms, 6);
            json_double_or_null(jb, "comm_ms", r->op_comm_ms, 6);
            json_double_or_null(jb, "overlap_efficiency", r->op_overlap_efficiency, 6);
            json_builder_end_object(jb);
        } else {
            json_double_or_null(jb, "step_time_s", r->step_time_s, 6);
            json_builder_set_member_name(jb, "layer");
            json_builder_begin_object(jb);
            json_double_or_null(jb, "forward_ms", r->forward_ms, 6);
            json_double_or_null(jb, "backward_ms", r->backward_ms, 6);
            json_builder_end_object(jb);
            json_double_or_null(jb, "exposed_comm_ms", r->exposed_comm_ms, 6);
            json_double_or_null(jb, "tp_comm_ms", r->tp_comm_ms, 6);
            json_double_or_null(jb, "mfu", r->mfu, 6);
            json_double_or_null(jb, "memory_gib", r->memory_gib, 4);
            json_builder_set_member_name(jb, "fits_memory");
            json_builder_add_boolean_value(jb, r->fits_memory);
            json_double_or_null(jb, "hfu", r->hfu, 6);
            json_double_or_null(jb, "tokens_per_s", r->tokens_per_s, 1);
            json_builder_set_member_name(jb, "memory");
            json_builder_begin_object(jb);
            json_builder_set_member_name(jb, "stage");
            json_builder_add_int_value(jb, r->memory_stage);
            json_double_or_null(jb, "weights_grads_gib", r->memory_weights_gib, 4);
            json_double_or_null(jb, "optimizer_gib", r->memory_optimizer_gib, 4);
            json_double_or_null(jb, "activations_gib", r->memory_activations_gib, 4);
            json_builder_end_object(jb);
            json_builder_set_member_name(jb, "pipeline");
            json_builder_begin_object(jb);
            json_builder_set_member_name(jb, "micro_batches");
            json_builder_add_int_value(jb, (gint64)r->micro_batches);
            json_double_or_null(jb, "bubble_fraction", r->bubble_fraction, 6);
            json_double_or_null(jb, "dp_exposed_ms", r->dp_exposed_ms, 6);
            json_double_or_null(jb, "optimizer_ms", r->optimizer_ms, 6);
            json_builder_end_object(jb);
            if (breakdown)
                json_breakdown(jb, r);
        }
        json_builder_end_object(jb);
    }
    json_builder_end_array(jb);
    json_builder_end_object(jb);

    g_autoptr(JsonNode) root = json_builder_get_root(jb);
    g_autoptr(JsonGenerator) gen = json_generator_new();
    json_generator_set_pretty(gen, TRUE);
    json_generator_set_indent(gen, 2);
    json_generator_set_root(gen, root);
    char *text = json_generator_to_data(gen, NULL);
    char *out = g_strconcat(text, "\n", NULL);
    g_free(text);
    return out;
}

static char *
format_csv(const TpsScenario *sc, const TpsResult *results, guint n)
{
    GString *s = g_string_new(NULL);
    char buf[9][G_ASCII_DTOSTR_BUF_SIZE];
    if (sc->is_op)
        g_string_append(s, "scenario,hardware,strategy,time_ms,gemm_ms,comm_ms,overlap_efficiency\n");
    else
        g_string_append(s, "scenario,hardware,strategy,step_time_s,forward_ms,backward_ms,"
                           "exposed_comm_ms,tp_comm_ms,mfu,memory_gib,fits_memory,hfu,"
                           "tokens_per_s\n");
    for (guint i = 0; i < n; i++) {
        const TpsResult *r = &results[i];
        if (sc->is_op) {
            g_string_append_printf(
                s, "%s,%s,%s,%s,%s,%s,%s\n", sc->name, sc->hardware.name, r->strategy->name,
                g_ascii_formatd(buf[0], sizeof buf[0], "%.6f", r->op_time_ms),
                g_ascii_formatd(buf[1], sizeof buf[1], "%.6f", r->op_gemm_ms),
                g_ascii_formatd(buf[2], sizeof buf[2], "%.6f", r->op_comm_ms),
                g_ascii_formatd(buf[3], sizeof buf[3], "%.6f", r->op_overlap_efficiency));
        } else {
            g_string_append_printf(
                s, "%s,%s,%s,%s,%s,%s,%s,", sc->name, sc->hardware.name, r->strategy->name,
                g_ascii_formatd(buf[0], sizeof buf[0], "%.6f", r->step_time_s),
                g_ascii_formatd(buf[1], sizeof buf[1], "%.6f", r->forward_ms),
                g_ascii_formatd(buf[2], sizeof buf[2], "%.6f", r->backward_ms),
                g_ascii_formatd(buf[3], sizeof buf[3], "%.6f", r->exposed_comm_ms));
            g_string_append_printf(
                s, "%s,%s,%s,%s,%s,%s\n",
                g_ascii_formatd(buf[4], sizeof buf[4], "%.6f", r->tp_comm_ms),
                g_ascii_formatd(buf[5], sizeof buf[5], "%.6f", r->mfu),
                g_ascii_formatd(buf[6], sizeof buf[6], "%.4f", r->memory_gib),
                r->fits_memory ? "true" : "false",
                g_ascii_formatd(buf[7], sizeof buf[7], "%.6f", r->hfu),
                g_ascii_formatd(buf[8], sizeof buf[8], "%.1f", r->tokens_per_s));
        }
    }
    return g_string_free(s, FALSE);
}

static char *
gain_cell(double gain)
{
    return isnan(gain) ? g_strdup("-") : g_strdup_printf("%+.1f", 100.0 * gain);
}

/* Rows of cells (`cols` per row, first row the header, second the units)
 * appended to `s` as an aligned table: first column left, others right. */
static void
append_aligned(GString *s, GPtrArray *cells, guint cols)
{
    guint rows = cells->len / cols;
    g_autofree gsize *width = g_new0(gsize, cols);
    for (guint r = 0; r < rows; r++)
        for (guint c = 0; c < cols; c++)
            width[c] = MAX(width[c], strlen(g_ptr_array_index(cells, r * cols + c)));
    for (guint r = 0; r < rows; r++) {
        for (guint c = 0; c < cols; c++)
            g_string_append_printf(s, c == 0 ? "%-*s" : "  %*s", (int)width[c],
                                   (const char *)g_ptr_array_index(cells, r * cols + c));
        while (s->len > 0 && s->str[s->len - 1] == ' ')
            g_string_truncate(s, s->len - 1);
        g_string_append_c(s, '\n');
    }
}

static void
table_breakdown(GString *s, const TpsResult *r)
{
    static const char *const head[] = {"GEMM", "collective", "method", "time", "GEMM",
                                       "comm", "exposed", "overlap eff."};
    static const char *const unit[] = {"", "", "", "ms", "ms", "ms", "ms", ""};
    g_autoptr(GPtrArray) cells = g_ptr_array_new_with_free_func(g_free);
    for (guint c = 0; c < G_N_ELEMENTS(head); c++)
        g_ptr_array_add(cells, g_strdup(head[c]));
    for (guint c = 0; c < G_N_ELEMENTS(unit); c++)
        g_ptr_array_add(cells, g_strdup(unit[c]));
    for (guint slot = 0; slot < TPS_GEMM_SLOT_COUNT; slot++) {
        const TpsGemmBreakdown *g = &r->gemms[slot];
        if (!g->present)
            continue;
        g_ptr_array_add(cells, g_strdup(tps_gemm_slot_names[slot]));
        g_ptr_array_add(cells, g_strdup(coll_short(g->collective)));
        g_ptr_array_add(cells, g_strdup(tps_method_names[g->method]));
        g_ptr_array_add(cells, g_strdup_printf("%.3f", g->time_ms));
        g_ptr_array_add(cells, g_strdup_printf("%.3f", g->gemm_ms));
        g_ptr_array_add(cells, g_strdup_printf("%.3f", g->comm_ms));
        g_ptr_array_add(cells, g_strdup_printf("%.3f", g->exposed_ms));
        g_ptr_array_add(cells,
                        isnan(g->efficiency) ? g_strdup("-") : g_strdup_printf("%.2f", g->efficiency));
    }
    g_string_append_printf(s, "\n%s: per GEMM of one layer (forward and backward)\n",
                           r->strategy->name);
    append_aligned(s, cells, G_N_ELEMENTS(head));
    for (guint slot = 0; slot < TPS_GEMM_SLOT_COUNT; slot++)
        if (r->gemms[slot].present && r->gemms[slot].note[0])
            g_string_append_printf(s, "  %s: %s\n", tps_gemm_slot_names[slot],
                                   r->gemms[slot].note);
}

/* What the step and memory figures rest on (the same for every strategy
 * but the times): the layout, the pipeline, and what fills the busiest GPU. */
static void
append_step_notes(GString *s, const TpsScenario *sc, const TpsResult *r)
{
    const char *parts[3] = {"weights and gradients", "optimizer states", "activations"};
    double gib[3] = {r->memory_weights_gib, r->memory_optimizer_gib, r->memory_activations_gib};
    guint top = 0;
    for (guint i = 1; i < 3; i++)
        if (gib[i] > gib[top])
            top = i;
    g_string_append_printf(s,
                           "\nlayout: tp=%u pp=%u vpp=%u dp=%u (%u GPUs), %" G_GUINT64_FORMAT
                           " micro-batches of %" G_GUINT64_FORMAT " per replica; %s's pipeline "
                           "bubble %.1f%% of stage 0, DP reduction exposed %.3f ms\n",
                           sc->tp, sc->pp, sc->vpp, sc->dp, sc->tp * sc->pp * sc->dp,
                           r->micro_batches, sc->micro_batch, r->strategy->name,
                           100.0 * r->bubble_fraction, r->dp_exposed_ms);
    g_string_append_printf(s,
                           "memory: %.1f GiB per GPU on stage %u (weights and gradients %.1f, "
                           "optimizer states %.1f, activations %.1f): %s dominate%s\n",
                           r->memory_gib, r->memory_stage, gib[0], gib[1], gib[2], parts[top],
                           r->fits_memory ? "" : "; does NOT fit");
}

/* An aligned table: a header row, a units row, one row per strategy. */
static char *
format_table(const TpsScenario *sc, const TpsResult *results, guint n, gboolean breakdown)
{
    const char *const model_head[] = {"strategy", "step", "vs megatron", "layer fwd", "layer bwd",
                                      "exposed comm", "TP comm", "MFU", "HFU", "tokens", "memory",
                                      "fits", NULL};
    const char *const model_unit[] = {"", "s", "%", "ms", "ms", "ms", "ms", "%", "%", "k/s", "GiB",
                                      "", NULL};
    const char *const op_head[] = {"strategy", "time", "vs blocking", "GEMM alone", "comm",
                                   "overlap eff.", NULL};
    const char *const op_unit[] = {"", "ms", "%", "ms", "ms", "", NULL};
    const char *const *head = sc->is_op ? op_head : model_head;
    const char *const *unit = sc->is_op ? op_unit : model_unit;
    guint cols = g_strv_length((char **)head);
    g_autoptr(GPtrArray) cells = g_ptr_array_new_with_free_func(g_free);

    for (guint i = 0; i < n; i++) {
        const TpsResult *r = &results[i];
        g_ptr_array_add(cells, g_strdup(r->strategy->name));
        if (sc->is_op) {
            g_ptr_array_add(cells, g_strdup_printf("%.3f", r->op_time_ms));
            g_ptr_array_add(cells, gain_cell(r->gain));
            g_ptr_array_add(cells, g_strdup_printf("%.3f", r->op_gemm_ms));
            g_ptr_array_add(cells, g_strdup_printf("%.3f", r->op_comm_ms));
            g_ptr_array_add(cells, g_strdup_printf("%.3f", r->op_overlap_efficiency));
        } else {
            g_ptr_array_add(cells, g_strdup_printf("%.3f", r->step_time_s));
            g_ptr_array_add(cells, gain_cell(r->gain));
            g_ptr_array_add(cells, g_strdup_printf("%.3f", r->forward_ms));
            g_ptr_array_add(cells, g_strdup_printf("%.3f", r->backward_ms));
            g_ptr_array_add(cells, g_strdup_printf("%.3f", r->exposed_comm_ms));
            g_ptr_array_add(cells, g_strdup_printf("%.3f", r->tp_comm_ms));
            g_ptr_array_add(cells, g_strdup_printf("%.1f", 100.0 * r->mfu));
            g_ptr_array_add(cells, g_strdup_printf("%.1f", 100.0 * r->hfu));
            g_ptr_array_add(cells, g_strdup_printf("%.1f", r->tokens_per_s / 1e3));
            g_ptr_array_add(cells, g_strdup_printf("%.1f", r->memory_gib));
            g_ptr_array_add(cells, g_strdup(r->fits_memory ? "yes" : "NO"));
        }
    }

    GString *s = g_string_new(NULL);
    g_string_append_printf(s, "scenario %s on %s", sc->name, sc->hardware.name);
    if (sc->is_op)
        g_string_append_printf(s, ": %s m=%" G_GUINT64_FORMAT " n=%" G_GUINT64_FORMAT
                                  " k=%" G_GUINT64_FORMAT " tp=%u\n",
                               sc->op_kind == TPS_OP_AG_GEMM ? "ag_gemm" : "gemm_rs", sc->m, sc->n,
                               sc->k, sc->tp);
    else
        g_string_append_printf(s, ": %" G_GUINT64_FORMAT " layers, hidden %" G_GUINT64_FORMAT
                                  ", seq %" G_GUINT64_FORMAT ", tp=%u sp=%s\n",
                               sc->layers, sc->hidden, sc->seq_len, sc->tp,
                               sc->sp ? "on" : "off");
    g_autoptr(GPtrArray) all = g_ptr_array_new_with_free_func(g_free);
    for (guint c = 0; c < cols; c++)
        g_ptr_array_add(all, g_strdup(head[c]));
    for (guint c = 0; c < cols; c++)
        g_ptr_array_add(all, g_strdup(unit[c]));
    for (guint i = 0; i < cells->len; i++)
        g_ptr_array_add(all, g_strdup(g_ptr_array_index(cells, i)));
    append_aligned(s, all, cols);
    if (!sc->is_op && n > 0)
        append_step_notes(s, sc, &results[0]);
    if (breakdown && !sc->is_op)
        for (guint i = 0; i < n; i++)
            table_breakdown(s, &results[i]);
    return g_string_free(s, FALSE);
}

char *
tps_result_format(const TpsScenario *scenario, const TpsResult *results, guint n, TpsFormat format,
                  gboolean breakdown)
{
    switch (format) {
    case TPS_FORMAT_JSON:
        return format_json(scenario, results, n, breakdown);
    case TPS_FORMAT_CSV:
        return format_csv(scenario, results, n);
    case TPS_FORMAT_TABLE:
    default:
        return format_table(scenario, results, n, breakdown);
    }
}
