/* Validation datasets of the calibration set: the registry table, the
 * readers of its CSV files, the evaluators and the statistics (validate.h).
 *
 * Layout: sets and statistics; predictions; vidur linear-layer profiles
 * (GEMMs, residual add); vidur network profiles (all-reduce, send/recv);
 * vTrain nccl-tests all-reduce; aicb per-call collectives; the table.
 */
#include "calib/validate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calib/calibrate.h"
#include "core/error.h"
#include "cost/collective.h"
#include "cost/kernel-cost.h"

/* The token count from which a GEMM counts as "large" in the acceptance
 * figures of issue 10 (median and p90 at >= 512 tokens, median below). */
#define GEMM_LARGE_TOKENS 512

/* ---- Sets and statistics ---- */

TpsValidateSet *
tps_validate_set_new(const char *name, const char *family, const char *x_label, gboolean x_log2)
{
    g_return_val_if_fail(name != NULL && family != NULL && x_label != NULL, NULL);
    TpsValidateSet *set = g_new0(TpsValidateSet, 1);
    set->name = g_strdup(name);
    set->family = g_strdup(family);
    set->x_label = g_strdup(x_label);
    set->x_log2 = x_log2;
    set->points = g_array_new(FALSE, FALSE, sizeof(TpsValidatePoint));
    return set;
}

void
tps_validate_set_free(TpsValidateSet *set)
{
    if (set == NULL)
        return;
    g_free(set->name);
    g_free(set->family);
    g_free(set->x_label);
    g_free(set->model);
    g_array_unref(set->points);
    g_free(set);
}

void
tps_validate_set_add(TpsValidateSet *set, double x, double measured_us, double predicted_us)
{
    g_return_if_fail(set != NULL);
    TpsValidatePoint p = {x, measured_us, predicted_us};
    g_array_append_val(set->points, p);
}

double
tps_validate_error_pct(const TpsValidatePoint *point)
{
    g_return_val_if_fail(point != NULL, NAN);
    return 100.0 * (point->predicted / point->measured - 1.0);
}

static int
cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

void
tps_validate_stats_of(const double *errors_pct, guint n, TpsValidateStats *out)
{
    g_return_if_fail(out != NULL && (errors_pct != NULL || n == 0));
    out->points = n;
    if (n == 0) {
        out->median_abs_pct = out->p90_abs_pct = out->max_abs_pct = out->bias_pct = NAN;
        return;
    }
    g_autofree double *a = g_new(double, n);
    double sum = 0.0;
    for (guint i = 0; i < n; i++) {
        a[i] = fabs(errors_pct[i]);
        sum += errors_pct[i];
    }
    qsort(a, n, sizeof(double), cmp_double);
    out->median_abs_pct = n % 2 ? a[n / 2] : 0.5 * (a[n / 2 - 1] + a[n / 2]);
    /* Nearest rank, in integers: ceil(0.9 n) = (9 n + 9) / 10. */
    guint rank = (9 * n + 9) / 10;
    out->p90_abs_pct = a[MAX(rank, 1u) - 1];
    out->max_abs_pct = a[n - 1];
    out->bias_pct = sum / n;
}

void
tps_validate_set_stats(const TpsValidateSet *set, TpsValidateStats *out)
{
    g_return_if_fail(set != NULL && out != NULL);
    guint n = set->points->len;
    g_autofree double *e = g_new(double, MAX(n, 1u));
    for (guint i = 0; i < n; i++)
        e[i] = tps_validate_error_pct(&g_array_index(set->points, TpsValidatePoint, i));
    tps_validate_stats_of(e, n, out);
}

/* ---- Error bands ---- */

/* The datasets of each class, as g_pattern_match_simple() globs. The
 * collectives are those within one node (TP runs inside a node): the sets
 * across nodes measure another cluster's network (docs/validation.md). */
static const char *const band_sets[TPS_BAND_COUNT][6] = {
    [TPS_BAND_GEMM] = {"vidur-gemm/all"},
    [TPS_BAND_GEMM_SMALL] = {"vidur-gemm/all/small"},
    [TPS_BAND_MEMORY] = {"vidur-add/*"},
    [TPS_BAND_ATTENTION] = {NULL},
    [TPS_BAND_COLLECTIVE] = {"vidur-all-reduce/1x*", "vtrain-all-reduce/1x*", "vidur-send-recv/1x*",
                             "aicb-tp2/*"},
    [TPS_BAND_HOST] = {NULL},
    [TPS_BAND_INTERFERENCE] = {"interference/*"},
};

const char *const *
tps_validate_band_sets(TpsBandClass klass)
{
    g_return_val_if_fail(klass < TPS_BAND_COUNT, NULL);
    return band_sets[klass];
}

static gboolean
band_takes(TpsBandClass klass, const char *name)
{
    for (guint i = 0; band_sets[klass][i]; i++)
        if (g_pattern_match_simple(band_sets[klass][i], name))
            return TRUE;
    return FALSE;
}

void
tps_validate_bands(const GPtrArray *sets, TpsValidateBand out[TPS_BAND_COUNT])
{
    g_return_if_fail(sets != NULL && out != NULL);
    double lo = INFINITY, hi = -INFINITY;
    for (guint c = 0; c < TPS_BAND_COUNT; c++) {
        g_autoptr(GArray) e = g_array_new(FALSE, FALSE, sizeof(double));
        for (guint i = 0; i < sets->len; i++) {
            const TpsValidateSet *set = sets->pdata[i];
            if (!band_takes(c, set->name))
                continue;
            for (guint j = 0; j < set->points->len; j++) {
                double err =
                    tps_validate_error_pct(&g_array_index(set->points, TpsValidatePoint, j));
                g_array_append_val(e, err);
            }
        }
        TpsValidateBand *b = &out[c];
        b->points = e->len;
        b->p10_pct = b->p90_pct = NAN;
        if (e->len == 0)
            continue;
        g_array_sort(e, cmp_double);
        const double *a = (const double *)e->data;
        const guint n = e->len;
        /* Nearest rank: ceil(0.1 n) = (n + 9) / 10, ceil(0.9 n) = (9 n + 9) / 10. */
        b->p10_pct = a[(n + 9) / 10 - 1];
        b->p90_pct = a[(9 * n + 9) / 10 - 1];
        lo = MIN(lo, b->p10_pct);
        hi = MAX(hi, b->p90_pct);
    }
    for (guint c = 0; c < TPS_BAND_COUNT; c++)
        if (out[c].points == 0 && lo <= hi) {
            out[c].p10_pct = lo;
            out[c].p90_pct = hi;
        }
}

