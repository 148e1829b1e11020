/* Every key the scenario, hardware model, plot and measurements loaders
 * accept has a row in docs/scenario-format.md.
 *
 * The keys are asked of the loaders themselves rather than copied from
 * their tables, which other code may move or rebuild: a file with one
 * unknown key in a map makes the loader list the keys it knows there
 * ("unknown key 'PROBE' in WHERE; known keys: a, b, c"). Each probe is a
 * valid file plus one unknown key in one map; the maps found inside are
 * probed in turn where the file shape allows it (hardware models,
 * measurements). So a key added to a loader fails this test until it is
 * documented, whatever table it was added to.
 *
 * A key is documented when the first cell of a table row, in the section
 * of the page for its format, holds it as a code span with its full path
 * (`model.hidden`, `overlap.GEMM.num_sm`, `gemm.tiles[].m`), or holds a key
 * below it (`gpu.peak_tflops.bf16` documents `gpu.peak_tflops`).
 */
#include <check.h>

#include "test-util.h"
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/input/measurements-file.h"
#include "io/input/model-file.h"
#include "io/input/scenario-file.h"
#include "render/plot-file.h"

/* Far from every real key, so that the loader lists the known keys
 * instead of suggesting the closest one. */
#define PROBE "qqqqqqqqqqqqqqqqqqqqqqqq"

static const char *
source_dir(void)
{
    const char *dir = g_getenv("TPSIM_SOURCE_DIR");
    return dir != NULL ? dir : ".";
}

/* ---- the page ---- */

/* The code spans in the first cells of the table rows under the "## "
 * heading that starts with `heading`, up to the next "## ". */
static GPtrArray *
documented_keys(const char *heading)
{
    g_autofree char *path = g_build_filename(source_dir(), "docs", "scenario-format.md", NULL);
    g_autofree char *text = NULL;
    ck_assert_msg(g_file_get_contents(path, &text, NULL, NULL), "cannot read %s", path);
    GPtrArray *keys = g_ptr_array_new_with_free_func(g_free);
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    gboolean inside = FALSE, found = FALSE;
    for (guint i = 0; lines[i] != NULL; i++) {
        const char *line = lines[i];
        if (g_str_has_prefix(line, "## ")) {
            inside = g_str_has_prefix(line + 3, heading);
            found |= inside;
            continue;
        }
        if (!inside || line[0] != '|')
            continue;
        const char *end = strchr(line + 1, '|');
        if (end == NULL)
            continue;
        /* Code spans: text between pairs of backquotes. */
        for (const char *p = line + 1; p < end;) {
            const char *open = memchr(p, '`', (gsize)(end - p));
            if (open == NULL)
                break;
            const char *close = memchr(open + 1, '`', (gsize)(end - open - 1));
            if (close == NULL)
                break;
            g_ptr_array_add(keys, g_strndup(open + 1, (gsize)(close - open - 1)));
            p = close + 1;
        }
    }
    ck_assert_msg(found, "docs/scenario-format.md has no section '## %s'", heading);
    ck_assert_msg(keys->len > 0, "no key rows under '## %s'", heading);
    return keys;
}

static gboolean
is_documented(const GPtrArray *doc, const char *path)
{
    gsize len = strlen(path);
    for (guint i = 0; i < doc->len; i++) {
        const char *token = g_ptr_array_index(doc, i);
        if (strcmp(token, path) == 0)
            return TRUE;
        if (strncmp(token, path, len) == 0 && (token[len] == '.' || token[len] == '['))
            return TRUE;
    }
    return FALSE;
}

/* ---- the loaders' answers ---- */

typedef struct {
    char *where;
    GStrv keys;
} Known;

static void
known_clear(Known *k)
{
    g_clear_pointer(&k->where, g_free);
    g_clear_pointer(&k->keys, g_strfreev);
}

/* Reads "unknown key 'PROBE' in WHERE; known keys: a, b" out of `message`;
 * FALSE when the message is anything else. */
