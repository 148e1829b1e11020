/* Figures as text (report-text.h). */
#include "io/output/report-text.h"

#include <math.h>
#include <string.h>

#include "core/text.h"

void
tps_report_json_string(GString *out, const char *s)
{
    if (s == NULL) {
        g_string_append(out, "null");
        return;
    }
    g_string_append_c(out, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            g_string_append_printf(out, "\\%c", *p);
        else if (*p < 0x20)
            g_string_append_printf(out, "\\u%04x", *p);
        else
            g_string_append_c(out, (char)*p);
    }
    g_string_append_c(out, '"');
}

void
tps_report_json_number(GString *out, double v, int decimals)
{
    if (!isfinite(v)) {
        g_string_append(out, "null");
        return;
    }
    /* Rounded as printf rounds (the binary value, ties to even), then read
     * back and written in its shortest form. */
    char fmt[16], buf[TPS_TEXT_DOUBLE_LEN];
    g_snprintf(fmt, sizeof fmt, "%%.%df", decimals);
    const gsize len = 320 + (gsize)MAX(decimals, 0); /* DBL_MAX has 309 digits */
    g_autofree char *fixed = g_malloc(len);
    g_ascii_formatd(fixed, (int)len, fmt, v);
    g_string_append(out, tps_text_double(buf, g_ascii_strtod(fixed, NULL)));
}

void
tps_report_cell(GString *out, double v, int width, int decimals)
{
    if (isfinite(v))
        g_string_append_printf(out, "%*.*f", width, decimals, v);
    else
        g_string_append_printf(out, "%*s", width, "-");
}

static void
json_indent(GString *out, guint depth)
{
    g_string_append_c(out, '\n');
    for (guint i = 0; i < depth; i++)
        g_string_append(out, "  ");
}

static void
json_node_text(GString *out, JsonNode *node, guint depth)
{
    char buf[TPS_TEXT_DOUBLE_LEN];
    switch (json_node_get_node_type(node)) {
    case JSON_NODE_OBJECT: {
        JsonObject *object = json_node_get_object(node);
        g_autoptr(GList) members = json_object_get_members(object); /* in insertion order */
        g_string_append_c(out, '{');
        for (GList *m = members; m != NULL; m = m->next) {
            json_indent(out, depth + 1);
            tps_report_json_string(out, m->data);
            g_string_append(out, " : ");
            json_node_text(out, json_object_get_member(object, m->data), depth + 1);
            if (m->next != NULL)
                g_string_append_c(out, ',');
        }
        if (members != NULL)
            json_indent(out, depth);
        g_string_append_c(out, '}');
        break;
    }
    case JSON_NODE_ARRAY: {
        JsonArray *array = json_node_get_array(node);
        const guint n = json_array_get_length(array);
        g_string_append_c(out, '[');
        for (guint i = 0; i < n; i++) {
            json_indent(out, depth + 1);
            json_node_text(out, json_array_get_element(array, i), depth + 1);
            if (i + 1 < n)
                g_string_append_c(out, ',');
        }
        if (n > 0)
            json_indent(out, depth);
        g_string_append_c(out, ']');
        break;
    }
    case JSON_NODE_VALUE:
        switch (json_node_get_value_type(node)) {
        case G_TYPE_INT64:
            g_string_append_printf(out, "%" G_GINT64_FORMAT, json_node_get_int(node));
            break;
        case G_TYPE_DOUBLE: {
            double v = json_node_get_double(node);
            g_string_append(out, isfinite(v) ? tps_text_double(buf, v) : "null");
            break;
        }
        case G_TYPE_BOOLEAN:
            g_string_append(out, json_node_get_boolean(node) ? "true" : "false");
            break;
        default:
            tps_report_json_string(out, json_node_get_string(node));
            break;
        }
        break;
    case JSON_NODE_NULL:
        g_string_append(out, "null");
        break;
    }
}

char *
tps_report_json_text(JsonNode *root)
{
    g_return_val_if_fail(root != NULL, NULL);
    GString *out = g_string_new(NULL);
    json_node_text(out, root, 0);
    g_string_append_c(out, '\n');
    return g_string_free(out, FALSE);
}
