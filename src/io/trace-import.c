/* Reading Kineto and tpsim Chrome traces, and their summary (trace-import.h).
 *
 * Layout: a buffered byte reader over a GInputStream; a JSON tokenizer that
 * parses one value at a time into a small arena (nodes + text) which is
 * reset before each trace event; the event handlers, which keep kernels,
 * launch events and GEMM ops; the linking of GEMM kernels to their op;
 * the summary and its two output formats.
 */
#include "io/trace-import.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/stats.h"

#define NONE G_MAXUINT32
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
    gboolean eof;
    GError *error; /* first read error (sticky) */
} Reader;

static gboolean
reader_fill(Reader *r)
{
    if (r->eof || r->error)
        return FALSE;
    r->consumed += r->len;
    r->pos = r->len = 0;
    gssize got = g_input_stream_read(r->stream, r->buf, READ_CHUNK, r->cancellable, &r->error);
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
/* Arena of parsed values                                                  */

typedef enum { V_NULL, V_BOOL, V_NUM, V_STR, V_ARR, V_OBJ } VType;

typedef struct {
    VType type;
    guint32 key_off, key_len; /* member of an object: its key in the text */
    guint32 str_off, str_len; /* string (unescaped) or number (raw text); bool: 1/0 */
    guint32 first, next;      /* first child; next sibling */
    guint32 count;
} Node;

typedef struct {
    GArray *nodes;
    GString *text;
} Arena;

static void
arena_reset(Arena *a)
{
    g_array_set_size(a->nodes, 0);
    g_string_truncate(a->text, 0);
}

static inline const Node *
node_at(const Arena *a, guint32 i)
{
    return &g_array_index(a->nodes, Node, i);
}

static inline const char *
node_text(const Arena *a, const Node *n)
{
    return a->text->str + n->str_off;
}

static guint32
obj_get(const Arena *a, guint32 obj, const char *key)
{
    if (obj == NONE || node_at(a, obj)->type != V_OBJ)
        return NONE;
    gsize klen = strlen(key);
    for (guint32 c = node_at(a, obj)->first; c != NONE; c = node_at(a, c)->next) {
        const Node *n = node_at(a, c);
        if (n->key_len == klen && memcmp(a->text->str + n->key_off, key, klen) == 0)
            return c;
    }
    return NONE;
}

/* The string value of `key`, or NULL (points into the arena). */
static const char *
obj_str(const Arena *a, guint32 obj, const char *key)
{
    guint32 c = obj_get(a, obj, key);
    if (c == NONE || node_at(a, c)->type != V_STR)
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

/* Number or numeric string node as an int64 (rounded). */
static gboolean
node_int(const Arena *a, guint32 i, gint64 *out)
{
    if (i == NONE)
        return FALSE;
    const Node *n = node_at(a, i);
    if (n->type != V_NUM && n->type != V_STR)
        return FALSE;
    const char *s = node_text(a, n);
    if (parse_int_text(s, out))
        return TRUE;
    if (n->type != V_NUM)
        return FALSE;
    double d = g_ascii_strtod(s, NULL);
    if (!isfinite(d) || fabs(d) > 9.2e18)
        return FALSE;
    *out = (gint64)llround(d);
    return TRUE;
}

static gboolean
obj_int(const Arena *a, guint32 obj, const char *key, gint64 *out)
{
    return node_int(a, obj_get(a, obj, key), out);
}

/* Decimal microseconds (number node) to integer nanoseconds, exactly for
 * plain decimals: the integer part times 1000 plus the first three
 * fraction digits, rounded on the fourth. Exponents go through a double. */
static gboolean
node_us_to_ns(const Arena *a, guint32 i, gint64 *out)
{
    if (i == NONE || node_at(a, i)->type != V_NUM)
        return FALSE;
    const char *s = node_text(a, node_at(a, i));
    const char *p = s;
    gboolean neg = FALSE;
    if (*p == '-')
        neg = TRUE, p++;
    gint64 ip = 0;
    int digits = 0;
    while (*p >= '0' && *p <= '9') {
        if (ip > (G_MAXINT64 - 1000) / 10000) /* ns would overflow */
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
    gint64 ns = ip * 1000 + frac + (round_up ? 1 : 0);
    *out = neg ? -ns : ns;
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

typedef struct {
    Reader r;
    Arena arena;
    GString *scratch; /* string being read when not stored */
} Parser;

static gboolean
syntax_error(Parser *p, GError **error, const char *what)
{
    if (p->r.error) {
        GError *e = p->r.error;
        p->r.error = NULL;
        if (g_error_matches(e, G_IO_ERROR, G_IO_ERROR_PARTIAL_INPUT))
            g_set_error(error, TPS_ERROR, TPS_ERROR_IO,
                        "truncated gzip data after %" G_GUINT64_FORMAT " bytes of JSON (%s)",
                        reader_offset(&p->r), e->message);
        else
            g_set_error(error, TPS_ERROR, TPS_ERROR_IO,
                        "read error after %" G_GUINT64_FORMAT " bytes of JSON: %s",
                        reader_offset(&p->r), e->message);
        g_error_free(e);
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

/* After the opening quote: read a string into `out` (NUL not appended). */
static gboolean
read_string(Parser *p, GString *out, GError **error)
{
    Reader *r = &p->r;
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
            if (out && r->pos > start)
                g_string_append_len(out, (const char *)r->buf + start, (gssize)(r->pos - start));
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
        c = reader_next(r);
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
        case 'u': {
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
            continue;
        }
        default:
            return syntax_error(p, error, "bad escape in a string");
        }
        if (out)
            g_string_append_c(out, e);
    }
}

static gboolean
expect_word(Parser *p, const char *word, GError **error)
{
    for (const char *w = word; *w; w++)
        if (reader_next(&p->r) != *w)
            return syntax_error(p, error, "unknown literal");
    return TRUE;
}

static guint32
new_node(Parser *p, VType type)
{
    Node n = {.type = type, .first = NONE, .next = NONE};
    g_array_append_val(p->arena.nodes, n);
    return p->arena.nodes->len - 1;
}

static inline Node *
node_mut(Parser *p, guint32 i)
{
    return &g_array_index(p->arena.nodes, Node, i);
}

/* Parse one value. With `store`, into the arena (returned in *out);
 * without, only checked and skipped. */
static gboolean
parse_value(Parser *p, gboolean store, int depth, guint32 *out, GError **error)
{
    if (depth > MAX_DEPTH)
        return syntax_error(p, error, "nesting too deep");
    Reader *r = &p->r;
    int c = skip_ws(r);
    GString *text = p->arena.text;
    if (c == '{' || c == '[') {
        gboolean is_obj = c == '{';
        r->pos++;
        guint32 self = store ? new_node(p, is_obj ? V_OBJ : V_ARR) : NONE;
        guint32 last = NONE, count = 0;
        c = skip_ws(r);
        if (c == (is_obj ? '}' : ']')) {
            r->pos++;
            if (out)
                *out = self;
            return TRUE;
        }
        for (;;) {
            guint32 key_off = 0, key_len = 0;
            if (is_obj) {
                if (skip_ws(r) != '"')
                    return syntax_error(p, error, "expected a key");
                r->pos++;
                if (store) {
                    key_off = (guint32)text->len;
                    if (!read_string(p, text, error))
                        return FALSE;
                    key_len = (guint32)(text->len - key_off);
                    g_string_append_c(text, '\0');
                } else if (!read_string(p, NULL, error)) {
                    return FALSE;
                }
                if (skip_ws(r) != ':')
                    return syntax_error(p, error, "expected ':'");
                r->pos++;
            }
            guint32 child = NONE;
            if (!parse_value(p, store, depth + 1, store ? &child : NULL, error))
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
    if (c == '"') {
        r->pos++;
        if (!store)
            return read_string(p, NULL, error);
        guint32 self = new_node(p, V_STR);
        guint32 off = (guint32)text->len;
        if (!read_string(p, text, error))
            return FALSE;
        Node *n = node_mut(p, self);
        n->str_off = off;
        n->str_len = (guint32)(text->len - off);
        g_string_append_c(text, '\0');
        *out = self;
        return TRUE;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        guint32 off = (guint32)text->len;
        int n_chars = 0;
        gboolean digit = FALSE;
        for (;;) {
            c = reader_peek(r);
            if ((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' ||
                c == 'E') {
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
            guint32 self = new_node(p, V_NUM);
            Node *n = node_mut(p, self);
            n->str_off = off;
            n->str_len = (guint32)(text->len - off);
            g_string_append_c(text, '\0');
            *out = self;
        }
        return TRUE;
    }
    VType type;
    const char *word;
    if (c == 't')
        type = V_BOOL, word = "true";
    else if (c == 'f')
        type = V_BOOL, word = "false";
    else if (c == 'n')
        type = V_NULL, word = "null";
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

/* ---------------------------------------------------------------------- */
/* The trace                                                               */

typedef struct {
    gint64 pid, tid, ts_ns;
} Launch;

typedef struct {
    gint64 pid, tid, ts_ns, end_ns;
    gint64 ext_id;
    const char *name; /* interned */
    gint64 dims[3][6];
    guint8 ndims[3]; /* 0xff: not a flat int list */
    gint64 id;       /* index in ops */
} Op;

typedef struct {
    TpsTraceKernel k;
    gint64 correlation; /* -1 */
    gint64 ext_id;      /* -1 */
} RawKernel;

typedef struct {
    gint64 id;
    char *name;
    guint sms;
} DevProp;

struct TpsTrace {
    char *name;
    TpsTraceFormat format;
    GStringChunk *strings;
    GHashTable *interned;     /* string -> itself (in `strings`) */
    GArray *kernels;          /* TpsTraceKernel, sorted */
    GArray *devprops;         /* DevProp */
    GHashTable *stream_names; /* "device:stream" -> name (in strings) */
    GHashTable *device_names; /* "device" -> name (in strings) */
    GHashTable *string_ids;   /* non-numeric pid/tid -> id */
    gint64 start_ns;
    gboolean has_trace_events;
};

typedef struct {
    TpsTrace *trace;
    GArray *raw;          /* RawKernel */
    GHashTable *launches; /* correlation (gint64*) -> Launch* */
    GArray *launch_store; /* Launch, indexed by value of launches */
    GArray *ops;          /* Op */
    gboolean saw_kineto_kernel;
} Loader;

const char *
tps_kernel_class_name(TpsKernelClass klass)
{
    static const char *const names[] = {"gemm", "nccl", "other"};
    g_return_val_if_fail((guint)klass < TPS_KERNEL_CLASS_COUNT, "other");
    return names[klass];
}

static const char *
intern(TpsTrace *t, const char *s)
{
    if (s == NULL)
        return NULL;
    const char *found = g_hash_table_lookup(t->interned, s);
    if (found)
        return found;
    char *copy = g_string_chunk_insert(t->strings, s);
    g_hash_table_add(t->interned, copy);
    return copy;
}

/* pid or tid: a number, a numeric string, or any other string (mapped to
 * an id of its own above 2^40). */
static gboolean
node_id(TpsTrace *t, const Arena *a, guint32 i, gint64 *out)
{
    if (i == NONE)
        return FALSE;
    if (node_int(a, i, out))
        return TRUE;
    const Node *n = node_at(a, i);
    if (n->type != V_STR)
        return FALSE;
    const char *s = node_text(a, n);
    gpointer v;
    if (g_hash_table_lookup_extended(t->string_ids, s, NULL, &v)) {
        *out = (gint64)GPOINTER_TO_SIZE(v);
        return TRUE;
    }
    gint64 id = ((gint64)1 << 40) + g_hash_table_size(t->string_ids);
    g_hash_table_insert(t->string_ids, g_strdup(s), GSIZE_TO_POINTER((gsize)id));
    *out = id;
    return TRUE;
}

/* ---------------------------------------------------------------------- */
/* Classification                                                          */

gboolean
tps_trace_parse_nccl_name(const char *kernel_name, const char **collective, const char **algorithm,
                          const char **protocol)
{
    static const char *const colls[] = {"AllGather", "AllReduce",     "AllToAll", "Broadcast",
                                        "Generic",   "ReduceScatter", "Reduce",   "SendRecv",
                                        "Send",      "Recv"};
    static const char *const algos[] = {"RING",    "TREE",      "COLLNET_DIRECT", "COLLNET_CHAIN",
                                        "COLLNET", "NVLS_TREE", "NVLS",           "PAT"};
    static const char *const protos[] = {"LL128", "LL", "SIMPLE"};
    const char *c = NULL, *al = NULL, *pr = NULL;
    const char *s = kernel_name;
    if (g_str_has_prefix(s, "void "))
        s += 5;
    if (g_str_has_prefix(s, "ncclKernel_"))
        s += strlen("ncclKernel_");
    else if (g_str_has_prefix(s, "ncclDevKernel_"))
        s += strlen("ncclDevKernel_");
    else
        return FALSE;
    gsize len = strcspn(s, "(<");
    g_autofree char *base = g_strndup(s, len);
    g_auto(GStrv) parts = g_strsplit(base, "_", -1);
    guint np = g_strv_length(parts);
    if (np > 0)
        for (guint i = 0; i < G_N_ELEMENTS(colls); i++)
            if (strcmp(parts[0], colls[i]) == 0)
                c = colls[i];
    /* Old names put ALGO_PROTO right after the collective, new ones last;
     * searching all parts covers both (an algorithm may contain '_'). */
    for (guint i = 1; i < np && al == NULL; i++) {
        for (guint j = 0; j < G_N_ELEMENTS(algos); j++) {
            g_auto(GStrv) want = g_strsplit(algos[j], "_", -1);
            guint nw = g_strv_length(want);
            gboolean ok = i + nw <= np;
            for (guint w = 0; ok && w < nw; w++)
                ok = strcmp(parts[i + w], want[w]) == 0;
            if (ok) {
                al = algos[j];
                break;
            }
        }
    }
    for (guint i = 1; i < np && pr == NULL; i++)
        for (guint j = 0; j < G_N_ELEMENTS(protos); j++)
            if (strcmp(parts[i], protos[j]) == 0)
                pr = protos[j];
    if (collective)
        *collective = c;
    if (algorithm)
        *algorithm = al;
    if (protocol)
        *protocol = pr;
    return TRUE;
}

TpsKernelClass
tps_trace_classify(const char *name)
{
    g_return_val_if_fail(name != NULL, TPS_KERNEL_OTHER);
    if (tps_trace_parse_nccl_name(name, NULL, NULL, NULL) || strstr(name, "nccl") == name)
        return TPS_KERNEL_NCCL;
    /* FBGEMM's own kernels and cuDNN's implicit-GEMM convolutions are not
     * matrix multiplies of the model. */
    if (strstr(name, "fbgemm_gpu::") || strstr(name, "implicit_gemm") ||
        strstr(name, "ImplicitGemm") || strstr(name, "cudnn") || strstr(name, "fprop") ||
        strstr(name, "dgrad") || strstr(name, "wgrad"))
        return TPS_KERNEL_OTHER;
    static const char *const gemm_marks[] = {"gemm", "s1688",        "sgemm",
                                             "xmma", "splitKreduce", "gemv"};
    for (guint i = 0; i < G_N_ELEMENTS(gemm_marks); i++)
        if (strstr(name, gemm_marks[i]))
            return TPS_KERNEL_GEMM;
    return TPS_KERNEL_OTHER;
}

double
tps_trace_busbw_factor(const char *collective, guint n)
{
    if (collective && strcmp(collective, "AllReduce") == 0)
        return n > 0 ? 2.0 * (n - 1) / n : NAN;
    if (collective &&
        (strcmp(collective, "AllGather") == 0 || strcmp(collective, "ReduceScatter") == 0))
        return n > 0 ? (double)(n - 1) / n : NAN;
    return 1.0;
}

/* Size of a torch dtype name as Kineto writes it ("Float", "c10::BFloat16"...). */
static int
dtype_size(const char *dtype)
{
    static const struct {
        const char *name;
        int size;
    } sizes[] = {
        {"BFloat16", 2},    {"Bool", 1},           {"Byte", 1},
        {"Char", 1},        {"ComplexDouble", 16}, {"ComplexFloat", 8},
        {"Double", 8},      {"Float", 4},          {"Float8_e4m3fn", 1},
        {"Float8_e5m2", 1}, {"Half", 2},           {"Int", 4},
        {"Int8", 1},        {"Int16", 2},          {"Int32", 4},
        {"Int64", 8},       {"Long", 8},           {"Short", 2},
        {"UInt8", 1},       {"bfloat16", 2},       {"double", 8},
        {"float", 4},       {"float16", 2},        {"half", 2},
        {"int", 4},         {"int32", 4},          {"int64", 8},
        {"int8", 1},        {"uint8", 1},
    };
    if (dtype == NULL)
        return 0;
    if (g_str_has_prefix(dtype, "c10::"))
        dtype += 5;
    for (guint i = 0; i < G_N_ELEMENTS(sizes); i++)
        if (strcmp(dtype, sizes[i].name) == 0)
            return sizes[i].size;
    return 0;
}

/* Collective from Kineto's args "Collective name" (generic kernels). */
static const char *
collective_from_arg(const char *arg)
{
    static const struct {
        const char *arg, *coll;
    } map[] = {
        {"_allgather_base", "AllGather"},
        {"_reduce_scatter_base", "ReduceScatter"},
        {"all_gather", "AllGather"},
        {"all_reduce", "AllReduce"},
        {"all_to_all", "SendRecv"},
        {"allgather", "AllGather"},
        {"allgather_into_tensor_coalesced", "AllGather"},
        {"allreduce", "AllReduce"},
        {"alltoall", "SendRecv"},
        {"alltoall_base", "SendRecv"},
        {"broadcast", "Broadcast"},
        {"recv", "SendRecv"},
        {"reduce", "Reduce"},
        {"reduce_scatter", "ReduceScatter"},
        {"reduce_scatter_tensor_coalesced", "ReduceScatter"},
        {"send", "SendRecv"},
    };
    if (arg == NULL)
        return NULL;
    for (guint i = 0; i < G_N_ELEMENTS(map); i++)
        if (g_ascii_strcasecmp(arg, map[i].arg) == 0)
            return map[i].coll;
    return NULL;
}

/* ---------------------------------------------------------------------- */
/* Event handlers                                                          */

static TpsKernelClass
tpsim_kind_class(const char *cat, gboolean *is_kernel)
{
    *is_kernel = TRUE;
    if (strcmp(cat, "gemm") == 0)
        return TPS_KERNEL_GEMM;
    if (strcmp(cat, "comm") == 0)
        return TPS_KERNEL_NCCL;
    if (strcmp(cat, "attention") == 0 || strcmp(cat, "memory") == 0)
        return TPS_KERNEL_OTHER;
    *is_kernel = FALSE;
    return TPS_KERNEL_OTHER;
}

/* The collective of a tpsim task name: its last dotted part
 * ("l1.qkv_fprop.ag", "l1.fc2_fprop.rs[2]", "l0.proj_fprop.rs_send"). */
static const char *
tpsim_collective(TpsTrace *t, const char *name)
{
    const char *dot = strrchr(name, '.');
    const char *tail = dot ? dot + 1 : name;
    g_autofree char *part = g_strndup(tail, strcspn(tail, "[_"));
    if (strcmp(part, "ag") == 0)
        return "AllGather";
    if (strcmp(part, "rs") == 0)
        return "ReduceScatter";
    if (strcmp(part, "ar") == 0)
        return "AllReduce";
    return intern(t, part);
}

static void
handle_kernel(Loader *l, const Arena *a, guint32 ev, const char *name, gboolean tpsim,
              TpsKernelClass tpsim_class)
{
    TpsTrace *t = l->trace;
    RawKernel rk = {.correlation = -1, .ext_id = -1};
    TpsTraceKernel *k = &rk.k;
    gint64 ts, dur;
    if (!node_id(t, a, obj_get(a, ev, "pid"), &k->device) ||
        !node_id(t, a, obj_get(a, ev, "tid"), &k->stream) ||
        !node_us_to_ns(a, obj_get(a, ev, "ts"), &ts) ||
        !node_us_to_ns(a, obj_get(a, ev, "dur"), &dur))
        return;
    k->ts_ns = ts;
    k->dur_ns = dur < 0 ? 0 : dur;
    k->name = intern(t, name);
    k->klass = tpsim ? tpsim_class : tps_trace_classify(name);
    k->bytes = -1;
    k->op_id = -1;
    guint32 args = obj_get(a, ev, "args");
    obj_int(a, args, "correlation", &rk.correlation);
    obj_int(a, args, "External id", &rk.ext_id);
    if (k->klass == TPS_KERNEL_NCCL) {
        const char *coll = NULL, *algo = NULL, *proto = NULL;
        tps_trace_parse_nccl_name(name, &coll, &algo, &proto);
        const char *from_arg = collective_from_arg(obj_str(a, args, "Collective name"));
        if ((coll == NULL || strcmp(coll, "Generic") == 0) && from_arg)
            coll = from_arg;
        if (coll && (strcmp(coll, "Send") == 0 || strcmp(coll, "Recv") == 0))
            coll = "SendRecv";
        const char *named = obj_str(a, args, "collective"); /* tpsim's export */
        if (tpsim && named)
            coll = intern(t, named);
        if (coll == NULL && tpsim)
            coll = tpsim_collective(t, name);
        k->collective = coll;
        k->algorithm = algo;
        k->protocol = proto;
        gint64 in_n = -1, out_n = -1, group = 0;
        obj_int(a, args, "In msg nelems", &in_n);
        obj_int(a, args, "Out msg nelems", &out_n);
        int size = dtype_size(obj_str(a, args, "dtype"));
        if (size > 0 && MAX(in_n, out_n) >= 0)
            k->bytes = MAX(in_n, out_n) * size;
        gint64 b;
        if (k->bytes < 0 && obj_int(a, args, "bytes", &b)) /* tpsim's export */
            k->bytes = b;
        if (obj_int(a, args, "Group size", &group) && group > 0 && group < G_MAXUINT)
            k->group_size = (guint)group;
    }
    g_array_append_val(l->raw, rk);
}

static void
handle_op(Loader *l, const Arena *a, guint32 ev, const char *name)
{
    static const char *const gemm_ops[] = {"aten::_addmm_activation",
                                           "aten::addmm",
                                           "aten::baddbmm",
                                           "aten::bmm",
                                           "aten::linear",
                                           "aten::matmul",
                                           "aten::mm"};
    gboolean wanted = FALSE;
    for (guint i = 0; i < G_N_ELEMENTS(gemm_ops) && !wanted; i++)
        wanted = strcmp(name, gemm_ops[i]) == 0;
    if (!wanted)
        return;
    Op op = {.ext_id = -1};
    gint64 dur;
    if (!node_id(l->trace, a, obj_get(a, ev, "pid"), &op.pid) ||
        !node_id(l->trace, a, obj_get(a, ev, "tid"), &op.tid) ||
        !node_us_to_ns(a, obj_get(a, ev, "ts"), &op.ts_ns) ||
        !node_us_to_ns(a, obj_get(a, ev, "dur"), &dur))
        return;
    op.end_ns = op.ts_ns + MAX(dur, 0);
    op.name = intern(l->trace, name);
    guint32 args = obj_get(a, ev, "args");
    obj_int(a, args, "External id", &op.ext_id);
    guint32 dims = obj_get(a, args, "Input Dims");
    guint input = 0;
    if (dims != NONE && node_at(a, dims)->type == V_ARR) {
        for (guint32 in = node_at(a, dims)->first; in != NONE && input < 3;
             in = node_at(a, in)->next, input++) {
            const Node *arr = node_at(a, in);
            guint8 nd = 0;
            if (arr->type != V_ARR) {
                op.ndims[input] = 0xff;
                continue;
            }
            for (guint32 d = arr->first; d != NONE; d = node_at(a, d)->next) {
                gint64 v;
                if (nd >= 6 || node_at(a, d)->type != V_NUM || !node_int(a, d, &v)) {
                    nd = 0xff;
                    break;
                }
                op.dims[input][nd++] = v;
            }
            op.ndims[input] = nd;
        }
    }
    for (; input < 3; input++)
        op.ndims[input] = 0xff;
    op.id = l->ops->len;
    g_array_append_val(l->ops, op);
}

static void
handle_launch(Loader *l, const Arena *a, guint32 ev)
{
    gint64 corr;
    Launch launch;
    if (!obj_int(a, obj_get(a, ev, "args"), "correlation", &corr) ||
        !node_id(l->trace, a, obj_get(a, ev, "pid"), &launch.pid) ||
        !node_id(l->trace, a, obj_get(a, ev, "tid"), &launch.tid) ||
        !node_us_to_ns(a, obj_get(a, ev, "ts"), &launch.ts_ns))
        return;
    g_array_append_val(l->launch_store, launch);
    gint64 *key = g_new(gint64, 1);
    *key = corr;
    g_hash_table_replace(l->launches, key, GUINT_TO_POINTER(l->launch_store->len));
}

static void
handle_metadata(Loader *l, const Arena *a, guint32 ev, const char *name)
{
    if (strcmp(name, "process_name") == 0) {
        gint64 pid;
        const char *label = obj_str(a, obj_get(a, ev, "args"), "name");
        if (label == NULL || !node_id(l->trace, a, obj_get(a, ev, "pid"), &pid))
            return;
        g_autofree char *stripped = g_strstrip(g_strdup(label));
        g_hash_table_replace(l->trace->device_names, g_strdup_printf("%" G_GINT64_FORMAT, pid),
                             (gpointer)intern(l->trace, stripped));
        return;
    }
    if (strcmp(name, "thread_name") != 0)
        return;
    gint64 pid, tid;
    const char *label = obj_str(a, obj_get(a, ev, "args"), "name");
    if (label == NULL || !node_id(l->trace, a, obj_get(a, ev, "pid"), &pid) ||
        !node_id(l->trace, a, obj_get(a, ev, "tid"), &tid))
        return;
    char *key = g_strdup_printf("%" G_GINT64_FORMAT ":%" G_GINT64_FORMAT, pid, tid);
    g_autofree char *stripped = g_strstrip(g_strdup(label)); /* Kineto: "stream 7 " */
    g_hash_table_replace(l->trace->stream_names, key, (gpointer)intern(l->trace, stripped));
}

static void
handle_event(Loader *l, const Arena *a, guint32 ev)
{
    if (node_at(a, ev)->type != V_OBJ)
        return;
    const char *ph = obj_str(a, ev, "ph");
    const char *name = obj_str(a, ev, "name");
    const char *cat = obj_str(a, ev, "cat");
    if (ph == NULL || name == NULL)
        return;
    if (strcmp(ph, "M") == 0) {
        handle_metadata(l, a, ev, name);
        return;
    }
    if (strcmp(ph, "X") != 0 || cat == NULL)
        return;
    if (strcmp(cat, "kernel") == 0 || strcmp(cat, "Kernel") == 0) {
        l->saw_kineto_kernel = TRUE;
        handle_kernel(l, a, ev, name, FALSE, TPS_KERNEL_OTHER);
    } else if (strcmp(cat, "cpu_op") == 0 || strcmp(cat, "Operator") == 0) {
        handle_op(l, a, ev, name);
    } else if (strcmp(cat, "cuda_runtime") == 0 || strcmp(cat, "cuda_driver") == 0 ||
               strcmp(cat, "Runtime") == 0) {
        handle_launch(l, a, ev);
    } else {
        gboolean is_kernel;
        TpsKernelClass klass = tpsim_kind_class(cat, &is_kernel);
        if (is_kernel)
            handle_kernel(l, a, ev, name, TRUE, klass);
    }
}

static void
handle_device_properties(Loader *l, const Arena *a, guint32 arr)
{
    if (node_at(a, arr)->type != V_ARR)
        return;
    for (guint32 c = node_at(a, arr)->first; c != NONE; c = node_at(a, c)->next) {
        DevProp d = {.id = -1};
        gint64 sms = 0;
        obj_int(a, c, "id", &d.id);
        const char *name = obj_str(a, c, "name");
        if (name == NULL)
            continue;
        d.name = g_strdup(name);
        if (obj_int(a, c, "numSms", &sms) && sms > 0 && sms < 100000)
            d.sms = (guint)sms;
        g_array_append_val(l->trace->devprops, d);
    }
}

/* ---------------------------------------------------------------------- */
/* Linking GEMM kernels to their ops                                       */

static int
cmp_op(gconstpointer pa, gconstpointer pb)
{
    const Op *a = pa, *b = pb;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    if (a->tid != b->tid)
        return a->tid < b->tid ? -1 : 1;
    if (a->ts_ns != b->ts_ns)
        return a->ts_ns < b->ts_ns ? -1 : 1;
    /* Outer (longer) first, so that scanning backwards meets inner ones first. */
    if (a->end_ns != b->end_ns)
        return a->end_ns > b->end_ns ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

static gint64
prod(const gint64 *d, int from, int to)
{
    gint64 p = 1;
    for (int i = from; i < to; i++)
        p *= d[i];
    return p;
}

/* Shape of a GEMM op from its input dims; FALSE when they do not give one. */
static gboolean
op_shape(const Op *op, gint64 *m, gint64 *n, gint64 *k, gint64 *batch)
{
    const char *name = op->name;
    int a = 0, b = 1;
    if (strcmp(name, "aten::addmm") == 0 || strcmp(name, "aten::baddbmm") == 0 ||
        strcmp(name, "aten::_addmm_activation") == 0)
        a = 1, b = 2;
    if (op->ndims[a] == 0xff || op->ndims[b] == 0xff)
        return FALSE;
    int na = op->ndims[a], nb = op->ndims[b];
    const gint64 *da = op->dims[a], *db = op->dims[b];
    *batch = 1;
    if (strcmp(name, "aten::linear") == 0) {
        if (na < 1 || nb != 2 || da[na - 1] != db[1])
            return FALSE;
        *m = prod(da, 0, na - 1), *k = da[na - 1], *n = db[0];
        return TRUE;
    }
    if (na < 2 || nb < 2 || da[na - 1] != db[nb - 2])
        return FALSE;
    *k = da[na - 1];
    *n = db[nb - 1];
    if (nb == 2) {
        *m = prod(da, 0, na - 1);
    } else {
        *m = da[na - 2];
        *batch = prod(da, 0, na - 2);
    }
    return *m > 0 && *n > 0 && *k > 0 && *batch > 0;
}

static const Op *
find_op_by_launch(const Loader *l, const Launch *launch)
{
    const Op *ops = (const Op *)(void *)l->ops->data;
    guint lo = 0, hi = l->ops->len;
    /* Last op with (pid, tid, ts) <= (launch pid, tid, ts). */
    while (lo < hi) {
        guint mid = lo + (hi - lo) / 2;
        const Op *o = &ops[mid];
        gboolean le =
            o->pid < launch->pid ||
            (o->pid == launch->pid &&
             (o->tid < launch->tid || (o->tid == launch->tid && o->ts_ns <= launch->ts_ns)));
        if (le)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* Scan back for the innermost op containing the launch; ops that nest
     * are adjacent, so a short scan suffices. */
    for (guint i = lo, seen = 0; i > 0 && seen < 64; i--, seen++) {
        const Op *o = &ops[i - 1];
        if (o->pid != launch->pid || o->tid != launch->tid)
            break;
        if (o->ts_ns <= launch->ts_ns && launch->ts_ns <= o->end_ns)
            return o;
    }
    return NULL;
}

static void
link_gemms(Loader *l)
{
    g_array_sort(l->ops, cmp_op);
    g_autoptr(GHashTable) by_ext = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, NULL);
    /* Innermost wins: ops are sorted outer first, so later inserts replace. */
    for (guint i = 0; i < l->ops->len; i++) {
        Op *o = &g_array_index(l->ops, Op, i);
        if (o->ext_id >= 0)
            g_hash_table_replace(by_ext, &o->ext_id, o);
    }
    for (guint i = 0; i < l->raw->len; i++) {
        RawKernel *rk = &g_array_index(l->raw, RawKernel, i);
        if (rk->k.klass != TPS_KERNEL_GEMM)
            continue;
        const Op *op = NULL;
        /* Newer Kineto: the kernel's External id is its op's. Older: it
         * repeats the correlation id, so go through the launch. */
        if (rk->ext_id >= 0 && rk->ext_id != rk->correlation)
            op = g_hash_table_lookup(by_ext, &rk->ext_id);
        if (op == NULL && rk->correlation >= 0) {
            gpointer v = g_hash_table_lookup(l->launches, &rk->correlation);
            if (v)
                op = find_op_by_launch(
                    l, &g_array_index(l->launch_store, Launch, GPOINTER_TO_UINT(v) - 1));
        }
        if (op == NULL)
            continue;
        rk->k.op = op->name;
        rk->k.op_id = op->id;
        gint64 m, n, k, batch;
        if (op_shape(op, &m, &n, &k, &batch))
            rk->k.m = m, rk->k.n = n, rk->k.k = k, rk->k.batch = batch;
    }
}

/* ---------------------------------------------------------------------- */
/* Loading                                                                 */

static int
cmp_kernel(gconstpointer pa, gconstpointer pb)
{
    const TpsTraceKernel *a = pa, *b = pb;
    if (a->device != b->device)
        return a->device < b->device ? -1 : 1;
    if (a->stream != b->stream)
        return a->stream < b->stream ? -1 : 1;
    if (a->ts_ns != b->ts_ns)
        return a->ts_ns < b->ts_ns ? -1 : 1;
    if (a->dur_ns != b->dur_ns)
        return a->dur_ns < b->dur_ns ? -1 : 1;
    return strcmp(a->name, b->name);
}

static void
devprop_clear(gpointer p)
{
    g_free(((DevProp *)p)->name);
}

void
tps_trace_free(TpsTrace *trace)
{
    if (trace == NULL)
        return;
    g_free(trace->name);
    if (trace->strings)
        g_string_chunk_free(trace->strings);
    if (trace->interned)
        g_hash_table_unref(trace->interned);
    if (trace->kernels)
        g_array_unref(trace->kernels);
    if (trace->devprops)
        g_array_unref(trace->devprops);
    if (trace->stream_names)
        g_hash_table_unref(trace->stream_names);
    if (trace->device_names)
        g_hash_table_unref(trace->device_names);
    if (trace->string_ids)
        g_hash_table_unref(trace->string_ids);
    g_free(trace);
}

static TpsTrace *
trace_new(const char *name)
{
    TpsTrace *t = g_new0(TpsTrace, 1);
    t->name = g_strdup(name);
    t->strings = g_string_chunk_new(64 * 1024);
    t->interned = g_hash_table_new(g_str_hash, g_str_equal);
    t->kernels = g_array_new(FALSE, FALSE, sizeof(TpsTraceKernel));
    t->devprops = g_array_new(FALSE, TRUE, sizeof(DevProp));
    g_array_set_clear_func(t->devprops, devprop_clear);
    t->stream_names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    t->device_names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    t->string_ids = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    return t;
}

/* The elements of the traceEvents array, one at a time. */
static gboolean
parse_events(Parser *p, Loader *l, GError **error)
{
    Reader *r = &p->r;
    if (skip_ws(r) != '[')
        return syntax_error(p, error, "traceEvents is not an array");
    r->pos++;
    l->trace->has_trace_events = TRUE;
    if (skip_ws(r) == ']') {
        r->pos++;
        return TRUE;
    }
    for (;;) {
        arena_reset(&p->arena);
        guint32 ev = NONE;
        if (!parse_value(p, TRUE, 1, &ev, error))
            return FALSE;
        handle_event(l, &p->arena, ev);
        int c = skip_ws(r);
        r->pos += c >= 0;
        if (c == ',')
            continue;
        if (c == ']')
            return TRUE;
        return syntax_error(p, error, "expected ',' or ']' in traceEvents");
    }
}

static gboolean
parse_top(Parser *p, Loader *l, GError **error)
{
    Reader *r = &p->r;
    int c = skip_ws(r);
    if (c == '[') /* the JSON Array Format of Chrome traces */
        return parse_events(p, l, error);
    if (c != '{') {
        if (p->r.error)
            return syntax_error(p, error, "");
        if (c < 0) {
            g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "empty file");
            return FALSE;
        }
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "not a Kineto trace: the file is not a JSON object");
        return FALSE;
    }
    r->pos++;
    if (skip_ws(r) == '}') {
        r->pos++;
        return TRUE;
    }
    for (;;) {
        if (skip_ws(r) != '"')
            return syntax_error(p, error, "expected a key");
        r->pos++;
        g_string_truncate(p->scratch, 0);
        if (!read_string(p, p->scratch, error))
            return FALSE;
        if (skip_ws(r) != ':')
            return syntax_error(p, error, "expected ':'");
        r->pos++;
        if (strcmp(p->scratch->str, "traceEvents") == 0) {
            if (!parse_events(p, l, error))
                return FALSE;
        } else if (strcmp(p->scratch->str, "deviceProperties") == 0) {
            arena_reset(&p->arena);
            guint32 v = NONE;
            if (!parse_value(p, TRUE, 1, &v, error))
                return FALSE;
            handle_device_properties(l, &p->arena, v);
        } else if (!parse_value(p, FALSE, 1, NULL, error)) {
            return FALSE;
        }
        c = skip_ws(r);
        r->pos += c >= 0;
        if (c == ',')
            continue;
        if (c == '}')
            return TRUE;
        return syntax_error(p, error, "expected ',' or '}'");
    }
}

static TpsTrace *
load(GInputStream *stream, const char *name, GCancellable *cancellable, GError **error)
{
    Loader l = {0};
    l.trace = trace_new(name);
    l.raw = g_array_new(FALSE, FALSE, sizeof(RawKernel));
    l.launches = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    l.launch_store = g_array_new(FALSE, FALSE, sizeof(Launch));
    l.ops = g_array_new(FALSE, FALSE, sizeof(Op));
    Parser p = {
        .r = {.stream = stream, .cancellable = cancellable, .buf = g_malloc(READ_CHUNK)},
        .arena = {.nodes = g_array_new(FALSE, FALSE, sizeof(Node)), .text = g_string_new(NULL)},
        .scratch = g_string_new(NULL),
    };
    gboolean ok = parse_top(&p, &l, error);
    if (ok) {
        /* Trailing bytes: only whitespace (and a read error is still one). */
        int c = skip_ws(&p.r);
        if (p.r.error)
            ok = syntax_error(&p, error, "");
        else if (c >= 0)
            ok = syntax_error(&p, error, "data after the top-level value");
    }
    if (ok && !l.trace->has_trace_events) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "not a Kineto trace: no \"traceEvents\" array");
        ok = FALSE;
    }
    TpsTrace *t = l.trace;
    if (ok) {
        link_gemms(&l);
        t->format = (!l.saw_kineto_kernel && l.raw->len > 0) ? TPS_TRACE_TPSIM : TPS_TRACE_KINETO;
        g_array_set_size(t->kernels, l.raw->len);
        gint64 start = G_MAXINT64;
        for (guint i = 0; i < l.raw->len; i++) {
            TpsTraceKernel *k = &g_array_index(t->kernels, TpsTraceKernel, i);
            *k = g_array_index(l.raw, RawKernel, i).k;
            start = MIN(start, k->ts_ns);
        }
        t->start_ns = l.raw->len ? start : 0;
        for (guint i = 0; i < t->kernels->len; i++) {
            TpsTraceKernel *k = &g_array_index(t->kernels, TpsTraceKernel, i);
            k->ts_us = (double)(k->ts_ns - t->start_ns) * 1e-3;
            k->dur_us = (double)k->dur_ns * 1e-3;
        }
        g_array_sort(t->kernels, cmp_kernel);
    }
    if (p.r.error)
        g_error_free(p.r.error);
    g_free(p.r.buf);
    g_array_unref(p.arena.nodes);
    g_string_free(p.arena.text, TRUE);
    g_string_free(p.scratch, TRUE);
    g_array_unref(l.raw);
    g_hash_table_unref(l.launches);
    g_array_unref(l.launch_store);
    g_array_unref(l.ops);
    if (!ok) {
        tps_trace_free(t);
        return NULL;
    }
    return t;
}

TpsTrace *
tps_trace_load_stream(GInputStream *stream, const char *name, GCancellable *cancellable,
                      GError **error)
{
    g_return_val_if_fail(G_IS_INPUT_STREAM(stream), NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);
    /* Peek at the magic through a buffered stream, then decompress. */
    g_autoptr(GInputStream) buffered = g_buffered_input_stream_new(stream);
    GError *local = NULL;
    if (g_buffered_input_stream_fill(G_BUFFERED_INPUT_STREAM(buffered), 2, cancellable, &local) <
        0) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_IO, "%s: %s", name, local->message);
        g_error_free(local);
        return NULL;
    }
    gsize avail = 0;
    const guint8 *head =
        g_buffered_input_stream_peek_buffer(G_BUFFERED_INPUT_STREAM(buffered), &avail);
    g_autoptr(GInputStream) source = NULL;
    if (avail >= 2 && head[0] == 0x1f && head[1] == 0x8b) {
        g_autoptr(GZlibDecompressor) dec = g_zlib_decompressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP);
        source = g_converter_input_stream_new(buffered, G_CONVERTER(dec));
    } else {
        source = g_object_ref(buffered);
    }
    TpsTrace *t = load(source, name, cancellable, &local);
    if (t == NULL) {
        g_set_error(error, TPS_ERROR, local->domain == TPS_ERROR ? local->code : TPS_ERROR_IO,
                    "%s: %s", name, local->message);
        g_error_free(local);
    }
    return t;
}

TpsTrace *
tps_trace_load(const char *path, GError **error)
{
    g_return_val_if_fail(path != NULL, NULL);
    g_autoptr(GFile) file = g_file_new_for_path(path);
    GError *local = NULL;
    g_autoptr(GFileInputStream) in = g_file_read(file, NULL, &local);
    if (in == NULL) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_IO, "%s: %s", path, local->message);
        g_error_free(local);
        return NULL;
    }
    return tps_trace_load_stream(G_INPUT_STREAM(in), path, NULL, error);
}

TpsTrace *
tps_trace_load_data(const void *data, gsize len, const char *name, GError **error)
{
    g_autoptr(GInputStream) in = g_memory_input_stream_new_from_data(data, (gssize)len, NULL);
    return tps_trace_load_stream(in, name, NULL, error);
}

TpsTraceFormat
tps_trace_format(const TpsTrace *trace)
{
    return trace->format;
}

const char *
tps_trace_name(const TpsTrace *trace)
{
    return trace->name;
}

static const DevProp *
traced_device(const TpsTrace *trace)
{
    if (trace->devprops->len == 0)
        return NULL;
    if (trace->kernels->len > 0) {
        gint64 dev = g_array_index(trace->kernels, TpsTraceKernel, 0).device;
        for (guint i = 0; i < trace->devprops->len; i++)
            if (g_array_index(trace->devprops, DevProp, i).id == dev)
                return &g_array_index(trace->devprops, DevProp, i);
    }
    return &g_array_index(trace->devprops, DevProp, 0);
}

const char *
tps_trace_gpu_name(const TpsTrace *trace)
{
    const DevProp *d = traced_device(trace);
    return d ? d->name : NULL;
}

guint
tps_trace_gpu_sms(const TpsTrace *trace)
{
    const DevProp *d = traced_device(trace);
    return d ? d->sms : 0;
}

gint64
tps_trace_start_ns(const TpsTrace *trace)
{
    return trace->start_ns;
}

const TpsTraceKernel *
tps_trace_kernels(const TpsTrace *trace, guint *n_kernels)
{
    *n_kernels = trace->kernels->len;
    return (const TpsTraceKernel *)(void *)trace->kernels->data;
}

const char *
tps_trace_stream_name(const TpsTrace *trace, gint64 device, gint64 stream)
{
    char key[64];
    g_snprintf(key, sizeof key, "%" G_GINT64_FORMAT ":%" G_GINT64_FORMAT, device, stream);
    return g_hash_table_lookup(trace->stream_names, key);
}

/* ---------------------------------------------------------------------- */
/* Summary                                                                 */

typedef struct {
    gint64 start, end;
} Span;

static int
cmp_span(gconstpointer pa, gconstpointer pb)
{
    const Span *a = pa, *b = pb;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return (a->end > b->end) - (a->end < b->end);
}

/* Sort and merge in place; returns the number of disjoint spans. */
static guint
merge_spans(Span *s, guint n)
{
    if (n == 0)
        return 0;
    qsort(s, n, sizeof *s, cmp_span);
    guint w = 0;
    for (guint i = 1; i < n; i++) {
        if (s[i].start <= s[w].end)
            s[w].end = MAX(s[w].end, s[i].end);
        else
            s[++w] = s[i];
    }
    return w + 1;
}

/* Length of [start, end) covered by the merged spans. */
static gint64
covered(const Span *s, guint n, gint64 start, gint64 end)
{
    guint lo = 0, hi = n;
    while (lo < hi) { /* first span ending after start */
        guint mid = lo + (hi - lo) / 2;
        if (s[mid].end <= start)
            lo = mid + 1;
        else
            hi = mid;
    }
    gint64 sum = 0;
    for (guint i = lo; i < n && s[i].start < end; i++)
        sum += MIN(end, s[i].end) - MAX(start, s[i].start);
    return sum;
}

static int
cmp_collective(gconstpointer pa, gconstpointer pb)
{
    return strcmp(((const TpsCollectiveFigures *)pa)->name,
                  ((const TpsCollectiveFigures *)pb)->name);
}

TpsTraceSummary *
tps_trace_summarize(const TpsTrace *trace)
{
    g_return_val_if_fail(trace != NULL, NULL);
    TpsTraceSummary *s = g_new0(TpsTraceSummary, 1);
    s->file = g_path_get_basename(trace->name);
    s->gpu = g_strdup(tps_trace_gpu_name(trace));
    guint n;
    const TpsTraceKernel *ks = tps_trace_kernels(trace, &n);
    gint64 cls_ns[TPS_KERNEL_CLASS_COUNT] = {0};

    /* Streams: kernels are sorted by (device, stream, start). */
    GArray *streams = g_array_new(FALSE, TRUE, sizeof(TpsStreamFigures));
    gint64 first = G_MAXINT64, last = G_MININT64;
    for (guint i = 0; i < n;) {
        guint j = i;
        gint64 busy = 0, cur_s = ks[i].ts_ns, cur_e = ks[i].ts_ns;
        for (; j < n && ks[j].device == ks[i].device && ks[j].stream == ks[i].stream; j++) {
            if (ks[j].ts_ns > cur_e) {
                busy += cur_e - cur_s;
                cur_s = ks[j].ts_ns;
            }
            cur_e = MAX(cur_e, ks[j].ts_ns + ks[j].dur_ns);
        }
        busy += cur_e - cur_s;
        TpsStreamFigures f = {
            .device = ks[i].device,
            .stream = ks[i].stream,
            .kernels = j - i,
            .busy_ms = (double)busy * 1e-6,
            .name = g_strdup(tps_trace_stream_name(trace, ks[i].device, ks[i].stream))};
        g_array_append_val(streams, f);
        i = j;
    }
    s->n_streams = streams->len;
    s->streams = (TpsStreamFigures *)(void *)g_array_free(streams, FALSE);

    g_autoptr(GHashTable) devices = g_hash_table_new(g_int64_hash, g_int64_equal);
    g_autoptr(GHashTable) ops_seen =
        g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    double gemm_flops = 0;
    gint64 gemm_shaped_ns = 0;
    for (guint i = 0; i < n; i++) {
        const TpsTraceKernel *k = &ks[i];
        s->classes[k->klass].count++;
        cls_ns[k->klass] += k->dur_ns;
        first = MIN(first, k->ts_ns);
        last = MAX(last, k->ts_ns + k->dur_ns);
        g_hash_table_add(devices, (gpointer)&k->device);
        if (k->klass == TPS_KERNEL_GEMM && k->m > 0) {
            s->gemm_shaped++;
            gemm_shaped_ns += k->dur_ns;
            if (!g_hash_table_contains(ops_seen, &k->op_id)) {
                gint64 *key = g_new(gint64, 1);
                *key = k->op_id;
                g_hash_table_add(ops_seen, key);
                gemm_flops += 2.0 * (double)k->batch * (double)k->m * (double)k->n * (double)k->k;
            }
        }
    }
    for (guint c = 0; c < TPS_KERNEL_CLASS_COUNT; c++)
        s->classes[c].total_ms = (double)cls_ns[c] * 1e-6;
    s->devices = g_hash_table_size(devices);
    s->span_ms = n ? (double)(last - first) * 1e-6 : 0.0;
    s->gemm_shaped_ms = (double)gemm_shaped_ns * 1e-6;
    s->gemm_tflops = gemm_shaped_ns > 0 ? gemm_flops / (double)gemm_shaped_ns * 1e-3 : NAN;

    /* Collectives. */
    g_autoptr(GHashTable) by_name = g_hash_table_new(g_str_hash, g_str_equal);
    GArray *colls = g_array_new(FALSE, TRUE, sizeof(TpsCollectiveFigures));
    for (guint i = 0; i < n; i++)
        if (ks[i].klass == TPS_KERNEL_NCCL) {
            const char *name = ks[i].collective ? ks[i].collective : "Unknown";
            if (!g_hash_table_contains(by_name, name)) {
                TpsCollectiveFigures f = {.name = g_strdup(name)};
                g_array_append_val(colls, f);
                g_hash_table_add(by_name, (gpointer)name);
            }
        }
    g_array_sort(colls, cmp_collective);
    for (guint c = 0; c < colls->len; c++) {
        TpsCollectiveFigures *f = &g_array_index(colls, TpsCollectiveFigures, c);
        g_autoptr(GArray) durs = g_array_new(FALSE, FALSE, sizeof(double));
        g_autoptr(GArray) bytes = g_array_new(FALSE, FALSE, sizeof(double));
        g_autoptr(GPtrArray) algos = g_ptr_array_new_with_free_func(g_free);
        double bus_bytes = 0;
        gint64 bus_ns = 0;
        gboolean bus_ok = TRUE;
        for (guint i = 0; i < n; i++) {
            const TpsTraceKernel *k = &ks[i];
            if (k->klass != TPS_KERNEL_NCCL ||
                strcmp(k->collective ? k->collective : "Unknown", f->name) != 0)
                continue;
            f->count++;
            double d = k->dur_us;
            g_array_append_val(durs, d);
            if (k->bytes >= 0) {
                double b = (double)k->bytes;
                g_array_append_val(bytes, b);
                double factor = tps_trace_busbw_factor(k->collective, k->group_size);
                if (isnan(factor))
                    bus_ok = FALSE;
                bus_bytes += b * factor;
                bus_ns += k->dur_ns;
            }
            if (k->algorithm || k->protocol) {
                g_autofree char *ap = g_strdup_printf("%s/%s", k->algorithm ? k->algorithm : "?",
                                                      k->protocol ? k->protocol : "?");
                gboolean have = FALSE;
                for (guint a = 0; a < algos->len && !have; a++)
                    have = strcmp(algos->pdata[a], ap) == 0;
                if (!have)
                    g_ptr_array_add(algos, g_steal_pointer(&ap));
            }
        }
        f->median_us = tps_median((double *)(void *)durs->data, durs->len);
        f->median_bytes = tps_median((double *)(void *)bytes->data, bytes->len);
        f->busbw_gbps = bytes->len > 0 && bus_ok && bus_ns > 0 ? bus_bytes / (double)bus_ns : NAN;
        g_ptr_array_add(algos, NULL);
        f->algorithms = g_strjoinv(", ", (char **)algos->pdata);
    }
    s->n_collectives = colls->len;
    s->collectives = (TpsCollectiveFigures *)(void *)g_array_free(colls, FALSE);

    /* Communication overlapped by compute, per device. */
    gint64 nccl_ns = 0, overlapped_ns = 0;
    g_autoptr(GArray) spans = g_array_new(FALSE, FALSE, sizeof(Span));
    for (guint i = 0; i < n;) {
        guint j = i;
        while (j < n && ks[j].device == ks[i].device)
            j++;
        g_array_set_size(spans, 0);
        for (guint q = i; q < j; q++)
            if (ks[q].klass != TPS_KERNEL_NCCL) {
                Span sp = {ks[q].ts_ns, ks[q].ts_ns + ks[q].dur_ns};
                g_array_append_val(spans, sp);
            }
        guint m = merge_spans((Span *)(void *)spans->data, spans->len);
        for (guint q = i; q < j; q++)
            if (ks[q].klass == TPS_KERNEL_NCCL) {
                nccl_ns += ks[q].dur_ns;
                overlapped_ns += covered((Span *)(void *)spans->data, m, ks[q].ts_ns,
                                         ks[q].ts_ns + ks[q].dur_ns);
            }
        i = j;
    }
    s->comm_overlapped_fraction = nccl_ns > 0 ? (double)overlapped_ns / (double)nccl_ns : 0.0;
    return s;
}

void
tps_trace_summary_free(TpsTraceSummary *s)
{
    if (s == NULL)
        return;
    g_free(s->file);
    g_free(s->gpu);
    for (guint i = 0; i < s->n_collectives; i++) {
        g_free(s->collectives[i].name);
        g_free(s->collectives[i].algorithms);
    }
    g_free(s->collectives);
    for (guint i = 0; i < s->n_streams; i++)
        g_free(s->streams[i].name);
    g_free(s->streams);
    g_free(s);
}

/* ---------------------------------------------------------------------- */
/* Output                                                                  */

static void
json_string(GString *out, const char *s)
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

/* A number with at most `decimals` decimals, trailing zeros dropped;
 * "null" for NAN. Locale-independent. */
static void
json_number(GString *out, double v, int decimals)
{
    if (!isfinite(v)) {
        g_string_append(out, "null");
        return;
    }
    char fmt[16], buf[G_ASCII_DTOSTR_BUF_SIZE];
    g_snprintf(fmt, sizeof fmt, "%%.%df", decimals);
    g_ascii_formatd(buf, sizeof buf, fmt, v);
    if (strchr(buf, '.')) {
        char *e = buf + strlen(buf) - 1;
        while (*e == '0')
            *e-- = '\0';
        if (*e == '.')
            *e = '\0';
    }
    if (strcmp(buf, "-0") == 0)
        strcpy(buf, "0");
    g_string_append(out, buf);
}

char *
tps_trace_summary_to_json(const TpsTraceSummary *s)
{
    GString *o = g_string_new("{\n  \"file\": ");
    json_string(o, s->file);
    g_string_append(o, ", \"gpu\": ");
    json_string(o, s->gpu);
    g_string_append(o, ",\n  \"classes\": {");
    for (guint c = 0; c < TPS_KERNEL_CLASS_COUNT; c++) {
        g_string_append_printf(
            o, "%s\"%s\": {\"count\": %u, \"total_ms\": ", c ? ",\n              " : "",
            tps_kernel_class_name(c), s->classes[c].count);
        json_number(o, s->classes[c].total_ms, 3);
        g_string_append(o, "}");
    }
    g_string_append(o, "},\n  \"collectives\": [");
    for (guint i = 0; i < s->n_collectives; i++) {
        const TpsCollectiveFigures *f = &s->collectives[i];
        g_string_append(o, i ? ",\n                  {\"name\": " : "{\"name\": ");
        json_string(o, f->name);
        g_string_append_printf(o, ", \"count\": %u, \"median_us\": ", f->count);
        json_number(o, f->median_us, 3);
        g_string_append(o, ", \"median_bytes\": ");
        json_number(o, f->median_bytes, 1);
        g_string_append(o, ", \"busbw_gbps\": ");
        json_number(o, f->busbw_gbps, 3);
        g_string_append(o, "}");
    }
    g_string_append(o, "],\n  \"streams\": [");
    for (guint i = 0; i < s->n_streams; i++) {
        const TpsStreamFigures *f = &s->streams[i];
        g_string_append_printf(o,
                               "%s{\"device\": %" G_GINT64_FORMAT ", \"stream\": %" G_GINT64_FORMAT
                               ", \"kernels\": %u, \"busy_ms\": ",
                               i ? ",\n              " : "", f->device, f->stream, f->kernels);
        json_number(o, f->busy_ms, 3);
        g_string_append(o, "}");
    }
    g_string_append(o, "],\n  \"comm_overlapped_fraction\": ");
    json_number(o, s->comm_overlapped_fraction, 4);
    g_string_append(o, "\n}\n");
    return g_string_free(o, FALSE);
}

static void
table_number(GString *o, double v, int width, int decimals)
{
    if (isfinite(v))
        g_string_append_printf(o, "%*.*f", width, decimals, v);
    else
        g_string_append_printf(o, "%*s", width, "-");
}

char *
tps_trace_summary_to_table(const TpsTraceSummary *s)
{
    GString *o = g_string_new(NULL);
    g_string_append_printf(o, "Trace   %s\nGPU     %s\n", s->file,
                           s->gpu ? s->gpu : "(not in the trace)");
    g_string_append_printf(o, "Span    %.3f ms on %u device%s\n\n", s->span_ms, s->devices,
                           s->devices == 1 ? "" : "s");
    double total = 0;
    for (guint c = 0; c < TPS_KERNEL_CLASS_COUNT; c++)
        total += s->classes[c].total_ms;
    g_string_append(o, "class      kernels   total ms   share\n");
    for (guint c = 0; c < TPS_KERNEL_CLASS_COUNT; c++)
        g_string_append_printf(o, "%-8s %9u %10.3f %6.1f%%\n", tps_kernel_class_name(c),
                               s->classes[c].count, s->classes[c].total_ms,
                               total > 0 ? 100.0 * s->classes[c].total_ms / total : 0.0);
    if (s->n_collectives) {
        g_string_append(
            o,
            "\ncollective      count  median us  median bytes  busbw GB/s  algorithm/protocol\n");
        for (guint i = 0; i < s->n_collectives; i++) {
            const TpsCollectiveFigures *f = &s->collectives[i];
            g_string_append_printf(o, "%-14s %6u ", f->name, f->count);
            table_number(o, f->median_us, 10, 1);
            table_number(o, f->median_bytes, 14, 0);
            table_number(o, f->busbw_gbps, 12, 2);
            g_string_append_printf(o, "  %s\n",
                                   f->algorithms && *f->algorithms ? f->algorithms : "-");
        }
    }
    g_string_append(o, "\ndevice  stream  kernels    busy ms  name\n");
    for (guint i = 0; i < s->n_streams; i++) {
        const TpsStreamFigures *f = &s->streams[i];
        g_string_append_printf(o, "%6" G_GINT64_FORMAT "  %6" G_GINT64_FORMAT "  %7u %10.3f  %s\n",
                               f->device, f->stream, f->kernels, f->busy_ms,
                               f->name ? f->name : "");
    }
    g_string_append_printf(o, "\nNCCL time overlapped by other kernels: %.1f%%\n",
                           100.0 * s->comm_overlapped_fraction);
    if (s->gemm_shaped > 0)
        g_string_append_printf(o, "GEMMs with shapes: %u of %u kernels, %.3f ms, %.2f TFLOP/s\n",
                               s->gemm_shaped, s->classes[TPS_KERNEL_GEMM].count, s->gemm_shaped_ms,
                               s->gemm_tflops);
    return g_string_free(o, FALSE);
}

/* ---------------------------------------------------------------------- */
/* Predicted against measured                                              */

const char *
tps_trace_device_name(const TpsTrace *trace, gint64 device)
{
    char key[32];
    g_snprintf(key, sizeof key, "%" G_GINT64_FORMAT, device);
    return g_hash_table_lookup(trace->device_names, key);
}

/* "STRATEGY GPUr" -> STRATEGY, newly allocated; NULL for other names. */
static char *
run_of_process(const char *pname)
{
    const char *gpu = pname ? g_strrstr(pname, " GPU") : NULL;
    if (gpu == NULL || gpu == pname)
        return NULL;
    for (const char *p = gpu + 4; *p; p++)
        if (!g_ascii_isdigit(*p))
            return NULL;
    return g_strndup(pname, (gsize)(gpu - pname));
}

char *
tps_trace_tpsim_strategy(const TpsTrace *trace)
{
    if (trace->format != TPS_TRACE_TPSIM)
        return NULL;
    char *found = NULL;
    guint n;
    const TpsTraceKernel *ks = tps_trace_kernels(trace, &n);
    for (guint i = 0; i < n; i++) {
        g_autofree char *run = run_of_process(tps_trace_device_name(trace, ks[i].device));
        if (run == NULL)
            continue;
        if (found == NULL) {
            found = g_steal_pointer(&run);
        } else if (strcmp(found, run) != 0) {
            g_free(found);
            return NULL;
        }
    }
    return found;
}

/* Per-name accumulation of streams: busy ns summed over devices. */
typedef struct {
    char *name;
    gint64 measured_ns, predicted_ns;
    guint measured_kernels, predicted_kernels;
} StreamAcc;

static StreamAcc *
stream_acc(GArray *accs, const char *name)
{
    for (guint i = 0; i < accs->len; i++)
        if (strcmp(g_array_index(accs, StreamAcc, i).name, name) == 0)
            return &g_array_index(accs, StreamAcc, i);
    StreamAcc a = {.name = g_strdup(name)};
    g_array_append_val(accs, a);
    return &g_array_index(accs, StreamAcc, accs->len - 1);
}

static double
error_pct(double measured, double predicted)
{
    return measured != 0.0 ? 100.0 * (predicted - measured) / measured : NAN;
}

static void
row_finish(TpsCompareRow *row, const char *label)
{
    row->label = g_strdup(label);
    row->error_pct = error_pct(row->measured_ms, row->predicted_ms);
    row->count_error_pct = error_pct(row->measured_count, row->predicted_count);
}

/* The kernel class a profiler would give a simulated span (its kind's
 * class of sched/run-analysis.h); FALSE for spans that are no kernels. */
static gboolean
kind_class(TpsTaskKind kind, TpsKernelClass *klass)
{
    if (!tps_kind_is_kernel(kind))
        return FALSE;
    *klass = kind == TPS_KIND_GEMM                           ? TPS_KERNEL_GEMM
             : tps_kind_class(kind) == TPS_CLASS_COMM ? TPS_KERNEL_NCCL
                                                              : TPS_KERNEL_OTHER;
    return TRUE;
}

typedef struct {
    gint64 key; /* device or rank */
    gint64 stream;
    gint64 start, end;
    gboolean nccl;
} KSpan;

static int
cmp_kspan(gconstpointer pa, gconstpointer pb)
{
    const KSpan *a = pa, *b = pb;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    if (a->stream != b->stream)
        return a->stream < b->stream ? -1 : 1;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return (a->end > b->end) - (a->end < b->end);
}

/* Busy time (union) of each (key, stream) group of sorted spans, by name. */
typedef const char *(*StreamNamer)(gconstpointer ctx, gint64 key, gint64 stream, char *buf,
                                   gsize size);

static void
accumulate_streams(GArray *spans, GArray *accs, gboolean measured, StreamNamer namer,
                   gconstpointer ctx)
{
    g_array_sort(spans, cmp_kspan);
    const KSpan *s = (const KSpan *)(void *)spans->data;
    guint n = spans->len;
    for (guint i = 0; i < n;) {
        guint j = i;
        gint64 busy = 0, cs = s[i].start, ce = s[i].start;
        for (; j < n && s[j].key == s[i].key && s[j].stream == s[i].stream; j++) {
            if (s[j].start > ce) {
                busy += ce - cs;
                cs = s[j].start;
            }
            ce = MAX(ce, s[j].end);
        }
        busy += ce - cs;
        char buf[64];
        StreamAcc *a = stream_acc(accs, namer(ctx, s[i].key, s[i].stream, buf, sizeof buf));
        if (measured)
            a->measured_ns += busy, a->measured_kernels += j - i;
        else
            a->predicted_ns += busy, a->predicted_kernels += j - i;
        i = j;
    }
}

typedef struct {
    const TpsTrace *trace;
    GHashTable *roles; /* "dev:stream" -> role name, for unnamed Kineto streams */
} MeasuredNames;

static const char *
measured_stream_name(gconstpointer ctx, gint64 device, gint64 stream, char *buf, gsize size)
{
    const MeasuredNames *m = ctx;
    g_snprintf(buf, size, "%" G_GINT64_FORMAT ":%" G_GINT64_FORMAT, device, stream);
    const char *role = m->roles ? g_hash_table_lookup(m->roles, buf) : NULL;
    if (role)
        return role;
    if (m->trace->format == TPS_TRACE_TPSIM) {
        const char *name = tps_trace_stream_name(m->trace, device, stream);
        if (name)
            return name;
    }
    g_snprintf(buf, size, "stream %" G_GINT64_FORMAT, stream);
    return buf;
}

static const char *
predicted_stream_name(gconstpointer ctx, gint64 rank, gint64 stream, char *buf, gsize size)
{
    const TpsRun *run = ctx;
    if (stream == (gint64)TPS_STREAM_NONE)
        return "kernel parts"; /* as the trace export names them */
    return tps_run_stream_name(run, (TpsStreamId)stream);
}

TpsComparison *
tps_trace_compare(const TpsTrace *trace, const TpsRun *record, GError **error)
{
    g_return_val_if_fail(trace != NULL && record != NULL, NULL);
    guint n;
    const TpsTraceKernel *ks = tps_trace_kernels(trace, &n);

    /* Measured: the devices of the run (tpsim traces may hold several). */
    g_autoptr(GArray) mspans = g_array_new(FALSE, FALSE, sizeof(KSpan));
    g_autoptr(GHashTable) mdevs = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    gint64 m_count[TPS_KERNEL_CLASS_COUNT] = {0}, m_ns[TPS_KERNEL_CLASS_COUNT] = {0};
    /* Per device: first start and last end (for the span row). */
    g_autoptr(GHashTable) mfirst =
        g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
    gint64 m_span_ns = 0;
    for (guint i = 0; i < n; i++) {
        const TpsTraceKernel *k = &ks[i];
        if (trace->format == TPS_TRACE_TPSIM && record->label) {
            g_autofree char *run = run_of_process(tps_trace_device_name(trace, k->device));
            if (run && strcmp(run, record->label) != 0)
                continue;
        }
        if (!g_hash_table_contains(mdevs, &k->device)) {
            gint64 *key = g_new(gint64, 1);
            *key = k->device;
            g_hash_table_add(mdevs, key);
        }
        m_count[k->klass]++;
        m_ns[k->klass] += k->dur_ns;
        KSpan sp = {k->device, k->stream, k->ts_ns, k->ts_ns + k->dur_ns,
                    k->klass == TPS_KERNEL_NCCL};
        g_array_append_val(mspans, sp);
        gint64 *fl = g_hash_table_lookup(mfirst, &k->device);
        if (fl == NULL) {
            gint64 *key = g_new(gint64, 1);
            *key = k->device;
            fl = g_new(gint64, 2);
            fl[0] = sp.start, fl[1] = sp.end;
            g_hash_table_insert(mfirst, key, fl);
        }
        fl[0] = MIN(fl[0], sp.start), fl[1] = MAX(fl[1], sp.end);
    }
    guint mdev = g_hash_table_size(mdevs);
    if (mdev == 0) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "%s: no GPU kernels%s%s", trace->name,
                    trace->format == TPS_TRACE_TPSIM ? " of strategy " : "",
                    trace->format == TPS_TRACE_TPSIM ? record->label : "");
        return NULL;
    }
    GHashTableIter it;
    gpointer v;
    g_hash_table_iter_init(&it, mfirst);
    while (g_hash_table_iter_next(&it, NULL, &v))
        m_span_ns += ((gint64 *)v)[1] - ((gint64 *)v)[0];

    /* Predicted: the kernels of the run, every rank. */
    g_autoptr(GArray) pspans = g_array_new(FALSE, FALSE, sizeof(KSpan));
    g_autofree gint64 *pfirst = g_new(gint64, record->ranks);
    g_autofree gint64 *plast = g_new(gint64, record->ranks);
    for (guint r = 0; r < record->ranks; r++)
        pfirst[r] = G_MAXINT64, plast[r] = G_MININT64;
    gint64 p_count[TPS_KERNEL_CLASS_COUNT] = {0}, p_ns[TPS_KERNEL_CLASS_COUNT] = {0};
    guint n_tasks = tps_run_n_spans(record);
    for (TpsTaskId id = 0; id < n_tasks; id++) {
        const TpsSpan *sp = tps_run_span(record, id);
        TpsKernelClass klass;
        if (!kind_class(sp->kind, &klass) || sp->rank >= record->ranks)
            continue;
        p_count[klass]++;
        p_ns[klass] += sp->end - sp->start;
        KSpan ksp = {sp->rank, sp->stream == TPS_STREAM_NONE ? (gint64)TPS_STREAM_NONE : sp->stream,
                     sp->start, sp->end, klass == TPS_KERNEL_NCCL};
        g_array_append_val(pspans, ksp);
        pfirst[sp->rank] = MIN(pfirst[sp->rank], sp->start);
        plast[sp->rank] = MAX(plast[sp->rank], sp->end);
    }
    guint pranks = 0;
    gint64 p_span_ns = 0;
    for (guint r = 0; r < record->ranks; r++)
        if (pfirst[r] != G_MAXINT64)
            pranks++, p_span_ns += plast[r] - pfirst[r];
    if (pranks == 0) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "the simulated run has no kernels");
        return NULL;
    }

    TpsComparison *c = g_new0(TpsComparison, 1);
    c->trace_file = g_path_get_basename(trace->name);
    c->strategy = g_strdup(record->label);
    c->measured_devices = mdev;
    c->predicted_ranks = pranks;
    for (guint k = 0; k < TPS_KERNEL_CLASS_COUNT; k++) {
        TpsCompareRow *row = &c->classes[k];
        row->measured_count = (double)m_count[k] / mdev;
        row->predicted_count = (double)p_count[k] / pranks;
        row->measured_ms = (double)m_ns[k] * 1e-6 / mdev;
        row->predicted_ms = (double)p_ns[k] * 1e-6 / pranks;
        row_finish(row, tps_kernel_class_name(k));
    }
    c->span.measured_count = c->span.predicted_count = 1;
    c->span.measured_ms = (double)m_span_ns * 1e-6 / mdev;
    c->span.predicted_ms = (double)p_span_ns * 1e-6 / pranks;
    row_finish(&c->span, "span");

    /* Streams. A Kineto trace's are numbers: give its busiest compute and
     * NCCL streams the roles of the simulated "main" and "nccl". */
    MeasuredNames names = {.trace = trace};
    g_autoptr(GHashTable) roles = NULL;
    if (trace->format == TPS_TRACE_KINETO) {
        roles = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
        g_autoptr(GHashTable) compute =
            g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        g_autoptr(GHashTable) comm = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        for (guint i = 0; i < mspans->len; i++) {
            const KSpan *sp = &g_array_index(mspans, KSpan, i);
            char *key =
                g_strdup_printf("%" G_GINT64_FORMAT ":%" G_GINT64_FORMAT, sp->key, sp->stream);
            GHashTable *table = sp->nccl ? comm : compute;
            gint64 *acc = g_hash_table_lookup(table, key);
            if (acc == NULL) {
                acc = g_new0(gint64, 1);
                g_hash_table_insert(table, g_strdup(key), acc);
            }
            *acc += sp->end - sp->start;
            g_free(key);
        }
        const char *role_names[2] = {"main", "nccl"};
        GHashTable *tables[2] = {compute, comm};
        const char *taken = NULL;
        for (guint r = 0; r < 2; r++) {
            const char *best = NULL;
            gint64 best_ns = -1;
            g_hash_table_iter_init(&it, tables[r]);
            gpointer k;
            while (g_hash_table_iter_next(&it, &k, &v))
                if (*(gint64 *)v > best_ns && (taken == NULL || strcmp(taken, k) != 0))
                    best = k, best_ns = *(gint64 *)v;
            if (best) {
                /* Only one device in a Kineto trace in practice; roles per stream key. */
                g_hash_table_insert(roles, g_strdup(best), (gpointer)role_names[r]);
                taken = best;
            }
        }
        names.roles = roles;
    }
    g_autoptr(GArray) accs = g_array_new(FALSE, TRUE, sizeof(StreamAcc));
    accumulate_streams(pspans, accs, FALSE, predicted_stream_name, record);
    accumulate_streams(mspans, accs, TRUE, measured_stream_name, &names);
    c->n_streams = accs->len;
    c->streams = g_new0(TpsCompareRow, MAX(accs->len, 1));
    for (guint i = 0; i < accs->len; i++) {
        StreamAcc *a = &g_array_index(accs, StreamAcc, i);
        TpsCompareRow *row = &c->streams[i];
        row->measured_count = (double)a->measured_kernels / mdev;
        row->predicted_count = (double)a->predicted_kernels / pranks;
        row->measured_ms = (double)a->measured_ns * 1e-6 / mdev;
        row->predicted_ms = (double)a->predicted_ns * 1e-6 / pranks;
        row_finish(row, a->name);
        g_free(a->name);
    }
    return c;
}

