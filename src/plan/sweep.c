/* Sweep files (see sweep.h).
 *
 * Locating errors: a point's tree mixes the base scenario's nodes (of the
 * base file) with the nodes the sweep sets. Those get a line number no
 * file has (MARK_LINE + the number of the sweep node they come from), so
 * that a loader message at one of them is told apart and moved to the
 * sweep file's node; a message at a base node is the combination's fault,
 * and the point is skipped with it.
 */
#include "plan/sweep.h"

#include <math.h>
#include <string.h>

#include "core/error.h"
#include "core/names.h"
#include "io/input/scenario-file.h"
#include "io/input/yaml-tree.h"
#include "sched/strategy.h"

#define MARK_LINE 0x40000000u
/* Far beyond any sweep of interest, and it bounds memory and time before
 * any point is built. */
#define MAX_POINTS 100000u
#define MAX_VALUES 10000u

static const char *const sweep_keys[] = {"base", "vary", "zip", "keep", "strategies", NULL};
static const char *const keep_keys[] = {"gpus", NULL};
static const char *const range_keys[] = {"from", "to", "step", "times", NULL};

typedef struct {
    char *path;                /* "parallel.tp" */
    const TpsYamlNode *key;    /* in the sweep file */
    GPtrArray *values;         /* of TpsYamlNode * (owned copies, positioned in the sweep) */
} Vary;

struct TpsSweep {
    TpsYamlDoc *doc;       /* the sweep file */
    TpsYamlDoc *base;      /* the base scenario's tree */
    char *base_dir;        /* where its model paths resolve */
    GPtrArray *vary;       /* of Vary * */
    gboolean zip;
    guint64 keep_gpus;     /* 0: not kept */
    const TpsYamlNode *keep_node;
    const TpsYamlNode *strategies; /* in the sweep file, or NULL */
    GPtrArray *marks;      /* the sweep nodes a mark refers to, by number */
    TpsBatch *batch;
    GPtrArray *skipped;    /* per point: the reason (char *) or NULL */
    gboolean varies_cp;    /* a vary path is parallel.cp or parallel.cp_comm */
};

static void
vary_free(Vary *v)
{
    g_free(v->path);
    g_ptr_array_unref(v->values);
    g_free(v);
}

void
tps_sweep_free(TpsSweep *sweep)
{
    if (sweep == NULL)
        return;
    tps_yaml_doc_free(sweep->doc);
    tps_yaml_doc_free(sweep->base);
    g_free(sweep->base_dir);
    if (sweep->vary)
        g_ptr_array_unref(sweep->vary);
    if (sweep->marks)
        g_ptr_array_unref(sweep->marks);
    tps_batch_free(sweep->batch);
    if (sweep->skipped)
        g_ptr_array_unref(sweep->skipped);
    g_free(sweep);
}

const TpsBatch *
tps_sweep_batch(const TpsSweep *sweep)
{
    return sweep->batch;
}

/* ---- marks ---- */

/* A copy of `node` (a sweep node) marked as coming from it. */
static TpsYamlNode *
marked_copy(TpsSweep *sw, const TpsYamlNode *node)
{
    TpsYamlNode *copy = tps_yaml_node_copy(node);
    copy->line = MARK_LINE + sw->marks->len;
    copy->column = 1;
    g_ptr_array_add(sw->marks, (gpointer)node);
    return copy;
}

/* Split a loader message "FILE:LINE:COLUMN: text" of `doc_file`: the
 * text, and the sweep node when the line is a mark. */
static const char *
message_text(const char *message, const char *doc_file, const TpsSweep *sw,
             const TpsYamlNode **marked)
{
    *marked = NULL;
    gsize n = strlen(doc_file);
    if (strncmp(message, doc_file, n) != 0 || message[n] != ':')
        return message;
    const char *p = message + n + 1;
    char *end;
    guint64 line = g_ascii_strtoull(p, &end, 10);
    if (end == p || *end != ':')
        return message;
    p = end + 1;
    g_ascii_strtoull(p, &end, 10);
    if (end == p || strncmp(end, ": ", 2) != 0)
        return message;
    if (line >= MARK_LINE && line - MARK_LINE < sw->marks->len)
        *marked = g_ptr_array_index(sw->marks, line - MARK_LINE);
    return end + 2;
}

