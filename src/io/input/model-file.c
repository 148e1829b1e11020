/* Hardware model files: models/NAME.yaml into a TpsHardware.
 *
 * The keys, their types, ranges and order come from the hardware schema
 * (cost/hardware-schema.h): the list of known keys given to
 * tps_yaml_check_keys(), the "missing key" check and the parsing all walk
 * that one table. Only the model's name is read here by hand, because it
 * must also be a valid name and match its file's.
 */
#include "io/input/model-file.h"

#include <string.h>

#include "core/error.h"
#include "core/names.h"
#include "cost/collective.h"
#include "cost/hardware-schema.h"
#include "cost/nccl-env.h"
#include "cost/nccl-tuning.h"

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

/* One value of `f` (element or item `index`) from the scalar `node`; `path`
 * names it in messages. */
static gboolean
parse_value(const TpsYamlDoc *doc, const TpsYamlNode *node, const char *path,
            const TpsHardwareField *f, guint index, TpsHardware *hw, GError **error)
{
    char *base = (char *)hw + tps_hardware_field_offset(f, index);
    guint64 u;
    double d;
    gboolean b;
    guint e;
    const char *s;

    switch (f->type) {
    case TPS_HW_STRING:
        if (!tps_yaml_string(doc, node, path, &s, error))
            return FALSE;
        if (*s == '\0')
            return tps_yaml_error(doc, node, error, "%s must not be empty", path);
        g_free(*(char **)base);
        *(char **)base = g_strdup(s);
        return TRUE;
    case TPS_HW_UINT:
        if (!tps_yaml_uint(doc, node, path, (guint64)f->min, (guint64)f->max, &u, error))
            return FALSE;
        *(guint *)base = (guint)u;
        return TRUE;
    case TPS_HW_DOUBLE:
        return tps_yaml_double(doc, node, path, f->min, f->max, (double *)base, error);
    case TPS_HW_TIME:
        if (!tps_yaml_double(doc, node, path, f->min, f->max, &d, error))
            return FALSE;
        tps_hardware_field_set(f, hw, index, d);
        return TRUE;
    case TPS_HW_BOOL:
        if (!tps_yaml_bool(doc, node, path, &b, error))
            return FALSE;
        *(gboolean *)base = b;
        return TRUE;
    case TPS_HW_ENUM:
        if (!tps_yaml_enum(doc, node, path, f->names, &e, error))
            return FALSE;
        *(int *)base = (int)e;
        return TRUE;
    }
    g_assert_not_reached();
    return FALSE;
}

/* A map of one value per element of `f` (gpu.peak_tflops, nccl.*). */
static gboolean
parse_map(const TpsYamlDoc *doc, const TpsYamlNode *node, const char *where,
          const TpsHardwareField *f, TpsHardware *hw, GError **error)
{
    if (!tps_yaml_check_keys(doc, node, where, f->elements, error))
        return FALSE;
    for (guint i = 0; f->elements[i] != NULL; i++) {
        g_autofree char *path = g_strdup_printf("%s.%s", where, f->elements[i]);
        const TpsYamlNode *child = require(doc, node, f->elements[i], where, error);
        if (child == NULL || !parse_value(doc, child, path, f, i, hw, error))
            return FALSE;
    }
    return TRUE;
}

/* A list whose items have the members of entries [first, end) (gemm.tiles). */
static gboolean
parse_list(const TpsYamlDoc *doc, const TpsYamlNode *node, const char *where,
           const TpsHardwareField *fields, guint first, guint end, TpsHardware *hw, GError **error)
{
    const TpsHardwareList *list = fields[first].list;
    g_autofree const char **members = g_new0(const char *, end - first + 1);
    for (guint m = first; m < end; m++)
        members[m - first] = fields[m].member;
    g_autofree char *joined = tps_names_join(members);
    g_autofree char *what = g_strdup_printf("a sequence of %s {%s}", list->item, joined);

    if (!tps_yaml_expect(doc, node, TPS_YAML_SEQ, what, error))
        return FALSE;
    if (node->items->len == 0 || node->items->len > list->max_items)
        return tps_yaml_error(doc, node, error, "%s must have 1 to %u entries, not %u", where,
                              list->max_items, node->items->len);
    for (guint i = 0; i < node->items->len; i++) {
        const TpsYamlNode *item = g_ptr_array_index(node->items, i);
        g_autofree char *item_where = g_strdup_printf("%s[%u]", where, i);

        if (!tps_yaml_check_keys(doc, item, item_where, members, error))
            return FALSE;
        for (guint m = first; m < end; m++) {
            g_autofree char *path = g_strdup_printf("%s.%s", item_where, fields[m].member);
            const TpsYamlNode *child = require(doc, item, fields[m].member, item_where, error);
            if (child == NULL || !parse_value(doc, child, path, &fields[m], i, hw, error))
                return FALSE;
        }
    }
    *(guint *)(void *)((char *)hw + list->count_offset) = node->items->len;
    return TRUE;
}

