/* Fuzz target: arbitrary bytes through the YAML tree, then a walk of every
 * node (positions, typed getters, strict-key check), as the loaders do. */
#include <glib.h>
#include <stdint.h>
#include <stdlib.h>

#include "io/input/yaml-tree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const some_keys[] = {"name", "hardware", "model", "op", NULL};
static const char *const some_choices[] = {"bf16", "fp16", "true", NULL};

static void
walk(const TpsYamlDoc *doc, const TpsYamlNode *node, guint depth)
{
    g_assert(node->line >= 1 && node->column >= 1);
    g_assert(depth < 100000);
    switch (node->type) {
    case TPS_YAML_SCALAR: {
        guint64 u;
        double d;
        gboolean b;
        const char *s;
        guint e;
        GError *error = NULL;
        g_assert(node->value != NULL);
        /* Each getter either succeeds or sets an error; never both. */
        if (!tps_yaml_uint(doc, node, "k", 0, G_MAXUINT64, &u, &error))
            g_clear_error(&error);
        if (!tps_yaml_double(doc, node, "k", -1e300, 1e300, &d, &error))
            g_clear_error(&error);
        if (!tps_yaml_bool(doc, node, "k", &b, &error))
            g_clear_error(&error);
        if (!tps_yaml_string(doc, node, "k", &s, &error))
            g_clear_error(&error);
        if (!tps_yaml_enum(doc, node, "k", some_choices, &e, &error))
            g_clear_error(&error);
        if (!tps_yaml_expect(doc, node, TPS_YAML_MAP, "a map", &error))
            g_clear_error(&error);
        g_assert(error == NULL);
        break;
    }
    case TPS_YAML_MAP: {
        GError *error = NULL;
        g_assert(node->keys != NULL && node->items != NULL);
        g_assert(node->keys->len == node->items->len);
        if (!tps_yaml_check_keys(doc, node, "fuzz", some_keys, &error))
            g_clear_error(&error);
        for (guint i = 0; i < node->keys->len; i++) {
            const TpsYamlNode *key = g_ptr_array_index(node->keys, i);
            g_assert(key->type == TPS_YAML_SCALAR && key->value != NULL);
            g_assert(tps_yaml_get(node, key->value) != NULL);
            walk(doc, key, depth + 1);
            walk(doc, g_ptr_array_index(node->items, i), depth + 1);
        }
        break;
    }
    case TPS_YAML_SEQ:
        g_assert(node->items != NULL);
        for (guint i = 0; i < node->items->len; i++)
            walk(doc, g_ptr_array_index(node->items, i), depth + 1);
        break;
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autoptr(GError) error = NULL;

    if (size > 1 << 20)
        return 0;
    g_autoptr(TpsYamlDoc) doc =
        tps_yaml_load_string("fuzz", (const char *)data, (gssize)size, &error);
    if (doc == NULL) {
        g_assert(error != NULL);
        return 0;
    }
    g_assert(error == NULL);
    if (doc->root != NULL)
        walk(doc, doc->root, 0);
    return 0;
}
