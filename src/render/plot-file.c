/* Figure definitions: see plot-file.h. */
#include "render/plot-file.h"

#include <math.h>
#include <string.h>

#include "core/error.h"
#include "core/names.h"
#include "core/output.h"
#include "io/input/scenario-file.h"
#include "io/input/yaml-tree.h"
#include "io/output/result-columns.h"
#include "render/chart.h"
#include "render/draw.h"
#include "render/figure.h"
#include "render/heatmap.h"
#include "render/step-figure.h"
#include "render/tune-figure.h"
#include "sched/method.h"
#include "sched/simulate.h"
#include "sched/strategy.h"
#include "sched/tune.h"

static const char *const timeline_keys[] = {"kind",    "scenario", "title",  "strategies", "output",
                                            "formats", "width",    "rank",   "pass",       "window",
                                            "links",   "streams",  "labels", NULL};
static const char *const sweep_keys[] = {"kind",   "scenario", "title",  "strategies",
                                         "output", "formats",  "width",  "parameter",
                                         "values", "metric",   "x_log2", NULL};
static const char *const lines_keys[] = {"kind",   "title", "output", "formats", "width",
                                         "sweep",  "data",  "x",      "metric",  "series",
                                         "strategies", "where", "x_log2", NULL};
static const char *const heatmap_keys[] = {"kind", "title", "output", "formats", "width", "sweep",
                                           "data", "x",     "y",      "metric",  "strategy",
                                           "where", NULL};
static const char *const step_keys[] = {"kind",    "scenario", "title",        "strategies",
                                        "output",  "formats",  "width",        "global_batch",
                                        "window",  NULL};
static const char *const tune_keys[] = {"kind",   "scenario", "title", "strategies",
                                        "output", "formats",  "width", NULL};
static const char *const kind_names[] = {"timeline", "sweep", "sweep-lines", "sweep-heatmap",
                                         "step",     "tune",  NULL};
enum {
    KIND_TIMELINE,
    KIND_SWEEP,
    KIND_LINES,
    KIND_HEATMAP,
    KIND_STEP,
    KIND_TUNE
};
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

static gboolean read_output(Plot *p, const char *path, GError **error);

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

    return read_output(p, path, error);
}

/* The most characters of a text of the plot file drawn into a figure (a
 * title, a value of where: in the subtitle): a longer one is no caption,
 * and laying out thousands of characters took seconds. */
#define MAX_FIGURE_TEXT 200

/* The string `node` (key `key`) for a text drawn into a figure: at most
 * MAX_FIGURE_TEXT characters, else an error at it. */
static gboolean
figure_text(const TpsYamlDoc *doc, const TpsYamlNode *node, const char *key, const char **out,
            GError **error)
{
    if (!tps_yaml_string(doc, node, key, out, error))
        return FALSE;
    const glong n = g_utf8_strlen(*out, -1);
    if (n > MAX_FIGURE_TEXT)
        return tps_yaml_error(doc, node, error,
                              "%s: %ld characters, more than the %d a text of a figure may have",
                              key, n, MAX_FIGURE_TEXT);
    return TRUE;
}

/* output, formats, title, width: the keys of the files written. */
static gboolean
read_output(Plot *p, const char *path, GError **error)
{
    const TpsYamlDoc *doc = p->doc;
    const TpsYamlNode *root = doc->root;
    const TpsYamlNode *node = tps_yaml_get(root, "output");
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
        /* A figure for a page (PNG), for editing and the web (SVG with
         * real text) and for print (PDF): all three unless asked. */
        p->formats[0] = p->formats[1] = p->formats[2] = TRUE;
    }

    node = tps_yaml_get(root, "title");
    if (node && !figure_text(doc, node, "title", &p->title, error))
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

/* window: [START_US, END_US] into the options. */
static gboolean
read_window(const TpsYamlDoc *doc, const TpsYamlNode *node, TpsTimelineOptions *opt, GError **error)
{
    if (!tps_yaml_expect(doc, node, TPS_YAML_SEQ, "[START_US, END_US]", error))
        return FALSE;
    if (node->items->len != 2)
        return tps_yaml_error(doc, node, error, "window: give [START_US, END_US]");
    if (!tps_yaml_double(doc, g_ptr_array_index(node->items, 0), "window", 0, 1e9,
                         &opt->window_start_us, error) ||
        !tps_yaml_double(doc, g_ptr_array_index(node->items, 1), "window", 0, 1e9,
                         &opt->window_end_us, error))
        return FALSE;
    if (opt->window_end_us <= opt->window_start_us)
        return tps_yaml_error(doc, node, error, "window: the end must come after the start");
    return TRUE;
}

/* streams: the names into `streams` (NULL-terminated; the options point
 * into it). */
static gboolean
read_streams(const TpsYamlDoc *doc, const TpsYamlNode *node, GPtrArray *streams,
             TpsTimelineOptions *opt, GError **error)
{
    if (!tps_yaml_expect(doc, node, TPS_YAML_SEQ, "a list of stream names", error))
        return FALSE;
    for (guint i = 0; i < node->items->len; i++) {
        const char *name;
        if (!tps_yaml_string(doc, g_ptr_array_index(node->items, i), "streams", &name, error))
            return FALSE;
        g_ptr_array_add(streams, (gpointer)name);
    }
    g_ptr_array_add(streams, NULL);
    opt->streams = (const char *const *)streams->pdata;
    return TRUE;
}