/* ---- Predictions ---- */

double
tps_validate_predict_gemm_us(const TpsHardware *hw, TpsDtype dtype, const TpsGemmRun *run,
                             guint64 m, guint64 n, guint64 k)
{
    g_return_val_if_fail(hw != NULL && run != NULL, NAN);
    TpsKernelCost cost;
    tps_cost_gemm_run(hw, dtype, run, m, n, k, 0, &cost);
    return (double)tps_kernel_cost_solo_ns(hw, &cost, hw->sms) / 1e3;
}

double
tps_validate_predict_coll_us(const TpsHardware *hw, TpsValidateTiming timing, TpsMeasColl kind,
                             double bytes, guint ranks, guint per_node)
{
    g_return_val_if_fail(hw != NULL && kind < TPS_MEAS_COLL_COUNT && ranks >= 2, NAN);
    /* A shallow copy: only numbers change, the strings stay the caller's. */
    TpsHardware local = *hw;
    per_node = CLAMP(per_node, 1u, ranks);
    local.gpus_per_node = per_node;
    local.nvlink_domain_gpus = per_node;
    local.nics_per_node = MIN(hw->nics_per_node, per_node);
    double before_ns = 0.0;
    switch (timing) {
    case TPS_VALIDATE_KERNEL:
        break;
    case TPS_VALIDATE_LAUNCHED:
        before_ns = (double)tps_cost_launch_ns(hw);
        break;
    case TPS_VALIDATE_EAGER:
        before_ns = hw->host_nccl_call_us * 1e3;
        break;
    }
    if (kind == TPS_MEAS_SEND_RECV && per_node < ranks) {
        /* Across nodes NCCL's p2p path is one Simple-protocol hop over the
         * sending GPU's NIC, in one direction only: the full nic_gbps. */
        double ns = (hw->nccl_base_latency_us[TPS_PROTO_SIMPLE] +
                     hw->nccl_net_latency_us[TPS_PROTO_SIMPLE]) *
                        1e3 +
                    bytes / hw->nic_gbps;
        return (before_ns + ns) / 1e3;
    }
    if (kind == TPS_MEAS_SEND_RECV && timing == TPS_VALIDATE_KERNEL) {
        /* The sender's kernel alone (vidur times rank 0, the sender), in
         * calls spaced by the host: each eager call under the profiler takes
         * longer on the host (host.nccl_us) than the link needs to drain a
         * FIFO-full send, so the kernel ends once its pieces are in its own
         * FIFOs when they fit (tps_p2p_send_ns). Back-to-back calls timed
         * per call (tpsim calibrate's points) are paced by the link instead,
         * the one-hop formula of tps_calib_predict_coll. */
        return (before_ns + (double)tps_p2p_send_ns(hw, bytes)) / 1e3;
    }
    TpsCollPoint p = {kind, bytes, ranks, 0.0, FALSE};
    return before_ns / 1e3 + tps_calib_predict_coll(&local, &p);
}

/* ---- vidur: linear-layer profiles ---- */

const char *const tps_vidur_op_names[] = {
    "attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj", "add", NULL};

const TpsVidurOp tps_vidur_gemm_ops[TPS_VIDUR_GEMM_COUNT] = {TPS_VIDUR_QKV, TPS_VIDUR_PROJ,
                                                             TPS_VIDUR_UP, TPS_VIDUR_DOWN};

/* The time of one repeat of vidur's block at row `r`: the sum of every
 * time_stats.<op>.median column (the GEMMs, norms, rotary embedding,
 * activation, embedding and add that each repeat runs), microseconds. */
static gboolean
block_us(const TpsCsv *csv, guint r, double *out, GError **error)
{
    double sum = 0.0;
    for (guint c = 0; c < tps_csv_n_columns(csv); c++) {
        const char *name = tps_csv_header(csv, c);
        if (!g_str_has_prefix(name, "time_stats.") || !g_str_has_suffix(name, ".median"))
            continue;
        double ms;
        if (!tps_csv_double(csv, r, c, &ms, error))
            return FALSE;
        sum += ms * 1e3;
    }
    *out = sum;
    return TRUE;
}