/* A key not required and not in the file takes its default. */
static void
set_default(const TpsHardwareField *f, TpsHardware *hw)
{
    g_return_if_fail(f->shape != TPS_HW_LIST);
    if (f->type == TPS_HW_STRING)
        return;
    for (guint i = 0; i < tps_hardware_field_count(f, hw); i++)
        tps_hardware_field_set(f, hw, i, f->default_value);
}

/* The keys of section `sec` in table order, one per list, NULL-terminated
 * (the strings belong to the table). */
static const char **
section_keys(const TpsHardwareField *fields, guint n_fields, const char *sec)
{
    GPtrArray *keys = g_ptr_array_new();
    for (guint i = 0; i < n_fields; i = tps_hardware_schema_key_end(i))
        if (g_strcmp0(fields[i].section, sec) == 0)
            g_ptr_array_add(keys, (gpointer)fields[i].key);
    g_ptr_array_add(keys, NULL);
    return (const char **)g_ptr_array_free(keys, FALSE);
}

/* The keys of the top level: "name" (the schema's one top-level entry, read
 * by hand in load()), then the sections in order of first use;
 * NULL-terminated. */
static const char **
top_level_keys(const TpsHardwareField *fields, guint n_fields)
{
    GPtrArray *keys = g_ptr_array_new();
    g_ptr_array_add(keys, (gpointer) "name");
    for (guint i = 0; i < n_fields; i++) {
        const char *s = fields[i].section;
        gboolean seen = s == NULL;
        for (guint j = 1; j < keys->len && !seen; j++)
            seen = strcmp(keys->pdata[j], s) == 0;
        if (!seen)
            g_ptr_array_add(keys, (gpointer)s);
    }
    g_ptr_array_add(keys, NULL);
    return (const char **)g_ptr_array_free(keys, FALSE);
}