/* ---- reading the sweep file ---- */

/* A number of a range, as the text a scenario would hold. */
static char *
number_text(double v)
{
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    if (v == floor(v) && fabs(v) < 9e15)
        return g_strdup_printf("%" G_GINT64_FORMAT, (gint64)v);
    return g_strdup(g_ascii_formatd(buf, sizeof buf, "%.10g", v));
}

/* The values of one vary: entry: a list of scalars, one scalar, or a
 * range {from, to, step} / {from, to, times}. */
static gboolean
read_values(TpsSweep *sw, const char *path, const TpsYamlNode *node, GPtrArray *values,
            GError **error)
{
    const TpsYamlDoc *doc = sw->doc;
    if (node->type == TPS_YAML_SCALAR) {
        g_ptr_array_add(values, tps_yaml_node_copy(node));
        return TRUE;
    }
    if (node->type == TPS_YAML_SEQ) {
        if (node->items->len == 0)
            return tps_yaml_error(doc, node, error, "vary.%s has no values", path);
        for (guint i = 0; i < node->items->len; i++) {
            const TpsYamlNode *item = g_ptr_array_index(node->items, i);
            if (item->type != TPS_YAML_SCALAR)
                return tps_yaml_error(doc, item, error,
                                      "vary.%s: each value is a scalar (a number, a name, "
                                      "true/false), not a list or a map",
                                      path);
            g_ptr_array_add(values, tps_yaml_node_copy(item));
        }
        return TRUE;
    }
    if (!tps_yaml_check_keys(doc, node, "a range", range_keys, error))
        return FALSE;
    const TpsYamlNode *from = tps_yaml_get(node, "from"), *to = tps_yaml_get(node, "to");
    const TpsYamlNode *step = tps_yaml_get(node, "step"), *times = tps_yaml_get(node, "times");
    if (from == NULL || to == NULL || (step == NULL) == (times == NULL))
        return tps_yaml_error(doc, node, error,
                              "vary.%s: a range is {from, to, step} or {from, to, times}", path);
    double a, b, d;
    if (!tps_yaml_double(doc, from, "from", -1e15, 1e15, &a, error) ||
        !tps_yaml_double(doc, to, "to", -1e15, 1e15, &b, error))
        return FALSE;
    if (step != NULL) {
        if (!tps_yaml_double(doc, step, "step", 1e-12, 1e15, &d, error))
            return FALSE;
        if (b < a)
            return tps_yaml_error(doc, to, error, "vary.%s: to (%g) is below from (%g)", path, b,
                                  a);
        double n = floor((b - a) / d + 1e-9) + 1;
        if (n > MAX_VALUES)
            return tps_yaml_error(doc, node, error, "vary.%s: %.0f values, more than %u", path, n,
                                  MAX_VALUES);
        for (guint i = 0; i < (guint)n; i++) {
            g_autofree char *text = number_text(a + i * d);
            g_ptr_array_add(values,
                            tps_yaml_node_new(TPS_YAML_SCALAR, text, node->line, node->column));
        }
        return TRUE;
    }
    if (!tps_yaml_double(doc, times, "times", 1.000001, 1e6, &d, error))
        return FALSE;
    if (a <= 0 || b < a)
        return tps_yaml_error(doc, node, error,
                              "vary.%s: a geometric range needs 0 < from <= to (from %g, to %g)",
                              path, a, b);
    for (double v = a; v <= b * (1 + 1e-9); v *= d) {
        if (values->len >= MAX_VALUES)
            return tps_yaml_error(doc, node, error, "vary.%s: more than %u values", path,
                                  MAX_VALUES);
        g_autofree char *text = number_text(v);
        g_ptr_array_add(values, tps_yaml_node_new(TPS_YAML_SCALAR, text, node->line, node->column));
    }
    return TRUE;
}

