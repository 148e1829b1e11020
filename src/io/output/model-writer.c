/* Hardware model writer: the sections and keys of the hardware schema
 * (cost/hardware-schema.h), in its order, one commented value per line. */
#include "io/output/model-writer.h"

#include <stddef.h>
#include <string.h>

#include "core/text.h"
#include "cost/hardware-schema.h"

typedef struct {
    GString *out;
    TpsModelCommentFn comment;
    gpointer user_data;
    const char *default_comment;
} Writer;

static void
end_line(Writer *w, const char *key)
{
    g_autofree char *text = w->comment ? w->comment(key, w->user_data) : NULL;
    const char *c = text ? text : w->default_comment;
    if (c != NULL) {
        g_string_append(w->out, "  # ");
        /* A comment is one line. */
        for (const char *p = c; *p; p++)
            g_string_append_c(w->out, *p == '\n' ? ' ' : *p);
    }
    g_string_append_c(w->out, '\n');
}

static void
append_double(GString *out, double v)
{
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    g_string_append(out, g_ascii_formatd(buf, sizeof(buf), "%.6g", v));
}

/* Element or item `index` of `f`, as the loader reads it back. */
static void
append_value(GString *out, const TpsHardware *hw, const TpsHardwareField *f, guint index)
{
    const void *p = (const char *)hw + tps_hardware_field_offset(f, index);
    switch (f->type) {
    case TPS_HW_STRING:
        tps_text_append_quoted(out, *(char *const *)p ? *(char *const *)p : "");
        return;
    case TPS_HW_UINT:
        g_string_append_printf(out, "%u", *(const guint *)p);
        return;
    case TPS_HW_DOUBLE:
    case TPS_HW_TIME:
        append_double(out, tps_hardware_field_get(f, hw, index));
        return;
    case TPS_HW_BOOL:
        g_string_append(out, *(const gboolean *)p ? "true" : "false");
        return;
    case TPS_HW_ENUM:
        g_string_append(out, f->names[*(const int *)p]);
        return;
    }
    g_assert_not_reached();
}

/* An optional key at its default is not written: the file reads back the
 * same model without it, as a file written before the key existed does.
 * nccl.channels_nvlink_gbps defaults to the file's node.nvlink_gbps. */
static gboolean
at_default(const TpsHardware *hw, const TpsHardwareField *f)
{
    if (f->required || f->shape != TPS_HW_SCALAR)
        return FALSE;
    const void *p = (const char *)hw + tps_hardware_field_offset(f, 0);
    if (f->type == TPS_HW_STRING)
        return *(char *const *)p == NULL;
    double v = tps_hardware_field_get(f, hw, 0);
    if (f->offset == offsetof(TpsHardware, nccl_channels_nvlink_gbps))
        return v == hw->nvlink_gbps;
    return v == f->default_value;
}

/* One item of a list (entries [first, end)), on one line:
 * `    - {m: 256, n: 128, efficiency: 0.906}`, its comment keyed by the last
 * member's path. */
static void
put_item(Writer *w, const TpsHardware *hw, const TpsHardwareField *fields, guint first, guint end,
         guint item)
{
    g_string_append(w->out, "    - {");
    for (guint m = first; m < end; m++) {
        g_string_append_printf(w->out, "%s%s: ", m > first ? ", " : "", fields[m].member);
        append_value(w->out, hw, &fields[m], item);
    }
    g_string_append_c(w->out, '}');
    g_autofree char *key = tps_hardware_field_path(&fields[end - 1], item);
    end_line(w, key);
}

char *
tps_model_write(const TpsHardware *hw, const char *header, TpsModelCommentFn comment,
                gpointer user_data, const char *default_comment)
{
    g_return_val_if_fail(hw != NULL && hw->name != NULL, NULL);
    Writer w = {g_string_new(NULL), comment, user_data, default_comment};
    guint n_fields;
    const TpsHardwareField *fields = tps_hardware_schema(&n_fields);
    const char *section = NULL;

    if (header != NULL) {
        g_auto(GStrv) lines = g_strsplit(header, "\n", -1);
        for (guint i = 0; lines[i] != NULL; i++)
            g_string_append_printf(w.out, "#%s%s\n", *lines[i] ? " " : "", lines[i]);
    }
    /* The name is the model's identity, not a value with a source: bare,
     * without a comment. */
    g_string_append_printf(w.out, "name: %s\n", hw->name);

    for (guint i = 0, end; i < n_fields; i = end) {
        const TpsHardwareField *f = &fields[i];
        end = tps_hardware_schema_key_end(i);
        if (f->section == NULL || at_default(hw, f))
            continue;
        if (g_strcmp0(section, f->section) != 0) {
            section = f->section;
            g_string_append_printf(w.out, "\n%s:\n", section);
        }
        switch (f->shape) {
        case TPS_HW_SCALAR: {
            g_autofree char *key = tps_hardware_field_path(f, 0);
            g_string_append_printf(w.out, "  %s: ", f->key);
            append_value(w.out, hw, f, 0);
            end_line(&w, key);
            break;
        }
        case TPS_HW_MAP:
            g_string_append_printf(w.out, "  %s:\n", f->key);
            for (guint e = 0; f->elements[e] != NULL; e++) {
                g_autofree char *key = tps_hardware_field_path(f, e);
                g_string_append_printf(w.out, "    %s: ", f->elements[e]);
                append_value(w.out, hw, f, e);
                end_line(&w, key);
            }
            break;
        case TPS_HW_LIST:
            g_string_append_printf(w.out, "  %s:\n", f->key);
            for (guint item = 0; item < tps_hardware_field_count(f, hw); item++)
                put_item(&w, hw, fields, i, end, item);
            break;
        }
    }
    return g_string_free(w.out, FALSE);
}
