/* YAML into a position-keeping tree, with libyaml's event parser.
 *
 * The event API is used rather than libyaml's document loader because the
 * loader resolves aliases silently and loses nothing we need, while the
 * event stream lets us reject anchors, aliases, tags and extra documents
 * at their own positions. Depth is bounded so hostile input cannot exhaust
 * the stack.
 */
#include "io/input/yaml-tree.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "core/error.h"
#include "core/names.h"
#include "core/output.h"

#define MAX_DEPTH 64

static void
node_free(TpsYamlNode *node)
{
    if (node == NULL)
        return;
    g_free(node->value);
    if (node->keys)
        g_ptr_array_unref(node->keys);
    if (node->items)
        g_ptr_array_unref(node->items);
    g_free(node);
}

static TpsYamlNode *
node_new(TpsYamlType type, const yaml_mark_t *mark)
{
    TpsYamlNode *node = g_new0(TpsYamlNode, 1);
    node->type = type;
    node->line = (guint)mark->line + 1;
    node->column = (guint)mark->column + 1;
    if (type != TPS_YAML_SCALAR) {
        node->items = g_ptr_array_new_with_free_func((GDestroyNotify)node_free);
        if (type == TPS_YAML_MAP)
            node->keys = g_ptr_array_new_with_free_func((GDestroyNotify)node_free);
    }
    return node;
}

/* ---- building and changing trees (sweeps) ---- */

TpsYamlNode *
tps_yaml_node_new(TpsYamlType type, const char *value, guint line, guint column)
{
    yaml_mark_t mark = {.line = line ? line - 1 : 0, .column = column ? column - 1 : 0};
    TpsYamlNode *node = node_new(type, &mark);
    if (type == TPS_YAML_SCALAR) {
        node->value = g_strdup(value != NULL ? value : "");
        node->plain = TRUE;
    }
    return node;
}

TpsYamlNode *
tps_yaml_node_copy(const TpsYamlNode *node)
{
    if (node == NULL)
        return NULL;
    TpsYamlNode *copy = tps_yaml_node_new(node->type, node->value, node->line, node->column);
    copy->plain = node->plain;
    for (guint i = 0; node->items != NULL && i < node->items->len; i++) {
        if (node->keys != NULL)
            g_ptr_array_add(copy->keys, tps_yaml_node_copy(g_ptr_array_index(node->keys, i)));
        g_ptr_array_add(copy->items, tps_yaml_node_copy(g_ptr_array_index(node->items, i)));
    }
    return copy;
}

void
tps_yaml_node_free(TpsYamlNode *node)
{
    node_free(node);
}

void
tps_yaml_map_set(TpsYamlNode *map, TpsYamlNode *key, TpsYamlNode *item)
{
    g_return_if_fail(map != NULL && map->type == TPS_YAML_MAP && key != NULL && item != NULL);
    for (guint i = 0; i < map->keys->len; i++) {
        TpsYamlNode *k = g_ptr_array_index(map->keys, i);
        if (g_strcmp0(k->value, key->value) == 0) {
            node_free(map->items->pdata[i]);
            map->items->pdata[i] = item;
            node_free(key);
            return;
        }
    }
    g_ptr_array_add(map->keys, key);
    g_ptr_array_add(map->items, item);
}

TpsYamlDoc *
tps_yaml_doc_new(const char *file, TpsYamlNode *root)
{
    TpsYamlDoc *doc = g_new0(TpsYamlDoc, 1);
    doc->file = g_strdup(file);
    doc->root = root;
    return doc;
}

void
tps_yaml_doc_free(TpsYamlDoc *doc)
{
    if (doc == NULL)
        return;
    node_free(doc->root);
    g_free(doc->file);
    g_free(doc);
}

gboolean
tps_yaml_error(const TpsYamlDoc *doc, const TpsYamlNode *node, GError **error, const char *format,
               ...)
{
    va_list args;
    va_start(args, format);
    if (node) {
        tps_input_error_atv(error, doc->file, node->line, node->column, format, args);
    } else {
        g_autofree char *msg = g_strdup_vprintf(format, args);
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "%s: %s", doc->file, msg);
    }
    va_end(args);
    return FALSE;
}

static gboolean
mark_error(const char *file, const yaml_mark_t *mark, GError **error, const char *msg)
{
    return tps_input_error_at(error, file, (guint)mark->line + 1, (guint)mark->column + 1, "%s",
                              msg);
}