/* A new node marked as coming from the sweep node `origin`. */
static TpsYamlNode *
marked_node(TpsSweep *sw, const TpsYamlNode *origin, TpsYamlType type, const char *value)
{
    TpsYamlNode *node = tps_yaml_node_new(type, value, MARK_LINE + sw->marks->len, 1);
    g_ptr_array_add(sw->marks, (gpointer)origin);
    return node;
}

/* Set `path` of the tree `root` to `value` (taken), creating the sections
 * on the way (marked as the sweep node `origin`); `hardware: NAME` becomes
 * the what-if {base: NAME}. */
static gboolean
tree_set(TpsSweep *sw, TpsYamlNode *root, const char *path, TpsYamlNode *value,
         const TpsYamlNode *origin, GError **error)
{
    g_auto(GStrv) parts = g_strsplit(path, ".", -1);
    TpsYamlNode *map = root;
    guint n = g_strv_length(parts);
    for (guint i = 0; i + 1 < n; i++) {
        TpsYamlNode *child = tps_yaml_get(map, parts[i]);
        if (child != NULL && child->type == TPS_YAML_SCALAR && i == 0 &&
            strcmp(parts[i], "hardware") == 0) {
            TpsYamlNode *whatif = tps_yaml_node_new(TPS_YAML_MAP, NULL, child->line, child->column);
            tps_yaml_map_set(whatif, tps_yaml_node_new(TPS_YAML_SCALAR, "base", 0, 0),
                             tps_yaml_node_copy(child));
            tps_yaml_map_set(map, tps_yaml_node_new(TPS_YAML_SCALAR, parts[i], 0, 0), whatif);
            child = whatif;
        }
        if (child == NULL) {
            child = marked_node(sw, origin, TPS_YAML_MAP, NULL);
            tps_yaml_map_set(map, marked_node(sw, origin, TPS_YAML_SCALAR, parts[i]), child);
        } else if (child->type != TPS_YAML_MAP) {
            tps_yaml_node_free(value);
            char *saved = parts[i + 1];
            parts[i + 1] = NULL;
            g_autofree char *prefix = g_strjoinv(".", parts);
            parts[i + 1] = saved;
            return tps_yaml_error(sw->doc, origin, error,
                                  "%s: '%s' is a value in the scenario, not a section with keys",
                                  path, prefix);
        }
        map = child;
    }
    tps_yaml_map_set(map, marked_node(sw, origin, TPS_YAML_SCALAR, parts[n - 1]), value);
    return TRUE;
}

/* The uint at `path` of a tree (1 when absent or not a number). */
static guint64
tree_uint(const TpsYamlNode *root, const char *section, const char *key)
{
    const TpsYamlNode *s = tps_yaml_get(root, section);
    const TpsYamlNode *v = s != NULL && s->type == TPS_YAML_MAP ? tps_yaml_get(s, key) : NULL;
    guint64 u;
    if (v == NULL || v->type != TPS_YAML_SCALAR ||
        !g_ascii_string_to_unsigned(v->value, 10, 1, G_MAXUINT32, &u, NULL))
        return 1;
    return u;
}

/* One point's tree: the base with the values `pick` (an index per vary
 * entry) set; NULL with `error` when a path cannot be set. */
static TpsYamlDoc *
point_tree(TpsSweep *sw, const guint *pick, GError **error)
{
    TpsYamlNode *root = tps_yaml_node_copy(sw->base->root);
    g_autoptr(TpsYamlDoc) doc = tps_yaml_doc_new(sw->base->file, root);
    for (guint v = 0; v < sw->vary->len; v++) {
        const Vary *vary = g_ptr_array_index(sw->vary, v);
        const TpsYamlNode *value = g_ptr_array_index(vary->values, pick[v]);
        if (!tree_set(sw, root, vary->path, marked_copy(sw, value), value, error))
            return NULL;
    }
    if (sw->strategies != NULL &&
        !tree_set(sw, root, "strategies", marked_copy(sw, sw->strategies), sw->strategies, error))
        return NULL;
    return g_steal_pointer(&doc);
}