/* A timeline plot's options: rank, pass, window, links, labels and
 * streams (their names kept in `streams`). */
static gboolean
timeline_options(Plot *p, TpsTimelineOptions *opt, GPtrArray *streams, GError **error)
{
    const TpsYamlDoc *doc = p->doc;
    const TpsYamlNode *root = doc->root;
    tps_timeline_options_init(opt);
    if (p->width > 0)
        opt->width = p->width;

    const TpsYamlNode *node = tps_yaml_get(root, "rank");
    if (node) {
        if (node->type == TPS_YAML_SCALAR && g_strcmp0(node->value, "all") == 0) {
            opt->rank = TPS_RANK_ALL;
        } else {
            guint64 r;
            if (!tps_yaml_uint(doc, node, "rank", 0, p->scenario.tp - 1, &r, error))
                return FALSE;
            opt->rank = (int)r;
        }
    }
    node = tps_yaml_get(root, "pass");
    if (node) {
        guint pass;
        if (!tps_yaml_enum(doc, node, "pass", tps_pass_names, &pass, error))
            return FALSE;
        opt->pass = (TpsPass)pass;
    }
    node = tps_yaml_get(root, "window");
    if (node && !read_window(doc, node, opt, error))
        return FALSE;
    node = tps_yaml_get(root, "links");
    if (node && !tps_yaml_bool(doc, node, "links", &opt->links, error))
        return FALSE;
    node = tps_yaml_get(root, "labels");
    if (node) {
        static const char *const label_names[] = {"names", "ring_shards", NULL};
        guint labels;
        if (!tps_yaml_enum(doc, node, "labels", label_names, &labels, error))
            return FALSE;
        opt->ring_shards = labels == 1;
    }
    node = tps_yaml_get(root, "streams");
    return node == NULL || read_streams(doc, node, streams, opt, error);
}

static gboolean
render_timeline(Plot *p, const char *output_dir, GPtrArray *written, GError **error)
{
    TpsTimelineOptions opt;
    g_autoptr(GPtrArray) streams = g_ptr_array_new();
    if (!timeline_options(p, &opt, streams, error))
        return FALSE;

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
        g_prefix_error(error, "%s: ", p->doc->file);
        return FALSE;
    }
    return write_all(p, output_dir, write_timeline, tl, written, error);
}

/* kind: step: one training step of the first strategy (the only one,
 * usually), its scenario's global batch optionally set smaller so that
 * every micro-batch can be read. */
static gboolean
render_step(Plot *p, const char *output_dir, GPtrArray *written, GError **error)
{
    const TpsYamlDoc *doc = p->doc;
    const TpsYamlNode *node = tps_yaml_get(doc->root, "global_batch");
    g_auto(TpsScenario) sc = {0};
    tps_scenario_copy(&sc, &p->scenario);
    if (sc.is_op)
        return tps_yaml_error(doc, tps_yaml_get(doc->root, "scenario"), error,
                              "a step figure needs a model scenario (an op has no step)");
    if (node) {
        g_autoptr(GError) local = NULL;
        if (!tps_yaml_uint(doc, node, "global_batch", 1, G_MAXUINT32, &sc.global_batch, error))
            return FALSE;
        if (!tps_scenario_validate(&sc, NULL, &local))
            return tps_yaml_error(doc, node, error, "%s", local->message);
    }
    TpsResult result;
    g_autoptr(TpsStepSchedule) schedule = NULL;
    if (!tps_simulate(&sc, p->strategies[0], &result, error) ||
        !tps_simulate_step_schedule(&sc, p->strategies[0], &schedule, error)) {
        g_prefix_error(error, "%s: ", doc->file);
        return FALSE;
    }
    TpsTimelineOptions window;
    tps_timeline_options_init(&window);
    const TpsYamlNode *wnode = tps_yaml_get(doc->root, "window");
    if (wnode && !read_window(doc, wnode, &window, error))
        return FALSE;
    g_autoptr(TpsTimeline) tl = tps_step_figure_new(&sc, &result, schedule, p->width,
                                                    window.window_start_us, window.window_end_us);
    if (p->title) {
        g_free(tl->title);
        tl->title = g_strdup(p->title);
    }
    return write_all(p, output_dir, write_timeline, tl, written, error);
}

static gboolean
write_tune(gconstpointer figure, const char *path, GError **error)
{
    return tps_tune_figure_write(figure, path, error);
}

/* kind: tune: the gain per GEMM slot and method of `tpsim tune` on the
 * scenario, from the first userbuffers strategy listed (default
 * te-default). */