static gboolean
parse_known(const char *message, Known *out)
{
    static const char head[] = "unknown key '" PROBE "' in ";
    static const char list[] = "; known keys: ";
    const char *p = strstr(message, head);
    if (p == NULL)
        return FALSE;
    p += strlen(head);
    const char *sep = strstr(p, list);
    if (sep == NULL)
        return FALSE;
    out->where = g_strndup(p, (gsize)(sep - p));
    sep += strlen(list);
    g_autofree char *keys = g_strndup(sep, strcspn(sep, "\n"));
    out->keys = g_strsplit(keys, ", ", -1);
    return TRUE;
}

/* Adds the keys of `known` that `doc` lacks to `missing`, each as
 * `prefix.key` (or `key` when `prefix` is NULL). Returns how many keys
 * were checked. */
static guint
check_keys(const GPtrArray *doc, const Known *known, const char *prefix, GString *missing)
{
    guint n = 0;
    for (guint i = 0; known->keys[i] != NULL; i++, n++) {
        g_autofree char *path = prefix != NULL ? g_strdup_printf("%s.%s", prefix, known->keys[i])
                                               : g_strdup(known->keys[i]);
        if (!is_documented(doc, path))
            g_string_append_printf(missing, " `%s` (in %s)", path, known->where);
    }
    return n;
}

static void
assert_all_documented(const GString *missing, const char *format)
{
    ck_assert_msg(missing->len == 0, "%s keys without a row in docs/scenario-format.md:%s", format,
                  missing->str);
}

/* `template` with its marker lines ("@NAME", indented as the key they
 * stand for) dropped, except `marker`, which becomes PROBE at that
 * indentation. */
static char *
with_probe(const char *template, const char *marker)
{
    GString *out = g_string_new(NULL);
    g_auto(GStrv) lines = g_strsplit(template, "\n", -1);
    for (guint i = 0; lines[i] != NULL; i++) {
        const char *line = lines[i];
        gsize indent = strspn(line, " ");
        if (line[indent] != '@') {
            if (line[0] != '\0')
                g_string_append_printf(out, "%s\n", line);
            continue;
        }
        if (strcmp(line + indent + 1, marker) == 0)
            g_string_append_printf(out, "%.*s" PROBE ": 1\n", (int)indent, line);
    }
    return g_string_free(out, FALSE);
}

/* ---- scenario files ---- */

static const char model_scenario[] = "@\n"
                                     "name: probe\n"
                                     "hardware: a100-sxm4-80gb\n"
                                     "model:\n"
                                     "  hidden: 1024\n"
                                     "  heads: 8\n"
                                     "  layers: 2\n"
                                     "  seq_len: 512\n"
                                     "  @model\n"
                                     "training:\n"
                                     "  micro_batch: 1\n"
                                     "  @training\n"
                                     "parallel:\n"
                                     "  tp: 8\n"
                                     "  sp: true\n"
                                     "  @parallel\n"
                                     "overlap:\n"
                                     "  proj_fprop:\n"
                                     "    method: pipeline\n"
                                     "    @overlap.proj_fprop\n"
                                     "  @overlap\n";

static const char op_scenario[] = "@\n"
                                  "name: probe\n"
                                  "hardware: a100-sxm4-80gb\n"
                                  "op:\n"
                                  "  kind: gemm_rs\n"
                                  "  m: 1024\n"
                                  "  n: 1024\n"
                                  "  k: 1024\n"
                                  "  @op\n"
                                  "parallel:\n"
                                  "  tp: 8\n"
                                  "  @parallel\n"
                                  "overlap:\n"
                                  "  op:\n"
                                  "    method: pipeline\n"
                                  "    @overlap.op\n"
                                  "  @overlap\n";