/* Check each value of each vary entry on its own (the base with only it
 * set): an unknown path or a value of the wrong type or range is the
 * sweep file's error, at the value. */
static gboolean
check_values(TpsSweep *sw, GError **error)
{
    for (guint v = 0; v < sw->vary->len; v++) {
        const Vary *vary = g_ptr_array_index(sw->vary, v);
        for (guint i = 0; i < vary->values->len; i++) {
            const TpsYamlNode *value = g_ptr_array_index(vary->values, i);
            TpsYamlNode *root = tps_yaml_node_copy(sw->base->root);
            g_autoptr(TpsYamlDoc) doc = tps_yaml_doc_new(sw->base->file, root);
            if (!tree_set(sw, root, vary->path, marked_copy(sw, value), value, error))
                return FALSE;
            g_auto(TpsScenario) sc = {0};
            g_autoptr(GError) local = NULL;
            if (tps_scenario_file_load_doc(doc, sw->base_dir, TRUE, &sc, &local))
                continue;
            const TpsYamlNode *at;
            const char *text = message_text(local->message, doc->file, sw, &at);
            if (at == NULL)
                continue; /* the base's values with this one: a point to skip */
            /* The value, or the key for an unknown path. */
            if (strstr(text, "unknown key") != NULL || strstr(text, "did you mean") != NULL)
                at = vary->key;
            return tps_yaml_error(sw->doc, at, error, "vary.%s: %s", vary->path, text);
        }
    }
    if (sw->strategies != NULL) {
        TpsYamlNode *root = tps_yaml_node_copy(sw->base->root);
        g_autoptr(TpsYamlDoc) doc = tps_yaml_doc_new(sw->base->file, root);
        if (!tree_set(sw, root, "strategies", marked_copy(sw, sw->strategies), sw->strategies,
                      error))
            return FALSE;
        g_auto(TpsScenario) sc = {0};
        g_autoptr(GError) local = NULL;
        if (!tps_scenario_file_load_doc(doc, sw->base_dir, TRUE, &sc, &local)) {
            const TpsYamlNode *at;
            const char *text = message_text(local->message, doc->file, sw, &at);
            if (at != NULL)
                return tps_yaml_error(sw->doc, sw->strategies, error, "strategies: %s", text);
        }
    }
    return TRUE;
}