static gboolean
render_tune(Plot *p, const char *output_dir, GPtrArray *written, GError **error)
{
    const TpsStrategy *base = tps_strategy_lookup("te-default");
    if (tps_yaml_get(p->doc->root, "strategies") != NULL) {
        base = NULL;
        for (guint i = 0; i < p->n_strategies && base == NULL; i++)
            if (p->strategies[i]->userbuffers)
                base = p->strategies[i];
        if (base == NULL)
            return tps_yaml_error(p->doc, tps_yaml_get(p->doc->root, "strategies"), error,
                                  "a tune figure starts from a userbuffers strategy; none is "
                                  "listed");
    }
    TpsTuneSpace space;
    tps_tune_space_default(&p->scenario, &space);
    TpsTuneReport report;
    if (!tps_tune(&p->scenario, base, &space, 0, NULL, NULL, &report, error)) {
        g_prefix_error(error, "%s: ", p->doc->file);
        return FALSE;
    }
    g_autoptr(TpsTuneFigure) fig = tps_tune_figure_new(&p->scenario, &report, p->title, p->width);
    tps_tune_report_clear(&report);
    return write_all(p, output_dir, write_tune, fig, written, error);
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

/* parameter: and values: of a sweep plot: the parameter into `*param`,
 * its values into `*values` (their node `*vnode`), and whether they are
 * all powers of two. */
static gboolean
read_sweep_values(const TpsYamlDoc *doc, guint *param, const TpsYamlNode **vnode_out,
                  guint64 **values_out, gboolean *pow2_out, GError **error)
{
    const TpsYamlNode *root = doc->root;
    const TpsYamlNode *pnode = tps_yaml_get(root, "parameter");
    if (pnode == NULL)
        return tps_yaml_error(doc, root, error,
                              "missing key 'parameter' (num_splits, seq_len or tp)");
    if (!tps_yaml_enum(doc, pnode, "parameter", param_names, param, error))
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
    *vnode_out = vnode;
    *values_out = g_steal_pointer(&values);
    *pow2_out = pow2;
    return TRUE;
}

/* metric: the result column plotted (time_ms by default). The metrics
 * are the result columns that have a metric name (io/output/result-columns.h);
 * a name has a column per kind of scenario it applies to. */
static const TpsResultColumn *
read_metric(const TpsYamlDoc *doc, const TpsScenario *sc, const char **metric_out, GError **error)
{
    const TpsYamlNode *root = doc->root;
    g_autofree const char **metric_names = tps_result_metric_names();
    const char *metric = "time_ms";
    const TpsYamlNode *mnode = tps_yaml_get(root, "metric");
    if (mnode) {
        guint index;
        if (!tps_yaml_enum(doc, mnode, "metric", metric_names, &index, error))
            return NULL;
        metric = metric_names[index];
    }
    const TpsResultColumn *column = tps_result_metric_lookup(metric, sc);
    if (column == NULL)
        tps_yaml_error(doc, mnode != NULL ? mnode : root, error, "metric %s needs %s scenario",
                       metric, sc->is_op ? "a model" : "an op");
    *metric_out = metric;
    return column;
}

/* The scenario in words, without the swept parameter. */
static char *
sweep_subtitle(const TpsScenario *sc, guint param)
{
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
    return g_string_free(sub, FALSE);
}

/* Each strategy's series of the chart: the metric at each value (NaN
 * where the strategy does not apply). */
static gboolean
add_sweep_series(Plot *p, TpsChart *chart, guint param, const TpsYamlNode *vnode,
                 const guint64 *values, const TpsResultColumn *column, GError **error)
{
    g_autofree guint *series = g_new(guint, p->n_strategies);
    for (guint s = 0; s < p->n_strategies; s++) {
        series[s] = tps_chart_add_series(chart, p->strategies[s]->name);
        if (strcmp(p->strategies[s]->name, "custom") == 0)
            tps_chart_set_series_note(chart, series[s], "the scenario's overlap: map");
    }
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
                                   "%s: %s = %" G_GUINT64_FORMAT ", strategy %s: ", p->doc->file,
                                   param_names[param], values[i], p->strategies[s]->name);
                    return FALSE;
                }
                y = tps_result_column_number(column, &point, &r);
            }
            tps_chart_add_point(chart, series[s], (double)values[i], y);
        }
    }
    return TRUE;
}

static gboolean
render_sweep(Plot *p, const char *output_dir, GPtrArray *written, GError **error)
{
    const TpsYamlDoc *doc = p->doc;
    const TpsScenario *sc = &p->scenario;
    guint param = 0;
    const TpsYamlNode *vnode = NULL;
    g_autofree guint64 *values = NULL;
    gboolean pow2 = FALSE;
    if (!read_sweep_values(doc, &param, &vnode, &values, &pow2, error))
        return FALSE;
    const char *metric = NULL;
    const TpsResultColumn *column = read_metric(doc, sc, &metric, error);
    if (column == NULL)
        return FALSE;
    gboolean x_log2 = pow2 && param != PARAM_SEQ_LEN;
    const TpsYamlNode *lnode = tps_yaml_get(doc->root, "x_log2");
    if (lnode && !tps_yaml_bool(doc, lnode, "x_log2", &x_log2, error))
        return FALSE;

    g_autofree char *default_title =
        g_strdup_printf("%s: %s against %s", sc->name, metric, param_names[param]);
    g_autofree char *subtitle = sweep_subtitle(sc, param);
    g_autoptr(TpsChart) chart = tps_chart_new(p->title ? p->title : default_title, subtitle,
                                              param_labels[param], column->label);
    tps_chart_set_x_log2(chart, x_log2);
    if (!add_sweep_series(p, chart, param, vnode, values, column, error))
        return FALSE;
    return write_all(p, output_dir, write_chart, chart, written, error);
}

/* ---- figures of sweep outputs ---- */

static TpsPlotSweepRunner sweep_runner;

void
tps_plot_file_set_sweep_runner(TpsPlotSweepRunner runner)
{
    sweep_runner = runner;
}