void
tps_comparison_free(TpsComparison *c)
{
    if (c == NULL)
        return;
    g_free(c->trace_file);
    g_free(c->strategy);
    for (guint i = 0; i < TPS_KERNEL_CLASS_COUNT; i++)
        g_free(c->classes[i].label);
    g_free(c->span.label);
    for (guint i = 0; i < c->n_streams; i++)
        g_free(c->streams[i].label);
    g_free(c->streams);
    g_free(c);
}

static void
table_row(GString *o, const TpsCompareRow *row, gboolean counts)
{
    g_string_append_printf(o, "%-14s", row->label);
    if (counts) {
        table_number(o, row->measured_count, 10, 1);
        table_number(o, row->predicted_count, 10, 1);
        table_number(o, row->count_error_pct, 8, 1);
    }
    table_number(o, row->measured_ms, 12, 3);
    table_number(o, row->predicted_ms, 12, 3);
    table_number(o, row->error_pct, 9, 1);
    g_string_append_c(o, '\n');
}

char *
tps_comparison_to_table(const TpsComparison *c)
{
    GString *o = g_string_new(NULL);
    g_string_append_printf(o,
                           "Measured   %s (%u device%s)\nPredicted  %s (%u rank%s)\n"
                           "Figures per device; error = (predicted - measured) / measured.\n\n",
                           c->trace_file, c->measured_devices, c->measured_devices == 1 ? "" : "s",
                           c->strategy ? c->strategy : "?", c->predicted_ranks,
                           c->predicted_ranks == 1 ? "" : "s");
    g_string_append(
        o, "class           measured predicted  count %   measured ms predicted ms  error %\n");
    for (guint k = 0; k < TPS_KERNEL_CLASS_COUNT; k++)
        table_row(o, &c->classes[k], TRUE);
    g_string_append(
        o, "\nstream          measured predicted kernels%   measured ms predicted ms  error %\n");
    for (guint i = 0; i < c->n_streams; i++)
        table_row(o, &c->streams[i], TRUE);
    g_string_append(
        o, "\n                                             measured ms predicted ms  error %\n");
    g_string_append_printf(o, "%-44s", "span (first kernel start to last end)");
    table_number(o, c->span.measured_ms, 13, 3);
    table_number(o, c->span.predicted_ms, 13, 3);
    table_number(o, c->span.error_pct, 9, 1);
    g_string_append_c(o, '\n');
    return g_string_free(o, FALSE);
}