/* A point's key and label values. */
static void
add_point(TpsSweep *sw, const guint *pick)
{
    const guint n = sw->vary->len;
    g_autofree const char **labels = g_new0(const char *, n + 1);
    GString *key = g_string_new(NULL);
    for (guint v = 0; v < n; v++) {
        const Vary *vary = g_ptr_array_index(sw->vary, v);
        const TpsYamlNode *value = g_ptr_array_index(vary->values, pick[v]);
        labels[v] = value->value;
        g_string_append_printf(key, "%s%s=%s", v ? ";" : "", vary->path, value->value);
    }
    if (n == 0)
        g_string_append(key, "base");

    g_autoptr(GError) error = NULL;
    g_autoptr(TpsYamlDoc) doc = point_tree(sw, pick, &error);
    char *skipped = NULL;
    g_auto(TpsScenario) sc = {0};
    if (doc != NULL && sw->keep_gpus != 0) {
        /* dp from the GPU count: tp x cp x pp x dp stays fixed. */
        guint64 tp = tree_uint(doc->root, "parallel", "tp");
        guint64 pp = tree_uint(doc->root, "parallel", "pp");
        const guint64 cp = tree_uint(doc->root, "parallel", "cp");
        if (sw->keep_gpus % (tp * pp * cp) != 0) {
            /* A tp x pp message where there is no cp, as before it. */
            skipped =
                cp > 1 ? g_strdup_printf("keep.gpus (%" G_GUINT64_FORMAT
                                         ") is not divisible by tp x cp x pp = %" G_GUINT64_FORMAT
                                         " x %" G_GUINT64_FORMAT " x %" G_GUINT64_FORMAT,
                                         sw->keep_gpus, tp, cp, pp)
                       : g_strdup_printf("keep.gpus (%" G_GUINT64_FORMAT
                                         ") is not divisible by tp x pp = %" G_GUINT64_FORMAT
                                         " x %" G_GUINT64_FORMAT,
                                         sw->keep_gpus, tp, pp);
        } else {
            g_autofree char *dp =
                g_strdup_printf("%" G_GUINT64_FORMAT, sw->keep_gpus / (tp * pp * cp));
            g_autoptr(GError) unused = NULL;
            tree_set(sw, doc->root, "parallel.dp",
                     marked_node(sw, sw->keep_node, TPS_YAML_SCALAR, dp), sw->keep_node, &unused);
        }
    }
    if (doc == NULL) {
        skipped = g_strdup(error->message);
    } else if (skipped == NULL &&
               !tps_scenario_file_load_doc(doc, sw->base_dir, FALSE, &sc, &error)) {
        const TpsYamlNode *at;
        skipped = g_strdup(message_text(error->message, doc->file, sw, &at));
    }
    if (skipped != NULL) {
        /* The point as far as it reads: its layout for the row. */
        tps_scenario_clear(&sc);
        g_autoptr(GError) unused = NULL;
        if (doc == NULL || !tps_scenario_file_load_doc(doc, sw->base_dir, TRUE, &sc, &unused)) {
            tps_scenario_clear(&sc);
            g_autoptr(GError) base_error = NULL;
            tps_scenario_file_load_doc(sw->base, sw->base_dir, FALSE, &sc, &base_error);
        }
    }
    /* A sweep over parallel.cp writes the CP columns on every row. */
    sc.cp_columns = sw->varies_cp;
    tps_batch_add(sw->batch, key->str, &sc, labels);
    g_ptr_array_add(sw->skipped, skipped);
    g_string_free(key, TRUE);
}

static gboolean
build_points(TpsSweep *sw, GError **error)
{
    const guint n = sw->vary->len;
    guint64 total = 1;
    for (guint v = 0; v < n; v++) {
        const Vary *vary = g_ptr_array_index(sw->vary, v);
        if (sw->zip) {
            const Vary *first = g_ptr_array_index(sw->vary, 0);
            if (vary->values->len != first->values->len)
                return tps_yaml_error(sw->doc, vary->key, error,
                                      "zip: true pairs the values in order, but vary.%s has %u "
                                      "values and vary.%s %u",
                                      vary->path, vary->values->len, first->path,
                                      first->values->len);
            total = vary->values->len;
        } else {
            total *= vary->values->len;
        }
        if (total > MAX_POINTS)
            return tps_yaml_error(sw->doc, vary->key, error,
                                  "the sweep has more than %u points; split it", MAX_POINTS);
    }
    g_autofree char **columns = g_new0(char *, n + 1);
    for (guint v = 0; v < n; v++)
        columns[v] = ((Vary *)g_ptr_array_index(sw->vary, v))->path;

    /* The input id: the files as read (tps_sweep_load()), set once every
     * point is loaded. */
    sw->batch = tps_batch_new(NULL, (const char *const *)columns);
    sw->skipped = g_ptr_array_new_with_free_func(g_free);

    /* Cartesian: the last entry varies fastest; zip: the i-th of each. */
    g_autofree guint *pick = g_new0(guint, MAX(n, 1));
    for (guint64 p = 0; p < total; p++) {
        guint64 rest = p;
        for (guint v = n; v-- > 0;) {
            const Vary *vary = g_ptr_array_index(sw->vary, v);
            if (sw->zip) {
                pick[v] = (guint)p;
            } else {
                pick[v] = (guint)(rest % vary->values->len);
                rest /= vary->values->len;
            }
        }
        add_point(sw, pick);
    }
    return TRUE;
}

