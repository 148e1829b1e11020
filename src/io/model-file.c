/* Hardware model files: models/NAME.yaml into a TpsHardware.
 *
 * The schema is one static table per section (key, kind, offset into
 * TpsHardware, range), so the list of known keys given to
 * tps_yaml_check_keys(), the "missing key" check and the parsing come from a
 * single source. Every key is required: a model file states every value with
 * its source, and a silent default would hide a forgotten one.
 */
#include "io/model-file.h"

#include <stddef.h>
#include <string.h>

#include "core/error.h"
#include "core/names.h"

typedef enum {
    FIELD_STRING,   /* char * (owned) */
    FIELD_UINT,     /* guint */
    FIELD_DOUBLE,   /* double */
    FIELD_DTYPES,   /* double[TPS_DTYPE_COUNT], map bf16/fp16 */
    FIELD_PROTOS,   /* double[TPS_PROTO_COUNT], map ll/ll128/simple */
    FIELD_TILES,    /* gemm.tiles: sequence of {m, n, efficiency} */
} FieldKind;

typedef struct {
    const char *key;
    FieldKind kind;
    gsize offset;
    double min, max;
} Field;

typedef struct {
    const char *key;
    const Field *fields;
    guint n_fields;
} Section;

#define F(key, kind, member, min, max) {key, kind, offsetof(TpsHardware, member), min, max}

static const Field gpu_fields[] = {
    F("name", FIELD_STRING, gpu_name, 0, 0),
    F("sms", FIELD_UINT, sms, 1, 1024),
    F("clock_mhz", FIELD_DOUBLE, clock_mhz, 100, 10000),
    F("memory_gib", FIELD_DOUBLE, memory_gib, 1, 4096),
    F("peak_tflops", FIELD_DTYPES, peak_tflops, 1, 100000),
    F("hbm_gbps", FIELD_DOUBLE, hbm_gbps, 10, 100000),
    F("hbm_efficiency", FIELD_DOUBLE, hbm_efficiency, 0.05, 1),
    F("sm_mem_gbps", FIELD_DOUBLE, sm_mem_gbps, 1, 10000),
    F("launch_us", FIELD_DOUBLE, launch_us, 0, 1000),
    F("copy_engines", FIELD_UINT, copy_engines, 0, 64),
};

static const Field gemm_fields[] = {
    F("tiles", FIELD_TILES, tiles, 0.05, 1),
    F("k_overhead", FIELD_DOUBLE, k_overhead, 0, 100000),
};

static const Field attention_fields[] = {
    F("flash_fwd_efficiency", FIELD_DOUBLE, flash_fwd_efficiency, 0.01, 1),
    F("flash_bwd_efficiency", FIELD_DOUBLE, flash_bwd_efficiency, 0.01, 1),
};

static const Field node_fields[] = {
    F("gpus", FIELD_UINT, gpus_per_node, 1, 1024),
    F("nvlink_gbps", FIELD_DOUBLE, nvlink_gbps, 1, 100000),
    F("nvlink_efficiency", FIELD_DOUBLE, nvlink_efficiency, 0.05, 1),
    F("copy_engine_gbps", FIELD_DOUBLE, copy_engine_gbps, 1, 100000),
};

static const Field network_fields[] = {
    F("nics_per_node", FIELD_UINT, nics_per_node, 1, 1024),
    F("nic_gbps", FIELD_DOUBLE, nic_gbps, 0.1, 100000),
    F("latency_us", FIELD_DOUBLE, network_latency_us, 0, 1000),
};

