/* Validation: the cost models against the measurements of the calibration
 * set (shared/calibration, shared/traces), dataset by dataset, with the
 * error statistics `tpsim validate` prints and CI compares with the figures
 * recorded in docs/validation.json (docs/validation.md).
 *
 * A dataset is a set of points, each a measured time and what the model
 * predicts for the same work, alone on an idle GPU (or ring). The datasets
 * come from one REGISTRY TABLE (tps_validate_datasets()): each row names a
 * file of the calibration set, a loader that reads it into its own data and
 * an evaluator that turns that data into one or more datasets through the
 * cost models. A new source is one row and two functions:
 *
 *   gpointer load(const TpsValidateContext *ctx, const char *path, GError **error);
 *       reads `path` (the row's file in ctx->calibration_dir; NULL when the
 *       row names none) into data of its own; NULL with an error when the
 *       file is missing or malformed (never a silent partial read: a row
 *       that cannot be parsed is an error, so no point is dropped unseen).
 *   gboolean evaluate(const TpsValidateContext *ctx, const TpsValidateDataset *row,
 *                     gconstpointer data, GPtrArray *sets, GError **error);
 *       appends TpsValidateSet * (owned by `sets`, see tps_validate_set_new)
 *       named after row->name ("<name>" or "<name>/<what>"), in family
 *       row->family; the hardware model is ctx->hw. A row without a loader
 *       gets the file's path (or NULL) as `data`. The sets of the rows before
 *       it are already in `sets` (a summary row reads them).
 *
 * e.g. interference entries: {"interference", "interference",
 * "overlap-interference.yaml", NULL, tps_validate_interference, NULL, NULL},
 * with
 *   gboolean tps_validate_interference(const TpsValidateContext *ctx,
 *                                      const TpsValidateDataset *row,
 *                                      gconstpointer path, GPtrArray *sets,
 *                                      GError **error);
 * appending one set "interference/<entry>" per entry.
 *
 * Layers above calib that need their own readers (the traces, read by io)
 * keep rows of the same type in a table of their own (io/trace/trace-validate.h);
 * the command runs both tables.
 *
 * Errors are in percent: 100 (predicted / measured - 1); positive means the
 * model is slower than the measurement.
 */
#pragma once

#include <glib.h>

#include "calib/gemm-kernels.h"

#include "calib/csv.h"
#include "calib/measurements.h"
#include "cost/hardware.h"

/* ---- Points, datasets and their statistics ---- */

typedef struct {
    double x;         /* the plot's abscissa: tokens, bytes, ... */
    double measured;  /* microseconds */
    double predicted; /* microseconds */
} TpsValidatePoint;

typedef struct {
    char *name;       /* "vidur-gemm/llama-3-8b", "vidur-all-reduce/1x8", ... */
    char *family;     /* one residual plot per family: "gemm", "all-reduce", ... */
    char *x_label;    /* "tokens", "bytes", ... */
    gboolean x_log2;  /* plot x on a log2 axis */
    gboolean summary; /* the union of other sets (an acceptance figure): not plotted */
    GArray *points;   /* TpsValidatePoint */
    char *model;      /* the model its points were predicted with where it is not the
                         validated one (vidur's H100 collectives: "h100-sxm"), else NULL */
} TpsValidateSet;

TpsValidateSet *tps_validate_set_new(const char *name, const char *family, const char *x_label,
                                     gboolean x_log2);
void tps_validate_set_free(TpsValidateSet *set);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TpsValidateSet, tps_validate_set_free)

void tps_validate_set_add(TpsValidateSet *set, double x, double measured_us, double predicted_us);

/* Error of a point in percent: 100 (predicted / measured - 1). */
double tps_validate_error_pct(const TpsValidatePoint *point);

typedef struct {
    guint points;
    double median_abs_pct; /* median of |error| (mean of the middle two when even) */
    double p90_abs_pct;    /* nearest rank: the smallest |error| that at least 90% of the
                              points do not exceed, i.e. sorted[ceil(0.9 n) - 1] */
    double max_abs_pct;
    double bias_pct; /* mean signed error: > 0 the model is slow on average */
} TpsValidateStats;