GArray *
tps_vidur_rows_parse(const TpsCsv *csv, GError **error)
{
    g_return_val_if_fail(csv != NULL, NULL);
    enum {
        TOKENS,
        TP,
        HIDDEN,
        FFN,
        HEADS,
        KV,
        GATED,
        N_SHAPE
    };
    static const char *const shape_cols[] = {"num_tokens",   "num_tensor_parallel_workers",
                                             "n_embd",       "n_expanded_embd",
                                             "n_head",       "n_kv_head",
                                             "use_gated_mlp"};
    guint col[N_SHAPE], time_col[TPS_VIDUR_OP_COUNT];
    for (guint i = 0; i < N_SHAPE; i++)
        if (!tps_csv_column(csv, shape_cols[i], &col[i], error))
            return NULL;
    for (guint op = 0; op < TPS_VIDUR_OP_COUNT; op++) {
        g_autofree char *name = g_strdup_printf("time_stats.%s.median", tps_vidur_op_names[op]);
        if (!tps_csv_column(csv, name, &time_col[op], error))
            return NULL;
    }

    g_autoptr(GArray) rows = g_array_new(FALSE, FALSE, sizeof(TpsVidurRow));
    for (guint r = 0; r < tps_csv_n_rows(csv); r++) {
        TpsVidurRow row = {0};
        guint64 *dims[] = {&row.tokens, &row.tp, &row.hidden, &row.ffn, &row.heads, &row.kv_heads};
        for (guint i = 0; i < G_N_ELEMENTS(dims); i++)
            if (!tps_csv_uint(csv, r, col[i], dims[i], error))
                return NULL;
        const char *gated = tps_csv_field(csv, r, col[GATED]);
        if (strcmp(gated, "True") != 0 && strcmp(gated, "False") != 0) {
            g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                        "%s:%u: column 'use_gated_mlp': '%s' is not True or False",
                        tps_csv_name(csv), tps_csv_line(csv, r), gated);
            return NULL;
        }
        row.gated = gated[0] == 'T';
        /* A shape that does not divide (heads by TP, hidden by heads)
         * would give a GEMM that the profile did not run. */
        if (row.tokens == 0 || row.tp == 0 || row.heads == 0 || row.kv_heads == 0 ||
            row.hidden % row.heads != 0 || row.heads % row.tp != 0 || row.kv_heads % row.tp != 0 ||
            row.hidden % row.tp != 0 || row.ffn % row.tp != 0) {
            g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                        "%s:%u: shape (tokens %" G_GUINT64_FORMAT ", tp %" G_GUINT64_FORMAT
                        ", hidden %" G_GUINT64_FORMAT ", ffn %" G_GUINT64_FORMAT
                        ", heads %" G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT
                        ") does not split over its TP degree",
                        tps_csv_name(csv), tps_csv_line(csv, r), row.tokens, row.tp, row.hidden,
                        row.ffn, row.heads, row.kv_heads);
            return NULL;
        }
        for (guint op = 0; op < TPS_VIDUR_OP_COUNT; op++) {
            double ms;
            if (!tps_csv_double(csv, r, time_col[op], &ms, error))
                return NULL;
            if (!(ms > 0.0)) {
                g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                            "%s:%u: column 'time_stats.%s.median': %g is not a time",
                            tps_csv_name(csv), tps_csv_line(csv, r), tps_vidur_op_names[op], ms);
                return NULL;
            }
            row.us[op] = ms * 1e3;
        }
        if (!block_us(csv, r, &row.block_us, error))
            return NULL;
        g_array_append_val(rows, row);
    }
    return g_steal_pointer(&rows);
}

void
tps_vidur_gemm_shape(const TpsVidurRow *row, TpsVidurOp op, guint64 *m, guint64 *n, guint64 *k)
{
    g_return_if_fail(row != NULL && m != NULL && n != NULL && k != NULL);
    const guint64 head_dim = row->hidden / row->heads;
    *m = row->tokens;
    switch (op) {
    case TPS_VIDUR_QKV:
        *n = (row->heads + 2 * row->kv_heads) * head_dim / row->tp;
        *k = row->hidden;
        return;
    case TPS_VIDUR_PROJ:
        *n = row->hidden;
        *k = row->hidden / row->tp;
        return;
    case TPS_VIDUR_UP:
        *n = (row->gated ? 2 : 1) * row->ffn / row->tp;
        *k = row->hidden;
        return;
    case TPS_VIDUR_DOWN:
        *n = row->hidden;
        *k = row->ffn / row->tp;
        return;
    case TPS_VIDUR_ADD:
    case TPS_VIDUR_OP_COUNT:
        break;
    }
    g_return_if_reached();
}

/* vidur's profiles (vidur/profiling/mlp, on sarathi's model code) fill
 * every weight with uniform values in +-1e-3 (sarathi's
 * initialize_dummy_weights) and feed the down projection the SiluAndMul of
 * the up projection's output: those outputs are of order sqrt(k) x (1e-3 /
 * sqrt(3))^2 = 2-3e-5, their SiLU x product ~1e-10, below fp16's smallest
 * subnormal (6e-8), so the down projection's A operand is all zeros. The
 * QKV and up projections read a normalised activation and the attention
 * output projection torch.randn_like: data. */
TpsGemmOperands
tps_vidur_gemm_operands(TpsVidurOp op)
{
    return op == TPS_VIDUR_DOWN ? TPS_GEMM_OPERANDS_ZERO_A : TPS_GEMM_OPERANDS_DATA;
}

/* vidur's profile of one token count (vidur/profiling/mlp, the default
 * record_function method) builds a model of VIDUR_BLOCK_REPEATS copies of
 * the block, runs it once untimed, synchronises and runs it again under
 * the profiler; each op's time is the median of the second run's
 * repeats, the middle of that run: VIDUR_BLOCK_REPEATS + half of them
 * blocks after the GPU started. Before it the GPU idles: each GPU's Ray
 * worker profiles one token count, then waits for the other seven and
 * exports and parses its profiler trace in Python. The host's gaps
 * between kernels are not counted: the GPU runs ahead of the host on the
 * long blocks where the clock settles. */
#define VIDUR_BLOCK_REPEATS 20.0

double
tps_vidur_loaded_us(const TpsVidurRow *row)
{
    g_return_val_if_fail(row != NULL, 0.0);
    return 1.5 * VIDUR_BLOCK_REPEATS * row->block_us;
}

guint
tps_vidur_gemm_points(const GArray *rows, GArray *gemm_points)
{
    g_return_val_if_fail(rows != NULL && gemm_points != NULL, 0);
    guint added = 0;
    for (guint r = 0; r < rows->len; r++) {
        const TpsVidurRow *row = &g_array_index(rows, TpsVidurRow, r);
        for (guint i = 0; i < G_N_ELEMENTS(tps_vidur_gemm_ops); i++) {
            TpsGemmPoint p = {.dtype = TPS_DTYPE_FP16,
                              .sms = 0,
                              .operands = tps_vidur_gemm_operands(tps_vidur_gemm_ops[i]),
                              .loaded_us = tps_vidur_loaded_us(row)};
            tps_vidur_gemm_shape(row, tps_vidur_gemm_ops[i], &p.m, &p.n, &p.k);
            /* FLOP/us = 1e-6 TFLOP/s */
            p.tflops = 2.0 * (double)p.m * (double)p.n * (double)p.k /
                       row->us[tps_vidur_gemm_ops[i]] * 1e-6;
            g_array_append_val(gemm_points, p);
            added++;
        }
    }
    return added;
}