/* A sweep output (docs/sweeps.md, "Output files") as text cells. */
typedef struct {
    GPtrArray *columns; /* of char * */
    GPtrArray *rows;    /* of GStrv, as many cells as columns */
} Table;

/* The column holding a row's skip reason (`skipped`), or G_MAXUINT when
 * the data has none: a row with a reason has no figures to draw. */
static guint
skipped_column(const Table *t)
{
    for (guint c = 0; c < t->columns->len; c++)
        if (strcmp(g_ptr_array_index(t->columns, c), "skipped") == 0)
            return c;
    return G_MAXUINT;
}

static void
table_clear(Table *t)
{
    if (t->columns)
        g_ptr_array_unref(t->columns);
    if (t->rows)
        g_ptr_array_unref(t->rows);
}

/* The cells of a CSV line (quotes as the batch writer writes them). */
static GPtrArray *
csv_cells(const char *line)
{
    GPtrArray *cells = g_ptr_array_new_with_free_func(g_free);
    const char *p = line;
    for (;;) {
        GString *cell = g_string_new(NULL);
        if (*p == '"') {
            for (p++; *p; p++) {
                if (*p == '"' && p[1] == '"')
                    g_string_append_c(cell, '"'), p++;
                else if (*p == '"') {
                    p++;
                    break;
                } else
                    g_string_append_c(cell, *p);
            }
        }
        while (*p && *p != ',')
            g_string_append_c(cell, *p++);
        g_ptr_array_add(cells, g_string_free(cell, FALSE));
        if (*p != ',')
            return cells;
        p++;
    }
}

static gboolean
table_read(const char *name, const char *text, Table *t, GError **error)
{
    t->columns = NULL;
    t->rows = g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (guint i = 0; lines[i]; i++) {
        if (lines[i][0] == '\0' || lines[i][0] == '#')
            continue;
        GPtrArray *cells = csv_cells(lines[i]);
        if (t->columns == NULL) {
            t->columns = cells;
            continue;
        }
        if (cells->len != t->columns->len) {
            g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                        "%s:%u:1: %u cells where the header has %u columns", name, i + 1,
                        cells->len, t->columns->len);
            g_ptr_array_unref(cells);
            return FALSE;
        }
        g_ptr_array_add(cells, NULL);
        g_ptr_array_add(t->rows, g_ptr_array_free(cells, FALSE));
    }
    if (t->columns == NULL || t->rows->len == 0 || t->columns->len < 2 ||
        strcmp(g_ptr_array_index(t->columns, 0), "point") != 0) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "%s:1:1: not a CSV output of tpsim sweep (a 'point' column and rows)", name);
        return FALSE;
    }
    return TRUE;
}

/* The index of the column `node` names; an unknown one is an error at it
 * with the closest column suggested. */
static gboolean
table_column(const Plot *p, const Table *t, const TpsYamlNode *node, const char *key, guint *index,
             GError **error)
{
    const char *name;
    if (!tps_yaml_string(p->doc, node, key, &name, error))
        return FALSE;
    for (guint i = 0; i < t->columns->len; i++)
        if (strcmp(g_ptr_array_index(t->columns, i), name) == 0) {
            *index = i;
            return TRUE;
        }
    /* Not g_ptr_array_copy(): that copy would free the names too. */
    g_autoptr(GPtrArray) names = g_ptr_array_new();
    for (guint i = 0; i < t->columns->len; i++)
        g_ptr_array_add(names, g_ptr_array_index(t->columns, i));
    g_ptr_array_add(names, NULL);
    const char *close = tps_names_closest(name, (const char *const *)names->pdata);
    if (close != NULL)
        return tps_yaml_error(p->doc, node, error, "%s: no column '%s' in the data; did you "
                              "mean '%s'?", key, name, close);
    g_autofree char *all = tps_names_join((const char *const *)names->pdata);
    return tps_yaml_error(p->doc, node, error, "%s: no column '%s' in the data (columns: %s)", key,
                          name, all);
}

/* The column of the plot's `metric:` (step_time_s when it has none), for
 * the line charts and the heatmaps alike. */
static gboolean
metric_column(const Plot *p, const Table *t, const TpsYamlNode *root, guint *index,
              GError **error)
{
    const TpsYamlNode *node = tps_yaml_get(root, "metric");
    TpsYamlNode fallback = {.type = TPS_YAML_SCALAR, .value = (char *)"step_time_s",
                            .line = root->line, .column = root->column};
    return table_column(p, t, node ? node : &fallback, "metric", index, error);
}

/* The data of a figure: `sweep:` run through the registered runner, or
 * `data:` a sweep's CSV output; paths relative to the plot file. */
