/* Figure definitions: see plot-file.h. */
#include "render/plot-file.h"

#include <math.h>
#include <string.h>

#include "core/error.h"
#include "io/result-columns.h"
#include "io/scenario-file.h"
#include "io/yaml-tree.h"
#include "render/chart.h"
#include "render/draw.h"
#include "render/figure.h"
#include "sched/method.h"
#include "sched/simulate.h"
#include "sched/strategy.h"

static const char *const timeline_keys[] = {"kind",    "scenario", "title",  "strategies", "output",
                                            "formats", "width",    "rank",   "pass",       "window",
                                            "links",   "streams",  "labels", NULL};
static const char *const sweep_keys[] = {"kind",   "scenario", "title",  "strategies",
                                         "output", "formats",  "width",  "parameter",
                                         "values", "metric",   "x_log2", NULL};
static const char *const kind_names[] = {"timeline", "sweep", NULL};
static const char *const format_names[] = {"png", "svg", "pdf", NULL};

typedef enum {
    PARAM_NUM_SPLITS,
    PARAM_SEQ_LEN,
    PARAM_TP
} Param;
static const char *const param_names[] = {"num_splits", "seq_len", "tp", NULL};
static const char *const param_labels[] = {"num_splits (chunks per GEMM)",
                                           "sequence length (tokens)", "TP degree (GPUs)"};

typedef struct {
    TpsYamlDoc *doc;
    TpsScenario scenario;
    gboolean scenario_loaded;
    const TpsStrategy **strategies;
    guint n_strategies;
    char *output;
    gboolean formats[3];
    const char *title;
    double width;
} Plot;

static void
plot_clear(Plot *p)
{
    if (p->scenario_loaded)
        tps_scenario_clear(&p->scenario);
    g_free(p->strategies);
    g_free(p->output);
    tps_yaml_doc_free(p->doc);
}

static gboolean
valid_stem(const char *s)
{
    if (!*s || *s == '.')
        return FALSE;
    for (; *s; s++)
        if (!g_ascii_isalnum(*s) && *s != '.' && *s != '_' && *s != '-')
            return FALSE;
    return TRUE;
}