static gpointer
vidur_load(const TpsValidateContext *ctx, const char *path, GError **error)
{
    (void)ctx;
    g_autoptr(TpsCsv) csv = tps_csv_load(path, error);
    return csv ? tps_vidur_rows_parse(csv, error) : NULL;
}

static void
array_free(gpointer data)
{
    if (data)
        g_array_unref(data);
}

/* The sets at >= 512 tokens and below, of every GEMM op of every row: x is
 * the token count. With recorded kernels (ctx->kernels) each shape that
 * has one runs on it, and "<name>/kernels" holds those of >= 512 tokens
 * again (a summary set: no union counts them twice). */
static gboolean
vidur_gemm_eval(const TpsValidateContext *ctx, const TpsValidateDataset *row, gconstpointer data,
                GPtrArray *sets, GError **error)
{
    (void)error;
    const GArray *rows = data;
    g_autofree char *small_name = g_strdup_printf("%s/small", row->name);
    TpsValidateSet *large = tps_validate_set_new(row->name, row->family, "tokens", TRUE);
    TpsValidateSet *small = tps_validate_set_new(small_name, row->family, "tokens", TRUE);
    TpsValidateSet *recorded = NULL;
    if (ctx->kernels != NULL) {
        g_autofree char *name = g_strdup_printf("%s/kernels", row->name);
        recorded = tps_validate_set_new(name, row->family, "tokens", TRUE);
        recorded->summary = TRUE;
    }
    for (guint r = 0; r < rows->len; r++) {
        const TpsVidurRow *v = &g_array_index(rows, TpsVidurRow, r);
        for (guint i = 0; i < G_N_ELEMENTS(tps_vidur_gemm_ops); i++) {
            guint64 m, n, k;
            tps_vidur_gemm_shape(v, tps_vidur_gemm_ops[i], &m, &n, &k);
            TpsGemmRun run = {tps_vidur_gemm_operands(tps_vidur_gemm_ops[i]),
                              tps_vidur_loaded_us(v), 0, 0, 0};
            gboolean on_kernel =
                ctx->kernels != NULL &&
                tps_gemm_kernels_apply(ctx->kernels, TPS_DTYPE_FP16, m, n, k, &run);
            double us = tps_validate_predict_gemm_us(ctx->hw, TPS_DTYPE_FP16, &run, m, n, k);
            gboolean is_large = v->tokens >= GEMM_LARGE_TOKENS;
            tps_validate_set_add(is_large ? large : small, (double)m, v->us[tps_vidur_gemm_ops[i]],
                                 us);
            if (on_kernel && is_large)
                tps_validate_set_add(recorded, (double)m, v->us[tps_vidur_gemm_ops[i]], us);
        }
    }
    g_ptr_array_add(sets, large);
    g_ptr_array_add(sets, small);
    if (recorded != NULL && recorded->points->len > 0)
        g_ptr_array_add(sets, recorded);
    else if (recorded != NULL)
        tps_validate_set_free(recorded);
    return TRUE;
}

/* The residual add: reads two [T, h] tensors and writes one. */
static gboolean
vidur_add_eval(const TpsValidateContext *ctx, const TpsValidateDataset *row, gconstpointer data,
               GPtrArray *sets, GError **error)
{
    (void)error;
    const GArray *rows = data;
    TpsValidateSet *set = tps_validate_set_new(row->name, row->family, "tokens", TRUE);
    for (guint r = 0; r < rows->len; r++) {
        const TpsVidurRow *v = &g_array_index(rows, TpsVidurRow, r);
        TpsKernelCost cost;
        double bytes =
            3.0 * (double)v->tokens * (double)v->hidden * (double)tps_dtype_bytes(TPS_DTYPE_FP16);
        tps_cost_memory(ctx->hw, bytes, &cost);
        double us = (double)tps_kernel_cost_solo_ns(ctx->hw, &cost, ctx->hw->sms) / 1e3;
        tps_validate_set_add(set, (double)v->tokens, v->us[TPS_VIDUR_ADD], us);
    }
    g_ptr_array_add(sets, set);
    return TRUE;
}

/* Summary: the union of the sets before it whose name starts with this
 * row's family prefix ("vidur-gemm/"), the large ones and the "/small"
 * ones apart. */
static gboolean
union_eval(const TpsValidateContext *ctx, const TpsValidateDataset *row, gconstpointer data,
           GPtrArray *sets, GError **error)
{
    (void)ctx;
    (void)data;
    (void)error;
    const char *prefix = row->user_data;
    g_autofree char *small_name = g_strdup_printf("%s/small", row->name);
    TpsValidateSet *large = tps_validate_set_new(row->name, row->family, "tokens", TRUE);
    TpsValidateSet *small = tps_validate_set_new(small_name, row->family, "tokens", TRUE);
    large->summary = small->summary = TRUE;
    for (guint i = 0; i < sets->len; i++) {
        const TpsValidateSet *s = sets->pdata[i];
        if (!g_str_has_prefix(s->name, prefix) || s->summary)
            continue;
        TpsValidateSet *into = g_str_has_suffix(s->name, "/small") ? small : large;
        g_array_append_vals(into->points, s->points->data, s->points->len);
    }
    g_ptr_array_add(sets, large);
    g_ptr_array_add(sets, small);
    return TRUE;
}

/* ---- vidur: network profiles ---- */

typedef struct {
    guint ranks, per_node;
    double bytes, us;
} NetPoint;