static gboolean
table_load(const Plot *p, const char *path, Table *t, GError **error)
{
    const TpsYamlDoc *doc = p->doc;
    const TpsYamlNode *sweep = tps_yaml_get(doc->root, "sweep");
    const TpsYamlNode *data = tps_yaml_get(doc->root, "data");
    if ((sweep == NULL) == (data == NULL))
        return tps_yaml_error(doc, sweep ? sweep : doc->root, error,
                              "give one of sweep: (a sweep file, run for the figure) and data: "
                              "(the CSV output of tpsim sweep)");
    const TpsYamlNode *node = sweep ? sweep : data;
    const char *ref;
    if (!tps_yaml_string(doc, node, sweep ? "sweep" : "data", &ref, error))
        return FALSE;
    g_autofree char *dir = g_path_get_dirname(path);
    g_autofree char *file =
        g_path_is_absolute(ref) ? g_strdup(ref) : g_build_filename(dir, ref, NULL);
    g_autofree char *text = NULL;
    g_autoptr(GError) local = NULL;
    if (sweep != NULL) {
        if (sweep_runner == NULL)
            return tps_yaml_error(doc, node, error, "sweep: cannot be run here (no sweep runner)");
        text = sweep_runner(file, &local);
    } else if (!tps_output_note_input(file, &local) ||
               !g_file_get_contents(file, &text, NULL, &local)) {
        g_clear_pointer(&text, g_free);
    }
    if (text == NULL)
        return tps_yaml_error(doc, node, error, "%s", local ? local->message : "no data");
    if (!table_read(file, text, t, &local))
        return tps_yaml_error(doc, node, error, "%s", local->message);
    return TRUE;
}

/* Whether `row` passes `where:` {COLUMN: VALUE, ...} (numbers compared as
 * numbers). */
static gboolean
where_read(const Plot *p, const Table *t, GArray *cols, GPtrArray *values, GError **error)
{
    const TpsYamlNode *where = tps_yaml_get(p->doc->root, "where");
    if (where == NULL)
        return TRUE;
    if (!tps_yaml_expect(p->doc, where, TPS_YAML_MAP, "where: a map of column to value", error))
        return FALSE;
    for (guint i = 0; i < where->keys->len; i++) {
        guint col;
        if (!table_column(p, t, g_ptr_array_index(where->keys, i), "where", &col, error))
            return FALSE;
        const char *value;
        if (!figure_text(p->doc, g_ptr_array_index(where->items, i), "where", &value, error))
            return FALSE;
        g_array_append_val(cols, col);
        g_ptr_array_add(values, (gpointer)value);
    }
    return TRUE;
}

static gboolean
cell_equal(const char *a, const char *b)
{
    char *ea, *eb;
    double x = g_ascii_strtod(a, &ea), y = g_ascii_strtod(b, &eb);
    if (*a && *b && *ea == '\0' && *eb == '\0')
        return x == y;
    return strcmp(a, b) == 0;
}

static gboolean
row_selected(char **row, GArray *cols, GPtrArray *values)
{
    for (guint i = 0; i < cols->len; i++)
        if (!cell_equal(row[g_array_index(cols, guint, i)], g_ptr_array_index(values, i)))
            return FALSE;
    return TRUE;
}

static double
cell_number(const char *cell)
{
    char *end;
    double v = g_ascii_strtod(cell, &end);
    return *cell && *end == '\0' ? v : NAN;
}

/* The label of a result column: its metric label when it has one. */
static const char *
column_label(const char *name)
{
    for (guint i = 0; i < tps_result_n_columns; i++)
        if (tps_result_columns[i].label != NULL &&
            strcmp(tps_result_column_csv_name(&tps_result_columns[i]), name) == 0)
            return tps_result_columns[i].label;
    return name;
}

/* The varied columns of the data: between `point` and `scenario`. */
static char *
varied_columns(const Table *t)
{
    GString *s = g_string_new(NULL);
    for (guint i = 1; i < t->columns->len; i++) {
        const char *c = g_ptr_array_index(t->columns, i);
        if (strcmp(c, "scenario") == 0)
            break;
        g_string_append_printf(s, "%s%s", s->len ? ", " : "", c);
    }
    return g_string_free(s, FALSE);
}

/* The subtitle: the fixed values of `where:` and the data's origin. */
static char *
data_subtitle(const Table *t, GArray *cols, GPtrArray *values, const char *extra)
{
    GString *s = g_string_new(NULL);
    char **first = g_ptr_array_index(t->rows, 0);
    for (guint i = 1; i < t->columns->len; i++)
        if (strcmp(g_ptr_array_index(t->columns, i), "scenario") == 0)
            g_string_append_printf(s, "%s on %s", first[i], first[i + 1]);
    for (guint i = 0; i < cols->len; i++)
        g_string_append_printf(s, ", %s = %s",
                               (char *)g_ptr_array_index(t->columns, g_array_index(cols, guint, i)),
                               (char *)g_ptr_array_index(values, i));
    if (extra)
        g_string_append_printf(s, "; %s", extra);
    return g_string_free(s, FALSE);
}

/* A lines plot of a table: the rows where: selects and the columns it
 * draws. */
typedef struct {
    Table t;
    GArray *wcols;      /* where: its columns */
    GPtrArray *wvalues; /* and their values */
    const TpsYamlNode *xnode;
    guint xc, yc, sc, note; /* x, y, series and skipped columns (note: G_MAXUINT, none) */
} Lines;

/* strategies: which series, in that order, into `names`. */
static gboolean
read_series_names(const TpsYamlDoc *doc, const TpsYamlNode *stnode, GPtrArray *names,
                  GError **error)
{
    if (!tps_yaml_expect(doc, stnode, TPS_YAML_SEQ, "a list of series names", error))
        return FALSE;
    for (guint i = 0; i < stnode->items->len; i++) {
        const char *name;
        if (!tps_yaml_string(doc, g_ptr_array_index(stnode->items, i), "strategies", &name, error))
            return FALSE;
        g_ptr_array_add(names, g_strdup(name));
    }
    return TRUE;
}