typedef struct {
    yaml_parser_t parser;
    const char *file;
} Reader;

static gboolean
next_event(Reader *r, yaml_event_t *event, GError **error)
{
    if (yaml_parser_parse(&r->parser, event))
        return TRUE;
    const yaml_mark_t *mark = &r->parser.problem_mark;
    g_autofree char *msg = g_strdup_printf(
        "YAML syntax error: %s%s%s", r->parser.problem ? r->parser.problem : "unknown",
        r->parser.context ? " " : "", r->parser.context ? r->parser.context : "");
    return mark_error(r->file, mark, error, msg);
}

static TpsYamlNode *read_node(Reader *r, yaml_event_t *event, guint depth, GError **error);

/* A scalar (without anchor or tag); deletes `event`. */
static TpsYamlNode *
read_scalar(Reader *r, yaml_event_t *event, GError **error)
{
    if (event->data.scalar.anchor) {
        mark_error(r->file, &event->start_mark, error, "anchors are not supported");
        yaml_event_delete(event);
        return NULL;
    }
    if (event->data.scalar.tag) {
        mark_error(r->file, &event->start_mark, error, "tags are not supported");
        yaml_event_delete(event);
        return NULL;
    }
    TpsYamlNode *node = node_new(TPS_YAML_SCALAR, &event->start_mark);
    node->value = g_strndup((const char *)event->data.scalar.value, event->data.scalar.length);
    node->plain = event->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    yaml_event_delete(event);
    return node;
}

/* One key of a mapping, its first event `child`, and its value, added to
 * `node`; `seen`: the keys before it. */
static gboolean
read_map_entry(Reader *r, TpsYamlNode *node, GHashTable *seen, yaml_event_t *child, guint depth,
               GError **error)
{
    if (child->type != YAML_SCALAR_EVENT) {
        mark_error(r->file, &child->start_mark, error, "mapping keys must be scalars");
        yaml_event_delete(child);
        return FALSE;
    }
    TpsYamlNode *key = read_node(r, child, depth + 1, error);
    if (key == NULL)
        return FALSE;
    if (!g_hash_table_add(seen, key->value)) {
        tps_input_error_at(error, r->file, key->line, key->column, "duplicate key '%s'",
                           key->value);
        node_free(key);
        return FALSE;
    }
    g_ptr_array_add(node->keys, key);
    yaml_event_t value_event;
    if (!next_event(r, &value_event, error))
        return FALSE;
    TpsYamlNode *value = read_node(r, &value_event, depth + 1, error);
    if (value == NULL) {
        g_ptr_array_remove_index(node->keys, node->keys->len - 1);
        return FALSE;
    }
    g_ptr_array_add(node->items, value);
    return TRUE;
}

/* A mapping or a sequence (without anchor or tag) to its end event;
 * deletes `event`. */
static TpsYamlNode *
read_collection(Reader *r, yaml_event_t *event, guint depth, GError **error)
{
    gboolean is_map = event->type == YAML_MAPPING_START_EVENT;
    yaml_char_t *anchor =
        is_map ? event->data.mapping_start.anchor : event->data.sequence_start.anchor;
    yaml_char_t *tag = is_map ? event->data.mapping_start.tag : event->data.sequence_start.tag;
    if (anchor || tag) {
        mark_error(r->file, &event->start_mark, error,
                   anchor ? "anchors are not supported" : "tags are not supported");
        yaml_event_delete(event);
        return NULL;
    }
    TpsYamlNode *node = node_new(is_map ? TPS_YAML_MAP : TPS_YAML_SEQ, &event->start_mark);
    yaml_event_delete(event);
    /* The keys seen so far: a hostile file with many keys costs linear
     * time, not a scan of the keys before each one. */
    g_autoptr(GHashTable) seen = is_map ? g_hash_table_new(g_str_hash, g_str_equal) : NULL;
    for (;;) {
        yaml_event_t child;
        if (!next_event(r, &child, error))
            break;
        if (child.type == YAML_SEQUENCE_END_EVENT || child.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&child);
            return node;
        }
        if (is_map) {
            if (!read_map_entry(r, node, seen, &child, depth, error))
                break;
        } else {
            TpsYamlNode *item = read_node(r, &child, depth + 1, error);
            if (item == NULL)
                break;
            g_ptr_array_add(node->items, item);
        }
    }
    node_free(node);
    return NULL;
}

/* Reads one node whose first event is `event` (consumed by the caller's
 * ownership: this function deletes it). */
