/* The streaming JSON reader (json-stream.h).
 *
 * Layout: a buffered byte reader over a GInputStream; a tree of parsed
 * values (nodes + one text buffer) that is reset before each parse, so a
 * stream of many values reuses the same memory; the tokenizer, which
 * parses one value at a time into the tree or only checks it; and the
 * pull functions the caller walks the outer structure with.
 */
#include "io/trace/json-stream.h"

#include <math.h>
#include <string.h>

#include "core/error.h"

#define NONE TPS_JSON_NONE
#define MAX_DEPTH 64
#define READ_CHUNK (256 * 1024)

/* ---------------------------------------------------------------------- */
/* Reader                                                                  */

typedef struct {
    GInputStream *stream;
    GCancellable *cancellable;
    guint8 *buf;
    gsize pos, len;
    guint64 consumed; /* bytes before buf[0] */
    guint64 max_input;
    gboolean eof;
    gboolean too_long; /* more than max_input bytes (sticky, like a read error) */
    GError *error;     /* first read error (sticky) */
} Reader;

static gboolean
reader_fill(Reader *r)
{
    if (r->eof || r->error || r->too_long)
        return FALSE;
    r->consumed += r->len;
    r->pos = r->len = 0;
    if (r->consumed >= r->max_input) {
        /* One byte more would be beyond the limit: look for one. */
        guint8 probe;
        gssize got = g_input_stream_read(r->stream, &probe, 1, r->cancellable, &r->error);
        if (got > 0)
            r->too_long = TRUE;
        else if (got == 0)
            r->eof = TRUE;
        return FALSE;
    }
    gsize want = (gsize)MIN((guint64)READ_CHUNK, r->max_input - r->consumed);
    gssize got = g_input_stream_read(r->stream, r->buf, want, r->cancellable, &r->error);
    if (got < 0)
        return FALSE;
    if (got == 0) {
        r->eof = TRUE;
        return FALSE;
    }
    r->len = (gsize)got;
    return TRUE;
}

static inline int
reader_peek(Reader *r)
{
    if (r->pos >= r->len && !reader_fill(r))
        return -1;
    return r->buf[r->pos];
}

static inline int
reader_next(Reader *r)
{
    if (r->pos >= r->len && !reader_fill(r))
        return -1;
    return r->buf[r->pos++];
}

static inline guint64
reader_offset(const Reader *r)
{
    return r->consumed + r->pos;
}

static int
skip_ws(Reader *r)
{
    for (;;) {
        int c = reader_peek(r);
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
            r->pos++;
        else
            return c;
    }
}

/* ---------------------------------------------------------------------- */
/* The tree of parsed values                                               */

typedef struct {
    TpsJsonType type;
    guint32 key_off, key_len; /* member of an object: its key in the text */
    guint32 str_off, str_len; /* string (unescaped) or number (raw text); bool: 1/0 */
    guint32 first, next;      /* first child; next sibling */
    guint32 count;
} Node;

struct TpsJsonTree {
    GArray *nodes; /* Node */
    GString *text; /* keys and values, each NUL-terminated */
};

static void
tree_reset(TpsJsonTree *a)
{
    g_array_set_size(a->nodes, 0);
    g_string_truncate(a->text, 0);
}

static inline const Node *
node_at(const TpsJsonTree *a, guint32 i)
{
    return &g_array_index(a->nodes, Node, i);
}

static inline const char *
node_text(const TpsJsonTree *a, const Node *n)
{
    return a->text->str + n->str_off;
}

TpsJsonType
tps_json_tree_type(const TpsJsonTree *tree, TpsJsonNode node)
{
    return node == NONE ? TPS_JSON_NULL : node_at(tree, node)->type;
}

const char *
tps_json_tree_text(const TpsJsonTree *tree, TpsJsonNode node)
{
    if (node == NONE)
        return NULL;
    const Node *n = node_at(tree, node);
    return n->type == TPS_JSON_STRING || n->type == TPS_JSON_NUMBER ? node_text(tree, n) : NULL;
}

TpsJsonNode
tps_json_tree_first(const TpsJsonTree *tree, TpsJsonNode node)
{
    return node == NONE ? NONE : node_at(tree, node)->first;
}

TpsJsonNode
tps_json_tree_next(const TpsJsonTree *tree, TpsJsonNode node)
{
    return node == NONE ? NONE : node_at(tree, node)->next;
}

