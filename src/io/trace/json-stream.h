/* A streaming JSON reader for files too large to hold as a tree.
 *
 * Bytes come through a GInputStream (tps_json_stream_open_input() puts a
 * GZlibDecompressor in front when the data starts with the gzip magic). The
 * caller walks the outer structure itself, one token at a time (peek,
 * accept, read a key, step to the next element), and has the values it
 * wants parsed into a small tree that is reset before each value, so
 * memory grows with the largest single value, not with the file. A DOM of
 * the whole file (json-glib's JsonParser) was rejected for Kineto traces:
 * it takes about ten times the file's size.
 *
 * Strings are unescaped into UTF-8 (a \u0000 or a lone low surrogate
 * becomes U+FFFD); numbers keep their text, so that a caller can read them
 * exactly (tps_json_tree_thousandths()). Nesting deeper than 64 levels and
 * numbers longer than 64 characters are errors.
 *
 * Limits, so that a hostile file (a small gzip that inflates to one huge
 * string, an endless stream) costs bounded time and memory: a string or key
 * longer than TPS_JSON_MAX_STRING bytes, a parsed value of more than
 * TPS_JSON_MAX_NODES values or TPS_JSON_MAX_TEXT bytes of text, and more than
 * TPS_JSON_MAX_INPUT bytes of JSON in all (after decompression) are
 * TPS_ERROR_INPUT errors that say which limit and where. Kineto's longest
 * strings (templated kernel names) are a few kilobytes, its largest files a
 * few gigabytes.
 *
 * Errors: TPS_ERROR_INPUT for bad JSON, with the byte offset ("invalid JSON
 * at byte N: ...", "unexpected end of file at byte N (truncated?)");
 * TPS_ERROR_IO for a read error or truncated gzip data. A read error is
 * sticky: once one happened, every call fails, and the next error set
 * reports it. The caller adds the file name.
 *
 * Ownership: the stream holds a reference on its input; a tree and the
 * strings it gives belong to the stream and live until the next parse.
 */
#pragma once

#include <gio/gio.h>
#include <glib.h>

#define TPS_JSON_MAX_STRING ((gsize)16 << 20)
#define TPS_JSON_MAX_TEXT ((gsize)64 << 20)
#define TPS_JSON_MAX_NODES ((gsize)4 << 20)
#define TPS_JSON_MAX_INPUT ((guint64)4 << 30)

typedef struct TpsJsonStream TpsJsonStream;
typedef struct TpsJsonTree TpsJsonTree;

/* A value in a tree: an index, or TPS_JSON_NONE (no such value). Every
 * accessor accepts TPS_JSON_NONE and answers "absent". */
typedef guint32 TpsJsonNode;
#define TPS_JSON_NONE G_MAXUINT32

typedef enum {
    TPS_JSON_NULL,
    TPS_JSON_BOOL,
    TPS_JSON_NUMBER,
    TPS_JSON_STRING,
    TPS_JSON_ARRAY,
    TPS_JSON_OBJECT,
} TpsJsonType;

/* `input` itself, or, when its first two bytes are the gzip magic, a
 * stream that decompresses it (the magic, not the file name, decides).
 * A new reference; NULL with the read error as GIO gave it. */
GInputStream *tps_json_stream_open_input(GInputStream *input, GCancellable *cancellable,
                                         GError **error);

TpsJsonStream *tps_json_stream_new(GInputStream *input, GCancellable *cancellable);
void tps_json_stream_free(TpsJsonStream *stream);
/* Lower the limits above (tests). */
void tps_json_stream_set_limits(TpsJsonStream *stream, guint64 max_input, gsize max_string);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TpsJsonStream, tps_json_stream_free)

/* The next byte after whitespace, not consumed; -1 at the end of the data
 * or after a read error. */
int tps_json_stream_peek(TpsJsonStream *stream);
/* Consume the next byte after whitespace when it is `c`. */
gboolean tps_json_stream_accept(TpsJsonStream *stream, char c);
/* Whether a read error happened (reported by the next error set). */
gboolean tps_json_stream_read_failed(const TpsJsonStream *stream);
/* Bytes of JSON consumed so far. */
guint64 tps_json_stream_offset(const TpsJsonStream *stream);

/* Inside an object: read `"key":` and return the key (valid until the
 * next call). NULL on error. */
const char *tps_json_stream_read_key(TpsJsonStream *stream, GError **error);

/* After an element of an array (close ']') or a member of an object
 * (close '}'): consume the separator. *more is TRUE after ',' and FALSE
 * after `close`; anything else is an error that says `expected`. */
gboolean tps_json_stream_next(TpsJsonStream *stream, char close, const char *expected,
                              gboolean *more, GError **error);

/* Parse the next value into the stream's tree (reset first) and give its
 * root. The tree is valid until the next parse. */
gboolean tps_json_stream_parse(TpsJsonStream *stream, TpsJsonNode *root, GError **error);
/* Check the next value and skip it, keeping nothing. */
gboolean tps_json_stream_skip(TpsJsonStream *stream, GError **error);
/* The tree of the last tps_json_stream_parse(). */
const TpsJsonTree *tps_json_stream_tree(const TpsJsonStream *stream);

/* Set the error for the stream's position: the pending read error if there
 * is one, else end of file when the data ended, else "invalid JSON at byte
 * N: `what`". Returns FALSE (for `return tps_json_stream_fail(...)`). */
gboolean tps_json_stream_fail(TpsJsonStream *stream, const char *what, GError **error);

/* ---------------------------------------------------------------------- */
/* The parsed tree                                                         */

TpsJsonType tps_json_tree_type(const TpsJsonTree *tree, TpsJsonNode node);
/* A string's unescaped text or a number's text as written; NULL for other
 * types. */
const char *tps_json_tree_text(const TpsJsonTree *tree, TpsJsonNode node);
/* First child of an array or object, and the next sibling (in order). */
TpsJsonNode tps_json_tree_first(const TpsJsonTree *tree, TpsJsonNode node);
TpsJsonNode tps_json_tree_next(const TpsJsonTree *tree, TpsJsonNode node);

/* The member `key` of an object (the first when repeated); TPS_JSON_NONE
 * when `node` is no object or has no such member. */
TpsJsonNode tps_json_tree_member(const TpsJsonTree *tree, TpsJsonNode node, const char *key);
/* The string value of member `key`; NULL when absent or not a string. */
const char *tps_json_tree_member_string(const TpsJsonTree *tree, TpsJsonNode node, const char *key);

/* A number, or a string holding a decimal integer, as an integer: decimal
 * integers exactly, other numbers rounded (FALSE beyond +-9.2e18). */
gboolean tps_json_tree_int(const TpsJsonTree *tree, TpsJsonNode node, gint64 *out);
/* tps_json_tree_int() of member `key`. */
gboolean tps_json_tree_member_int(const TpsJsonTree *tree, TpsJsonNode node, const char *key,
                                  gint64 *out);
/* A number times 1000 as an integer, exact for plain decimals (the integer
 * part times 1000 plus the first three fraction digits, rounded on the
 * fourth) where a double would lose digits (1.7e15 us in ns); numbers with
 * an exponent go through a double. FALSE for non-numbers. */
gboolean tps_json_tree_thousandths(const TpsJsonTree *tree, TpsJsonNode node, gint64 *out);