/* base: a scenario file (from the sweep's folder) or one inline, into
 * sw->base and sw->base_dir; its errors, on its own, are its own. */
static gboolean
load_base(TpsSweep *sw, GError **error)
{
    const TpsYamlDoc *doc = sw->doc;
    const TpsYamlNode *root = doc->root;
    const TpsYamlNode *base = tps_yaml_get(root, "base");
    g_autofree char *dir = g_path_get_dirname(doc->file);
    if (base == NULL) {
        tps_yaml_error(doc, root, error, "missing base: (a scenario file, or a scenario inline)");
        return FALSE;
    }
    if (base->type == TPS_YAML_SCALAR) {
        g_autofree char *path = g_path_is_absolute(base->value)
                                    ? g_strdup(base->value)
                                    : g_build_filename(dir, base->value, NULL);
        g_autoptr(GError) local = NULL;
        sw->base = tps_yaml_load_file(path, &local);
        if (sw->base == NULL) {
            if (g_error_matches(local, TPS_ERROR, TPS_ERROR_INPUT) &&
                g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
                g_propagate_error(error, g_steal_pointer(&local));
            } else {
                tps_yaml_error(doc, base, error, "base: %s", local->message);
            }
            return FALSE;
        }
        sw->base_dir = g_path_get_dirname(path);
    } else if (base->type == TPS_YAML_MAP) {
        sw->base = tps_yaml_doc_new(doc->file, tps_yaml_node_copy(base));
        sw->base_dir = g_strdup(dir);
    } else {
        tps_yaml_error(doc, base, error, "base: is a scenario file or a scenario map, not a list");
        return FALSE;
    }
    g_auto(TpsScenario) sc = {0};
    return tps_scenario_file_load_doc(sw->base, sw->base_dir, FALSE, &sc, error);
}

/* zip:, keep: (its gpus) and strategies: of the sweep. */
static gboolean
load_options(TpsSweep *sw, GError **error)
{
    const TpsYamlDoc *doc = sw->doc;
    const TpsYamlNode *root = doc->root;
    const TpsYamlNode *zip = tps_yaml_get(root, "zip");
    if (zip != NULL && !tps_yaml_bool(doc, zip, "zip", &sw->zip, error))
        return FALSE;
    const TpsYamlNode *keep = tps_yaml_get(root, "keep");
    if (keep != NULL) {
        if (!tps_yaml_check_keys(doc, keep, "keep", keep_keys, error))
            return FALSE;
        const TpsYamlNode *gpus = tps_yaml_get(keep, "gpus");
        if (gpus == NULL) {
            tps_yaml_error(doc, keep, error, "missing key 'gpus' in keep");
            return FALSE;
        }
        if (!tps_yaml_uint(doc, gpus, "keep.gpus", 1, (guint64)TPS_SCENARIO_MAX_TP *
                                                          TPS_SCENARIO_MAX_PP * TPS_SCENARIO_MAX_DP,
                           &sw->keep_gpus, error))
            return FALSE;
        sw->keep_node = gpus;
    }
    sw->strategies = tps_yaml_get(root, "strategies");
    return sw->strategies == NULL ||
           tps_yaml_expect(doc, sw->strategies, TPS_YAML_SEQ, "strategies", error);
}

/* Whether `key` of vary: is a path that may vary: dotted, not the dp that
 * keep.gpus derives, not the strategies, the name or the hardware. */