/* The x values of the selected rows into `xs`, as they come (whether all
 * are powers of two into `*pow2`), and, when strategies: did not name
 * them, the series as they come into `names`. */
static gboolean
collect_xs(const Plot *p, const Lines *l, gboolean named, GArray *xs, GPtrArray *names,
           gboolean *pow2_out, GError **error)
{
    gboolean pow2 = TRUE;
    for (guint r = 0; r < l->t.rows->len; r++) {
        char **row = g_ptr_array_index(l->t.rows, r);
        if (!row_selected(row, l->wcols, l->wvalues))
            continue;
        double x = cell_number(row[l->xc]);
        if (isnan(x)) {
            tps_yaml_error(p->doc, l->xnode, error, "x: column '%s' holds '%s', not a number",
                           (char *)g_ptr_array_index(l->t.columns, l->xc), row[l->xc]);
            return FALSE;
        }
        gboolean seen = FALSE;
        for (guint i = 0; i < xs->len && !seen; i++)
            seen = g_array_index(xs, double, i) == x;
        if (!seen)
            g_array_append_val(xs, x);
        pow2 &= x >= 1 && x == floor(x) && ((guint64)x & ((guint64)x - 1)) == 0;
        if (!named && row[l->sc][0] != '\0' &&
            !g_ptr_array_find_with_equal_func(names, row[l->sc], g_str_equal, NULL))
            g_ptr_array_add(names, g_strdup(row[l->sc]));
    }
    *pow2_out = pow2;
    return TRUE;
}

/* The series `name` of the chart: one value per x (NaN where the row is
 * skipped or missing); the other varied columns must be fixed. */
static gboolean
add_line_series(const Plot *p, const Lines *l, TpsChart *chart, const char *name, const GArray *xs,
                GError **error)
{
    guint series = tps_chart_add_series(chart, name);
    if (strcmp(name, "custom") == 0)
        tps_chart_set_series_note(chart, series, "the scenario's overlap: map");
    g_autofree double *ys = g_new(double, xs->len);
    g_autofree gboolean *set = g_new0(gboolean, xs->len);
    for (guint i = 0; i < xs->len; i++)
        ys[i] = NAN;
    for (guint r = 0; r < l->t.rows->len; r++) {
        char **row = g_ptr_array_index(l->t.rows, r);
        if (!row_selected(row, l->wcols, l->wvalues) || strcmp(row[l->sc], name) != 0)
            continue;
        double x = cell_number(row[l->xc]);
        guint i = 0;
        while (g_array_index(xs, double, i) != x)
            i++;
        if (set[i]) {
            g_autofree char *varied = varied_columns(&l->t);
            tps_yaml_error(p->doc, l->xnode, error,
                           "several rows of %s at %s = %s: fix the other varied columns "
                           "(%s) with where: {COLUMN: VALUE}",
                           name, (char *)g_ptr_array_index(l->t.columns, l->xc), row[l->xc],
                           varied);
            return FALSE;
        }
        set[i] = TRUE;
        ys[i] = l->note != G_MAXUINT && row[l->note][0] != '\0' ? NAN : cell_number(row[l->yc]);
    }
    for (guint i = 0; i < xs->len; i++)
        tps_chart_add_point(chart, series, g_array_index(xs, double, i), ys[i]);
    return TRUE;
}

static gboolean
draw_lines(Plot *p, Table *tp, const char *output_dir, GPtrArray *written,
             GError **error)
{
    const TpsYamlDoc *doc = p->doc;
    const TpsYamlNode *root = doc->root;
    g_autoptr(GArray) wcols = g_array_new(FALSE, FALSE, sizeof(guint));
    g_autoptr(GPtrArray) wvalues = g_ptr_array_new();
    Lines l = {.t = *tp, .wcols = wcols, .wvalues = wvalues, .sc = 0};
    g_autoptr(GPtrArray) series_names = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GArray) xs = g_array_new(FALSE, FALSE, sizeof(double));
    if (!where_read(p, &l.t, wcols, wvalues, error))
        return FALSE;
    l.xnode = tps_yaml_get(root, "x");
    if (l.xnode == NULL) {
        tps_yaml_error(doc, root, error, "missing key 'x' (a varied column of the data)");
        return FALSE;
    }
    l.note = skipped_column(&l.t);
    if (!table_column(p, &l.t, l.xnode, "x", &l.xc, error))
        return FALSE;
    if (!metric_column(p, &l.t, root, &l.yc, error))
        return FALSE;
    const TpsYamlNode *snode = tps_yaml_get(root, "series");
    TpsYamlNode fallback_series = {.type = TPS_YAML_SCALAR, .value = (char *)"strategy",
                                   .line = root->line, .column = root->column};
    if (!table_column(p, &l.t, snode ? snode : &fallback_series, "series", &l.sc, error))
        return FALSE;
    /* strategies: which series, in that order (default: as they come). */
    const TpsYamlNode *stnode = tps_yaml_get(root, "strategies");
    if (stnode != NULL && !read_series_names(doc, stnode, series_names, error))
        return FALSE;
    gboolean pow2;
    if (!collect_xs(p, &l, stnode != NULL, xs, series_names, &pow2, error))
        return FALSE;
    if (xs->len == 0 || series_names->len == 0) {
        tps_yaml_error(doc, tps_yaml_get(root, "where") ? tps_yaml_get(root, "where") : root,
                       error, "no rows to draw (every row filtered out or skipped)");
        return FALSE;
    }
    gboolean x_log2 = pow2 && xs->len > 2;
    const TpsYamlNode *lnode = tps_yaml_get(root, "x_log2");
    if (lnode && !tps_yaml_bool(doc, lnode, "x_log2", &x_log2, error))
        return FALSE;

    const char *xname = g_ptr_array_index(l.t.columns, l.xc);
    const char *yname = g_ptr_array_index(l.t.columns, l.yc);
    g_autofree char *default_title = g_strdup_printf("%s against %s", yname, xname);
    g_autofree char *subtitle =
        data_subtitle(&l.t, wcols, wvalues, "a missing point: skipped there");
    g_autoptr(TpsChart) chart =
        tps_chart_new(p->title ? p->title : default_title, subtitle, xname, column_label(yname));
    tps_chart_set_x_log2(chart, x_log2);
    for (guint s = 0; s < series_names->len; s++)
        if (!add_line_series(p, &l, chart, g_ptr_array_index(series_names, s), xs, error))
            return FALSE;
    return write_all(p, output_dir, write_chart, chart, written, error);
}