/* The keys every kind shares. */
static gboolean
read_common(Plot *p, const char *path, GError **error)
{
    const TpsYamlDoc *doc = p->doc;
    const TpsYamlNode *root = doc->root;

    const TpsYamlNode *node = tps_yaml_get(root, "scenario");
    const char *scenario_ref;
    if (node == NULL)
        return tps_yaml_error(doc, root, error,
                              "missing key 'scenario' (a scenario file path, "
                              "relative to the plot file)");
    if (!tps_yaml_string(doc, node, "scenario", &scenario_ref, error))
        return FALSE;
    g_autofree char *dir = g_path_get_dirname(path);
    g_autofree char *scenario_path = g_path_is_absolute(scenario_ref)
                                         ? g_strdup(scenario_ref)
                                         : g_build_filename(dir, scenario_ref, NULL);
    p->scenario_loaded = TRUE;
    if (!tps_scenario_file_load(scenario_path, &p->scenario, error)) {
        g_prefix_error(error, "%s:%u:%u: in scenario '%s': ", doc->file, node->line, node->column,
                       scenario_ref);
        return FALSE;
    }

    node = tps_yaml_get(root, "strategies");
    g_autoptr(GPtrArray) names = g_ptr_array_new();
    if (node) {
        if (!tps_yaml_expect(doc, node, TPS_YAML_SEQ, "a list of strategy names", error))
            return FALSE;
        for (guint i = 0; i < node->items->len; i++) {
            const char *name;
            if (!tps_yaml_string(doc, g_ptr_array_index(node->items, i), "strategies", &name,
                                 error))
                return FALSE;
            g_ptr_array_add(names, (gpointer)name);
        }
        if (names->len == 0)
            return tps_yaml_error(doc, node, error, "strategies: give at least one name");
    }
    g_ptr_array_add(names, NULL);
    p->strategies =
        tps_strategy_select(&p->scenario, node ? (const char *const *)names->pdata : NULL, error);
    if (p->strategies == NULL) {
        if (node)
            g_prefix_error(error, "%s:%u:%u: ", doc->file, node->line, node->column);
        return FALSE;
    }
    while (p->strategies[p->n_strategies])
        p->n_strategies++;

    node = tps_yaml_get(root, "output");
    if (node) {
        const char *stem;
        if (!tps_yaml_string(doc, node, "output", &stem, error))
            return FALSE;
        if (!valid_stem(stem))
            return tps_yaml_error(doc, node, error,
                                  "output: a file name without folder or extension (letters, "
                                  "digits, '.', '_', '-'), not '%s'",
                                  stem);
        p->output = g_strdup(stem);
    } else {
        g_autofree char *base = g_path_get_basename(path);
        char *dot = strrchr(base, '.');
        if (dot && dot != base)
            *dot = '\0';
        p->output = g_strdup(base);
    }

    node = tps_yaml_get(root, "formats");
    if (node) {
        if (!tps_yaml_expect(doc, node, TPS_YAML_SEQ, "a list of formats (png, svg, pdf)", error))
            return FALSE;
        if (node->items->len == 0)
            return tps_yaml_error(doc, node, error, "formats: give at least one of png, svg, pdf");
        for (guint i = 0; i < node->items->len; i++) {
            guint f;
            if (!tps_yaml_enum(doc, g_ptr_array_index(node->items, i), "formats", format_names, &f,
                               error))
                return FALSE;
            p->formats[f] = TRUE;
        }
    } else {
        p->formats[0] = TRUE;
    }

    node = tps_yaml_get(root, "title");
    if (node && !tps_yaml_string(doc, node, "title", &p->title, error))
        return FALSE;
    node = tps_yaml_get(root, "width");
    p->width = 0;
    if (node && !tps_yaml_double(doc, node, "width", 600, 4000, &p->width, error))
        return FALSE;
    return TRUE;
}

/* Each format's path; the function draws one. */
typedef gboolean (*WriteFunc)(gconstpointer figure, const char *path, GError **error);

static gboolean
write_all(const Plot *p, const char *output_dir, WriteFunc write, gconstpointer figure,
          GPtrArray *written, GError **error)
{
    for (guint f = 0; f < 3; f++) {
        if (!p->formats[f])
            continue;
        g_autofree char *name = g_strdup_printf("%s.%s", p->output, format_names[f]);
        g_autofree char *out = g_build_filename(output_dir, name, NULL);
        if (!write(figure, out, error))
            return FALSE;
        if (written)
            g_ptr_array_add(written, g_steal_pointer(&out));
    }
    return TRUE;
}

static gboolean
write_timeline(gconstpointer figure, const char *path, GError **error)
{
    return tps_timeline_write(figure, path, error);
}

static gboolean
write_chart(gconstpointer figure, const char *path, GError **error)
{
    return tps_chart_write(figure, path, error);
}