static TpsYamlNode *
read_node(Reader *r, yaml_event_t *event, guint depth, GError **error)
{
    if (depth > MAX_DEPTH) {
        mark_error(r->file, &event->start_mark, error, "nesting deeper than 64 levels");
        yaml_event_delete(event);
        return NULL;
    }

    switch (event->type) {
    case YAML_ALIAS_EVENT:
        mark_error(r->file, &event->start_mark, error, "aliases are not supported");
        yaml_event_delete(event);
        return NULL;
    case YAML_SCALAR_EVENT:
        return read_scalar(r, event, error);
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT:
        return read_collection(r, event, depth, error);
    default:
        mark_error(r->file, &event->start_mark, error, "unexpected YAML event");
        yaml_event_delete(event);
        return NULL;
    }
}

TpsYamlDoc *
tps_yaml_load_string(const char *name, const char *text, gssize len, GError **error)
{
    g_return_val_if_fail(name != NULL && text != NULL, NULL);
    if (len < 0)
        len = (gssize)strlen(text);

    g_autoptr(TpsYamlDoc) doc = g_new0(TpsYamlDoc, 1);
    doc->file = g_strdup(name);

    Reader r = {.file = doc->file};
    if (!yaml_parser_initialize(&r.parser)) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "%s: cannot initialise the YAML parser",
                    name);
        return NULL;
    }
    yaml_parser_set_input_string(&r.parser, (const unsigned char *)text, (size_t)len);

    gboolean ok = FALSE;
    yaml_event_t event;
    if (!next_event(&r, &event, error)) /* STREAM-START */
        goto out;
    yaml_event_delete(&event);
    if (!next_event(&r, &event, error))
        goto out;
    if (event.type == YAML_STREAM_END_EVENT) { /* empty file */
        yaml_event_delete(&event);
        ok = TRUE;
        goto out;
    }
    yaml_event_delete(&event); /* DOCUMENT-START */
    if (!next_event(&r, &event, error))
        goto out;
    doc->root = read_node(&r, &event, 0, error);
    if (doc->root == NULL)
        goto out;
    if (!next_event(&r, &event, error)) /* DOCUMENT-END */
        goto out;
    yaml_event_delete(&event);
    if (!next_event(&r, &event, error))
        goto out;
    if (event.type != YAML_STREAM_END_EVENT) {
        mark_error(doc->file, &event.start_mark, error, "only one YAML document is allowed");
        yaml_event_delete(&event);
        goto out;
    }
    yaml_event_delete(&event);
    ok = TRUE;
out:
    yaml_parser_delete(&r.parser);
    return ok ? g_steal_pointer(&doc) : NULL;
}

/* Read at most TPS_YAML_MAX_FILE_BYTES of `path` into *text (NUL added). A
 * regular file says its size up front; anything else (/dev/zero, a FIFO) is
 * read until the limit and refused there rather than until memory runs
 * out. */
static gboolean
read_bounded(const char *path, char **text, gsize *len, GError **error)
{
    const gsize limit = TPS_YAML_MAX_FILE_BYTES;
    int fd = g_open(path, O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) {
        int saved = errno;
        g_set_error(error, TPS_ERROR, TPS_ERROR_IO, "%s: cannot open: %s", path, g_strerror(saved));
        return FALSE;
    }
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (guint64)st.st_size > limit) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "%s: %" G_GUINT64_FORMAT " bytes, more than the %u MiB a YAML file of "
                    "tpsim may hold",
                    path, (guint64)st.st_size, (guint)(limit >> 20));
        close(fd);
        return FALSE;
    }
    GString *buf = g_string_sized_new(S_ISREG(st.st_mode) ? (gsize)st.st_size + 1 : 4096);
    char chunk[65536];
    for (;;) {
        gssize got = read(fd, chunk, sizeof chunk);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            int saved = errno;
            g_set_error(error, TPS_ERROR, TPS_ERROR_IO, "%s: cannot read: %s", path,
                        g_strerror(saved));
            break;
        }
        if (got == 0) {
            close(fd);
            *len = buf->len;
            *text = g_string_free(buf, FALSE);
            return TRUE;
        }
        if (buf->len + (gsize)got > limit) {
            g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                        "%s: more than the %u MiB a YAML file of tpsim may hold%s", path,
                        (guint)(limit >> 20),
                        S_ISREG(st.st_mode) ? "" : " (not a regular file: read up to that limit)");
            break;
        }
        g_string_append_len(buf, chunk, got);
    }
    close(fd);
    g_string_free(buf, TRUE);
    return FALSE;
}