static gboolean
check_vary_path(TpsSweep *sw, const TpsYamlNode *key, GError **error)
{
    const TpsYamlDoc *doc = sw->doc;
    const char *path = key->value;
    gboolean ok = *path != '\0' && path[0] != '.' && !g_str_has_suffix(path, ".") &&
                  strstr(path, "..") == NULL;
    if (!ok) {
        tps_yaml_error(doc, key, error, "'%s' is not a dotted path such as parallel.tp", path);
        return FALSE;
    }
    if (sw->keep_gpus != 0 && strcmp(path, "parallel.dp") == 0) {
        tps_yaml_error(doc, key, error,
                       "parallel.dp cannot vary under keep.gpus, which derives it (gpus / "
                       "(tp x pp))");
        return FALSE;
    }
    if (g_str_has_prefix(path, "parallel.cp"))
        sw->varies_cp = TRUE;
    if (strcmp(path, "strategies") == 0 || strcmp(path, "name") == 0 ||
        strcmp(path, "hardware.base") == 0 || strcmp(path, "hardware") == 0) {
        /* Not values of the layout or the model: the sweep's
         * strategies: and one sweep per hardware base say it better. */
        tps_yaml_error(doc, key, error,
                       "%s cannot vary (vary scalars of the scenario or of its hardware "
                       "model; name strategies with the sweep's strategies:)",
                       path);
        return FALSE;
    }
    return TRUE;
}

/* vary: each dotted path and its values into sw->vary. */
static gboolean
load_vary(TpsSweep *sw, GError **error)
{
    const TpsYamlDoc *doc = sw->doc;
    const TpsYamlNode *vary = tps_yaml_get(doc->root, "vary");
    if (vary == NULL) {
        tps_yaml_error(doc, doc->root, error,
                       "missing vary: (a map of dotted paths, such as parallel.tp, to values)");
        return FALSE;
    }
    if (!tps_yaml_expect(doc, vary, TPS_YAML_MAP, "vary: a map of dotted paths to values", error))
        return FALSE;
    for (guint i = 0; i < vary->keys->len; i++) {
        const TpsYamlNode *key = g_ptr_array_index(vary->keys, i);
        if (!check_vary_path(sw, key, error))
            return FALSE;
        Vary *v = g_new0(Vary, 1);
        v->path = g_strdup(key->value);
        v->key = key;
        v->values = g_ptr_array_new_with_free_func((GDestroyNotify)tps_yaml_node_free);
        g_ptr_array_add(sw->vary, v);
        if (!read_values(sw, key->value, g_ptr_array_index(vary->items, i), v->values, error))
            return FALSE;
    }
    if (sw->vary->len == 0 && sw->keep_gpus == 0) {
        tps_yaml_error(doc, vary, error, "vary: is empty");
        return FALSE;
    }
    return TRUE;
}

static TpsSweep *
load(TpsYamlDoc *doc, GError **error)
{
    g_autoptr(TpsSweep) sw = g_new0(TpsSweep, 1);
    sw->doc = doc;
    sw->vary = g_ptr_array_new_with_free_func((GDestroyNotify)vary_free);
    sw->marks = g_ptr_array_new();
    const TpsYamlNode *root = doc->root;
    if (root == NULL) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "%s:1:1: the sweep is empty (it needs base: and vary:)", doc->file);
        return NULL;
    }
    if (!tps_yaml_check_kind(doc, root, "sweep", sweep_keys, error) ||
        !tps_yaml_check_keys(doc, root, "the sweep", sweep_keys, error))
        return NULL;
    if (!load_base(sw, error) || !load_options(sw, error) || !load_vary(sw, error) ||
        !check_values(sw, error) || !build_points(sw, error))
        return NULL;
    return g_steal_pointer(&sw);
}

/* The sweep of `doc` (NULL: its file `path` loaded here, or `text`),
 * its batch's input id the digest of every file read for it: the sweep
 * file, its base, the hardware model files and ub_cfg files as resolved
 * (tps_yaml_record_reads()), so that a resume or a merge refuses the
 * outputs of the same sweep run against other files. */