static gpointer
vidur_net_load(const TpsValidateContext *ctx, const char *path, GError **error)
{
    (void)ctx;
    g_autoptr(TpsCsv) csv = tps_csv_load(path, error);
    if (csv == NULL)
        return NULL;
    guint c_coll, c_workers, c_per_node, c_size, c_time;
    if (!tps_csv_column(csv, "collective", &c_coll, error) ||
        !tps_csv_column(csv, "num_workers", &c_workers, error) ||
        !tps_csv_column(csv, "devices_per_node", &c_per_node, error) ||
        !tps_csv_column(csv, "size", &c_size, error))
        return NULL;
    /* The time column is named after the collective of the file. */
    const char *coll = tps_csv_n_rows(csv) > 0 ? tps_csv_field(csv, 0, c_coll) : "all_reduce";
    g_autofree char *time_name = g_strdup_printf("time_stats.%s.median", coll);
    if (!tps_csv_column(csv, time_name, &c_time, error))
        return NULL;
    g_autoptr(GArray) points = g_array_new(FALSE, FALSE, sizeof(NetPoint));
    for (guint r = 0; r < tps_csv_n_rows(csv); r++) {
        guint64 workers, per_node;
        double bytes, ms;
        if (strcmp(tps_csv_field(csv, r, c_coll), coll) != 0) {
            g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                        "%s:%u: collective '%s' in a file of '%s'", path, tps_csv_line(csv, r),
                        tps_csv_field(csv, r, c_coll), coll);
            return NULL;
        }
        if (!tps_csv_uint(csv, r, c_workers, &workers, error) ||
            !tps_csv_uint(csv, r, c_per_node, &per_node, error) ||
            !tps_csv_double(csv, r, c_size, &bytes, error) ||
            !tps_csv_double(csv, r, c_time, &ms, error))
            return NULL;
        if (workers < 2 || workers > 1024 || per_node < 1 || workers % per_node != 0 ||
            !(bytes > 0.0) || !(ms > 0.0)) {
            g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                        "%s:%u: %" G_GUINT64_FORMAT " workers, %" G_GUINT64_FORMAT
                        " per node, %g bytes in %g ms is no measurement",
                        path, tps_csv_line(csv, r), workers, per_node, bytes, ms);
            return NULL;
        }
        NetPoint p = {(guint)workers, (guint)per_node, bytes, ms * 1e3};
        g_array_append_val(points, p);
    }
    return g_steal_pointer(&points);
}

/* vidur's profiles ran on a cluster whose nodes talk to each other far
 * slower than DGX A100's InfiniBand (docs/validation.md): its layouts across
 * nodes are predicted with that cluster's model, models/VIDUR_CLUSTER.yaml
 * (the same A100s and NVLink; its network fitted to these files). */
#define VIDUR_CLUSTER "vidur-a100-dgx"

/* One set per layout, "<row name>/<nodes>x<per node>", in the order the
 * file first has them; x is the message size. vidur times the NCCL kernels
 * in a Kineto trace (vidur/profiling/collectives: the median kernel of 11
 * back-to-back calls), so no launch or host time is counted. */
static gboolean
net_sets(const TpsValidateContext *ctx, const TpsValidateDataset *row, const GArray *points,
         const TpsHardware *within, TpsMeasColl kind, GPtrArray *sets, GError **error)
{
    const TpsHardware *across = within;
    for (guint i = 0; i < points->len && ctx->model != NULL && across == within; i++) {
        const NetPoint *p = &g_array_index(points, NetPoint, i);
        if (p->per_node < p->ranks) {
            across = ctx->model(ctx, VIDUR_CLUSTER, error);
            if (across == NULL)
                return FALSE;
        }
    }
    g_autoptr(GArray) layouts = g_array_new(FALSE, FALSE, sizeof(guint) * 2);
    for (guint i = 0; i < points->len; i++) {
        const NetPoint *p = &g_array_index(points, NetPoint, i);
        gboolean seen = FALSE;
        for (guint j = 0; j < layouts->len && !seen; j++) {
            const guint *l = (const guint *)(const void *)(layouts->data + j * sizeof(guint) * 2);
            seen = l[0] == p->ranks && l[1] == p->per_node;
        }
        if (!seen) {
            guint l[2] = {p->ranks, p->per_node};
            g_array_append_vals(layouts, l, 1);
        }
    }
    for (guint j = 0; j < layouts->len; j++) {
        const guint *l = (const guint *)(const void *)(layouts->data + j * sizeof(guint) * 2);
        g_autofree char *name = g_strdup_printf("%s/%ux%u", row->name, l[0] / l[1], l[1]);
        TpsValidateSet *set = tps_validate_set_new(name, row->family, "bytes", TRUE);
        for (guint i = 0; i < points->len; i++) {
            const NetPoint *p = &g_array_index(points, NetPoint, i);
            const TpsHardware *hw = p->per_node < p->ranks ? across : within;
            if (p->ranks == l[0] && p->per_node == l[1])
                tps_validate_set_add(set, p->bytes, p->us,
                                     tps_validate_predict_coll_us(hw, TPS_VALIDATE_KERNEL, kind,
                                                                  p->bytes, p->ranks, p->per_node));
        }
        if (l[1] < l[0] && across != within)
            set->model = g_strdup(VIDUR_CLUSTER);
        g_ptr_array_add(sets, set);
    }
    return TRUE;
}

static gboolean
vidur_net_eval(const TpsValidateContext *ctx, const TpsValidateDataset *row, gconstpointer data,
               GPtrArray *sets, GError **error)
{
    return net_sets(ctx, row, data, ctx->hw, *(const TpsMeasColl *)row->user_data, sets, error);
}

/* vidur's H100 network profiles (DGX H100, one node; and NVLink-connected
 * H100 pairs of 4-GPU hosts): always against models/H100_MODEL.yaml, the
 * model of the GPUs they ran on, whatever model is validated. Without a
 * model loader (a context built in code) they take ctx->hw. */
#define H100_MODEL "h100-sxm"

/* The sets from `first` on were predicted with `model`, not ctx's. */
static void
name_model(GPtrArray *sets, guint first, const char *model)
{
    for (guint i = first; i < sets->len; i++) {
        TpsValidateSet *set = sets->pdata[i];
        g_free(set->model);
        set->model = g_strdup(model);
    }
}