static const Field nccl_fields[] = {
    F("channels", FIELD_UINT, nccl_channels, 1, 256),
    F("threads", FIELD_UINT, nccl_threads, 32, 1024),
    F("base_latency_us", FIELD_PROTOS, nccl_base_latency_us, 0, 1000),
    F("hw_latency_us", FIELD_PROTOS, nccl_hw_latency_us, 0, 1000),
    F("net_latency_us", FIELD_PROTOS, nccl_net_latency_us, 0, 1000),
    F("channel_gbps", FIELD_PROTOS, nccl_channel_gbps, 0.01, 10000),
    F("proto_efficiency", FIELD_PROTOS, nccl_proto_efficiency, 0.05, 1),
    F("slot_bytes", FIELD_PROTOS, nccl_slot_bytes, 0, 1 << 30),
};

#undef F

#define SECTION(key, fields) {key, fields, G_N_ELEMENTS(fields)}
static const Section sections[] = {
    SECTION("gpu", gpu_fields),         SECTION("gemm", gemm_fields),
    SECTION("attention", attention_fields), SECTION("node", node_fields),
    SECTION("network", network_fields), SECTION("nccl", nccl_fields),
};
#undef SECTION

static const char *const top_keys[] = {"name", "gpu", "gemm", "attention", "node", "network",
                                       "nccl", NULL};
static const char *const dtype_keys[] = {"bf16", "fp16", NULL};
static const char *const proto_keys[] = {"ll", "ll128", "simple", NULL};
static const char *const tile_keys[] = {"m", "n", "efficiency", NULL};

/* The child `key` of `map`, or an error at the map naming what is missing. */
static const TpsYamlNode *
require(const TpsYamlDoc *doc, const TpsYamlNode *map, const char *key, const char *where,
        GError **error)
{
    const TpsYamlNode *node = tps_yaml_get(map, key);
    if (node == NULL)
        tps_yaml_error(doc, map, error, "missing key '%s' in %s", key, where);
    return node;
}

static gboolean
parse_double_map(const TpsYamlDoc *doc, const TpsYamlNode *node, const char *where,
                 const char *const *keys, double min, double max, double *out, GError **error)
{
    if (!tps_yaml_check_keys(doc, node, where, keys, error))
        return FALSE;
    for (guint i = 0; keys[i] != NULL; i++) {
        g_autofree char *path = g_strdup_printf("%s.%s", where, keys[i]);
        const TpsYamlNode *child = require(doc, node, keys[i], where, error);
        if (child == NULL || !tps_yaml_double(doc, child, path, min, max, &out[i], error))
            return FALSE;
    }
    return TRUE;
}

static gboolean
parse_tiles(const TpsYamlDoc *doc, const TpsYamlNode *node, const Field *f, TpsHardware *hw,
            GError **error)
{
    if (!tps_yaml_expect(doc, node, TPS_YAML_SEQ, "a sequence of tiles {m, n, efficiency}", error))
        return FALSE;
    if (node->items->len == 0 || node->items->len > TPS_GEMM_MAX_TILES)
        return tps_yaml_error(doc, node, error, "gemm.tiles must have 1 to %d entries, not %u",
                              TPS_GEMM_MAX_TILES, node->items->len);
    for (guint i = 0; i < node->items->len; i++) {
        const TpsYamlNode *item = g_ptr_array_index(node->items, i);
        TpsGemmTile *tile = &hw->tiles[i];
        guint64 v;
        g_autofree char *where = g_strdup_printf("gemm.tiles[%u]", i);
        g_autofree char *key_m = g_strdup_printf("%s.m", where);
        g_autofree char *key_n = g_strdup_printf("%s.n", where);
        g_autofree char *key_e = g_strdup_printf("%s.efficiency", where);
        const TpsYamlNode *child;

        if (!tps_yaml_check_keys(doc, item, where, tile_keys, error))
            return FALSE;
        if (!(child = require(doc, item, "m", where, error)) ||
            !tps_yaml_uint(doc, child, key_m, 8, 1024, &v, error))
            return FALSE;
        tile->m = (guint)v;
        if (!(child = require(doc, item, "n", where, error)) ||
            !tps_yaml_uint(doc, child, key_n, 8, 1024, &v, error))
            return FALSE;
        tile->n = (guint)v;
        if (!(child = require(doc, item, "efficiency", where, error)) ||
            !tps_yaml_double(doc, child, key_e, f->min, f->max, &tile->efficiency, error))
            return FALSE;
    }
    hw->n_tiles = node->items->len;
    return TRUE;
}