static gboolean
parse_section(const TpsYamlDoc *doc, const TpsYamlNode *node, const char *sec,
              const TpsHardwareField *fields, guint n_fields, TpsHardware *hw, GError **error)
{
    g_autofree const char **known = section_keys(fields, n_fields, sec);
    if (!tps_yaml_check_keys(doc, node, sec, known, error))
        return FALSE;
    for (guint i = 0, end; i < n_fields; i = end) {
        const TpsHardwareField *f = &fields[i];
        end = tps_hardware_schema_key_end(i);
        if (g_strcmp0(f->section, sec) != 0)
            continue;
        g_autofree char *path = g_strdup_printf("%s.%s", sec, f->key);
        const TpsYamlNode *child = tps_yaml_get(node, f->key);
        if (child == NULL && !f->required) {
            set_default(f, hw);
            continue;
        }
        if (child == NULL)
            child = require(doc, node, f->key, sec, error);
        if (child == NULL)
            return FALSE;
        gboolean ok = FALSE;
        switch (f->shape) {
        case TPS_HW_SCALAR:
            ok = parse_value(doc, child, path, f, 0, hw, error);
            break;
        case TPS_HW_MAP:
            ok = parse_map(doc, child, path, f, hw, error);
            break;
        case TPS_HW_LIST:
            ok = parse_list(doc, child, path, fields, i, end, hw, error);
            break;
        }
        if (!ok)
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

/* The node of `section`.`key` in `map`, or `otherwise` where the model
 * does not give it: where a cross-key rule's error points. */
static const TpsYamlNode *
key_node(const TpsYamlNode *map, const char *section, const char *key,
         const TpsYamlNode *otherwise)
{
    const TpsYamlNode *sec = tps_yaml_get(map, section);
    const TpsYamlNode *node = sec != NULL ? tps_yaml_get(sec, key) : NULL;
    return node != NULL ? node : otherwise;
}

/* The rule between the topology's keys: an NVLink domain is whole nodes.
 * `map` holds the model's sections (a file's root, a what-if's map); the
 * error points at node.nvlink_domain_gpus, else node.gpus, where given. */
static gboolean
check_topology(const TpsYamlDoc *doc, const TpsYamlNode *map, const TpsHardware *hw,
               GError **error)
{
    if (hw->gpus_per_node == 0 || hw->nvlink_domain_gpus % hw->gpus_per_node == 0)
        return TRUE;
    const TpsYamlNode *at =
        key_node(map, "node", "nvlink_domain_gpus", key_node(map, "node", "gpus", map));
    return tps_yaml_error(doc, at, error,
                          "node.nvlink_domain_gpus (%u) must be a multiple of node.gpus (%u): "
                          "an NVLink domain is whole nodes",
                          hw->nvlink_domain_gpus, hw->gpus_per_node);
}

/* nccl.algo / nccl.proto (cost/nccl-env.h), per-function lists only from
 * NCCL 2.24 (before, NCCL reads the value as one list); the error points
 * at the key. Where the key is in `map`, its position is kept for the
 * errors of the calls it leaves nothing for. */
static gboolean
check_nccl_list(const TpsYamlDoc *doc, const TpsYamlNode *map, const char *key, TpsHardware *hw,
                const char *const *names, GError **error)
{
    const gboolean algo = strcmp(key, "algo") == 0;
    const char *value = algo ? hw->nccl_algo : hw->nccl_proto;
    const TpsYamlNode *at = key_node(map, "nccl", key, map);
    if (at != map) {
        char **where = algo ? &hw->nccl_algo_at : &hw->nccl_proto_at;
        g_free(*where);
        *where = g_strdup_printf("%s:%u:%u", doc->file, at->line, at->column);
    }
    TpsNcclLists lists;
    int bad;
    if (tps_nccl_parse_lists(value, names, &lists, &bad)) {
        if (!lists.prefixed || tps_nccl_function_lists(hw))
            return TRUE;
        return tps_yaml_error(doc, at, error,
                              "nccl.%s '%s': per-function lists are NCCL 2.24's; NCCL %s reads "
                              "the value as one list",
                              key, value, hw->nccl_version);
    }
    const char *rest = value + MAX(bad, 0);
    switch (lists.error) {
    case TPS_NCCL_LISTS_NOTHING:
        return tps_yaml_error(doc, at, error, "nccl.%s '%s' allows nothing", key, value);
    case TPS_NCCL_LISTS_NO_FUNCTION:
        return tps_yaml_error(doc, at, error,
                              "nccl.%s '%s': every list after the first names its function, as "
                              "'AllReduce:Tree;AllGather:Ring' (at '%s')",
                              key, value, rest);
    case TPS_NCCL_LISTS_UNKNOWN_FUNCTION:
        return tps_yaml_error(doc, at, error,
                              "nccl.%s '%s': unknown function at '%s' (known: AllGather, "
                              "ReduceScatter, AllReduce, Broadcast, Reduce)",
                              key, value, rest);
    default: {
        g_autofree char *known = g_strjoinv(", ", (char **)names);
        return tps_yaml_error(doc, at, error, "nccl.%s '%s': unknown name at '%s' (known: %s)",
                              key, value, rest, known);
    }
    }
}

/* nccl.version must be a release whose tuning tables tpsim holds
 * (tps_nccl_tuning); the error points at the key. */
static gboolean
check_nccl_version(const TpsYamlDoc *doc, const TpsYamlNode *map, const char *value,
                   GError **error)
{
    if (value == NULL || tps_nccl_tuning(value) != NULL)
        return TRUE;
    return tps_yaml_error(doc, key_node(map, "nccl", "version", map), error,
                          "nccl.version '%s': no tuning tables for it (known: %s, written "
                          "2.MINOR or 2.MINOR.PATCH)",
                          value, tps_nccl_tuning_range());
}

/* nccl.ce_collectives needs copy engines to run on: the error points at
 * the key, else at gpu.copy_engines. */
static gboolean
check_ce_collectives(const TpsYamlDoc *doc, const TpsYamlNode *map, const TpsHardware *hw,
                     GError **error)
{
    if (!hw->nccl_ce_collectives || hw->copy_engines > 0)
        return TRUE;
    const TpsYamlNode *at =
        key_node(map, "nccl", "ce_collectives", key_node(map, "gpu", "copy_engines", map));
    return tps_yaml_error(doc, at, error,
                          "nccl.ce_collectives is 1 but gpu.copy_engines is 0: NCCL's copy-engine "
                          "all-gather needs copy engines");
}

/* The model read into `tmp` checked across its keys and moved into `hw`;
 * freed instead when a rule fails. */
static gboolean
commit_model(const TpsYamlDoc *doc, const TpsYamlNode *map, TpsHardware *tmp, TpsHardware *hw,
             GError **error)
{
    if (!check_topology(doc, map, tmp, error) ||
        !check_nccl_list(doc, map, "algo", tmp, tps_coll_algo_names, error) ||
        !check_nccl_list(doc, map, "proto", tmp, tps_protocol_names, error) ||
        !check_nccl_version(doc, map, tmp->nccl_version, error) ||
        !check_ce_collectives(doc, map, tmp, error)) {
        tps_hardware_clear(tmp);
        return FALSE;
    }
    tps_hardware_clear(hw);
    *hw = *tmp;
    return TRUE;
}

/* Loads `doc` (NULL: its reading failed, `error` is set); when
 * `expected_name` is set (a built-in NAME), the file's `name` must be it. */
static gboolean
load_doc(TpsYamlDoc *doc, const char *expected_name, TpsHardware *hw, GError **error)
{
    TpsHardware tmp = {0};
    guint n_fields;
    const TpsHardwareField *fields = tps_hardware_schema(&n_fields);
    g_autofree const char **top_keys = top_level_keys(fields, n_fields);
    const TpsYamlNode *root, *node;
    const char *name;

    if (doc == NULL)
        return FALSE;
    root = doc->root;
    if (root == NULL) {
        /* Positioned like the other loaders' empty files: line 1, column 1. */
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "%s:1:1: empty hardware model file",
                    doc->file);
        return FALSE;
    }
    if (!tps_yaml_check_kind(doc, root, "hardware model", top_keys, error) ||
        !tps_yaml_check_keys(doc, root, "the hardware model", top_keys, error))
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
        tps_yaml_error(doc, node, error, "model name '%s' does not match its file name '%s'", name,
                       expected_name);
        goto fail;
    }
    tmp.name = g_strdup(name);
    for (guint i = 1; top_keys[i] != NULL; i++) {
        node = require(doc, root, top_keys[i], "the hardware model", error);
        if (node == NULL || !parse_section(doc, node, top_keys[i], fields, n_fields, &tmp, error))
            goto fail;
    }
    /* Derived default: the channels were counted on the file's own NVLink. */
    if (tmp.nccl_channels_nvlink_gbps < 0.0)
        tmp.nccl_channels_nvlink_gbps = tmp.nvlink_gbps;
    return commit_model(doc, root, &tmp, hw, error);

fail:
    tps_hardware_clear(&tmp);
    return FALSE;
}