START_TEST(test_scenario_keys)
{
    static const struct {
        const char *template;
        const char *marker; /* where the probe goes */
        const char *where;  /* where the loader must say it is */
        const char *prefix; /* the keys' path in the page */
    } probes[] = {
        {model_scenario, "", "the scenario", NULL},
        {model_scenario, "model", "model", "model"},
        {model_scenario, "training", "training", "training"},
        {model_scenario, "parallel", "parallel", "parallel"},
        {model_scenario, "overlap", "overlap", "overlap"},
        {model_scenario, "overlap.proj_fprop", "overlap.proj_fprop", "overlap.GEMM"},
        {op_scenario, "", "the scenario", NULL},
        {op_scenario, "op", "op", "op"},
        {op_scenario, "parallel", "parallel", "parallel"},
        {op_scenario, "overlap", "overlap", "overlap"},
        {op_scenario, "overlap.op", "overlap.op", "overlap.GEMM"},
    };
    g_autoptr(GPtrArray) doc = documented_keys("Scenario files");
    g_autoptr(GString) missing = g_string_new(NULL);
    guint checked = 0;
    for (guint i = 0; i < G_N_ELEMENTS(probes); i++) {
        g_autofree char *text = with_probe(probes[i].template, probes[i].marker);
        g_autoptr(GError) error = NULL;
        TpsScenario sc;
        gboolean ok = tps_scenario_file_load_string("probe.yaml", text, -1, &sc, &error);
        tps_scenario_clear(&sc);
        ck_assert_msg(!ok, "the probe in '%s' was accepted", probes[i].marker);
        Known known = {0};
        ck_assert_msg(parse_known(error->message, &known), "probe in '%s': %s", probes[i].marker,
                      error->message);
        ck_assert_str_eq(known.where, probes[i].where);
        checked += check_keys(doc, &known, probes[i].prefix, missing);
        known_clear(&known);
    }
    assert_all_documented(missing, "scenario");
    ck_assert_uint_ge(checked, 40);
}
END_TEST

/* ---- hardware model files ---- */

static gsize
indent_of(const char *line)
{
    return strspn(line, " ");
}

/* A line with a key or a list item, not blank nor a comment. */
static gboolean
is_content(const char *line)
{
    const char *p = line + indent_of(line);
    return *p != '\0' && *p != '#';
}

typedef enum {
    INSERT_MAP,  /* the probe is a key of the map at the path */
    INSERT_ITEM, /* the path is a list of flow maps: the probe is a key of its first item */
    INSERT_NONE, /* the path is a scalar, or not in the file */
} Insert;

/* `text` (a model file in block style, flow maps allowed as values and as
 * list items) with PROBE added to the map at `path`. */
static Insert
model_with_probe(const char *text, const char *const *path, guint depth, char **out)
{
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    const guint n = g_strv_length(lines);
    guint start = 0, end = n, at = n;
    gssize parent = -1;

    *out = NULL;
    if (depth == 0) {
        *out = g_strconcat(PROBE ": 1\n", text, NULL);
        return INSERT_MAP;
    }
    for (guint d = 0; d < depth; d++) {
        /* The direct children of the current map are its content lines at
         * the indentation of its first one. */
        gssize child = -1;
        at = n;
        for (guint i = start; i < end && at == n; i++) {
            if (!is_content(lines[i]))
                continue;
            gssize ind = (gssize)indent_of(lines[i]);
            if (child < 0)
                child = ind;
            const char *key = lines[i] + ind;
            gsize len = strlen(path[d]);
            if (ind == child && strncmp(key, path[d], len) == 0 && key[len] == ':')
                at = i;
        }
        if (at == n)
            return INSERT_NONE;
        parent = (gssize)indent_of(lines[at]);
        start = at + 1;
        for (end = start; end < n; end++)
            if (is_content(lines[end]) && (gssize)indent_of(lines[end]) <= parent)
                break;
    }

    /* The value: inline after the colon, or the block below. */
    char *value = strchr(lines[at] + indent_of(lines[at]), ':') + 1;
    value += strspn(value, " ");
    if (*value == '{') {
        g_autofree char *head = g_strndup(lines[at], (gsize)(value + 1 - lines[at]));
        g_autofree char *line = g_strconcat(head, PROBE ": 1, ", value + 1, NULL);
        g_free(lines[at]);
        lines[at] = g_steal_pointer(&line);
        *out = g_strjoinv("\n", lines);
        return INSERT_MAP;
    }
    if (*value != '\0' && *value != '#')
        return INSERT_NONE;
    guint first = start;
    while (first < end && !is_content(lines[first]))
        first++;
    if (first == end)
        return INSERT_NONE;
    const char *item = lines[first] + indent_of(lines[first]);
    if (g_str_has_prefix(item, "- {")) {
        g_autofree char *head = g_strndup(lines[first], (gsize)(item + 3 - lines[first]));
        g_autofree char *line = g_strconcat(head, PROBE ": 1, ", item + 3, NULL);
        g_free(lines[first]);
        lines[first] = g_steal_pointer(&line);
        *out = g_strjoinv("\n", lines);
        return INSERT_ITEM;
    }
    if (item[0] == '-')
        return INSERT_NONE;
    g_autofree char *probe = g_strdup_printf("%*s" PROBE ": 1", (int)indent_of(lines[first]), "");
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < n; i++) {
        if (i == first)
            g_string_append_printf(s, "%s\n", probe);
        g_string_append(s, lines[i]);
        if (i + 1 < n)
            g_string_append_c(s, '\n');
    }
    *out = g_string_free(s, FALSE);
    return INSERT_MAP;
}