static gboolean
render_timeline(Plot *p, const char *output_dir, GPtrArray *written, GError **error)
{
    const TpsYamlDoc *doc = p->doc;
    const TpsYamlNode *root = doc->root;
    TpsTimelineOptions opt;
    tps_timeline_options_init(&opt);
    if (p->width > 0)
        opt.width = p->width;

    const TpsYamlNode *node = tps_yaml_get(root, "rank");
    if (node) {
        if (node->type == TPS_YAML_SCALAR && g_strcmp0(node->value, "all") == 0) {
            opt.rank = TPS_RANK_ALL;
        } else {
            guint64 r;
            if (!tps_yaml_uint(doc, node, "rank", 0, p->scenario.tp - 1, &r, error))
                return FALSE;
            opt.rank = (int)r;
        }
    }
    node = tps_yaml_get(root, "pass");
    if (node) {
        guint pass;
        if (!tps_yaml_enum(doc, node, "pass", tps_pass_names, &pass, error))
            return FALSE;
        opt.pass = (TpsPass)pass;
    }
    node = tps_yaml_get(root, "window");
    if (node) {
        if (!tps_yaml_expect(doc, node, TPS_YAML_SEQ, "[START_US, END_US]", error))
            return FALSE;
        if (node->items->len != 2)
            return tps_yaml_error(doc, node, error, "window: give [START_US, END_US]");
        if (!tps_yaml_double(doc, g_ptr_array_index(node->items, 0), "window", 0, 1e9,
                             &opt.window_start_us, error) ||
            !tps_yaml_double(doc, g_ptr_array_index(node->items, 1), "window", 0, 1e9,
                             &opt.window_end_us, error))
            return FALSE;
        if (opt.window_end_us <= opt.window_start_us)
            return tps_yaml_error(doc, node, error, "window: the end must come after the start");
    }
    node = tps_yaml_get(root, "links");
    if (node && !tps_yaml_bool(doc, node, "links", &opt.links, error))
        return FALSE;
    node = tps_yaml_get(root, "labels");
    if (node) {
        static const char *const label_names[] = {"names", "ring_shards", NULL};
        guint labels;
        if (!tps_yaml_enum(doc, node, "labels", label_names, &labels, error))
            return FALSE;
        opt.ring_shards = labels == 1;
    }
    g_autoptr(GPtrArray) streams = g_ptr_array_new();
    node = tps_yaml_get(root, "streams");
    if (node) {
        if (!tps_yaml_expect(doc, node, TPS_YAML_SEQ, "a list of stream names", error))
            return FALSE;
        for (guint i = 0; i < node->items->len; i++) {
            const char *name;
            if (!tps_yaml_string(doc, g_ptr_array_index(node->items, i), "streams", &name, error))
                return FALSE;
            g_ptr_array_add(streams, (gpointer)name);
        }
        g_ptr_array_add(streams, NULL);
        opt.streams = (const char *const *)streams->pdata;
    }

    g_autoptr(GPtrArray) records = g_ptr_array_new_with_free_func((GDestroyNotify)tps_run_free);
    g_autofree TpsResult *results = g_new0(TpsResult, p->n_strategies);
    for (guint i = 0; i < p->n_strategies; i++) {
        TpsRun *rec = NULL;
        if (!tps_simulate_record(&p->scenario, p->strategies[i], &results[i], &rec, error))
            return FALSE;
        g_ptr_array_add(records, rec);
    }
    g_autoptr(TpsTimeline) tl = tps_figure_timeline(&p->scenario, (TpsRun *const *)records->pdata,
                                                    results, records->len, p->title, &opt, error);
    if (tl == NULL) {
        g_prefix_error(error, "%s: ", doc->file);
        return FALSE;
    }
    return write_all(p, output_dir, write_timeline, tl, written, error);
}

/* Set the swept parameter in `sc` (a copy of the plot's scenario); FALSE
 * (with the error at `at`) when the parameter has nothing to act on. The
 * rules the value must follow are the scenario's (tps_scenario_validate()). */
static gboolean
apply_param(const Plot *p, TpsScenario *sc, Param param, guint64 v, const TpsYamlNode *at,
            GError **error)
{
    switch (param) {
    case PARAM_NUM_SPLITS: {
        gboolean any = FALSE;
        for (guint s = 0; s < TPS_GEMM_SLOT_COUNT; s++)
            if (sc->overlap[s].set && tps_method_info(sc->overlap[s].method)->has_splits) {
                sc->overlap[s].num_splits = (guint)v;
                any = TRUE;
            }
        if (!any) {
            guint splitting = 0;
            for (guint m = 0; m < TPS_METHOD_COUNT; m++)
                if (tps_method_info((TpsMethod)m)->has_splits)
                    splitting |= 1u << m;
            g_autofree char *names = tps_method_join(splitting, "");
            return tps_yaml_error(p->doc, at, error,
                                  "parameter num_splits: the scenario's overlap: map has no %s "
                                  "entry to split (it acts on the strategy 'custom')",
                                  names);
        }
        return TRUE;
    }
    case PARAM_SEQ_LEN:
        if (sc->is_op)
            return tps_yaml_error(p->doc, at, error,
                                  "parameter seq_len needs a model scenario (op scenarios have m)");
        sc->seq_len = v;
        return TRUE;
    case PARAM_TP:
        sc->tp = (guint)v; /* values are at most 2^24 */
        return TRUE;
    }
    return TRUE;
}