/* ---- what-ifs: a model with some values changed ---- */

gboolean
tps_model_file_apply(const TpsYamlDoc *doc, const TpsYamlNode *map, const char *const *skip,
                     TpsHardware *hw, GError **error)
{
    guint n_fields;
    const TpsHardwareField *fields = tps_hardware_schema(&n_fields);
    g_autofree const char **top_keys = top_level_keys(fields, n_fields);
    /* The sections and the keys `skip` (base:); not the name, which says
     * which model this is. */
    GPtrArray *known = g_ptr_array_new();
    for (guint i = 0; skip && skip[i]; i++)
        g_ptr_array_add(known, (gpointer)skip[i]);
    for (guint i = 1; top_keys[i] != NULL; i++)
        g_ptr_array_add(known, (gpointer)top_keys[i]);
    g_ptr_array_add(known, NULL);
    g_autofree const char **known_keys = (const char **)g_ptr_array_free(known, FALSE);
    if (!tps_yaml_check_keys(doc, map, "hardware", known_keys, error))
        return FALSE;

    /* Into a copy: a failure leaves `hw` as it was. */
    TpsHardware tmp = {0};
    tps_hardware_copy(&tmp, hw);
    for (guint k = 0; k < map->keys->len; k++) {
        const char *sec = ((const TpsYamlNode *)g_ptr_array_index(map->keys, k))->value;
        const TpsYamlNode *node = g_ptr_array_index(map->items, k);
        if (skip && g_strv_contains(skip, sec))
            continue;
        g_autofree const char **keys = section_keys(fields, n_fields, sec);
        if (!tps_yaml_check_keys(doc, node, sec, keys, error))
            goto fail;
        for (guint i = 0, end; i < n_fields; i = end) {
            const TpsHardwareField *f = &fields[i];
            end = tps_hardware_schema_key_end(i);
            const TpsYamlNode *child;
            if (g_strcmp0(f->section, sec) != 0 || (child = tps_yaml_get(node, f->key)) == NULL)
                continue;
            g_autofree char *path = g_strdup_printf("%s.%s", sec, f->key);
            gboolean ok = FALSE;
            switch (f->shape) {
            case TPS_HW_SCALAR:
                ok = parse_value(doc, child, path, f, 0, &tmp, error);
                break;
            case TPS_HW_MAP:
                /* Only the elements given change. */
                ok = tps_yaml_check_keys(doc, child, path, f->elements, error);
                for (guint e = 0; ok && f->elements[e] != NULL; e++) {
                    const TpsYamlNode *el = tps_yaml_get(child, f->elements[e]);
                    g_autofree char *el_path = g_strdup_printf("%s.%s", path, f->elements[e]);
                    if (el != NULL)
                        ok = parse_value(doc, el, el_path, f, e, &tmp, error);
                }
                break;
            case TPS_HW_LIST:
                /* A list is replaced whole. */
                ok = parse_list(doc, child, path, fields, i, end, &tmp, error);
                break;
            }
            if (!ok)
                goto fail;
        }
    }
    return commit_model(doc, map, &tmp, hw, error);

fail:
    tps_hardware_clear(&tmp);
    return FALSE;
}