static gboolean
vidur_h100_net_eval(const TpsValidateContext *ctx, const TpsValidateDataset *row,
                    gconstpointer data, GPtrArray *sets, GError **error)
{
    const TpsHardware *h100 = ctx->model ? ctx->model(ctx, H100_MODEL, error) : ctx->hw;
    if (h100 == NULL)
        return FALSE;
    const GArray *points = data;
    for (guint i = 0; i < points->len; i++) {
        const NetPoint *p = &g_array_index(points, NetPoint, i);
        if (p->per_node < p->ranks) {
            /* No model of the cluster between those hosts: refused, not
             * predicted with another fabric's numbers. */
            g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                        "%u GPUs over %u per node: no model of the H100 cluster's network",
                        p->ranks, p->per_node);
            return FALSE;
        }
    }
    const guint first = sets->len;
    if (!net_sets(ctx, row, data, h100, *(const TpsMeasColl *)row->user_data, sets, error))
        return FALSE;
    name_model(sets, first, H100_MODEL);
    return TRUE;
}

/* vidur's pairwise-NVLink H100 hosts have no NVSwitch: each GPU reaches
 * its pair over NVLink bridges, 600 GB/s both ways (NVIDIA H100 NVL and
 * H100 PCIe product briefs: "NVLink: 600 GB/s" with the bridges), so 300
 * each way, two thirds of DGX H100's 450. The pairs are predicted with
 * H100_MODEL at that NVLink bandwidth, its NCCL channels following it as
 * NCCL's search sizes them (tps_coll_channels: 32 counted at 450 give 21)
 * and without NVLS, which needs an NVSwitch (NVIDIA/nccl
 * src/transport/nvls.cc); the rest is H100_MODEL's (assumption: nothing
 * in the file says which H100 board the hosts hold). */
#define H100_NVLINK_BRIDGE_GBPS 300.0

static gboolean
vidur_h100_pairs_eval(const TpsValidateContext *ctx, const TpsValidateDataset *row,
                      gconstpointer data, GPtrArray *sets, GError **error)
{
    const TpsHardware *h100 = ctx->model ? ctx->model(ctx, H100_MODEL, error) : ctx->hw;
    if (h100 == NULL)
        return FALSE;
    TpsHardware bridge;
    tps_hardware_copy(&bridge, h100);
    if (bridge.nccl_channels_nvlink_gbps <= 0.0)
        bridge.nccl_channels_nvlink_gbps = bridge.nvlink_gbps;
    bridge.nvlink_gbps = H100_NVLINK_BRIDGE_GBPS;
    bridge.nccl_nvls = FALSE;
    const guint first = sets->len;
    gboolean ok =
        net_sets(ctx, row, data, &bridge, *(const TpsMeasColl *)row->user_data, sets, error);
    tps_hardware_clear(&bridge);
    if (ok)
        name_model(sets, first, H100_MODEL " at a 300 GB/s NVLink bridge");
    return ok;
}

/* vidur's H100 send/recv file also holds pairs on two nodes (2 x 1), of a
 * cluster whose network no file models: only its pairs within a node. */
static gpointer
vidur_net_load_within(const TpsValidateContext *ctx, const char *path, GError **error)
{
    GArray *points = vidur_net_load(ctx, path, error);
    if (points == NULL)
        return NULL;
    for (guint i = points->len; i-- > 0;) {
        const NetPoint *p = &g_array_index(points, NetPoint, i);
        if (p->per_node < p->ranks)
            g_array_remove_index(points, i);
    }
    return points;
}

/* vidur's pairwise-NVLink H100 hosts join their GPUs by NVLink in pairs
 * only (4 GPUs a host): a pair is one NVLink hop of an NVLink domain, but 4
 * GPUs cross PCIe between the pairs, a topology no model describes (an
 * NVLink domain is whole nodes here): only the pairs are taken. */
static gpointer
vidur_net_load_pairs(const TpsValidateContext *ctx, const char *path, GError **error)
{
    GArray *points = vidur_net_load(ctx, path, error);
    if (points == NULL)
        return NULL;
    for (guint i = points->len; i-- > 0;)
        if (g_array_index(points, NetPoint, i).ranks != 2)
            g_array_remove_index(points, i);
    return points;
}

/* ---- vTrain: nccl-tests all-reduce on one node ---- */

static gpointer
vtrain_load(const TpsValidateContext *ctx, const char *path, GError **error)
{
    (void)ctx;
    g_autoptr(TpsCsv) csv = tps_csv_load(path, error);
    if (csv == NULL)
        return NULL;
    /* nccl-tests prints out-of-place, then in-place figures under the same
     * names; the first time(ns) is out-of-place (no aliasing of input and
     * output, as Megatron's collectives). */
    guint c_size, c_time;
    if (!tps_csv_column(csv, "size(B)", &c_size, error) ||
        !tps_csv_column(csv, "time(ns)", &c_time, error))
        return NULL;
    g_autoptr(GArray) points = g_array_new(FALSE, FALSE, sizeof(NetPoint));
    for (guint r = 0; r < tps_csv_n_rows(csv); r++) {
        NetPoint p = {0};
        double ns;
        if (!tps_csv_double(csv, r, c_size, &p.bytes, error) ||
            !tps_csv_double(csv, r, c_time, &ns, error))
            return NULL;
        if (!(p.bytes > 0.0) || !(ns > 0.0)) {
            g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "%s:%u: %g bytes in %g ns", path,
                        tps_csv_line(csv, r), p.bytes, ns);
            return NULL;
        }
        p.us = ns / 1e3;
        g_array_append_val(points, p);
    }
    return g_steal_pointer(&points);
}

static gboolean
vtrain_eval(const TpsValidateContext *ctx, const TpsValidateDataset *row, gconstpointer data,
            GPtrArray *sets, GError **error)
{
    (void)error;
    const GArray *points = data;
    const guint ranks = *(const guint *)row->user_data;
    TpsValidateSet *set = tps_validate_set_new(row->name, row->family, "bytes", TRUE);
    for (guint i = 0; i < points->len; i++) {
        const NetPoint *p = &g_array_index(points, NetPoint, i);
        tps_validate_set_add(set, p->bytes, p->us,
                             tps_validate_predict_coll_us(ctx->hw, TPS_VALIDATE_LAUNCHED,
                                                          TPS_MEAS_ALL_REDUCE, p->bytes, ranks,
                                                          ranks));
    }
    g_ptr_array_add(sets, set);
    return TRUE;
}