TpsJsonNode
tps_json_tree_member(const TpsJsonTree *a, TpsJsonNode obj, const char *key)
{
    if (obj == NONE || node_at(a, obj)->type != TPS_JSON_OBJECT)
        return NONE;
    gsize klen = strlen(key);
    for (guint32 c = node_at(a, obj)->first; c != NONE; c = node_at(a, c)->next) {
        const Node *n = node_at(a, c);
        if (n->key_len == klen && memcmp(a->text->str + n->key_off, key, klen) == 0)
            return c;
    }
    return NONE;
}

const char *
tps_json_tree_member_string(const TpsJsonTree *a, TpsJsonNode obj, const char *key)
{
    guint32 c = tps_json_tree_member(a, obj, key);
    if (c == NONE || node_at(a, c)->type != TPS_JSON_STRING)
        return NULL;
    return node_text(a, node_at(a, c));
}

/* Integer of decimal text without exponent or fraction; FALSE otherwise. */
static gboolean
parse_int_text(const char *s, gint64 *out)
{
    char *end = NULL;
    if (*s == '\0')
        return FALSE;
    gint64 v = g_ascii_strtoll(s, &end, 10);
    if (end == s || *end != '\0')
        return FALSE;
    *out = v;
    return TRUE;
}

gboolean
tps_json_tree_int(const TpsJsonTree *a, TpsJsonNode i, gint64 *out)
{
    if (i == NONE)
        return FALSE;
    const Node *n = node_at(a, i);
    if (n->type != TPS_JSON_NUMBER && n->type != TPS_JSON_STRING)
        return FALSE;
    const char *s = node_text(a, n);
    if (parse_int_text(s, out))
        return TRUE;
    if (n->type != TPS_JSON_NUMBER)
        return FALSE;
    double d = g_ascii_strtod(s, NULL);
    if (!isfinite(d) || fabs(d) > 9.2e18)
        return FALSE;
    *out = (gint64)llround(d);
    return TRUE;
}

gboolean
tps_json_tree_member_int(const TpsJsonTree *a, TpsJsonNode obj, const char *key, gint64 *out)
{
    return tps_json_tree_int(a, tps_json_tree_member(a, obj, key), out);
}

/* Read from the decimal text rather than through strtod: Kineto's absolute
 * microseconds (1.7e15) times 1000 no longer fit a double's 53 bits. */
gboolean
tps_json_tree_thousandths(const TpsJsonTree *a, TpsJsonNode i, gint64 *out)
{
    if (i == NONE || node_at(a, i)->type != TPS_JSON_NUMBER)
        return FALSE;
    const char *s = node_text(a, node_at(a, i));
    const char *p = s;
    gboolean neg = FALSE;
    if (*p == '-')
        neg = TRUE, p++;
    gint64 ip = 0;
    int digits = 0;
    while (*p >= '0' && *p <= '9') {
        if (ip > (G_MAXINT64 - 1000) / 10000) /* the result would overflow */
            goto slow;
        ip = ip * 10 + (*p - '0');
        p++, digits++;
    }
    if (digits == 0)
        return FALSE;
    gint64 frac = 0;
    int fd = 0;
    gboolean round_up = FALSE;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') {
            if (fd < 3)
                frac = frac * 10 + (*p - '0');
            else if (fd == 3)
                round_up = *p >= '5';
            p++, fd++;
        }
    }
    if (*p != '\0')
        goto slow;
    for (int j = fd; j < 3; j++)
        frac *= 10;
    gint64 v = ip * 1000 + frac + (round_up ? 1 : 0);
    *out = neg ? -v : v;
    return TRUE;
slow : {
    double d = g_ascii_strtod(s, NULL) * 1e3;
    if (!isfinite(d) || fabs(d) > 9.2e18)
        return FALSE;
    *out = (gint64)llround(d);
    return TRUE;
}
}

/* ---------------------------------------------------------------------- */
/* Tokenizer                                                               */

struct TpsJsonStream {
    Reader r;
    TpsJsonTree tree;
    GString *scratch; /* the last key read by tps_json_stream_read_key() */
    gsize max_string;
};