static void
json_row(GString *o, const TpsCompareRow *row)
{
    g_string_append(o, "{\"name\": ");
    json_string(o, row->label);
    g_string_append(o, ", \"measured_count\": ");
    json_number(o, row->measured_count, 3);
    g_string_append(o, ", \"predicted_count\": ");
    json_number(o, row->predicted_count, 3);
    g_string_append(o, ", \"measured_ms\": ");
    json_number(o, row->measured_ms, 6);
    g_string_append(o, ", \"predicted_ms\": ");
    json_number(o, row->predicted_ms, 6);
    g_string_append(o, ", \"error_pct\": ");
    json_number(o, row->error_pct, 3);
    g_string_append(o, "}");
}

char *
tps_comparison_to_json(const TpsComparison *c)
{
    GString *o = g_string_new("{\n  \"trace\": ");
    json_string(o, c->trace_file);
    g_string_append(o, ", \"strategy\": ");
    json_string(o, c->strategy);
    g_string_append_printf(o,
                           ", \"measured_devices\": %u, \"predicted_ranks\": %u,\n  \"classes\": [",
                           c->measured_devices, c->predicted_ranks);
    for (guint k = 0; k < TPS_KERNEL_CLASS_COUNT; k++) {
        if (k)
            g_string_append(o, ",\n              ");
        json_row(o, &c->classes[k]);
    }
    g_string_append(o, "],\n  \"streams\": [");
    for (guint i = 0; i < c->n_streams; i++) {
        if (i)
            g_string_append(o, ",\n              ");
        json_row(o, &c->streams[i]);
    }
    g_string_append(o, "],\n  \"span\": ");
    json_row(o, &c->span);
    g_string_append(o, "\n}\n");
    return g_string_free(o, FALSE);
}