/* One point of a sweep: `point` (zeroed) becomes a copy of the plot's
 * scenario with the swept value, held to the rules of a scenario file; a
 * value that breaks one is reported at `at` with the loader's message. */
static gboolean
sweep_point(const Plot *p, Param param, guint64 v, const TpsYamlNode *at, TpsScenario *point,
            GError **error)
{
    g_autoptr(GError) local = NULL;
    tps_scenario_copy(point, &p->scenario);
    if (!apply_param(p, point, param, v, at, error))
        return FALSE;
    if (!tps_scenario_validate(point, NULL, &local))
        return tps_yaml_error(p->doc, at, error, "%s", local->message);
    return TRUE;
}

static gboolean
render_sweep(Plot *p, const char *output_dir, GPtrArray *written, GError **error)
{
    const TpsYamlDoc *doc = p->doc;
    const TpsYamlNode *root = doc->root;
    const TpsScenario *sc = &p->scenario;

    const TpsYamlNode *pnode = tps_yaml_get(root, "parameter");
    if (pnode == NULL)
        return tps_yaml_error(doc, root, error,
                              "missing key 'parameter' (num_splits, seq_len or tp)");
    guint param;
    if (!tps_yaml_enum(doc, pnode, "parameter", param_names, &param, error))
        return FALSE;
    const TpsYamlNode *vnode = tps_yaml_get(root, "values");
    if (vnode == NULL)
        return tps_yaml_error(doc, root, error, "missing key 'values' (a list of numbers)");
    if (!tps_yaml_expect(doc, vnode, TPS_YAML_SEQ, "a list of numbers", error))
        return FALSE;
    if (vnode->items->len < 2 || vnode->items->len > 64)
        return tps_yaml_error(doc, vnode, error, "values: give 2 to 64 values");
    g_autofree guint64 *values = g_new0(guint64, vnode->items->len);
    gboolean pow2 = TRUE;
    for (guint i = 0; i < vnode->items->len; i++) {
        if (!tps_yaml_uint(doc, g_ptr_array_index(vnode->items, i), "values", 1, 1u << 24,
                           &values[i], error))
            return FALSE;
        pow2 &= (values[i] & (values[i] - 1)) == 0;
    }
    /* The metrics are the result columns that have a metric name
     * (io/result-columns.h); a name has a column per kind of scenario it
     * applies to. */
    g_autofree const char **metric_names = tps_result_metric_names();
    const char *metric = "time_ms";
    const TpsYamlNode *mnode = tps_yaml_get(root, "metric");
    if (mnode) {
        guint index;
        if (!tps_yaml_enum(doc, mnode, "metric", metric_names, &index, error))
            return FALSE;
        metric = metric_names[index];
    }
    const TpsResultColumn *column = tps_result_metric_lookup(metric, sc);
    if (column == NULL)
        return tps_yaml_error(doc, mnode != NULL ? mnode : root, error,
                              "metric %s needs %s scenario", metric,
                              sc->is_op ? "a model" : "an op");
    gboolean x_log2 = pow2 && param != PARAM_SEQ_LEN;
    const TpsYamlNode *lnode = tps_yaml_get(root, "x_log2");
    if (lnode && !tps_yaml_bool(doc, lnode, "x_log2", &x_log2, error))
        return FALSE;

    g_autofree char *default_title =
        g_strdup_printf("%s: %s against %s", sc->name, metric, param_names[param]);
    /* The scenario in words, without the swept parameter. */
    GString *sub = g_string_new(NULL);
    if (sc->is_op)
        g_string_append_printf(
            sub, "%s m %" G_GUINT64_FORMAT ", n %" G_GUINT64_FORMAT ", k %" G_GUINT64_FORMAT,
            sc->op_kind == TPS_OP_AG_GEMM ? "all-gather + GEMM," : "GEMM + reduce-scatter,", sc->m,
            sc->n, sc->k);
    else
        g_string_append_printf(sub, "one layer, one micro-batch: hidden %" G_GUINT64_FORMAT,
                               sc->hidden);
    if (!sc->is_op && param != PARAM_SEQ_LEN)
        g_string_append_printf(sub, ", seq %" G_GUINT64_FORMAT, sc->seq_len);
    if (param != PARAM_TP)
        g_string_append_printf(sub, ", TP %u", sc->tp);
    if (!sc->is_op && sc->sp)
        g_string_append(sub, param == PARAM_TP ? ", SP" : " + SP");
    g_string_append_printf(sub, " on %s; a missing point: the strategy does not apply there",
                           sc->hardware_ref);
    g_autofree char *subtitle = g_string_free(sub, FALSE);
    g_autoptr(TpsChart) chart = tps_chart_new(p->title ? p->title : default_title, subtitle,
                                              param_labels[param], column->label);
    tps_chart_set_x_log2(chart, x_log2);

    g_autofree guint *series = g_new(guint, p->n_strategies);
    for (guint s = 0; s < p->n_strategies; s++)
        series[s] = tps_chart_add_series(chart, p->strategies[s]->name);
    for (guint i = 0; i < vnode->items->len; i++) {
        g_auto(TpsScenario) point = {0};
        if (!sweep_point(p, (Param)param, values[i], g_ptr_array_index(vnode->items, i), &point,
                         error))
            return FALSE;
        for (guint s = 0; s < p->n_strategies; s++) {
            double y = NAN;
            if (tps_strategy_applies(p->strategies[s], &point, NULL)) {
                TpsResult r;
                if (!tps_simulate(&point, p->strategies[s], &r, error)) {
                    g_prefix_error(error,
                                   "%s: %s = %" G_GUINT64_FORMAT ", strategy %s: ", doc->file,
                                   param_names[param], values[i], p->strategies[s]->name);
                    return FALSE;
                }
                y = tps_result_column_number(column, &point, &r);
            }
            tps_chart_add_point(chart, series[s], (double)values[i], y);
        }
    }
    return write_all(p, output_dir, write_chart, chart, written, error);
}