/* "4 GiB", "16 MiB", or "1000 bytes" for the limits in messages. */
static char *
size_text(guint64 bytes)
{
    if (bytes >= (1u << 30) && bytes % (1u << 30) == 0)
        return g_strdup_printf("%" G_GUINT64_FORMAT " GiB", bytes >> 30);
    if (bytes >= (1u << 20) && bytes % (1u << 20) == 0)
        return g_strdup_printf("%" G_GUINT64_FORMAT " MiB", bytes >> 20);
    return g_strdup_printf("%" G_GUINT64_FORMAT " bytes", bytes);
}

static gboolean
syntax_error(TpsJsonStream *p, GError **error, const char *what)
{
    if (p->r.too_long) {
        g_autofree char *limit = size_text(p->r.max_input);
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "more than %s of JSON (after decompression): tpsim reads at most that", limit);
        return FALSE;
    }
    if (p->r.error) {
        /* Kept: the reader stops at its first error (reader_fill). */
        const GError *e = p->r.error;
        if (g_error_matches(e, G_IO_ERROR, G_IO_ERROR_PARTIAL_INPUT))
            g_set_error(error, TPS_ERROR, TPS_ERROR_IO,
                        "truncated gzip data after %" G_GUINT64_FORMAT " bytes of JSON (%s)",
                        reader_offset(&p->r), e->message);
        else
            g_set_error(error, TPS_ERROR, TPS_ERROR_IO,
                        "read error after %" G_GUINT64_FORMAT " bytes of JSON: %s",
                        reader_offset(&p->r), e->message);
        return FALSE;
    }
    if (p->r.eof)
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "unexpected end of file at byte %" G_GUINT64_FORMAT " (truncated?)",
                    reader_offset(&p->r));
    else
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "invalid JSON at byte %" G_GUINT64_FORMAT ": %s", reader_offset(&p->r), what);
    return FALSE;
}

static void
append_utf8(GString *s, gunichar c)
{
    g_string_append_unichar(s, c);
}

static int
hex4(Reader *r)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        int c = reader_next(r);
        int d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return -1;
        v = v * 16 + d;
    }
    return v;
}

static gboolean
limit_error(TpsJsonStream *p, GError **error, const char *what, guint64 limit)
{
    g_autofree char *text = size_text(limit);
    g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                "%s at byte %" G_GUINT64_FORMAT " is longer than %s: tpsim reads no more", what,
                reader_offset(&p->r), text);
    return FALSE;
}

/* After "\u": the code point of the escape (a surrogate pair read
 * whole) appended to `out` as UTF-8 when `out` is not NULL. */
static gboolean
read_unicode_escape(TpsJsonStream *p, GString *out, GError **error)
{
    Reader *r = &p->r;
    int u = hex4(r);
    if (u < 0)
        return syntax_error(p, error, "bad \\u escape");
    gunichar ch = (gunichar)u;
    if (u >= 0xD800 && u <= 0xDBFF) {
        if (reader_next(r) != '\\' || reader_next(r) != 'u')
            return syntax_error(p, error, "lone surrogate in \\u escape");
        int lo = hex4(r);
        if (lo < 0xDC00 || lo > 0xDFFF)
            return syntax_error(p, error, "bad surrogate pair");
        ch = 0x10000 + (((gunichar)u - 0xD800) << 10) + ((gunichar)lo - 0xDC00);
    } else if (u >= 0xDC00 && u <= 0xDFFF) {
        ch = 0xFFFD;
    }
    if (out)
        append_utf8(out, ch == 0 ? 0xFFFD : ch);
    return TRUE;
}

/* After a backslash in a string: the escaped character appended to `out`
 * when `out` is not NULL. */
static gboolean
read_escape(TpsJsonStream *p, GString *out, GError **error)
{
    int c = reader_next(&p->r);
    char e;
    switch (c) {
    case '"':
        e = '"';
        break;
    case '\\':
        e = '\\';
        break;
    case '/':
        e = '/';
        break;
    case 'b':
        e = '\b';
        break;
    case 'f':
        e = '\f';
        break;
    case 'n':
        e = '\n';
        break;
    case 'r':
        e = '\r';
        break;
    case 't':
        e = '\t';
        break;
    case 'u':
        return read_unicode_escape(p, out, error);
    default:
        return syntax_error(p, error, "bad escape in a string");
    }
    if (out)
        g_string_append_c(out, e);
    return TRUE;
}

/* After the opening quote: read a string into `out` (NUL not appended).
 * The bytes between the quotes (an escape counts as written) are bounded,
 * also when the string is skipped. */