static gboolean
write_heatmap(gconstpointer figure, const char *path, GError **error)
{
    return tps_heatmap_write(figure, path, error);
}

/* The distinct values of column `c` among the selected rows, in
 * increasing order when all are numbers, else as they come. */
static char **
distinct_values(const Table *t, guint c, GArray *wcols, GPtrArray *wvalues)
{
    GPtrArray *values = g_ptr_array_new();
    gboolean numbers = TRUE;
    for (guint r = 0; r < t->rows->len; r++) {
        char **row = g_ptr_array_index(t->rows, r);
        if (!row_selected(row, wcols, wvalues))
            continue;
        if (!g_ptr_array_find_with_equal_func(values, row[c], g_str_equal, NULL)) {
            g_ptr_array_add(values, g_strdup(row[c]));
            numbers &= !isnan(cell_number(row[c]));
        }
    }
    if (numbers) {
        /* Insertion sort: a few values. */
        for (guint i = 1; i < values->len; i++)
            for (guint j = i; j > 0 && cell_number(values->pdata[j - 1]) >
                                           cell_number(values->pdata[j]); j--) {
                gpointer tmp = values->pdata[j];
                values->pdata[j] = values->pdata[j - 1];
                values->pdata[j - 1] = tmp;
            }
    }
    g_ptr_array_add(values, NULL);
    return (char **)g_ptr_array_free(values, FALSE);
}

/* The strategy of a heatmap into `*strategy`: strategy:, which must be
 * in the data, else the data's one named strategy (NULL when it names
 * none); several without strategy: is an error. */
static gboolean
heatmap_strategy(const TpsYamlDoc *doc, const char *const *strategies, const char **strategy,
                 GError **error)
{
    const TpsYamlNode *stnode = tps_yaml_get(doc->root, "strategy");
    if (stnode != NULL) {
        if (!tps_yaml_string(doc, stnode, "strategy", strategy, error))
            return FALSE;
        if (!g_strv_contains(strategies, *strategy)) {
            g_autofree char *all = tps_names_join(strategies);
            tps_yaml_error(doc, stnode, error, "strategy '%s' is not in the data (%s)", *strategy,
                           all);
            return FALSE;
        }
        return TRUE;
    }
    guint named = 0;
    for (guint i = 0; strategies[i]; i++)
        if (strategies[i][0] != '\0')
            *strategy = strategies[i], named++;
    if (named > 1) {
        g_autofree char *all = tps_names_join(strategies);
        tps_yaml_error(doc, doc->root, error,
                       "the data has several strategies (%s): name one with strategy:", all);
        return FALSE;
    }
    return TRUE;
}

/* The heatmap's cells: the metric of each selected row of the strategy
 * that is not skipped, at its x and y among xall and yall. `cols`: the x,
 * y, metric, strategy and skipped (G_MAXUINT: none) columns. */
static void
fill_heatmap(TpsHeatmap *map, const Table *t, GArray *wcols, GPtrArray *wvalues,
             const guint cols[5], const char *strategy, const char *const *xall,
             const char *const *yall)
{
    const guint xc = cols[0], yc = cols[1], mc = cols[2], sc = cols[3], note = cols[4];
    for (guint r = 0; r < t->rows->len; r++) {
        char **row = g_ptr_array_index(t->rows, r);
        if (!row_selected(row, wcols, wvalues) || (note != G_MAXUINT && row[note][0] != '\0') ||
            strcmp(row[sc], strategy ? strategy : "") != 0)
            continue;
        guint x = 0, y = 0;
        while (strcmp(xall[x], row[xc]) != 0)
            x++;
        while (strcmp(yall[y], row[yc]) != 0)
            y++;
        tps_heatmap_set(map, x, y, cell_number(row[mc]));
    }
}