/* The measured run (timeline figures)                                     */

TpsRun *
tps_trace_to_run(const TpsTrace *trace, const char *strategy, gboolean is_op, GError **error)
{
    guint n;
    const TpsTraceKernel *ks = tps_trace_kernels(trace, &n);
    g_autoptr(GArray) keep = g_array_new(FALSE, FALSE, sizeof(guint));
    g_autoptr(GArray) devices = g_array_new(FALSE, FALSE, sizeof(gint64));
    gint64 t0 = G_MAXINT64;
    for (guint i = 0; i < n; i++) {
        if (trace->format == TPS_TRACE_TPSIM && strategy) {
            g_autofree char *run = run_of_process(tps_trace_device_name(trace, ks[i].device));
            if (run && strcmp(run, strategy) != 0)
                continue;
        }
        g_array_append_val(keep, i);
        t0 = MIN(t0, ks[i].ts_ns);
        if (devices->len == 0 || g_array_index(devices, gint64, devices->len - 1) != ks[i].device)
            g_array_append_val(devices, ks[i].device); /* kernels are sorted by device */
    }
    if (keep->len == 0) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "%s: no GPU kernels to draw", trace->name);
        return NULL;
    }
    TpsRun *run = tps_run_new("measured", devices->len, devices->len);
    run->is_op = is_op;
    guint rank = 0;
    gint64 cur_dev = ks[g_array_index(keep, guint, 0)].device, cur_stream = G_MININT64;
    TpsStreamId stream = TPS_STREAM_NONE;
    gint64 makespan = 0;
    for (guint j = 0; j < keep->len; j++) {
        const TpsTraceKernel *k = &ks[g_array_index(keep, guint, j)];
        if (k->device != cur_dev)
            rank++, cur_dev = k->device, cur_stream = G_MININT64;
        if (k->stream != cur_stream) {
            cur_stream = k->stream;
            const char *name = tps_trace_stream_name(trace, k->device, k->stream);
            g_autofree char *fallback = g_strdup_printf("stream %" G_GINT64_FORMAT, k->stream);
            stream = tps_run_add_stream(run, rank, 0, name ? name : fallback);
        }
        const char *base = g_str_has_prefix(k->name, "void ") ? k->name + 5 : k->name;
        g_autofree char *short_name = g_strndup(base, strcspn(base, "("));
        /* Each kernel where and as long as the trace has it. */
        TpsSpan span = {
            .kind = k->klass == TPS_KERNEL_GEMM   ? TPS_KIND_GEMM
                    : k->klass == TPS_KERNEL_NCCL ? TPS_KIND_COMM
                                                  : TPS_KIND_MEMORY,
            .name = short_name,
            .rank = rank,
            .stream = stream,
            .parent = TPS_TASK_NONE,
            .launch = k->ts_ns - t0,
            .start = k->ts_ns - t0,
            .end = k->ts_ns - t0 + k->dur_ns,
        };
        tps_run_add_span(run, &span, rank);
        makespan = MAX(makespan, k->ts_ns + k->dur_ns - t0);
    }
    run->fwd_start = 0;
    run->fwd_end = makespan;
    run->bwd_start = 0;
    run->bwd_end = makespan;
    return run;
}
