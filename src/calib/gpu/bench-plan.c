/* tpsim-gpubench CPU side: options, shapes, sweeps and the plan text. */
#include "calib/gpu/bench-plan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "calib/csv.h"
#include "calib/gpu/bench-algo.h"
#include "calib/validate.h"
#include "core/error.h"
#include "io/input/scenario-file.h"
#include "version.h"

const char *const tps_bench_section_names[] = {"launch",  "gemm",       "collectives", "copies",
                                               "overlap", "strategies", "algos",       NULL};
const char *const tps_bench_strategy_names[] = {"blocking_ag_gemm", "ring_exchange_ag_gemm",
                                                "pipeline_gemm_rs", "bulk_overlap", NULL};

#define DEFAULT_ITERS 20
#define DEFAULT_MIN_BYTES ((guint64)1024)
#define DEFAULT_MAX_BYTES ((guint64)1 << 30)
#define DEFAULT_SPLITS 4
/* The op of the strategies unless a scenario gives one: design.md's op
 * scenario example, GPT-3 175B FC1 with 8192 tokens. */
#define DEFAULT_OP_M 8192
#define DEFAULT_OP_N 49152
#define DEFAULT_OP_K 12288

void
tps_bench_options_init(TpsBenchOptions *o)
{
    memset(o, 0, sizeof(*o));
    o->shapes = g_array_new(FALSE, FALSE, sizeof(TpsBenchShape));
    o->sms = g_array_new(FALSE, FALSE, sizeof(guint));
    o->min_bytes = DEFAULT_MIN_BYTES;
    o->max_bytes = DEFAULT_MAX_BYTES;
    o->iters = DEFAULT_ITERS;
    o->sections = TPS_BENCH_SECTION_ALL;
    o->op = (TpsBenchShape){DEFAULT_OP_M, DEFAULT_OP_N, DEFAULT_OP_K, TPS_DTYPE_BF16};
    o->splits = DEFAULT_SPLITS;
}

void
tps_bench_options_clear(TpsBenchOptions *o)
{
    if (o == NULL)
        return;
    g_free(o->output);
    g_free(o->scenario);
    if (o->shapes)
        g_array_unref(o->shapes);
    if (o->sms)
        g_array_unref(o->sms);
    memset(o, 0, sizeof(*o));
}

static gboolean usage_error(GError **error, const char *format, ...) G_GNUC_PRINTF(2, 3);

static gboolean
usage_error(GError **error, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    g_autofree char *msg = g_strdup_vprintf(format, ap);
    va_end(ap);
    g_set_error(error, TPS_ERROR, TPS_ERROR_USAGE, "%s", msg);
    return FALSE;
}

static gboolean
parse_u64(const char *text, guint64 *out)
{
    if (text == NULL || !g_ascii_isdigit(*text))
        return FALSE;
    char *end;
    errno = 0;
    guint64 v = g_ascii_strtoull(text, &end, 10);
    if (errno != 0 || *end != '\0')
        return FALSE;
    *out = v;
    return TRUE;
}

gboolean
tps_bench_parse_shape(const char *text, TpsBenchShape *out, GError **error)
{
    g_return_val_if_fail(text != NULL && out != NULL, FALSE);
    g_autofree char *copy = g_strdup(text);
    TpsDtype dtype = TPS_DTYPE_BF16;
    char *colon = strchr(copy, ':');
    if (colon != NULL) {
        *colon = '\0';
        guint d;
        for (d = 0; tps_dtype_names[d]; d++)
            if (strcmp(colon + 1, tps_dtype_names[d]) == 0)
                break;
        /* FP8 GEMMs need scaling factors and a cuBLASLt path the bench
         * does not have: not a shape it measures. */
        if (tps_dtype_names[d] == NULL || d == TPS_DTYPE_FP8)
            return usage_error(error, "invalid shape '%s': unknown dtype '%s' (bf16 or fp16)", text,
                               colon + 1);
        dtype = (TpsDtype)d;
    }
    g_auto(GStrv) parts = g_strsplit(copy, "x", -1);
    guint64 v[3];
    if (g_strv_length(parts) != 3)
        return usage_error(
            error, "invalid shape '%s': expected MxNxK[:dtype], e.g. 8192x6144x12288", text);
    for (guint i = 0; i < 3; i++)
        if (!parse_u64(parts[i], &v[i]) || v[i] == 0 || v[i] > ((guint64)1 << 31))
            return usage_error(error, "invalid shape '%s': %s must be an integer from 1 to 2^31",
                               text, (const char *[]){"M", "N", "K"}[i]);
    *out = (TpsBenchShape){v[0], v[1], v[2], dtype};
    return TRUE;
}