/* The recorder of this thread (tps_yaml_record_reads()). */
static _Thread_local GChecksum *recorder;

GChecksum *
tps_yaml_record_reads(GChecksum *sum)
{
    GChecksum *before = recorder;
    recorder = sum;
    return before;
}

void
tps_yaml_record_text(const char *text, gsize len)
{
    if (recorder == NULL)
        return;
    /* Its length first: the texts of two files never read as another two. */
    const guint64 n = GUINT64_TO_LE((guint64)len);
    g_checksum_update(recorder, (const guchar *)&n, sizeof n);
    g_checksum_update(recorder, (const guchar *)text, (gssize)len);
}

TpsYamlDoc *
tps_yaml_load_file(const char *path, GError **error)
{
    g_autofree char *text = NULL;
    gsize len = 0;

    /* No output of the command may replace a file it reads. */
    if (!tps_output_note_input(path, error) || !read_bounded(path, &text, &len, error))
        return NULL;
    tps_yaml_record_text(text, len);
    return tps_yaml_load_string(path, text, (gssize)len, error);
}

TpsYamlNode *
tps_yaml_get(const TpsYamlNode *map, const char *key)
{
    if (map == NULL || map->type != TPS_YAML_MAP)
        return NULL;
    for (guint i = 0; i < map->keys->len; i++) {
        const TpsYamlNode *k = g_ptr_array_index(map->keys, i);
        if (strcmp(k->value, key) == 0)
            return g_ptr_array_index(map->items, i);
    }
    return NULL;
}

static const char *
type_name(TpsYamlType type)
{
    switch (type) {
    case TPS_YAML_SCALAR:
        return "a scalar";
    case TPS_YAML_MAP:
        return "a mapping";
    case TPS_YAML_SEQ:
        return "a sequence";
    }
    return "?";
}

gboolean
tps_yaml_expect(const TpsYamlDoc *doc, const TpsYamlNode *node, TpsYamlType type, const char *what,
                GError **error)
{
    if (node && node->type == type)
        return TRUE;
    if (node == NULL)
        return tps_yaml_error(doc, NULL, error, "missing %s", what);
    return tps_yaml_error(doc, node, error, "%s must be %s, not %s", what, type_name(type),
                          type_name(node->type));
}

gboolean
tps_yaml_check_kind(const TpsYamlDoc *doc, const TpsYamlNode *node, const char *what,
                    const char *const *known, GError **error)
{
    /* One known key makes it a file of this kind; so do keys that are all
     * close to known ones (typos: the strict-keys check says which was
     * meant). */
    if (node != NULL && node->type == TPS_YAML_MAP && node->keys->len > 0) {
        gboolean all_close = TRUE;
        for (guint i = 0; i < node->keys->len; i++) {
            const TpsYamlNode *key = g_ptr_array_index(node->keys, i);
            if (g_strv_contains(known, key->value))
                return TRUE;
            all_close = all_close && tps_names_closest(key->value, known) != NULL;
        }
        if (all_close)
            return TRUE;
    }
    /* The first few keys that would make it one, none of the file's. */
    g_autoptr(GString) keys = g_string_new(NULL);
    guint n = 0;
    for (const char *const *k = known; *k != NULL; k++, n++) {
        if (n == 3) {
            g_string_append(keys, " ...");
            break;
        }
        g_string_append_printf(keys, "%s'%s:'", n > 0 ? ", " : "", *k);
    }
    return tps_yaml_error(doc, node, error, "not a %s file (no %s keys)", what, keys->str);
}

gboolean
tps_yaml_check_keys(const TpsYamlDoc *doc, const TpsYamlNode *node, const char *where,
                    const char *const *known, GError **error)
{
    if (!tps_yaml_expect(doc, node, TPS_YAML_MAP, where, error))
        return FALSE;
    for (guint i = 0; i < node->keys->len; i++) {
        const TpsYamlNode *key = g_ptr_array_index(node->keys, i);
        gboolean found = FALSE;
        for (const char *const *k = known; *k; k++)
            if (strcmp(*k, key->value) == 0)
                found = TRUE;
        if (found)
            continue;
        const char *close = tps_names_closest(key->value, known);
        if (close)
            return tps_yaml_error(doc, key, error, "unknown key '%s' in %s; did you mean '%s'?",
                                  key->value, where, close);
        g_autofree char *list = tps_names_join(known);
        return tps_yaml_error(doc, key, error, "unknown key '%s' in %s; known keys: %s", key->value,
                              where, list);
    }
    return TRUE;
}