static TpsSweep *
load_recorded(const char *path, const char *name, const char *text, gssize len, GError **error)
{
    g_autoptr(GChecksum) sum = g_checksum_new(G_CHECKSUM_SHA256);
    GChecksum *before = tps_yaml_record_reads(sum);
    TpsYamlDoc *doc;
    if (path != NULL) {
        doc = tps_yaml_load_file(path, error);
    } else {
        tps_yaml_record_text(text, len < 0 ? strlen(text) : (gsize)len);
        doc = tps_yaml_load_string(name, text, len, error);
    }
    TpsSweep *sw = doc != NULL ? load(doc, error) : NULL;
    tps_yaml_record_reads(before);
    if (sw != NULL) {
        g_free(sw->batch->input_id);
        sw->batch->input_id = g_strdup_printf("sweep %s", g_checksum_get_string(sum));
    }
    return sw;
}

TpsSweep *
tps_sweep_load(const char *path, GError **error)
{
    return load_recorded(path, NULL, NULL, 0, error);
}

TpsSweep *
tps_sweep_load_string(const char *name, const char *text, gssize len, GError **error)
{
    return load_recorded(NULL, name, text, len, error);
}

/* ---- evaluation ---- */

/* A message without the scenario file's position (a point has none). */
static const char *
without_position(const char *message)
{
    const char *p = strstr(message, ": ");
    if (p == NULL)
        return message;
    /* "FILE:LINE:COLUMN: text": two numbers before the ": ". */
    const char *c2 = p;
    while (c2 > message && g_ascii_isdigit(c2[-1]))
        c2--;
    if (c2 == p || c2 == message || c2[-1] != ':')
        return message;
    const char *c1 = c2 - 1;
    while (c1 > message && g_ascii_isdigit(c1[-1]))
        c1--;
    if (c1 == c2 - 1 || c1 == message || c1[-1] != ':')
        return message;
    return p + 2;
}

gboolean
tps_sweep_eval(const TpsBatchPoint *point, GArray *rows, gpointer user, GError **error)
{
    (void)error;
    const TpsSweep *sw = user;
    const char *skipped = g_ptr_array_index(sw->skipped, point->index);
    if (skipped != NULL) {
        tps_batch_rows_skip(rows, NULL, "%s", skipped);
        return TRUE;
    }
    const TpsScenario *sc = &point->scenario;
    g_autoptr(GError) local = NULL;
    g_autofree const TpsStrategy **chosen = tps_strategy_select(sc, NULL, &local);
    if (chosen == NULL) {
        tps_batch_rows_skip(rows, NULL, "%s", without_position(local->message));
        return TRUE;
    }
    guint n = 0;
    while (chosen[n])
        n++;
    g_autofree TpsResult *results = g_new0(TpsResult, MAX(n, 1));
    guint ok = 0;
    const TpsStrategy *ref = tps_strategy_lookup(sc->is_op ? "sp-blocking" : "megatron");
    TpsResult ref_result;
    const TpsResult *reference = NULL;
    g_autoptr(GPtrArray) failed = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GPtrArray) failed_strategies = g_ptr_array_new();
    for (guint i = 0; i < n; i++) {
        g_clear_error(&local);
        if (tps_simulate(sc, chosen[i], &results[ok], &local)) {
            if (chosen[i] == ref)
                ref_result = results[ok], reference = &ref_result;
            ok++;
        } else {
            g_ptr_array_add(failed, g_strdup(without_position(local->message)));
            g_ptr_array_add(failed_strategies, (gpointer)chosen[i]);
        }
    }
    /* The gain's reference, simulated on the side as `run` does. */
    if (reference == NULL && tps_strategy_applies(ref, sc, NULL)) {
        g_clear_error(&local);
        if (tps_simulate(sc, ref, &ref_result, &local))
            reference = &ref_result;
    }
    tps_results_rank(results, ok, reference);
    for (guint i = 0; i < ok; i++)
        tps_batch_rows_add(rows, &results[i]);
    for (guint i = 0; i < failed->len; i++)
        tps_batch_rows_skip(rows, g_ptr_array_index(failed_strategies, i), "%s",
                            (const char *)g_ptr_array_index(failed, i));
    return TRUE;
}