gboolean
tps_bench_parse_bytes(const char *text, guint64 *out, GError **error)
{
    g_return_val_if_fail(text != NULL && out != NULL, FALSE);
    gsize len = strlen(text);
    guint shift = 0;
    g_autofree char *digits = g_strdup(text);
    if (len > 0) {
        switch (g_ascii_toupper(text[len - 1])) {
        case 'K':
            shift = 10;
            break;
        case 'M':
            shift = 20;
            break;
        case 'G':
            shift = 30;
            break;
        default:
            break;
        }
        if (shift > 0)
            digits[len - 1] = '\0';
    }
    guint64 v;
    if (!parse_u64(digits, &v) || v == 0 || v > (((guint64)1 << 40) >> shift))
        return usage_error(error,
                           "invalid size '%s': a positive byte count, optionally with K, M "
                           "or G (powers of 1024), at most 1T",
                           text);
    *out = v << shift;
    return TRUE;
}

void
tps_bench_add_shape(GArray *shapes, const TpsBenchShape *shape)
{
    g_return_if_fail(shapes != NULL && shape != NULL);
    if (shape->m == 0 || shape->n == 0 || shape->k == 0)
        return;
    for (guint i = 0; i < shapes->len; i++) {
        const TpsBenchShape *s = &g_array_index(shapes, TpsBenchShape, i);
        if (s->m == shape->m && s->n == shape->n && s->k == shape->k && s->dtype == shape->dtype)
            return;
    }
    g_array_append_val(shapes, *shape);
}

static void
add(GArray *shapes, guint64 m, guint64 n, guint64 k, TpsDtype dtype)
{
    TpsBenchShape s = {m, n, k, dtype};
    tps_bench_add_shape(shapes, &s);
}

void
tps_bench_layer_shapes(GArray *shapes, guint64 tokens, guint64 hidden, guint64 ffn_hidden, guint tp,
                       TpsDtype dtype)
{
    g_return_if_fail(shapes != NULL && tp > 0);
    const guint64 t = tokens, h = hidden, f = ffn_hidden;
    /* Forward: column-parallel QKV and FC1 on the gathered input,
     * row-parallel projection and FC2 on the local shard of k. */
    add(shapes, t, 3 * h / tp, h, dtype); /* qkv_fprop */
    add(shapes, t, h, h / tp, dtype);     /* proj_fprop */
    add(shapes, t, f / tp, h, dtype);     /* fc1_fprop */
    add(shapes, t, h, f / tp, dtype);     /* fc2_fprop */
    /* Backward, data gradients. */
    add(shapes, t, h, 3 * h / tp, dtype); /* qkv_dgrad */
    add(shapes, t, h / tp, h, dtype);     /* proj_dgrad */
    add(shapes, t, h, f / tp, dtype);     /* fc1_dgrad (= fc2_fprop's shape) */
    add(shapes, t, f / tp, h, dtype);     /* fc2_dgrad (= fc1_fprop's shape) */
    /* Weight gradients: the tokens are the reduction dimension. */
    add(shapes, h, 3 * h / tp, t, dtype); /* qkv_wgrad */
    add(shapes, h / tp, h, t, dtype);     /* proj_wgrad */
    add(shapes, h, f / tp, t, dtype);     /* fc1_wgrad */
    add(shapes, f / tp, h, t, dtype);     /* fc2_wgrad */
    /* Ring-exchange and pipeline chunks: tokens / tp rows at a time. */
    if (tp > 1 && t / tp > 0) {
        add(shapes, t / tp, 3 * h / tp, h, dtype);
        add(shapes, t / tp, f / tp, h, dtype);
        add(shapes, t / tp, h, h / tp, dtype);
        add(shapes, t / tp, h, f / tp, dtype);
    }
}

gboolean
tps_bench_vidur_shapes(GArray *shapes, const char *path, GError **error)
{
    g_return_val_if_fail(shapes != NULL && path != NULL, FALSE);
    g_autoptr(TpsCsv) csv = tps_csv_load(path, error);
    if (csv == NULL)
        return FALSE;
    g_autoptr(GArray) rows = tps_vidur_rows_parse(csv, error);
    if (rows == NULL)
        return FALSE;
    for (guint r = 0; r < rows->len; r++)
        for (guint i = 0; i < TPS_VIDUR_GEMM_COUNT; i++) {
            TpsBenchShape sh = {.dtype = TPS_DTYPE_FP16};
            tps_vidur_gemm_shape(&g_array_index(rows, TpsVidurRow, r), tps_vidur_gemm_ops[i], &sh.m,
                                 &sh.n, &sh.k);
            tps_bench_add_shape(shapes, &sh);
        }
    return TRUE;
}

void
tps_bench_default_shapes(GArray *shapes)
{
    g_return_if_fail(shapes != NULL);
    tps_bench_layer_shapes(shapes, 2048, 12288, 49152, 8, TPS_DTYPE_BF16);
    for (guint64 s = 1024; s <= 16384; s *= 2)
        add(shapes, s, s, s, TPS_DTYPE_BF16);
}