/* Statistics of `n` errors in percent (0 points: every figure NAN). */
void tps_validate_stats_of(const double *errors_pct, guint n, TpsValidateStats *out);
void tps_validate_set_stats(const TpsValidateSet *set, TpsValidateStats *out);

/* ---- Error bands (docs/validation.md, "Error bands") ---- */

typedef struct {
    guint points;   /* pooled over the class's datasets; 0: no dataset */
    double p10_pct; /* nearest rank: sorted[ceil(0.1 n) - 1] of the signed errors */
    double p90_pct; /* sorted[ceil(0.9 n) - 1] */
} TpsValidateBand;

/* The datasets pooled for `klass`: g_pattern_match_simple() globs of set
 * names, NULL-terminated (empty: no dataset measures it). */
const char *const *tps_validate_band_sets(TpsBandClass klass);

/* The signed residual quantiles of each class of work (TpsBandClass),
 * pooled over the points of its datasets in `sets` (TpsValidateSet *). A
 * class without a measured point takes the envelope of the measured
 * classes (the lowest p10, the highest p90): what is not measured is not
 * assumed to be better than the worst that is. No measured class at all:
 * every figure NAN. */
void tps_validate_bands(const GPtrArray *sets, TpsValidateBand out[TPS_BAND_COUNT]);

/* ---- The registry ---- */

typedef struct TpsValidateContext TpsValidateContext;

/* The hardware model NAME (models/NAME.yaml) of a measured cluster whose
 * fabric is not the one of ctx->hw; NULL with an error when it cannot be
 * loaded. The context owns what it returns. */
typedef const TpsHardware *(*TpsValidateModelFunc)(const TpsValidateContext *ctx, const char *name,
                                                   GError **error);

struct TpsValidateContext {
    const TpsHardware *hw;       /* the model validated */
    const char *calibration_dir; /* shared/calibration */
    const char *traces_dir;      /* shared/traces */
    /* Where a dataset was measured on another fabric (vidur's cluster
     * between nodes), its evaluator asks for that cluster's model; NULL:
     * ctx->hw is used for everything. */
    TpsValidateModelFunc model;
    gpointer model_data;
    /* The GEMM kernels a measurement recorded by shape (`tpsim validate
     * --kernels`); NULL: the model's own tile choice everywhere. */
    const TpsGemmKernels *kernels;
};

typedef struct TpsValidateDataset TpsValidateDataset;

typedef gpointer (*TpsValidateLoadFunc)(const TpsValidateContext *ctx, const char *path,
                                        GError **error);
typedef gboolean (*TpsValidateEvalFunc)(const TpsValidateContext *ctx,
                                        const TpsValidateDataset *row, gconstpointer data,
                                        GPtrArray *sets, GError **error);

struct TpsValidateDataset {
    const char *name;         /* the set's name, or the prefix of the sets it makes */
    const char *family;       /* their plot */
    const char *file;         /* relative to ctx->calibration_dir; NULL: none */
    TpsValidateLoadFunc load; /* NULL: `data` is the file's path */
    TpsValidateEvalFunc evaluate;
    GDestroyNotify free;     /* frees what `load` returned; NULL with no loader */
    gconstpointer user_data; /* for the evaluator (what the file does not say) */
};

/* The table of the calibration set's files, in report order. */
const TpsValidateDataset *tps_validate_datasets(guint *n_rows);

/* The table of the files measured on H100 (vidur's h100 profiles), in
 * report order: what `tpsim validate` runs for a model of an H100
 * (tps_validate_measured_on_h100()) instead of the A100 tables. */
const TpsValidateDataset *tps_validate_h100_datasets(guint *n_rows);

/* Whether `hw` models an H100 (its gpu.name names one): the GPU the H100
 * table was measured on. */
gboolean tps_validate_measured_on_h100(const TpsHardware *hw);

/* Loads and evaluates each of `n_rows` rows, appending their sets to `sets`
 * (TpsValidateSet *, the array should free them). Stops at the first
 * error, prefixed with the row's name. */
gboolean tps_validate_run(const TpsValidateContext *ctx, const TpsValidateDataset *rows,
                          guint n_rows, GPtrArray *sets, GError **error);

/* ---- The vidur profiles of linear layers (the GEMM and add datasets) ---- */

