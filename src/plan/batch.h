/* A batch of scenario points evaluated together (tpsim sweep, search):
 * on several threads, a deterministic slice of them (shards), results
 * streamed to the output as points finish, a killed run resumed, and the
 * final file sorted by point whatever the order they finished in
 * (docs/sweeps.md, "Batches").
 *
 * A point is a scenario (an owned copy), a key unique in the batch and
 * labels: (column, value) pairs printed before the result columns (the
 * varied fields of a sweep). Every point of a batch has the same label
 * columns (TpsBatch.label_columns) and the same kind of scenario (model or
 * op), so that all rows share one header. The caller's evaluation turns a
 * point into zero or more rows: results (one per strategy), or a row
 * "skipped: REASON" when the point cannot be evaluated (its layout does
 * not divide, no strategy applies).
 *
 * Files: the output OUT is streamed into OUT.partial (a line per row,
 * flushed after each point, each point's rows followed by a line that
 * marks the point done), and at the end written sorted to OUT through
 * tps_write_atomic_stream() and the partial file removed. The sort is
 * external: the rows are not all kept in memory but sorted in runs of a
 * few MB spilled to unnamed temporary files next to OUT, then merged, so
 * that memory does not grow with the number of rows (the environment
 * variable TPSIM_BATCH_SORT_RUN=N, a test hook, cuts the runs at N
 * points' rows). A kill leaves the
 * partial file and never a half-written OUT; `resume` reads the points
 * the partial file marks done (an incomplete last line or point is
 * dropped) and evaluates only the others. The partial file starts with
 * a line identifying the batch (the digest of its input and of its
 * points' keys) and the shard, which resume checks; the final file is a
 * plain table (CSV: its column line first), and what identifies it is in
 * its sidecar OUT.batch, written next to it, which tps_batch_merge()
 * checks.
 *
 * Thread safety: the evaluation runs on `jobs` threads at once; it must
 * touch only its point and its own data (tps_simulate() is reentrant).
 */
#pragma once

#include <glib.h>

#include "io/output/result-writer.h"
#include "sched/scenario.h"
#include "sched/simulate.h"

typedef struct {
    char *key;            /* deterministic, unique in the batch */
    guint index;          /* position in the batch: the order of the final file */
    char **label_values;  /* one per TpsBatch.label_columns, owned */
    /* Owned. Last: the points of a lazy batch (tps_batch_new_lazy()) are
     * allocated without it, and must not be read there. */
    TpsScenario scenario;
} TpsBatchPoint;

/* Fill `scenario` (zeroed) with the scenario of point `index` of a batch
 * whose points are built when evaluated (tps_batch_new_lazy()). Runs on
 * the worker threads: it must only read shared data. */
typedef void (*TpsBatchScenarioFunc)(guint index, TpsScenario *scenario, gpointer data);

typedef struct {
    /* Identifies the input of the batch (a digest of the sweep file and
     * what it names; any string): part of the batch digest, so that resume
     * and merge refuse the outputs of another input. May be NULL. */
    char *input_id;
    char **label_columns; /* NULL-terminated, owned; may be empty */
    GPtrArray *points;    /* of TpsBatchPoint *, owned, index = position */
    /* When not NULL, the points hold no scenario (TpsBatchPoint.scenario
     * is not even allocated): `fill` builds it for the time of the
     * point's evaluation, so that a batch of many points holds a key and
     * labels per point, not a scenario of some KB. The points handed to
     * TpsBatchOptions.rows_func and collect then have no scenario either:
     * only their key, index and labels may be read. */
    TpsBatchScenarioFunc fill;
    gpointer fill_data;
} TpsBatch;

/* An empty batch; free with tps_batch_free() (accepts NULL). */
TpsBatch *tps_batch_new(const char *input_id, const char *const *label_columns);
void tps_batch_free(TpsBatch *batch);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TpsBatch, tps_batch_free)

/* An empty batch whose points' scenarios `fill` builds when they are
 * evaluated; add points with tps_batch_add() and a NULL scenario. */
TpsBatch *tps_batch_new_lazy(const char *input_id, const char *const *label_columns,
                             TpsBatchScenarioFunc fill, gpointer fill_data);

/* Append a point: `scenario` is copied (NULL in a lazy batch), `label_values` (as many as the
 * batch's label columns) copied. Its index is its position. Returns the
 * point (owned by the batch). */
TpsBatchPoint *tps_batch_add(TpsBatch *batch, const char *key, const TpsScenario *scenario,
                             const char *const *label_values);

/* One row of a point: a result, or skipped with a reason. */
typedef struct {
    TpsResult result;  /* result.strategy NULL when skipped without a strategy */
    char *skipped;     /* NULL, or the reason (newly allocated; the row says
                          "skipped: REASON" and has no result values) */
} TpsBatchRow;