static gboolean
scalar(const TpsYamlDoc *doc, const TpsYamlNode *node, const char *key, GError **error)
{
    if (node == NULL)
        return tps_yaml_error(doc, NULL, error, "missing '%s'", key);
    if (node->type != TPS_YAML_SCALAR)
        return tps_yaml_error(doc, node, error, "'%s' must be a scalar, not %s", key,
                              type_name(node->type));
    return TRUE;
}

gboolean
tps_yaml_uint(const TpsYamlDoc *doc, const TpsYamlNode *node, const char *key, guint64 min,
              guint64 max, guint64 *out, GError **error)
{
    if (!scalar(doc, node, key, error))
        return FALSE;
    const char *s = node->value;
    char *end = NULL;
    if (!node->plain || !g_ascii_isdigit(s[0]))
        return tps_yaml_error(doc, node, error, "'%s' must be a non-negative integer, not '%s'",
                              key, s);
    errno = 0;
    guint64 v = g_ascii_strtoull(s, &end, 10);
    if (*end != '\0')
        return tps_yaml_error(doc, node, error, "'%s' must be a non-negative integer, not '%s'",
                              key, s);
    if (errno == ERANGE || v < min || v > max)
        return tps_yaml_error(doc, node, error,
                              "'%s' is %s, out of range [%" G_GUINT64_FORMAT ", %" G_GUINT64_FORMAT
                              "]",
                              key, s, min, max);
    *out = v;
    return TRUE;
}

gboolean
tps_yaml_double(const TpsYamlDoc *doc, const TpsYamlNode *node, const char *key, double min,
                double max, double *out, GError **error)
{
    if (!scalar(doc, node, key, error))
        return FALSE;
    const char *s = node->value;
    char *end = NULL;
    if (!node->plain || s[0] == '\0')
        return tps_yaml_error(doc, node, error, "'%s' must be a number, not '%s'", key, s);
    errno = 0;
    double v = g_ascii_strtod(s, &end);
    if (*end != '\0' || errno == ERANGE || !isfinite(v))
        return tps_yaml_error(doc, node, error, "'%s' must be a finite number, not '%s'", key, s);
    if (v < min || v > max)
        return tps_yaml_error(doc, node, error, "'%s' is %s, out of range [%g, %g]", key, s, min,
                              max);
    *out = v;
    return TRUE;
}

gboolean
tps_yaml_bool(const TpsYamlDoc *doc, const TpsYamlNode *node, const char *key, gboolean *out,
              GError **error)
{
    if (!scalar(doc, node, key, error))
        return FALSE;
    if (node->plain && strcmp(node->value, "true") == 0) {
        *out = TRUE;
        return TRUE;
    }
    if (node->plain && strcmp(node->value, "false") == 0) {
        *out = FALSE;
        return TRUE;
    }
    return tps_yaml_error(doc, node, error, "'%s' must be true or false, not '%s'", key,
                          node->value);
}

gboolean
tps_yaml_string(const TpsYamlDoc *doc, const TpsYamlNode *node, const char *key, const char **out,
                GError **error)
{
    if (!scalar(doc, node, key, error))
        return FALSE;
    if (node->plain && (node->value[0] == '\0' || strcmp(node->value, "~") == 0 ||
                        strcmp(node->value, "null") == 0))
        return tps_yaml_error(doc, node, error, "'%s' must not be empty", key);
    *out = node->value;
    return TRUE;
}

gboolean
tps_yaml_enum(const TpsYamlDoc *doc, const TpsYamlNode *node, const char *key,
              const char *const *choices, guint *out, GError **error)
{
    if (!scalar(doc, node, key, error))
        return FALSE;
    for (guint i = 0; choices[i]; i++) {
        if (strcmp(choices[i], node->value) == 0) {
            *out = i;
            return TRUE;
        }
    }
    g_autofree char *list = tps_names_join(choices);
    const char *close = tps_names_closest(node->value, choices);
    if (close)
        return tps_yaml_error(doc, node, error, "'%s' is '%s'; did you mean '%s'? (one of: %s)",
                              key, node->value, close, list);
    return tps_yaml_error(doc, node, error, "'%s' is '%s'; must be one of: %s", key, node->value,
                          list);
}