void
tps_bench_scenario_shapes(GArray *shapes, const TpsScenario *sc)
{
    g_return_if_fail(shapes != NULL && sc != NULL);
    const guint tp = MAX(sc->tp, 1);
    if (sc->is_op) {
        if (sc->op_kind == TPS_OP_AG_GEMM) {
            add(shapes, sc->m, sc->n / tp, sc->k, sc->dtype);
            add(shapes, sc->m / tp, sc->n / tp, sc->k, sc->dtype);
        } else {
            add(shapes, sc->m, sc->n, sc->k / tp, sc->dtype);
            add(shapes, sc->m / tp, sc->n, sc->k / tp, sc->dtype);
        }
        return;
    }
    tps_bench_layer_shapes(shapes, sc->seq_len * sc->micro_batch, sc->hidden, sc->ffn_hidden, tp,
                           sc->dtype);
}

GArray *
tps_bench_size_sweep(guint64 min_bytes, guint64 max_bytes)
{
    GArray *sizes = g_array_new(FALSE, FALSE, sizeof(guint64));
    guint64 s = 1;
    while (s < min_bytes && s < ((guint64)1 << 62))
        s <<= 1;
    for (; s <= max_bytes; s <<= 1)
        g_array_append_val(sizes, s);
    return sizes;
}

guint
tps_bench_iters_for(guint iters, double bytes)
{
    const double knee = 64.0 * 1024 * 1024;
    if (bytes <= knee)
        return MAX(iters, 1);
    double scaled = iters * knee / bytes;
    return scaled < 3.0 ? 3 : (guint)scaled;
}

static void
add_sm(GArray *out, guint device_sms, gint64 sms)
{
    if (sms < 1 || sms >= (gint64)device_sms)
        return;
    for (guint i = 0; i < out->len; i++)
        if (g_array_index(out, guint, i) == (guint)sms)
            return;
    guint v = (guint)sms;
    g_array_append_val(out, v);
}

static gint
compare_desc(gconstpointer a, gconstpointer b)
{
    guint x = *(const guint *)a, y = *(const guint *)b;
    return (x < y) - (x > y);
}

GArray *
tps_bench_sm_counts(guint device_sms, const GArray *requested)
{
    GArray *out = g_array_new(FALSE, FALSE, sizeof(guint));
    if (device_sms == 0)
        return out;
    g_array_append_val(out, device_sms);
    GArray *reduced = g_array_new(FALSE, FALSE, sizeof(guint));
    if (requested != NULL && requested->len > 0) {
        for (guint i = 0; i < requested->len; i++)
            add_sm(reduced, device_sms, g_array_index(requested, guint, i));
    } else {
        for (gint64 c = 8; c <= 32; c += 8)
            add_sm(reduced, device_sms, (gint64)device_sms - c);
        add_sm(reduced, device_sms, (gint64)device_sms * 3 / 4);
        add_sm(reduced, device_sms, (gint64)device_sms / 2);
        add_sm(reduced, device_sms, (gint64)device_sms / 4);
    }
    g_array_sort(reduced, compare_desc);
    g_array_append_vals(out, reduced->data, reduced->len);
    g_array_unref(reduced);
    return out;
}

GArray *
tps_bench_rank_counts(guint gpus)
{
    GArray *out = g_array_new(FALSE, FALSE, sizeof(guint));
    guint r;
    for (r = 2; r <= gpus; r *= 2)
        g_array_append_val(out, r);
    if (gpus >= 2 && (out->len == 0 || g_array_index(out, guint, out->len - 1) != gpus))
        g_array_append_val(out, gpus);
    return out;
}

/* --- Command line --- */

static gboolean
parse_sections(const char *text, guint *out, GError **error)
{
    g_auto(GStrv) parts = g_strsplit(text, ",", -1);
    guint bits = 0;
    for (guint i = 0; parts[i]; i++) {
        char *name = g_strstrip(parts[i]);
        guint s;
        for (s = 0; tps_bench_section_names[s]; s++)
            if (strcmp(name, tps_bench_section_names[s]) == 0)
                break;
        if (tps_bench_section_names[s] == NULL) {
            g_autofree char *known = g_strjoinv(", ", (char **)tps_bench_section_names);
            return usage_error(error, "--only: unknown measurement '%s' (%s)", name, known);
        }
        bits |= 1u << s;
    }
    if (bits == 0)
        return usage_error(error, "--only: empty list");
    *out = bits;
    return TRUE;
}

/* The options of the command line before they are checked. */
typedef struct {
    char **shape_texts;
    char **vidur_files;
    char *sms_text;
    char *min_text;
    char *max_text;
    char *only;
    char *op_text;
    gint iters, gpus, tp, splits;
} BenchArgs;