static gboolean
parse_field(const TpsYamlDoc *doc, const TpsYamlNode *node, const char *section, const Field *f,
            TpsHardware *hw, GError **error)
{
    char *base = (char *)hw + f->offset;
    g_autofree char *path = g_strdup_printf("%s.%s", section, f->key);
    guint64 u;
    const char *s;

    switch (f->kind) {
    case FIELD_STRING:
        if (!tps_yaml_string(doc, node, path, &s, error))
            return FALSE;
        if (*s == '\0')
            return tps_yaml_error(doc, node, error, "%s must not be empty", path);
        g_free(*(char **)base);
        *(char **)base = g_strdup(s);
        return TRUE;
    case FIELD_UINT:
        if (!tps_yaml_uint(doc, node, path, (guint64)f->min, (guint64)f->max, &u, error))
            return FALSE;
        *(guint *)base = (guint)u;
        return TRUE;
    case FIELD_DOUBLE:
        return tps_yaml_double(doc, node, path, f->min, f->max, (double *)base, error);
    case FIELD_DTYPES:
        return parse_double_map(doc, node, path, dtype_keys, f->min, f->max, (double *)base,
                                error);
    case FIELD_PROTOS:
        return parse_double_map(doc, node, path, proto_keys, f->min, f->max, (double *)base,
                                error);
    case FIELD_TILES:
        return parse_tiles(doc, node, f, hw, error);
    }
    g_assert_not_reached();
    return FALSE;
}

static gboolean
parse_section(const TpsYamlDoc *doc, const TpsYamlNode *node, const Section *sec,
              TpsHardware *hw, GError **error)
{
    g_autofree const char **known = g_new0(const char *, sec->n_fields + 1);
    for (guint i = 0; i < sec->n_fields; i++)
        known[i] = sec->fields[i].key;
    if (!tps_yaml_check_keys(doc, node, sec->key, known, error))
        return FALSE;
    for (guint i = 0; i < sec->n_fields; i++) {
        const TpsYamlNode *child = require(doc, node, sec->fields[i].key, sec->key, error);
        if (child == NULL || !parse_field(doc, child, sec->key, &sec->fields[i], hw, error))
            return FALSE;
    }
    return TRUE;
}

static gboolean
valid_name(const char *name)
{
    if (*name == '\0')
        return FALSE;
    for (const char *c = name; *c; c++)
        if (!g_ascii_isalnum(*c) && *c != '.' && *c != '_' && *c != '-')
            return FALSE;
    return TRUE;
}

/* Loads `path`; when `expected_name` is set (a built-in NAME), the file's
 * `name` must be it. */
static gboolean
load(const char *path, const char *expected_name, TpsHardware *hw, GError **error)
{
    g_autoptr(TpsYamlDoc) doc = tps_yaml_load_file(path, error);
    TpsHardware tmp = {0};
    const TpsYamlNode *root, *node;
    const char *name;

    if (doc == NULL)
        return FALSE;
    root = doc->root;
    if (root == NULL)
        return tps_yaml_error(doc, NULL, error, "empty hardware model file");
    if (!tps_yaml_check_keys(doc, root, "the hardware model", top_keys, error))
        goto fail;
    if (!(node = require(doc, root, "name", "the hardware model", error)) ||
        !tps_yaml_string(doc, node, "name", &name, error))
        goto fail;
    if (!valid_name(name)) {
        tps_yaml_error(doc, node, error,
                       "invalid model name '%s': use letters, digits, '.', '_' and '-'", name);
        goto fail;
    }
    if (expected_name && strcmp(name, expected_name) != 0) {
        tps_yaml_error(doc, node, error, "model name '%s' does not match its file name '%s'",
                       name, expected_name);
        goto fail;
    }
    tmp.name = g_strdup(name);
    for (guint i = 0; i < G_N_ELEMENTS(sections); i++) {
        node = require(doc, root, sections[i].key, "the hardware model", error);
        if (node == NULL || !parse_section(doc, node, &sections[i], &tmp, error))
            goto fail;
    }
    tps_hardware_clear(hw);
    *hw = tmp;
    return TRUE;

fail:
    tps_hardware_clear(&tmp);
    return FALSE;
}