static gboolean
load(const char *path, const char *expected_name, TpsHardware *hw, GError **error)
{
    g_autoptr(TpsYamlDoc) doc = tps_yaml_load_file(path, error);
    return load_doc(doc, expected_name, hw, error);
}

gboolean
tps_model_file_load_string(const char *name, const char *text, gssize len, TpsHardware *hw,
                           GError **error)
{
    g_return_val_if_fail(name != NULL && text != NULL && hw != NULL, FALSE);
    g_autoptr(TpsYamlDoc) doc = tps_yaml_load_string(name, text, len, error);
    return load_doc(doc, NULL, hw, error);
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
    return tps_model_file_resolve_at(ref, base_dir, hw, NULL, error);
}

gboolean
tps_model_file_resolve_at(const char *ref, const char *base_dir, TpsHardware *hw, char **path_out,
                          GError **error)
{
    g_return_val_if_fail(ref != NULL && hw != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);

    if (is_path(ref)) {
        /* From the folder of the file that names it, never from wherever
         * the command runs: the same scenario names the same model. */
        g_autofree char *path =
            !g_path_is_absolute(ref) && base_dir != NULL && strcmp(base_dir, ".") != 0
                ? g_build_filename(base_dir, ref, NULL)
                : g_strdup(ref);
        if (!load(path, NULL, hw, error))
            return FALSE;
        if (path_out)
            *path_out = g_canonicalize_filename(path, NULL);
        return TRUE;
    }

    g_auto(GStrv) dirs = tps_model_file_search_path();
    g_autofree char *file = g_strconcat(ref, ".yaml", NULL);
    for (guint i = 0; dirs[i] != NULL; i++) {
        g_autofree char *path = g_build_filename(dirs[i], file, NULL);
        if (!g_file_test(path, G_FILE_TEST_IS_REGULAR))
            continue;
        if (!load(path, ref, hw, error))
            return FALSE;
        if (path_out)
            *path_out = g_canonicalize_filename(path, NULL);
        return TRUE;
    }

    g_auto(GStrv) names = tps_model_file_list();
    g_autofree char *list = tps_names_join((const char *const *)names);
    g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "unknown hardware model '%s'; available: %s",
                ref, *list ? list : "(none)");
    return FALSE;
}