gboolean
tps_plot_file_render(const char *path, const char *output_dir, GPtrArray *written, GError **error)
{
    g_return_val_if_fail(path != NULL && output_dir != NULL, FALSE);
    Plot p = {0};
    gboolean ok = FALSE;
    p.doc = tps_yaml_load_file(path, error);
    if (p.doc == NULL)
        return FALSE;
    const TpsYamlDoc *doc = p.doc;
    guint kind = 0;
    const TpsYamlNode *knode;
    if (doc->root == NULL) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "%s:1:1: empty figure definition", path);
        goto out;
    }
    if (!tps_yaml_expect(doc, doc->root, TPS_YAML_MAP, "a figure definition (a map)", error))
        goto out;
    knode = tps_yaml_get(doc->root, "kind");
    if (knode == NULL) {
        tps_yaml_error(doc, doc->root, error, "missing key 'kind' (timeline or sweep)");
        goto out;
    }
    if (!tps_yaml_enum(doc, knode, "kind", kind_names, &kind, error))
        goto out;
    if (!tps_yaml_check_keys(doc, doc->root, kind == 0 ? "a timeline figure" : "a sweep figure",
                             kind == 0 ? timeline_keys : sweep_keys, error))
        goto out;
    if (!read_common(&p, path, error))
        goto out;
    if (g_mkdir_with_parents(output_dir, 0777) != 0) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_IO, "%s: cannot create the folder", output_dir);
        goto out;
    }
    ok = kind == 0 ? render_timeline(&p, output_dir, written, error)
                   : render_sweep(&p, output_dir, written, error);
out:
    plot_clear(&p);
    return ok;
}
