/* A YAML document read into a small tree that keeps the position of every
 * node, so that loaders can report `file:line:column: message`.
 *
 * Loaders walk the tree with the typed getters below. Every getter that can
 * fail sets a GError already prefixed with the node's position. Lines and
 * columns are 1-based, as editors show them.
 *
 * The strict-keys helper tps_yaml_check_keys() rejects a key that is not in
 * the list and suggests the closest known one.
 */
#pragma once

#include <glib.h>

typedef enum {
    TPS_YAML_SCALAR,
    TPS_YAML_MAP,
    TPS_YAML_SEQ,
} TpsYamlType;

typedef struct TpsYamlNode TpsYamlNode;

struct TpsYamlNode {
    TpsYamlType type;
    guint line;     /* 1-based */
    guint column;   /* 1-based */
    char *value;    /* SCALAR: the text; NULL otherwise */
    gboolean plain; /* SCALAR: written without quotes */
    /* MAP: keys[i] (scalar nodes) -> items[i]; SEQ: items[i]. */
    GPtrArray *keys;
    GPtrArray *items;
};

typedef struct {
    char *file;        /* the name used in messages */
    TpsYamlNode *root; /* NULL for an empty document */
} TpsYamlDoc;

/* The largest YAML file read: scenarios, models and plots are a few
 * kilobytes, and a measurements file of tpsim-gpubench with every point far
 * below this. Beyond it (or from /dev/zero, a FIFO: anything that is not a
 * regular file is read only up to it) the load fails with TPS_ERROR_INPUT. */
#define TPS_YAML_MAX_FILE_BYTES ((gsize)16 << 20)

/* Parse a file or a string. Aliases, anchors, tags and multiple documents
 * are rejected (scenario files have no use for them). Duplicate keys are
 * errors. On failure returns NULL with TPS_ERROR_INPUT "file:line:col: ...". */
TpsYamlDoc *tps_yaml_load_file(const char *path, GError **error);

/* While a recorder is set on this thread, the content of every file
 * tps_yaml_load_file() reads there (a scenario, the hardware model file
 * it resolves, a ub_cfg file, a sweep and its base) is added to `sum`, in
 * the order read, each with its length: what the digest of a batch covers
 * (plan/batch.h), the inputs as resolved rather than as named. NULL
 * stops; returns the recorder set before. */
GChecksum *tps_yaml_record_reads(GChecksum *sum);

/* Add `text` to the recorder of this thread, as a file read (an input
 * given as text: tps_sweep_load_string()); nothing without one. */
void tps_yaml_record_text(const char *text, gsize len);
TpsYamlDoc *tps_yaml_load_string(const char *name, const char *text, gssize len, GError **error);
void tps_yaml_doc_free(TpsYamlDoc *doc);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TpsYamlDoc, tps_yaml_doc_free)

/* Building and changing trees (the points of a sweep: the base scenario's
 * tree with values replaced). A new node is at `line`:`column` (the node
 * of the sweep file it comes from); a new scalar is plain. */
TpsYamlNode *tps_yaml_node_new(TpsYamlType type, const char *value, guint line, guint column);
/* A deep copy (positions included). */
TpsYamlNode *tps_yaml_node_copy(const TpsYamlNode *node);
void tps_yaml_node_free(TpsYamlNode *node);
/* Set `key` (a scalar node) of `map` to `item`, replacing the value of a
 * key already there; takes both nodes. */
void tps_yaml_map_set(TpsYamlNode *map, TpsYamlNode *key, TpsYamlNode *item);
/* A document of `root` (taken) named `file` in messages. */
TpsYamlDoc *tps_yaml_doc_new(const char *file, TpsYamlNode *root);

/* Set `error` to "file:line:col: <message>" at `node`. Always returns FALSE. */
gboolean tps_yaml_error(const TpsYamlDoc *doc, const TpsYamlNode *node, GError **error,
                        const char *format, ...) G_GNUC_PRINTF(4, 5);

/* MAP lookup; NULL when absent. */
TpsYamlNode *tps_yaml_get(const TpsYamlNode *map, const char *key);

/* Checks that `node` (a document's top level) looks like a file of the kind
 * `what` at all ("hardware model"): a MAP with at least one key of the
 * NULL-terminated `known`, or with keys all close to known ones (typos).
 * Anything else (a list, a scalar, a map of none of
 * those keys: another program's YAML, a text file, /etc/shadow named as a
 * model) is TPS_ERROR_INPUT "file:line:col: not a WHAT file (no 'a:', 'b:'
 * ... keys)" at `node`, which quotes nothing of the file: the unknown-key
 * messages of tps_yaml_check_keys() would show its bytes. */
gboolean tps_yaml_check_kind(const TpsYamlDoc *doc, const TpsYamlNode *node, const char *what,
                             const char *const *known, GError **error);

/* Checks that `node` is a MAP whose keys are all in the NULL-terminated
 * `known`; an unknown key gives "unknown key 'x' in <where>; did you mean 'y'?"
 * (or the list of known keys when none is close). */
gboolean tps_yaml_check_keys(const TpsYamlDoc *doc, const TpsYamlNode *node, const char *where,
                             const char *const *known, GError **error);

/* Checks the node type; `what` names the expected thing in the message. */
gboolean tps_yaml_expect(const TpsYamlDoc *doc, const TpsYamlNode *node, TpsYamlType type,
                         const char *what, GError **error);

/* Typed scalars. Ranges are inclusive; the message names `key`. */
gboolean tps_yaml_uint(const TpsYamlDoc *doc, const TpsYamlNode *node, const char *key, guint64 min,
                       guint64 max, guint64 *out, GError **error);
gboolean tps_yaml_double(const TpsYamlDoc *doc, const TpsYamlNode *node, const char *key,
                         double min, double max, double *out, GError **error);
gboolean tps_yaml_bool(const TpsYamlDoc *doc, const TpsYamlNode *node, const char *key,
                       gboolean *out, GError **error);
/* A string scalar (quoted or plain). */
gboolean tps_yaml_string(const TpsYamlDoc *doc, const TpsYamlNode *node, const char *key,
                         const char **out, GError **error);
/* One of the NULL-terminated `choices`; returns its index. */
gboolean tps_yaml_enum(const TpsYamlDoc *doc, const TpsYamlNode *node, const char *key,
                       const char *const *choices, guint *out, GError **error);