/* "gemm.tiles[0]" -> "gemm.tiles[]": the page writes list items so. */
static char *
doc_prefix(const char *where)
{
    GString *s = g_string_new(NULL);
    for (const char *p = where; *p; p++) {
        g_string_append_c(s, *p);
        if (*p == '[') {
            while (p[1] != '\0' && p[1] != ']')
                p++;
        }
    }
    return g_string_free(s, FALSE);
}

typedef struct {
    const char *base; /* the model file's text */
    const char *tmp;  /* where probes are written */
    const GPtrArray *doc;
    GString *missing;
    guint checked, maps;
} ModelProbe;

static void
probe_model_map(ModelProbe *mp, const char **path, guint depth)
{
    g_autofree char *text = NULL;
    Insert how = model_with_probe(mp->base, path, depth, &text);
    if (how == INSERT_NONE)
        return; /* a scalar: nothing below it */
    g_autofree char *joined = g_strjoinv(".", (char **)path);
    g_autofree char *file = g_build_filename(mp->tmp, "probe.yaml", NULL);
    ck_assert(g_file_set_contents(file, text, -1, NULL));
    TpsHardware hw = {0};
    g_autoptr(GError) error = NULL;
    gboolean ok = tps_model_file_load(file, &hw, &error);
    tps_hardware_clear(&hw);
    ck_assert_msg(!ok, "the probe in '%s' was accepted", joined);
    Known known = {0};
    ck_assert_msg(parse_known(error->message, &known), "probe in '%s': %s", joined, error->message);
    const char *want = depth == 0 ? "the hardware model" : joined;
    if (how == INSERT_ITEM) {
        g_autofree char *item = g_strdup_printf("%s[0]", joined);
        ck_assert_str_eq(known.where, item);
    } else {
        ck_assert_str_eq(known.where, want);
    }
    g_autofree char *prefix = depth == 0 ? NULL : doc_prefix(known.where);
    mp->checked += check_keys(mp->doc, &known, prefix, mp->missing);
    mp->maps++;
    if (how == INSERT_MAP) {
        const char *child[16];
        ck_assert_uint_lt(depth + 2, G_N_ELEMENTS(child));
        for (guint i = 0; i < depth; i++)
            child[i] = path[i];
        child[depth + 1] = NULL;
        for (guint k = 0; known.keys[k] != NULL; k++) {
            child[depth] = known.keys[k];
            probe_model_map(mp, child, depth + 1);
        }
    }
    known_clear(&known);
}

START_TEST(test_model_keys)
{
    g_autofree char *path = g_build_filename(source_dir(), "models", "a100-sxm4-80gb.yaml", NULL);
    g_autofree char *base = NULL;
    ck_assert(g_file_get_contents(path, &base, NULL, NULL));
    g_autofree char *tmp = g_dir_make_tmp("tpsim-format-doc-XXXXXX", NULL);
    ck_assert_ptr_nonnull(tmp);
    g_autoptr(GPtrArray) doc = documented_keys("Hardware model files");
    g_autoptr(GString) missing = g_string_new(NULL);
    ModelProbe mp = {base, tmp, doc, missing, 0, 0};
    const char *root[] = {NULL};
    probe_model_map(&mp, root, 0);
    g_autofree char *file = g_build_filename(tmp, "probe.yaml", NULL);
    g_unlink(file);
    g_rmdir(tmp);
    assert_all_documented(missing, "hardware model");
    /* The root, six sections, peak_tflops, the tiles and six protocol maps. */
    ck_assert_uint_ge(mp.maps, 15);
    ck_assert_uint_ge(mp.checked, 50);
}
END_TEST