static gboolean
read_string(TpsJsonStream *p, GString *out, GError **error)
{
    Reader *r = &p->r;
    const guint64 begin = reader_offset(r);
    for (;;) {
        /* Fast path: copy the run of plain bytes in the buffer. */
        if (r->pos < r->len) {
            gsize start = r->pos;
            while (r->pos < r->len) {
                guint8 c = r->buf[r->pos];
                if (c == '"' || c == '\\' || c < 0x20)
                    break;
                r->pos++;
            }
            if (reader_offset(r) - begin > p->max_string)
                return limit_error(p, error, "a string", p->max_string);
            if (out && r->pos > start)
                g_string_append_len(out, (const char *)r->buf + start, (gssize)(r->pos - start));
        } else if (reader_offset(r) - begin > p->max_string) {
            return limit_error(p, error, "a string", p->max_string);
        }
        int c = reader_next(r);
        if (c < 0)
            return syntax_error(p, error, "unterminated string");
        if (c == '"')
            return TRUE;
        if (c < 0x20)
            return syntax_error(p, error, "control character in a string");
        if (c != '\\') {
            if (out)
                g_string_append_c(out, (char)c);
            continue;
        }
        if (!read_escape(p, out, error))
            return FALSE;
    }
}

static gboolean
expect_word(TpsJsonStream *p, const char *word, GError **error)
{
    for (const char *w = word; *w; w++)
        if (reader_next(&p->r) != *w)
            return syntax_error(p, error, "unknown literal");
    return TRUE;
}

/* Whether the tree of the value being parsed is still within its limits. */
static gboolean
tree_fits(TpsJsonStream *p, GError **error)
{
    if (p->tree.nodes->len > TPS_JSON_MAX_NODES || p->tree.text->len > TPS_JSON_MAX_TEXT) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "a value at byte %" G_GUINT64_FORMAT " holds more than %" G_GSIZE_FORMAT
                    " values or %" G_GSIZE_FORMAT " MiB of text: tpsim reads no more",
                    reader_offset(&p->r), TPS_JSON_MAX_NODES, TPS_JSON_MAX_TEXT >> 20);
        return FALSE;
    }
    return TRUE;
}

static guint32
new_node(TpsJsonStream *p, TpsJsonType type)
{
    Node n = {.type = type, .first = NONE, .next = NONE};
    g_array_append_val(p->tree.nodes, n);
    return p->tree.nodes->len - 1;
}

static inline Node *
node_mut(TpsJsonStream *p, guint32 i)
{
    return &g_array_index(p->tree.nodes, Node, i);
}

static gboolean parse_value(TpsJsonStream *p, gboolean store, int depth, guint32 *out,
                            GError **error);

/* A member's key and its ':', at the key's quote; with `store`, the key's
 * text appended to the tree's (its place in *key_off, *key_len). */
static gboolean
parse_key(TpsJsonStream *p, gboolean store, guint32 *key_off, guint32 *key_len, GError **error)
{
    Reader *r = &p->r;
    GString *text = p->tree.text;
    if (skip_ws(r) != '"')
        return syntax_error(p, error, "expected a key");
    r->pos++;
    if (store) {
        *key_off = (guint32)text->len;
        if (!read_string(p, text, error))
            return FALSE;
        *key_len = (guint32)(text->len - *key_off);
        g_string_append_c(text, '\0');
    } else if (!read_string(p, NULL, error)) {
        return FALSE;
    }
    if (skip_ws(r) != ':')
        return syntax_error(p, error, "expected ':'");
    r->pos++;
    return TRUE;
}

/* An object or an array, at its opening bracket (`is_obj`: an object). */
static gboolean
parse_container(TpsJsonStream *p, gboolean is_obj, gboolean store, int depth, guint32 *out,
                GError **error)
{
    Reader *r = &p->r;
    r->pos++;
    guint32 self = store ? new_node(p, is_obj ? TPS_JSON_OBJECT : TPS_JSON_ARRAY) : NONE;
    guint32 last = NONE, count = 0;
    int c = skip_ws(r);
    if (c == (is_obj ? '}' : ']')) {
        r->pos++;
        if (out)
            *out = self;
        return TRUE;
    }
    for (;;) {
        guint32 key_off = 0, key_len = 0;
        if (is_obj && !parse_key(p, store, &key_off, &key_len, error))
            return FALSE;
        guint32 child = NONE;
        if (!parse_value(p, store, depth + 1, store ? &child : NULL, error))
            return FALSE;
        if (store && !tree_fits(p, error))
            return FALSE;
        if (store) {
            Node *cn = node_mut(p, child);
            cn->key_off = key_off;
            cn->key_len = key_len;
            if (last == NONE)
                node_mut(p, self)->first = child;
            else
                node_mut(p, last)->next = child;
            last = child;
        }
        count++;
        c = skip_ws(r);
        r->pos += c >= 0;
        if (c == ',')
            continue;
        if (c == (is_obj ? '}' : ']'))
            break;
        return syntax_error(p, error, is_obj ? "expected ',' or '}'" : "expected ',' or ']'");
    }
    if (store)
        node_mut(p, self)->count = count;
    if (out)
        *out = self;
    return TRUE;
}