static gboolean
draw_heatmap(Plot *p, Table *tp, const char *output_dir, GPtrArray *written,
               GError **error)
{
    const TpsYamlDoc *doc = p->doc;
    const TpsYamlNode *root = doc->root;
    Table t = *tp;
    g_autoptr(GArray) wcols = g_array_new(FALSE, FALSE, sizeof(guint));
    g_autoptr(GPtrArray) wvalues = g_ptr_array_new();
    g_auto(GStrv) xv = NULL, yv = NULL, strategies = NULL;
    const TpsYamlNode *xnode = tps_yaml_get(root, "x"), *ynode = tps_yaml_get(root, "y");
    if (xnode == NULL || ynode == NULL) {
        tps_yaml_error(doc, root, error, "missing key '%s' (a varied column of the data)",
                       xnode == NULL ? "x" : "y");
        return FALSE;
    }
    guint xc, yc, mc, sc, note = skipped_column(&t);
    TpsYamlNode strategy_column = {.type = TPS_YAML_SCALAR, .value = (char *)"strategy",
                                   .line = root->line, .column = root->column};
    if (!table_column(p, &t, xnode, "x", &xc, error) ||
        !table_column(p, &t, ynode, "y", &yc, error) ||
        !metric_column(p, &t, root, &mc, error) ||
        !table_column(p, &t, &strategy_column, "strategy", &sc, error) ||
        !where_read(p, &t, wcols, wvalues, error))
        return FALSE;
    /* One strategy per heatmap: `strategy:`, needed when there are several. */
    strategies = distinct_values(&t, sc, wcols, wvalues);
    const char *strategy = NULL;
    if (!heatmap_strategy(doc, (const char *const *)strategies, &strategy, error))
        return FALSE;
    g_array_append_val(wcols, sc);
    g_ptr_array_add(wvalues, (gpointer)(strategy ? strategy : ""));
    xv = distinct_values(&t, xc, wcols, wvalues);
    yv = distinct_values(&t, yc, wcols, wvalues);
    /* Skipped points have no strategy: their cells stay empty. */
    g_array_set_size(wcols, wcols->len - 1);
    g_ptr_array_set_size(wvalues, wvalues->len - 1);
    g_auto(GStrv) xall = distinct_values(&t, xc, wcols, wvalues);
    g_auto(GStrv) yall = distinct_values(&t, yc, wcols, wvalues);
    if (g_strv_length(xall) == 0) {
        tps_yaml_error(doc, root, error, "no rows to draw (every row filtered out)");
        return FALSE;
    }
    const char *xname = g_ptr_array_index(t.columns, xc);
    const char *yname = g_ptr_array_index(t.columns, yc);
    const char *mname = g_ptr_array_index(t.columns, mc);
    g_autofree char *default_title =
        g_strdup_printf("%s over %s and %s%s%s", mname, xname, yname, strategy ? ", " : "",
                        strategy ? strategy : "");
    g_autofree char *subtitle = data_subtitle(&t, wcols, wvalues, "a hatched cell: skipped there");
    g_autoptr(TpsHeatmap) map =
        tps_heatmap_new(p->title ? p->title : default_title, subtitle, xname,
                        (const char *const *)xall, yname, (const char *const *)yall,
                        column_label(mname));
    const guint cols[] = {xc, yc, mc, sc, note};
    fill_heatmap(map, &t, wcols, wvalues, cols, strategy, (const char *const *)xall,
                 (const char *const *)yall);
    return write_all(p, output_dir, write_heatmap, map, written, error);
}

/* A figure of a sweep's output table (lines or heatmap): the table at
 * `path` loaded, drawn by `draw`, released. */
typedef gboolean (*DrawTable)(Plot *p, Table *t, const char *output_dir, GPtrArray *written,
                              GError **error);

static gboolean
render_table(Plot *p, const char *path, DrawTable draw, const char *output_dir,
             GPtrArray *written, GError **error)
{
    Table t = {0};
    gboolean ok = table_load(p, path, &t, error) && draw(p, &t, output_dir, written, error);
    table_clear(&t);
    return ok;
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
    static const char *const *const keys[] = {timeline_keys, sweep_keys, lines_keys,
                                              heatmap_keys,  step_keys,  tune_keys};
    static const char *const where[] = {"a timeline figure",    "a sweep figure",
                                        "a sweep-lines figure", "a sweep-heatmap figure",
                                        "a step figure",        "a tune figure"};
    if (!tps_yaml_check_keys(doc, doc->root, where[kind], keys[kind], error))
        goto out;
    if (kind <= KIND_SWEEP || kind == KIND_STEP || kind == KIND_TUNE
            ? !read_common(&p, path, error)
            : !read_output(&p, path, error))
        goto out;
    if (g_mkdir_with_parents(output_dir, 0777) != 0) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_IO, "%s: cannot create the folder", output_dir);
        goto out;
    }
    switch (kind) {
    case KIND_TIMELINE:
        ok = render_timeline(&p, output_dir, written, error);
        break;
    case KIND_SWEEP:
        ok = render_sweep(&p, output_dir, written, error);
        break;
    case KIND_LINES:
        ok = render_table(&p, path, draw_lines, output_dir, written, error);
        break;
    case KIND_STEP:
        ok = render_step(&p, output_dir, written, error);
        break;
    case KIND_TUNE:
        ok = render_tune(&p, output_dir, written, error);
        break;
    default:
        ok = render_table(&p, path, draw_heatmap, output_dir, written, error);
        break;
    }
out:
    plot_clear(&p);
    return ok;
}