/* Add a result row / a skipped row to `rows` (a GArray of TpsBatchRow
 * that the runner hands to the evaluation). The strategy of a skipped row
 * may be NULL. */
void tps_batch_rows_add(GArray *rows, const TpsResult *result);
void tps_batch_rows_skip(GArray *rows, const TpsStrategy *strategy, const char *format, ...)
    G_GNUC_PRINTF(3, 4);

/* Evaluate `point`, appending its rows to `rows`. Runs on a worker
 * thread. FALSE with `error` set stops the batch (what is done stays in
 * the partial file for a resume); a point that merely cannot be evaluated
 * should be a skipped row instead. */
typedef gboolean (*TpsBatchEval)(const TpsBatchPoint *point, GArray *rows, gpointer user,
                                 GError **error);

typedef enum {
    TPS_PROGRESS_AUTO,   /* on standard error when it is a terminal */
    TPS_PROGRESS_NEVER,
    TPS_PROGRESS_ALWAYS, /* even when it is not (tests); also TPSIM_PROGRESS=1 */
} TpsProgressMode;

/* The rank key of a row of a ranked file (TpsBatchOptions.rank_key):
 * newly allocated, lowercase hex digits and letters only, the rows ranked
 * in strcmp() order of their keys (ties: by point, then row). Runs on the
 * worker threads. */
typedef char *(*TpsBatchRankKey)(const TpsBatchPoint *point, const TpsBatchRow *row,
                                 gpointer data);

typedef struct {
    guint jobs;                 /* worker threads; 0: the online CPUs */
    guint shard_index;          /* evaluate the points with index % shard_count == shard_index */
    guint shard_count;          /* 0 or 1: all */
    const char *output;         /* final file; NULL: no file (rows collected only) */
    TpsFormat format;           /* TPS_FORMAT_CSV or TPS_FORMAT_JSON */
    gboolean resume;            /* continue from OUTPUT.partial */
    TpsProgressMode progress;
    /* When not NULL, every row evaluated in this run is appended here as
     * a TpsBatchCollected *, in point order (rows read back from a
     * resumed partial file are not: they are text). Holds every row:
     * for tests and small batches; rows_func keeps memory flat. */
    GPtrArray *collect;
    /* When not NULL, called on the calling thread with each point's rows
     * (a GArray of TpsBatchRow, owned by the runner) as the points of
     * this run finish, in point order whatever the thread count; nothing
     * is called for a batch that fails. */
    void (*rows_func)(const TpsBatchPoint *point, const GArray *rows, gpointer data);
    gpointer rows_data;
    /* When not NULL, the final file is ranked: its rows in the order of
     * their keys (a search's, best first), each with its rank (1, 2, ...)
     * in a first column `rank` (JSON: a member); the sidecar keeps the
     * keys, so that merge ranks the shards' rows the same way. */
    TpsBatchRankKey rank_key;
    gpointer rank_data;
    /* When not NULL, receives the text of the final output (newly
     * allocated), also without `output` (then nothing is written). */
    char **text;
} TpsBatchOptions;

/* A row handed back through TpsBatchOptions.collect. */
typedef struct {
    const TpsBatchPoint *point; /* owned by the batch */
    TpsBatchRow row;
} TpsBatchCollected;

void tps_batch_collected_free(TpsBatchCollected *collected);

/* Defaults: all CPUs, no shard, no output, CSV, no resume, progress on a
 * terminal. */
void tps_batch_options_init(TpsBatchOptions *opts);

/* Evaluate the batch's points of the shard and write the output (see
 * above). FALSE with `error` set when an evaluation fails, the output
 * cannot be written, or resume finds the partial file of another batch. */
gboolean tps_batch_run(const TpsBatch *batch, TpsBatchEval eval, gpointer user,
                       const TpsBatchOptions *opts, GError **error);

/* The digest identifying a batch (hex, newly allocated): of tpsim's
 * version, its input id (the sweep's and the search's: the content of
 * every file their input reads, as resolved), its label columns and its
 * points' keys in order. */
char *tps_batch_digest(const TpsBatch *batch);

/* Parse "I/N" (0 <= I < N) of --shard; FALSE with a TPS_ERROR_INPUT
 * error naming `text` otherwise. */
gboolean tps_batch_parse_shard(const char *text, guint *index, guint *count, GError **error);

/* Join the final files of shards 0..N-1 of one batch (in any order, each
 * with its sidecar PART.batch) into `output` and its sidecar: byte for
 * byte what the unsharded run writes. Refuses (TPS_ERROR_INPUT) parts of
 * different batches or formats, a shard given twice or missing, a part
 * without its sidecar, a part whose rows are not every point of its shard
 * once, whole. */
gboolean tps_batch_merge(const char *const *parts, guint n_parts, const char *output,
                         GError **error);