/* ---- plot definitions ---- */

START_TEST(test_plot_keys)
{
    static const char *const kinds[] = {"timeline", "sweep"};
    g_autoptr(GPtrArray) doc = documented_keys("Plot definitions");
    g_autoptr(GString) missing = g_string_new(NULL);
    g_autofree char *tmp = g_dir_make_tmp("tpsim-format-doc-XXXXXX", NULL);
    ck_assert_ptr_nonnull(tmp);
    g_autofree char *file = g_build_filename(tmp, "probe.yaml", NULL);
    g_autofree char *scenario =
        g_build_filename(source_dir(), "scenarios", "op-ag-gemm.yaml", NULL);
    guint checked = 0;
    for (guint i = 0; i < G_N_ELEMENTS(kinds); i++) {
        g_autofree char *text =
            g_strdup_printf("kind: %s\nscenario: %s\n" PROBE ": 1\n", kinds[i], scenario);
        ck_assert(g_file_set_contents(file, text, -1, NULL));
        g_autoptr(GError) error = NULL;
        ck_assert(!tps_plot_file_render(file, tmp, NULL, &error));
        Known known = {0};
        ck_assert_msg(parse_known(error->message, &known), "%s", error->message);
        g_autofree char *where = g_strdup_printf("a %s figure", kinds[i]);
        ck_assert_str_eq(known.where, where);
        checked += check_keys(doc, &known, NULL, missing);
        known_clear(&known);
    }
    g_unlink(file);
    g_rmdir(tmp);
    assert_all_documented(missing, "plot");
    ck_assert_uint_ge(checked, 20);
}
END_TEST

/* ---- measurements files ---- */

START_TEST(test_measurements_keys)
{
    g_autoptr(GPtrArray) doc = documented_keys("Measurements files");
    g_autoptr(GString) missing = g_string_new(NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(TpsMeasurements) m = tps_measurements_new();
    /* Beside a known key: a file of no known key is no measurements file. */
    ck_assert(!tps_measurements_file_load_string("probe.yaml", "source: x\n" PROBE ": 1\n", -1, m,
                                                 &error));
    Known root = {0};
    ck_assert_msg(parse_known(error->message, &root), "%s", error->message);
    ck_assert_str_eq(root.where, "the measurements file");
    guint checked = check_keys(doc, &root, NULL, missing), sections = 0;
    /* Each top-level key tried as a list of points: the lists answer with
     * their point keys, the scalars with a type error. */
    for (guint i = 0; root.keys[i] != NULL; i++) {
        g_autofree char *text = g_strdup_printf("%s:\n  - {" PROBE ": 1}\n", root.keys[i]);
        g_autoptr(GError) item_error = NULL;
        g_autoptr(TpsMeasurements) mi = tps_measurements_new();
        ck_assert(!tps_measurements_file_load_string("probe.yaml", text, -1, mi, &item_error));
        Known known = {0};
        if (!parse_known(item_error->message, &known))
            continue;
        g_autofree char *where = g_strdup_printf("%s[0]", root.keys[i]);
        ck_assert_str_eq(known.where, where);
        g_autofree char *prefix = doc_prefix(known.where);
        checked += check_keys(doc, &known, prefix, missing);
        sections++;
        known_clear(&known);
    }
    known_clear(&root);
    assert_all_documented(missing, "measurements");
    ck_assert_uint_ge(sections, 6);
    ck_assert_uint_ge(checked, 40);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("format-doc");
    TCase *tc = tcase_create("format-doc");
    tcase_add_test(tc, test_scenario_keys);
    tcase_add_test(tc, test_model_keys);
    tcase_add_test(tc, test_plot_keys);
    tcase_add_test(tc, test_measurements_keys);
    suite_add_tcase(s, tc);
    return tps_test_run(s);
}