/* ---- aicb: per-call collectives of a TP=2 Megatron run ---- */

static const struct {
    const char *type; /* comm_type */
    const char *name; /* the set's suffix */
    TpsMeasColl kind;
} aicb_kinds[] = {
    {"CommType.all_gather", "all-gather", TPS_MEAS_ALL_GATHER},
    {"CommType.reduce_scatter", "reduce-scatter", TPS_MEAS_REDUCE_SCATTER},
    {"CommType.all_reduce", "all-reduce", TPS_MEAS_ALL_REDUCE},
};

/* One (collective, size) of the TP group: its calls' times. */
typedef struct {
    guint kind; /* index into aicb_kinds */
    double bytes;
    GArray *us; /* double */
} AicbGroup;

static void
aicb_free(gpointer data)
{
    GArray *groups = data;
    if (groups == NULL)
        return;
    for (guint i = 0; i < groups->len; i++)
        g_array_unref(g_array_index(groups, AicbGroup, i).us);
    g_array_unref(groups);
}

/* The rule for warm-up and outliers: calls of the `init.*` stages
 * (communicator set-up) and the first call of each (collective, size) (it
 * pays NCCL's lazy connection set-up) are dropped; the point of a
 * (collective, size) is then the median of its calls, which the few later
 * stalls (a 59 ms all-gather among 1920 calls of 0.13 ms) do not move.
 * Only the TP group's collectives of a known size are taken: the others
 * are expert-parallel all-to-alls or the DP group, whose layout the file
 * does not give. */
static gpointer
aicb_load(const TpsValidateContext *ctx, const char *path, GError **error)
{
    (void)ctx;
    g_autoptr(TpsCsv) csv = tps_csv_load(path, error);
    if (csv == NULL)
        return NULL;
    guint c_type, c_group, c_size, c_bytes, c_stage, c_time;
    if (!tps_csv_column(csv, "comm_type", &c_type, error) ||
        !tps_csv_column(csv, "comm_group", &c_group, error) ||
        !tps_csv_column(csv, "comm_group_size", &c_size, error) ||
        !tps_csv_column(csv, "msg_size", &c_bytes, error) ||
        !tps_csv_column(csv, "stage", &c_stage, error) ||
        !tps_csv_column(csv, "_elapsed_time", &c_time, error))
        return NULL;
    GArray *groups = g_array_new(FALSE, FALSE, sizeof(AicbGroup));
    for (guint r = 0; r < tps_csv_n_rows(csv); r++) {
        guint kind = G_N_ELEMENTS(aicb_kinds);
        for (guint j = 0; j < G_N_ELEMENTS(aicb_kinds); j++)
            if (strcmp(tps_csv_field(csv, r, c_type), aicb_kinds[j].type) == 0)
                kind = j;
        if (kind == G_N_ELEMENTS(aicb_kinds) ||
            strcmp(tps_csv_field(csv, r, c_group), "CommGroup.tp_group") != 0 ||
            strcmp(tps_csv_field(csv, r, c_size), "2") != 0 ||
            g_str_has_prefix(tps_csv_field(csv, r, c_stage), "init."))
            continue;
        double bytes, ms;
        if (!tps_csv_double(csv, r, c_bytes, &bytes, error) ||
            !tps_csv_double(csv, r, c_time, &ms, error)) {
            aicb_free(groups);
            return NULL;
        }
        if (!(bytes > 0.0))
            continue; /* an empty call (a size-0 all-reduce) moves nothing */
        AicbGroup *g = NULL;
        for (guint j = 0; j < groups->len && g == NULL; j++) {
            AicbGroup *h = &g_array_index(groups, AicbGroup, j);
            if (h->kind == kind && h->bytes == bytes)
                g = h;
        }
        if (g == NULL) {
            /* The first call of this (collective, size): warm-up, dropped. */
            AicbGroup fresh = {kind, bytes, g_array_new(FALSE, FALSE, sizeof(double))};
            g_array_append_val(groups, fresh);
            continue;
        }
        double us = ms * 1e3;
        g_array_append_val(g->us, us);
    }
    return groups;
}

static gboolean
aicb_eval(const TpsValidateContext *ctx, const TpsValidateDataset *row, gconstpointer data,
          GPtrArray *sets, GError **error)
{
    (void)error;
    const GArray *groups = data;
    for (guint j = 0; j < G_N_ELEMENTS(aicb_kinds); j++) {
        g_autofree char *name = g_strdup_printf("%s/%s", row->name, aicb_kinds[j].name);
        TpsValidateSet *set = tps_validate_set_new(name, row->family, "bytes", TRUE);
        for (guint i = 0; i < groups->len; i++) {
            const AicbGroup *g = &g_array_index(groups, AicbGroup, i);
            if (g->kind != j || g->us->len == 0)
                continue;
            g_autofree double *v = g_memdup2(g->us->data, g->us->len * sizeof(double));
            double median = 0.0;
            qsort(v, g->us->len, sizeof(double), cmp_double);
            guint n = g->us->len;
            median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
            tps_validate_set_add(set, g->bytes, median,
                                 tps_validate_predict_coll_us(ctx->hw, TPS_VALIDATE_EAGER,
                                                              aicb_kinds[j].kind, g->bytes, 2, 2));
        }
        g_ptr_array_add(sets, set);
    }
    return TRUE;
}

/* ---- The table ---- */

static const TpsMeasColl all_reduce = TPS_MEAS_ALL_REDUCE;
static const TpsMeasColl send_recv = TPS_MEAS_SEND_RECV;
static const guint two = 2, four = 4, eight = 8;

#define VIDUR_OPS(model, file)                                                                     \
    {                                                                                              \
        "vidur-gemm/" model, "gemm", "measured/" file, vidur_load, vidur_gemm_eval, array_free,    \
            NULL                                                                                   \
    }
#define VIDUR_ADD(model, file)                                                                     \
    {                                                                                              \
        "vidur-add/" model, "memory", "measured/" file, vidur_load, vidur_add_eval, array_free,    \
            NULL                                                                                   \
    }