/* Node `self` holds the text appended from `off` on, ended by a NUL. */
static void
end_text_node(TpsJsonStream *p, guint32 self, guint32 off)
{
    GString *text = p->tree.text;
    Node *n = node_mut(p, self);
    n->str_off = off;
    n->str_len = (guint32)(text->len - off);
    g_string_append_c(text, '\0');
}

/* A string value, at its opening quote. */
static gboolean
parse_string(TpsJsonStream *p, gboolean store, guint32 *out, GError **error)
{
    GString *text = p->tree.text;
    p->r.pos++;
    if (!store)
        return read_string(p, NULL, error);
    guint32 self = new_node(p, TPS_JSON_STRING);
    guint32 off = (guint32)text->len;
    if (!read_string(p, text, error))
        return FALSE;
    end_text_node(p, self, off);
    *out = self;
    return TRUE;
}

/* A number, at its first character: kept as its text. */
static gboolean
parse_number(TpsJsonStream *p, gboolean store, guint32 *out, GError **error)
{
    Reader *r = &p->r;
    GString *text = p->tree.text;
    guint32 off = (guint32)text->len;
    int n_chars = 0;
    gboolean digit = FALSE;
    for (;;) {
        int c = reader_peek(r);
        if ((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E') {
            digit |= c >= '0' && c <= '9';
            if (store)
                g_string_append_c(text, (char)c);
            r->pos++;
            if (++n_chars > 64)
                return syntax_error(p, error, "number too long");
        } else {
            break;
        }
    }
    if (!digit)
        return syntax_error(p, error, "bad number");
    if (store) {
        guint32 self = new_node(p, TPS_JSON_NUMBER);
        end_text_node(p, self, off);
        *out = self;
    }
    return TRUE;
}

/* true, false or null, at its first letter `c`. */
static gboolean
parse_literal(TpsJsonStream *p, int c, gboolean store, guint32 *out, GError **error)
{
    TpsJsonType type;
    const char *word;
    if (c == 't')
        type = TPS_JSON_BOOL, word = "true";
    else if (c == 'f')
        type = TPS_JSON_BOOL, word = "false";
    else if (c == 'n')
        type = TPS_JSON_NULL, word = "null";
    else
        return syntax_error(p, error, c < 0 ? "missing value" : "unexpected character");
    if (!expect_word(p, word, error))
        return FALSE;
    if (store) {
        guint32 self = new_node(p, type);
        node_mut(p, self)->str_len = c == 't';
        *out = self;
    }
    return TRUE;
}

/* Parse one value. With `store`, into the tree (returned in *out);
 * without, only checked and skipped. */
static gboolean
parse_value(TpsJsonStream *p, gboolean store, int depth, guint32 *out, GError **error)
{
    if (depth > MAX_DEPTH)
        return syntax_error(p, error, "nesting too deep");
    int c = skip_ws(&p->r);
    if (c == '{' || c == '[')
        return parse_container(p, c == '{', store, depth, out, error);
    if (c == '"')
        return parse_string(p, store, out, error);
    if (c == '-' || (c >= '0' && c <= '9'))
        return parse_number(p, store, out, error);
    return parse_literal(p, c, store, out, error);
}
/* ---------------------------------------------------------------------- */
/* The stream                                                              */

GInputStream *
tps_json_stream_open_input(GInputStream *input, GCancellable *cancellable, GError **error)
{
    g_return_val_if_fail(G_IS_INPUT_STREAM(input), NULL);
    /* Peek at the magic through a buffered stream, then decompress. */
    g_autoptr(GInputStream) buffered = g_buffered_input_stream_new(input);
    if (g_buffered_input_stream_fill(G_BUFFERED_INPUT_STREAM(buffered), 2, cancellable, error) < 0)
        return NULL;
    gsize avail = 0;
    const guint8 *head =
        g_buffered_input_stream_peek_buffer(G_BUFFERED_INPUT_STREAM(buffered), &avail);
    if (avail >= 2 && head[0] == 0x1f && head[1] == 0x8b) {
        g_autoptr(GZlibDecompressor) dec = g_zlib_decompressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP);
        return g_converter_input_stream_new(buffered, G_CONVERTER(dec));
    }
    return g_steal_pointer(&buffered);
}