typedef enum {
    TPS_VIDUR_QKV,  /* attn_pre_proj: [T, h] x [h, (heads + 2 kv_heads) d / tp] */
    TPS_VIDUR_PROJ, /* attn_post_proj: [T, h / tp] x [h / tp, h] */
    TPS_VIDUR_UP,   /* mlp_up_proj: [T, h] x [h, 2 ffn / tp] (gated; ffn / tp otherwise) */
    TPS_VIDUR_DOWN, /* mlp_down_proj: [T, ffn / tp] x [ffn / tp, h] */
    TPS_VIDUR_ADD,  /* add: the residual add, [T, h] + [T, h] (memory-bound) */
    TPS_VIDUR_OP_COUNT
} TpsVidurOp;

/* The GEMM ops of a record (every op but the add), in enum order. */
#define TPS_VIDUR_GEMM_COUNT 4
extern const TpsVidurOp tps_vidur_gemm_ops[TPS_VIDUR_GEMM_COUNT];

/* "attn_pre_proj", ... as in the CSV's column names; NULL-terminated. */
extern const char *const tps_vidur_op_names[];

/* One record of a vidur profile: a model's shape at one token count and TP
 * degree, and the median time of each op. */
typedef struct {
    guint64 tokens, tp, hidden, ffn, heads, kv_heads;
    gboolean gated;
    double us[TPS_VIDUR_OP_COUNT]; /* time_stats.<op>.median, in microseconds */
    double block_us; /* the sum of every time_stats.<op>.median: one repeat of the block */
} TpsVidurRow;

/* Reads every record of a vidur ops CSV (vidur's mlp.csv profile); any
 * missing column or unreadable field is an error with its line. Returns an
 * array of TpsVidurRow. */
GArray *tps_vidur_rows_parse(const TpsCsv *csv, GError **error);

/* The GEMM C[m,n] = A[m,k] B[k,n] that op `op` (a GEMM, not ADD) of `row`
 * runs on one rank. */
void tps_vidur_gemm_shape(const TpsVidurRow *row, TpsVidurOp op, guint64 *m, guint64 *n,
                          guint64 *k);

/* Appends one TpsGemmPoint (fp16, all SMs, achieved TFLOP/s) per GEMM op of
 * every row, for `tpsim calibrate --vidur`; returns how many. */
guint tps_vidur_gemm_points(const GArray *rows, GArray *gemm_points);

/* What the operands of op `op` (a GEMM) of vidur's profiles hold: the down
 * projection's A operand is zeros (validate.c says why), the others data. */
TpsGemmOperands tps_vidur_gemm_operands(TpsVidurOp op);

/* How long the GPU had run load since idling when vidur timed the ops of
 * `row`: how its profile runs them (validate.c says why). */
double tps_vidur_loaded_us(const TpsVidurRow *row);

/* ---- The predictions the evaluators compare (also for tests) ---- */

/* Solo time of a GEMM of the model, microseconds. */
double tps_validate_predict_gemm_us(const TpsHardware *hw, TpsDtype dtype, const TpsGemmRun *run,
                                    guint64 m, guint64 n, guint64 k);

/* What a measurement of one NCCL call holds besides the kernel's work on
 * idle links. */
typedef enum {
    TPS_VALIDATE_KERNEL,   /* the kernel's duration as a Kineto trace shows it (vidur) */
    TPS_VALIDATE_LAUNCHED, /* one launch + the kernel: a loop of back-to-back calls timed on
                              the GPU and divided by its count (nccl-tests) */
    TPS_VALIDATE_EAGER,    /* host.nccl_call_us + the kernel: CUDA events recorded around one
                              eager torch.distributed call on an idle GPU (aicb) */
} TpsValidateTiming;

/* One NCCL collective (all-reduce, all-gather, reduce-scatter) or
 * send/recv between two ranks, timed as `timing` says, on an idle ring of
 * `ranks` ranks, `per_node` of them in each node (nodes use one NIC per
 * GPU, up to the model's nics_per_node: the DGX A100 pairing). */
double tps_validate_predict_coll_us(const TpsHardware *hw, TpsValidateTiming timing,
                                    TpsMeasColl kind, double bytes, guint ranks, guint per_node);