static void
bench_args_clear(BenchArgs *a)
{
    g_strfreev(a->shape_texts);
    g_strfreev(a->vidur_files);
    g_free(a->sms_text);
    g_free(a->min_text);
    g_free(a->max_text);
    g_free(a->only);
    g_free(a->op_text);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(BenchArgs, bench_args_clear)

/* The command line into `a` and the options kept as they are into `o`
 * (the caller's argv left intact); no argument may be left. */
static gboolean
parse_command_line(TpsBenchOptions *o, BenchArgs *a, int argc, char **argv, GError **error)
{
    GOptionEntry entries[] = {
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &o->output,
         "Write the measurements YAML to FILE, atomically (default: standard output)", "FILE"},
        {"scenario", 's', 0, G_OPTION_ARG_FILENAME, &o->scenario,
         "Measure the GEMMs this scenario needs (and, for an op scenario, run the strategies on "
         "its op)",
         "SCENARIO.yaml"},
        {"shape", 0, 0, G_OPTION_ARG_STRING_ARRAY, &a->shape_texts,
         "Measure this GEMM, MxNxK[:bf16|fp16] (repeatable; replaces the default list)", "MxNxK"},
        {"vidur", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &a->vidur_files,
         "Measure the GEMMs of this vidur ops profile (its QKV, output, up and down "
         "projections, fp16: the shapes tpsim validate replays; repeatable)",
         "FILE.csv"},
        {"sms", 0, 0, G_OPTION_ARG_STRING, &a->sms_text,
         "Reduced SM counts for the GEMMs, comma-separated (default: SMs - 8/16/24/32, 3/4, 1/2, "
         "1/4)",
         "N,N,..."},
        {"min-bytes", 0, 0, G_OPTION_ARG_STRING, &a->min_text,
         "Smallest message of the collective sweep (default 1K)", "SIZE"},
        {"max-bytes", 0, 0, G_OPTION_ARG_STRING, &a->max_text,
         "Largest message of the collective sweep (default 1G)", "SIZE"},
        {"iters", 'n', 0, G_OPTION_ARG_INT, &a->iters, "Timed repetitions per point (default 20)",
         "N"},
        {"gpus", 'g', 0, G_OPTION_ARG_INT, &a->gpus, "Drive at most N GPUs (default: all)", "N"},
        {"only", 0, 0, G_OPTION_ARG_STRING, &a->only,
         "Measure only these, comma-separated: launch, gemm, collectives, copies, overlap, "
         "strategies, algos (cuBLASLt's kernel for each GEMM shape)",
         "LIST"},
        {"op", 0, 0, G_OPTION_ARG_STRING, &a->op_text,
         "The all-gather + GEMM op the strategies run (default 8192x49152x12288)", "MxNxK"},
        {"tp", 0, 0, G_OPTION_ARG_INT, &a->tp,
         "GPUs the strategies run on (default: all, at most 8)", "N"},
        {"splits", 0, 0, G_OPTION_ARG_INT, &a->splits,
         "Chunks of the pipeline reduce-scatter strategy (default 4)", "N"},
        {"plan", 0, 0, G_OPTION_ARG_NONE, &o->plan_only,
         "Print what would be measured (for --gpus GPUs, default 8, of 108 SMs) and exit; needs "
         "no GPU",
         NULL},
        {NULL},
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new(NULL);
    g_option_context_set_summary(
        ctx, "CUDA/NCCL microbenchmarks for tpsim calibrate: GEMM TFLOP/s (all and reduced SMs),\n"
             "NCCL all-gather, reduce-scatter, all-reduce and send/recv from 1 KiB to 1 GiB,\n"
             "copy-engine P2P bandwidth, launch and event overheads, a GEMM beside a\n"
             "collective, and small real implementations of the overlap strategies. One process\n"
             "drives every local GPU.");
    g_option_context_set_description(ctx, "Exit status: 0 success, 1 a measurement failed or "
                                          "invalid scenario, 2 usage error, 3 no GPU.\n"
                                          "See docs/calibration.md.");
    g_option_context_add_main_entries(ctx, entries, NULL);

    /* GOption edits the vector it is given; keep the caller's intact. */
    g_autofree char **args = g_new0(char *, argc + 1);
    memcpy(args, argv, sizeof(char *) * argc);
    int n = argc;
    char **v = args;
    if (!g_option_context_parse(ctx, &n, &v, error)) {
        /* G_OPTION_ERROR: usage; re-domain it so callers see one code. */
        g_autofree char *msg = g_strdup((*error)->message);
        g_clear_error(error);
        return usage_error(error, "%s", msg);
    }
    if (n > 1)
        return usage_error(error, "unexpected argument '%s' (see --help)", v[1]);
    return TRUE;
}

/* The numbers, sizes, sections, op and SM counts of `a` checked into `o`. */
static gboolean
check_bench_args(TpsBenchOptions *o, const BenchArgs *a, GError **error)
{
    if (a->iters < 1 || a->iters > 1000000)
        return usage_error(error, "--iters must be from 1 to 1000000, not %d", a->iters);
    if (a->gpus < 0 || a->tp < 0 || a->tp == 1)
        return usage_error(error, "--gpus must be positive and --tp at least 2");
    if (a->splits < 1 || a->splits > 1024)
        return usage_error(error, "--splits must be from 1 to 1024, not %d", a->splits);
    o->iters = (guint)a->iters;
    o->max_gpus = (guint)a->gpus;
    o->op_tp = (guint)a->tp;
    o->splits = (guint)a->splits;
    if (a->min_text && !tps_bench_parse_bytes(a->min_text, &o->min_bytes, error))
        return FALSE;
    if (a->max_text && !tps_bench_parse_bytes(a->max_text, &o->max_bytes, error))
        return FALSE;
    if (o->min_bytes > o->max_bytes)
        return usage_error(error, "--min-bytes is larger than --max-bytes");
    if (a->only && !parse_sections(a->only, &o->sections, error))
        return FALSE;
    if (a->op_text && !tps_bench_parse_shape(a->op_text, &o->op, error))
        return FALSE;
    if (a->sms_text) {
        g_auto(GStrv) parts = g_strsplit(a->sms_text, ",", -1);
        for (guint i = 0; parts[i]; i++) {
            guint64 s;
            if (!parse_u64(g_strstrip(parts[i]), &s) || s == 0 || s > 4096)
                return usage_error(error, "--sms: '%s' is not an SM count from 1 to 4096",
                                   parts[i]);
            guint u = (guint)s;
            g_array_append_val(o->sms, u);
        }
    }
    return TRUE;
}

/* The GEMMs of --scenario added to the shapes; an op scenario's op is the
 * strategies' unless --op gave one. */
static gboolean
add_scenario_shapes(TpsBenchOptions *o, gboolean op_given, GError **error)
{
    TpsScenario sc;
    gboolean ok = tps_scenario_file_load(o->scenario, &sc, error);
    if (ok) {
        tps_bench_scenario_shapes(o->shapes, &sc);
        if (sc.is_op && !op_given) {
            /* The strategies run the scenario's op as an AG + GEMM of the
             * same size (a GEMM + RS moves the same bytes the other way). */
            o->op = (TpsBenchShape){sc.m, sc.n, sc.k, sc.dtype};
            if (o->op_tp == 0 && sc.tp >= 2)
                o->op_tp = sc.tp;
        }
    }
    tps_scenario_clear(&sc);
    return ok;
}

gboolean
tps_bench_options_parse(TpsBenchOptions *o, int argc, char **argv, GError **error)
{
    g_return_val_if_fail(o != NULL && o->shapes != NULL, FALSE);
    g_auto(BenchArgs) a = {.iters = (gint)o->iters, .splits = (gint)o->splits};
    if (!parse_command_line(o, &a, argc, argv, error) || !check_bench_args(o, &a, error))
        return FALSE;
    for (guint i = 0; a.shape_texts && a.shape_texts[i]; i++) {
        TpsBenchShape s;
        if (!tps_bench_parse_shape(a.shape_texts[i], &s, error))
            return FALSE;
        tps_bench_add_shape(o->shapes, &s);
    }
    for (guint i = 0; a.vidur_files && a.vidur_files[i]; i++)
        if (!tps_bench_vidur_shapes(o->shapes, a.vidur_files[i], error))
            return FALSE;
    if (o->scenario && !add_scenario_shapes(o, a.op_text != NULL, error))
        return FALSE;
    if (o->shapes->len == 0)
        tps_bench_default_shapes(o->shapes);
    return TRUE;
}

/* --- Plan text --- */

static char *
format_bytes(guint64 b)
{
    if (b >= ((guint64)1 << 30) && b % ((guint64)1 << 30) == 0)
        return g_strdup_printf("%" G_GUINT64_FORMAT " GiB", b >> 30);
    if (b >= ((guint64)1 << 20) && b % ((guint64)1 << 20) == 0)
        return g_strdup_printf("%" G_GUINT64_FORMAT " MiB", b >> 20);
    if (b >= 1024 && b % 1024 == 0)
        return g_strdup_printf("%" G_GUINT64_FORMAT " KiB", b >> 10);
    return g_strdup_printf("%" G_GUINT64_FORMAT " B", b);
}

static guint
strategy_tp(const TpsBenchOptions *o, guint gpus)
{
    guint tp = o->op_tp ? o->op_tp : MIN(gpus, 8);
    return tp <= gpus ? tp : 0;
}

char *
tps_bench_plan_describe(const TpsBenchOptions *o, guint gpus, guint sms)
{
    g_return_val_if_fail(o != NULL, NULL);
    GString *s = g_string_new(NULL);
    g_string_append_printf(s, "tpsim-gpubench plan: %u GPU%s of %u SMs, %u timed repetitions\n",
                           gpus, gpus == 1 ? "" : "s", sms, o->iters);
    if (o->sections & TPS_BENCH_SECTION_LAUNCH)
        g_string_append(s, "launch: empty kernel and cudaEventRecord, 5 samples each\n");
    if (o->sections & TPS_BENCH_SECTION_GEMM) {
        g_autoptr(GArray) counts = tps_bench_sm_counts(sms, o->sms);
        g_string_append_printf(s, "gemm: %u shapes x %u SM counts (", o->shapes->len, counts->len);
        for (guint i = 0; i < counts->len; i++)
            g_string_append_printf(s, "%s%u", i ? " " : "", g_array_index(counts, guint, i));
        g_string_append(s, ")\n");
        for (guint i = 0; i < o->shapes->len; i++) {
            const TpsBenchShape *sh = &g_array_index(o->shapes, TpsBenchShape, i);
            g_string_append_printf(
                s, "  %" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT " %s\n",
                sh->m, sh->n, sh->k, tps_dtype_names[sh->dtype]);
        }
    }
    if (o->sections & TPS_BENCH_SECTION_ALGOS)
        g_string_append_printf(s, "algos: cuBLASLt's first kernel for %u GEMM shape%s%s\n",
                               o->shapes->len, o->shapes->len == 1 ? "" : "s",
                               (o->sections & TPS_BENCH_SECTION_GEMM) ? "" : " (not timed)");
    g_autoptr(GArray) sizes = tps_bench_size_sweep(o->min_bytes, o->max_bytes);
    g_autoptr(GArray) ranks = tps_bench_rank_counts(gpus);
    g_autofree char *lo = format_bytes(o->min_bytes);
    g_autofree char *hi = format_bytes(o->max_bytes);
    if (o->sections & TPS_BENCH_SECTION_COLLECTIVES) {
        if (ranks->len == 0) {
            g_string_append(s, "collectives: skipped (needs 2 GPUs)\n");
        } else {
            g_string_append_printf(s, "collectives: all_gather, reduce_scatter, all_reduce over");
            for (guint i = 0; i < ranks->len; i++)
                g_string_append_printf(s, " %u", g_array_index(ranks, guint, i));
            g_string_append_printf(s, " ranks, send_recv over 2; %u sizes, %s to %s\n", sizes->len,
                                   lo, hi);
        }
    }
    if (o->sections & TPS_BENCH_SECTION_COPIES) {
        if (gpus < 2)
            g_string_append(s, "copies: skipped (needs 2 GPUs)\n");
        else
            g_string_append_printf(s, "copies: copy-engine P2P GPU 0 -> 1, %u sizes, %s to %s\n",
                                   sizes->len, lo, hi);
    }
    if (o->sections & TPS_BENCH_SECTION_OVERLAP) {
        if (gpus < 2)
            g_string_append(s, "overlap: skipped (needs 2 GPUs)\n");
        else
            g_string_append_printf(s,
                                   "overlap: %u shapes beside an all-gather and a "
                                   "reduce-scatter of their input over %u ranks\n",
                                   o->shapes->len, g_array_index(ranks, guint, ranks->len - 1));
    }
    if (o->sections & TPS_BENCH_SECTION_STRATEGIES) {
        guint tp = strategy_tp(o, gpus);
        if (tp < 2) {
            g_string_append(s, "strategies: skipped (needs 2 GPUs)\n");
        } else {
            g_string_append_printf(s,
                                   "strategies: op %" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT
                                   "x%" G_GUINT64_FORMAT " %s over tp %u, %u splits:",
                                   o->op.m, o->op.n, o->op.k, tps_dtype_names[o->op.dtype], tp,
                                   o->splits);
            for (guint i = 0; tps_bench_strategy_names[i]; i++)
                g_string_append_printf(s, " %s", tps_bench_strategy_names[i]);
            g_string_append_c(s, '\n');
        }
    }
    g_string_append_printf(s, "output: %s\n", o->output ? o->output : "standard output");
    return g_string_free(s, FALSE);
}

/* --- Driver --- */

static gboolean
device_error(GError **error, const char *what, const char *err)
{
    g_set_error(error, TPS_ERROR, TPS_ERROR_IO, "%s: %s", what, err[0] ? err : "failed");
    return FALSE;
}

/* One run of the benchmarks: the device, what to measure and where the
 * points go. */
typedef struct {
    const TpsBenchDevice *dev;
    const TpsBenchOptions *o;
    TpsMeasurements *out;
    FILE *log;
    guint gpus, sms;
    char err[512]; /* the device's last message */
} Bench;

/* Launch and event overheads, 5 samples each. */
static gboolean
bench_launch(Bench *b, GError **error)
{
    if (b->log)
        fprintf(b->log, "launch overheads\n");
    for (guint i = 0; i < 5; i++) {
        double kernel_us, event_us;
        if (b->dev->launch(MAX(b->o->iters, 100), &kernel_us, &event_us, b->err, sizeof(b->err)) !=
            0)
            return device_error(error, "launch", b->err);
        TpsLaunchPoint k = {TPS_MEAS_LAUNCH_KERNEL, kernel_us};
        TpsLaunchPoint e = {TPS_MEAS_LAUNCH_EVENT, event_us};
        g_array_append_val(b->out->launch, k);
        g_array_append_val(b->out->launch, e);
    }
    return TRUE;
}

/* Each GEMM shape on each SM count. */
static gboolean
bench_gemm(Bench *b, GError **error)
{
    const TpsBenchOptions *o = b->o;
    g_autoptr(GArray) counts = tps_bench_sm_counts(b->sms, o->sms);
    for (guint i = 0; i < o->shapes->len; i++) {
        const TpsBenchShape *sh = &g_array_index(o->shapes, TpsBenchShape, i);
        for (guint c = 0; c < counts->len; c++) {
            guint s = g_array_index(counts, guint, c);
            double us;
            if (b->log)
                fprintf(b->log,
                        "gemm %" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT
                        " %s on %u SMs\n",
                        sh->m, sh->n, sh->k, tps_dtype_names[sh->dtype], s);
            if (b->dev->gemm((long)sh->m, (long)sh->n, (long)sh->k, (int)sh->dtype,
                             s >= b->sms ? 0 : (int)s, (int)o->iters, &us, b->err,
                             sizeof(b->err)) != 0)
                return device_error(error, "gemm", b->err);
            TpsGemmPoint p = {
                sh->m,     sh->n, sh->k,
                sh->dtype, s,     2.0 * (double)sh->m * (double)sh->n * (double)sh->k / us / 1e6};
            g_array_append_val(b->out->gemm, p);
        }
    }
    return TRUE;
}

/* The kernel cuBLASLt's heuristic picks for each GEMM shape. */
static gboolean
bench_algos(Bench *b, GError **error)
{
    const TpsBenchOptions *o = b->o;
    if (b->log)
        fprintf(b->log, "cuBLASLt's kernel for %u GEMM shapes\n", o->shapes->len);
    for (guint i = 0; i < o->shapes->len; i++) {
        const TpsBenchShape *sh = &g_array_index(o->shapes, TpsBenchShape, i);
        TpsBenchGemmAlgo raw = {0};
        if (b->dev->gemm_algo((long)sh->m, (long)sh->n, (long)sh->k, (int)sh->dtype, &raw, b->err,
                              sizeof(b->err)) != 0)
            return device_error(error, "algos", b->err);
        TpsGemmAlgoPoint p;
        tps_bench_algo_point(sh, &raw, &p);
        g_array_append_val(b->out->gemm_algos, p);
    }
    return TRUE;
}

/* Each collective over each rank count (send/recv over 2) and size. */
static gboolean
bench_collectives(Bench *b, const GArray *sizes, const GArray *ranks, GError **error)
{
    for (guint kind = 0; kind <= TPS_BENCH_SEND_RECV; kind++) {
        guint n_ranks = kind == TPS_BENCH_SEND_RECV ? 1 : ranks->len;
        for (guint r = 0; r < n_ranks; r++) {
            guint nr = kind == TPS_BENCH_SEND_RECV ? 2 : g_array_index(ranks, guint, r);
            for (guint i = 0; i < sizes->len; i++) {
                /* Buffers split evenly over the ranks (as the
                 * collectives need), in 2-byte elements: rounded down
                 * for rank counts that are not powers of two. */
                guint64 bytes = g_array_index(sizes, guint64, i);
                bytes -= bytes % (2 * (guint64)nr);
                if (bytes == 0)
                    continue;
                double us;
                if (b->log)
                    fprintf(b->log, "%s %" G_GUINT64_FORMAT " bytes over %u\n",
                            tps_meas_coll_names[kind], bytes, nr);
                if (b->dev->collective((int)kind, (size_t)bytes, (int)nr,
                                       (int)tps_bench_iters_for(b->o->iters, (double)bytes), &us,
                                       b->err, sizeof(b->err)) != 0)
                    return device_error(error, tps_meas_coll_names[kind], b->err);
                TpsCollPoint p = {(TpsMeasColl)kind, (double)bytes, nr, us, TRUE};
                g_array_append_val(b->out->collectives, p);
            }
        }
    }
    return TRUE;
}

/* Copy-engine P2P copies from GPU 0 to 1, each size. */
static gboolean
bench_copies(Bench *b, const GArray *sizes, GError **error)
{
    for (guint i = 0; i < sizes->len; i++) {
        guint64 bytes = g_array_index(sizes, guint64, i);
        double us;
        if (b->log)
            fprintf(b->log, "copy %" G_GUINT64_FORMAT " bytes\n", bytes);
        if (b->dev->copy((size_t)bytes, (int)tps_bench_iters_for(b->o->iters, (double)bytes), &us,
                         b->err, sizeof(b->err)) != 0)
            return device_error(error, "copy", b->err);
        TpsCopyPoint p = {(double)bytes, us};
        g_array_append_val(b->out->copies, p);
    }
    return TRUE;
}

/* Each GEMM shape alone and beside an all-gather and a reduce-scatter of
 * its input over `nr` ranks. */
static gboolean
bench_overlap(Bench *b, guint nr, GError **error)
{
    const TpsBenchOptions *o = b->o;
    for (guint i = 0; i < o->shapes->len; i++) {
        const TpsBenchShape *sh = &g_array_index(o->shapes, TpsBenchShape, i);
        /* The collective a TP layer runs beside this GEMM: its input
         * [m, k], gathered or reduce-scattered. */
        guint64 bytes = sh->m * sh->k * tps_dtype_bytes(sh->dtype);
        bytes -= bytes % (2 * (guint64)nr);
        if (bytes == 0)
            continue;
        const int comms[] = {TPS_BENCH_ALL_GATHER, TPS_BENCH_REDUCE_SCATTER};
        for (guint c = 0; c < G_N_ELEMENTS(comms); c++) {
            double alone, beside;
            if (b->log)
                fprintf(b->log,
                        "gemm %" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT
                        " beside %s\n",
                        sh->m, sh->n, sh->k, tps_meas_coll_names[comms[c]]);
            if (b->dev->overlap((long)sh->m, (long)sh->n, (long)sh->k, (int)sh->dtype, comms[c],
                                (size_t)bytes, (int)nr, (int)o->iters, &alone, &beside, b->err,
                                sizeof(b->err)) != 0)
                return device_error(error, "overlap", b->err);
            TpsOverlapPoint p = {sh->m,         sh->n, sh->k, sh->dtype, (TpsMeasColl)comms[c],
                                 (double)bytes, nr,    alone, beside};
            g_array_append_val(b->out->overlap, p);
        }
    }
    return TRUE;
}

/* The overlap strategies' small real implementations on the op, over
 * `tp` GPUs. */
static gboolean
bench_strategies(Bench *b, guint tp, GError **error)
{
    const TpsBenchOptions *o = b->o;
    for (guint s = 0; s < TPS_BENCH_STRATEGY_COUNT; s++) {
        double us;
        if (b->log)
            fprintf(b->log, "strategy %s over %u GPUs\n", tps_bench_strategy_names[s], tp);
        if (b->dev->strategy((int)s, (long)o->op.m, (long)o->op.n, (long)o->op.k, (int)o->op.dtype,
                             (int)tp, (int)o->splits, (int)o->iters, &us, b->err,
                             sizeof(b->err)) != 0)
            return device_error(error, tps_bench_strategy_names[s], b->err);
        TpsStrategyPoint p = {(char *)tps_bench_strategy_names[s],
                              (char *)(s == TPS_BENCH_PIPELINE_GEMM_RS ? "gemm_rs" : "ag_gemm"),
                              o->op.m,
                              o->op.n,
                              o->op.k,
                              o->op.dtype,
                              tp,
                              s == TPS_BENCH_PIPELINE_GEMM_RS ? o->splits : tp,
                              us};
        tps_measurements_add_strategy(b->out, &p);
    }
    return TRUE;
}

gboolean
tps_bench_run(const TpsBenchDevice *dev, const TpsBenchDeviceInfo *info, const TpsBenchOptions *o,
              TpsMeasurements *out, FILE *log, GError **error)
{
    g_return_val_if_fail(dev != NULL && info != NULL && o != NULL && out != NULL, FALSE);
    Bench b = {.dev = dev,
               .o = o,
               .out = out,
               .log = log,
               .gpus = (guint)MAX(info->gpus, 0),
               .sms = (guint)MAX(info->sms, 0),
               .err = ""};

    if (out->source == NULL)
        out->source = g_strdup("tpsim-gpubench " TPS_VERSION);
    if (out->gpu == NULL && info->name[0])
        out->gpu = g_strndup(info->name, sizeof(info->name));
    if (out->cuda == NULL && info->cuda[0])
        out->cuda = g_strndup(info->cuda, sizeof(info->cuda));
    if (out->nccl == NULL && info->nccl[0])
        out->nccl = g_strndup(info->nccl, sizeof(info->nccl));
    out->sms = b.sms;
    out->gpus = b.gpus;

    if ((o->sections & TPS_BENCH_SECTION_LAUNCH) && !bench_launch(&b, error))
        return FALSE;
    if ((o->sections & TPS_BENCH_SECTION_GEMM) && !bench_gemm(&b, error))
        return FALSE;
    if ((o->sections & TPS_BENCH_SECTION_ALGOS) && !bench_algos(&b, error))
        return FALSE;
    g_autoptr(GArray) sizes = tps_bench_size_sweep(o->min_bytes, o->max_bytes);
    g_autoptr(GArray) ranks = tps_bench_rank_counts(b.gpus);
    if ((o->sections & TPS_BENCH_SECTION_COLLECTIVES) && ranks->len > 0 &&
        !bench_collectives(&b, sizes, ranks, error))
        return FALSE;
    if ((o->sections & TPS_BENCH_SECTION_COPIES) && b.gpus >= 2 && !bench_copies(&b, sizes, error))
        return FALSE;
    if ((o->sections & TPS_BENCH_SECTION_OVERLAP) && ranks->len > 0 &&
        !bench_overlap(&b, g_array_index(ranks, guint, ranks->len - 1), error))
        return FALSE;
    if (o->sections & TPS_BENCH_SECTION_STRATEGIES) {
        guint tp = strategy_tp(o, b.gpus);
        if (tp >= 2 && !bench_strategies(&b, tp, error))
            return FALSE;
    }
    return TRUE;
}