gboolean
tps_model_file_load(const char *path, TpsHardware *hw, GError **error)
{
    g_return_val_if_fail(path != NULL && hw != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    return load(path, NULL, hw, error);
}

char **
tps_model_file_search_path(void)
{
    GPtrArray *dirs = g_ptr_array_new();
    const char *env = g_getenv("TPSIM_MODEL_PATH");

    if (env != NULL) {
        g_auto(GStrv) parts = g_strsplit(env, ":", -1);
        for (guint i = 0; parts[i] != NULL; i++)
            if (parts[i][0] != '\0')
                g_ptr_array_add(dirs, g_strdup(parts[i]));
    }
    g_ptr_array_add(dirs, g_strdup(TPS_MODELS_DIR_BUILD));
    g_ptr_array_add(dirs, g_strdup(TPS_MODELS_DIR_INSTALL));
    g_ptr_array_add(dirs, NULL);
    return (char **)g_ptr_array_free(dirs, FALSE);
}

static int
compare_strings(gconstpointer a, gconstpointer b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

char **
tps_model_file_list(void)
{
    g_auto(GStrv) dirs = tps_model_file_search_path();
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    GPtrArray *names = g_ptr_array_new();

    for (guint i = 0; dirs[i] != NULL; i++) {
        g_autoptr(GDir) dir = g_dir_open(dirs[i], 0, NULL);
        const char *entry;
        if (dir == NULL)
            continue;
        while ((entry = g_dir_read_name(dir)) != NULL) {
            if (!g_str_has_suffix(entry, ".yaml"))
                continue;
            char *name = g_strndup(entry, strlen(entry) - strlen(".yaml"));
            if (g_hash_table_contains(seen, name)) {
                g_free(name);
                continue;
            }
            g_hash_table_add(seen, name);
            g_ptr_array_add(names, g_strdup(name));
        }
    }
    g_ptr_array_sort(names, compare_strings);
    g_ptr_array_add(names, NULL);
    return (char **)g_ptr_array_free(names, FALSE);
}

static gboolean
is_path(const char *ref)
{
    return strchr(ref, '/') != NULL || g_str_has_suffix(ref, ".yaml");
}

gboolean
tps_model_file_resolve(const char *ref, const char *base_dir, TpsHardware *hw, GError **error)
{
    g_return_val_if_fail(ref != NULL && hw != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);

    if (is_path(ref)) {
        if (!g_path_is_absolute(ref) && !g_file_test(ref, G_FILE_TEST_EXISTS) &&
            base_dir != NULL) {
            g_autofree char *joined = g_build_filename(base_dir, ref, NULL);
            if (g_file_test(joined, G_FILE_TEST_EXISTS))
                return load(joined, NULL, hw, error);
        }
        return load(ref, NULL, hw, error);
    }

    g_auto(GStrv) dirs = tps_model_file_search_path();
    g_autofree char *file = g_strconcat(ref, ".yaml", NULL);
    for (guint i = 0; dirs[i] != NULL; i++) {
        g_autofree char *path = g_build_filename(dirs[i], file, NULL);
        if (g_file_test(path, G_FILE_TEST_IS_REGULAR))
            return load(path, ref, hw, error);
    }

    g_auto(GStrv) names = tps_model_file_list();
    g_autofree char *list = tps_names_join((const char *const *)names);
    g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "unknown hardware model '%s'; available: %s",
                ref, *list ? list : "(none)");
    return FALSE;
}