TpsJsonStream *
tps_json_stream_new(GInputStream *input, GCancellable *cancellable)
{
    g_return_val_if_fail(G_IS_INPUT_STREAM(input), NULL);
    TpsJsonStream *p = g_new0(TpsJsonStream, 1);
    p->r.stream = g_object_ref(input);
    p->r.cancellable = cancellable ? g_object_ref(cancellable) : NULL;
    p->r.buf = g_malloc(READ_CHUNK);
    p->r.max_input = TPS_JSON_MAX_INPUT;
    p->max_string = TPS_JSON_MAX_STRING;
    p->tree.nodes = g_array_new(FALSE, FALSE, sizeof(Node));
    p->tree.text = g_string_new(NULL);
    p->scratch = g_string_new(NULL);
    return p;
}

void
tps_json_stream_free(TpsJsonStream *p)
{
    if (p == NULL)
        return;
    g_object_unref(p->r.stream);
    g_clear_object(&p->r.cancellable);
    g_clear_error(&p->r.error);
    g_free(p->r.buf);
    g_array_unref(p->tree.nodes);
    g_string_free(p->tree.text, TRUE);
    g_string_free(p->scratch, TRUE);
    g_free(p);
}

void
tps_json_stream_set_limits(TpsJsonStream *p, guint64 max_input, gsize max_string)
{
    g_return_if_fail(p != NULL);
    p->r.max_input = MIN(max_input, TPS_JSON_MAX_INPUT);
    p->max_string = MIN(max_string, TPS_JSON_MAX_STRING);
}

int
tps_json_stream_peek(TpsJsonStream *p)
{
    return skip_ws(&p->r);
}

gboolean
tps_json_stream_accept(TpsJsonStream *p, char c)
{
    if (skip_ws(&p->r) != (guchar)c)
        return FALSE;
    p->r.pos++;
    return TRUE;
}

gboolean
tps_json_stream_read_failed(const TpsJsonStream *p)
{
    return p->r.error != NULL || p->r.too_long;
}

guint64
tps_json_stream_offset(const TpsJsonStream *p)
{
    return reader_offset(&p->r);
}

gboolean
tps_json_stream_fail(TpsJsonStream *p, const char *what, GError **error)
{
    return syntax_error(p, error, what);
}

const char *
tps_json_stream_read_key(TpsJsonStream *p, GError **error)
{
    if (!tps_json_stream_accept(p, '"')) {
        syntax_error(p, error, "expected a key");
        return NULL;
    }
    g_string_truncate(p->scratch, 0);
    if (!read_string(p, p->scratch, error))
        return NULL;
    if (!tps_json_stream_accept(p, ':')) {
        syntax_error(p, error, "expected ':'");
        return NULL;
    }
    return p->scratch->str;
}

gboolean
tps_json_stream_next(TpsJsonStream *p, char close, const char *expected, gboolean *more,
                     GError **error)
{
    /* The offending byte is consumed before the error, as in parse_value,
     * so that both report the same offset. */
    int c = skip_ws(&p->r);
    p->r.pos += c >= 0;
    *more = c == ',';
    if (c == ',' || c == (guchar)close)
        return TRUE;
    return syntax_error(p, error, expected);
}

gboolean
tps_json_stream_parse(TpsJsonStream *p, TpsJsonNode *root, GError **error)
{
    tree_reset(&p->tree);
    *root = NONE;
    return parse_value(p, TRUE, 1, root, error);
}

gboolean
tps_json_stream_skip(TpsJsonStream *p, GError **error)
{
    return parse_value(p, FALSE, 1, NULL, error);
}

const TpsJsonTree *
tps_json_stream_tree(const TpsJsonStream *p)
{
    return &p->tree;
}