static const TpsValidateDataset datasets[] = {
    VIDUR_OPS("llama-2-7b", "vidur-a100-llama-2-7b-hf-ops.csv"),
    VIDUR_OPS("llama-3-8b", "vidur-a100-meta-llama-3-8b-ops.csv"),
    VIDUR_OPS("llama-3-70b", "vidur-a100-meta-llama-3-70b-ops.csv"),
    {"vidur-gemm/all", "gemm", NULL, NULL, union_eval, NULL, "vidur-gemm/"},
    VIDUR_ADD("llama-2-7b", "vidur-a100-llama-2-7b-hf-ops.csv"),
    VIDUR_ADD("llama-3-8b", "vidur-a100-meta-llama-3-8b-ops.csv"),
    VIDUR_ADD("llama-3-70b", "vidur-a100-meta-llama-3-70b-ops.csv"),
    {"vidur-all-reduce", "all-reduce", "measured/vidur-a100-dgx-all-reduce.csv", vidur_net_load,
     vidur_net_eval, array_free, &all_reduce},
    {"vtrain-all-reduce/1x2", "nccl-tests", "measured/vtrain-a100-all-reduce-2gpu.csv", vtrain_load,
     vtrain_eval, array_free, &two},
    {"vtrain-all-reduce/1x4", "nccl-tests", "measured/vtrain-a100-all-reduce-4gpu.csv", vtrain_load,
     vtrain_eval, array_free, &four},
    {"vtrain-all-reduce/1x8", "nccl-tests", "measured/vtrain-a100-all-reduce-8gpu.csv", vtrain_load,
     vtrain_eval, array_free, &eight},
    {"vidur-send-recv", "send-recv", "measured/vidur-a100-dgx-send-recv.csv", vidur_net_load,
     vidur_net_eval, array_free, &send_recv},
    {"vidur-h100-all-reduce", "h100-all-reduce", "measured/vidur-h100-dgx-all-reduce.csv",
     vidur_net_load, vidur_h100_net_eval, array_free, &all_reduce},
    {"vidur-h100-pairwise-all-reduce", "h100-all-reduce",
     "measured/vidur-h100-pairwise-nvlink-all-reduce.csv", vidur_net_load_pairs,
     vidur_h100_pairs_eval, array_free, &all_reduce},
    {"vidur-h100-send-recv", "h100-send-recv", "measured/vidur-h100-dgx-send-recv.csv",
     vidur_net_load_within, vidur_h100_net_eval, array_free, &send_recv},
    {"aicb-tp2", "aicb", "measured/aicb-a100-tp2-collectives.csv", aicb_load, aicb_eval, aicb_free,
     NULL},
};

/* Measured on H100 SXM (vidur's h100 profiles): the GEMMs and residual add
 * of five models. Only these run for an H100 model: the A100 files measure
 * another GPU. */
static const TpsValidateDataset h100_datasets[] = {
    VIDUR_OPS("llama-2-7b", "vidur-h100-llama-2-7b-hf-ops.csv"),
    VIDUR_OPS("llama-2-70b", "vidur-h100-llama-2-70b-hf-ops.csv"),
    VIDUR_OPS("codellama-34b", "vidur-h100-codellama-34b-instruct-hf-ops.csv"),
    VIDUR_OPS("internlm-20b", "vidur-h100-internlm-20b-ops.csv"),
    VIDUR_OPS("qwen-72b", "vidur-h100-qwen-72b-ops.csv"),
    {"vidur-gemm/all", "gemm", NULL, NULL, union_eval, NULL, "vidur-gemm/"},
    VIDUR_ADD("llama-2-7b", "vidur-h100-llama-2-7b-hf-ops.csv"),
    VIDUR_ADD("llama-2-70b", "vidur-h100-llama-2-70b-hf-ops.csv"),
    VIDUR_ADD("codellama-34b", "vidur-h100-codellama-34b-instruct-hf-ops.csv"),
    VIDUR_ADD("internlm-20b", "vidur-h100-internlm-20b-ops.csv"),
    VIDUR_ADD("qwen-72b", "vidur-h100-qwen-72b-ops.csv"),
};

#undef VIDUR_OPS
#undef VIDUR_ADD

const TpsValidateDataset *
tps_validate_h100_datasets(guint *n_rows)
{
    g_return_val_if_fail(n_rows != NULL, NULL);
    *n_rows = G_N_ELEMENTS(h100_datasets);
    return h100_datasets;
}

gboolean
tps_validate_measured_on_h100(const TpsHardware *hw)
{
    g_return_val_if_fail(hw != NULL, FALSE);
    return hw->gpu_name != NULL && strstr(hw->gpu_name, "H100") != NULL;
}

const TpsValidateDataset *
tps_validate_datasets(guint *n_rows)
{
    g_return_val_if_fail(n_rows != NULL, NULL);
    *n_rows = G_N_ELEMENTS(datasets);
    return datasets;
}

gboolean
tps_validate_run(const TpsValidateContext *ctx, const TpsValidateDataset *rows, guint n_rows,
                 GPtrArray *sets, GError **error)
{
    g_return_val_if_fail(ctx != NULL && ctx->hw != NULL && sets != NULL, FALSE);
    g_return_val_if_fail(rows != NULL || n_rows == 0, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    for (guint i = 0; i < n_rows; i++) {
        const TpsValidateDataset *row = &rows[i];
        g_autofree char *path =
            row->file ? g_build_filename(ctx->calibration_dir ? ctx->calibration_dir : ".",
                                         row->file, NULL)
                      : NULL;
        gpointer data = path;
        if (row->load != NULL) {
            data = row->load(ctx, path, error);
            if (data == NULL) {
                g_prefix_error(error, "%s: ", row->name);
                return FALSE;
            }
        }
        gboolean ok = row->evaluate(ctx, row, data, sets, error);
        if (row->load != NULL && row->free != NULL)
            row->free(data);
        if (!ok) {
            g_prefix_error(error, "%s: ", row->name);
            return FALSE;
        }
    }
    return TRUE;
}
