/* Trace import: kernel classification and NCCL names; the streaming
 * importer's figures on every shared trace against a slower, independent
 * scan of the same JSON with json-glib's full parser; design.md's summary
 * keys; gzip and plain giving one summary; exact nanosecond timestamps,
 * both ways of linking kernels to ops, tpsim's own Chrome traces; clear
 * errors for bad inputs; the `tpsim trace summary` command line. */
#include <check.h>

#include "test-util.h"
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "io/trace/trace-import.h"
#include "io/trace/trace-summary.h"
#include "io/trace/trace-validate.h"

/* ---------------------------------------------------------------------- */
/* Helpers                                                                 */

static char *
shared_traces_dir(void)
{
    const char *shared = tps_test_shared_dir();
    if (shared == NULL)
        return NULL;
    char *dir = g_build_filename(shared, "traces", NULL);
    if (!g_file_test(dir, G_FILE_TEST_IS_DIR)) {
        g_free(dir);
        return NULL;
    }
    return dir;
}

static const char *const shared_traces[] = {
    "hta-alexnet-a100-1gpu/benchmark_result_2869224_1695835535_trace.json.gz",
    "hta-eventsync-a100-3streams/event_sync_trace.json.gz",
    "hta-recsys-a100-r0r1of128/sampled_rank-0.json.gz",
    "hta-recsys-a100-r0r1of128/sampled_rank-1.json.gz",
    "hta-ddp-a100-r0of2/nccl_data.json.gz",
    "hta-torchrec-a100sxm80-r0of16/rank0.json.gz",
    "hta-recsys-a100-r3of8/control.json.gz",
};

/* Path of shared trace `i`, or NULL (with a note) when the folder is absent. */
static char *
shared_trace(guint i)
{
    g_autofree char *dir = shared_traces_dir();
    if (dir == NULL)
        tps_test_skip("no shared traces ($TPSIM_SHARED_DIR/traces)");
    return g_build_filename(dir, shared_traces[i], NULL);
}

/* The whole decompressed JSON of a (gzipped) file. */
static GBytes *
read_json_bytes(const char *path)
{
    g_autoptr(GFile) file = g_file_new_for_path(path);
    g_autoptr(GError) error = NULL;
    g_autoptr(GInputStream) in = G_INPUT_STREAM(g_file_read(file, NULL, &error));
    ck_assert_msg(in != NULL, "%s", error ? error->message : "");
    g_autoptr(GZlibDecompressor) dec = g_zlib_decompressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP);
    g_autoptr(GInputStream) plain = g_converter_input_stream_new(in, G_CONVERTER(dec));
    g_autoptr(GOutputStream) out = g_memory_output_stream_new_resizable();
    ck_assert(
        g_output_stream_splice(out, plain, G_OUTPUT_STREAM_SPLICE_CLOSE_TARGET, NULL, &error) >= 0);
    return g_memory_output_stream_steal_as_bytes(G_MEMORY_OUTPUT_STREAM(out));
}

static char *
read_file_bytes(const char *path, gsize *len)
{
    char *data = NULL;
    ck_assert(g_file_get_contents(path, &data, len, NULL));
    return data;
}

/* ---------------------------------------------------------------------- */
/* Classification                                                          */

static const struct {
    const char *name;
    TpsKernelClass klass;
} class_cases[] = {
    {"ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
     TPS_KERNEL_NCCL},
    {"ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
     TPS_KERNEL_NCCL},
    {"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", TPS_KERNEL_NCCL},
    {"void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x64_16x4_tn_align4>(Params)",
     TPS_KERNEL_GEMM},
    {"ampere_sgemm_128x64_nn", TPS_KERNEL_GEMM},
    {"sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1",
     TPS_KERNEL_GEMM},
    {"void splitKreduce_kernel<float, float, float, float, true, false>(cublasSplitKParams<float>)",
     TPS_KERNEL_GEMM},
    {"void gemv2T_kernel_val<int, int, float, float, float, 128, 16, 4, 4, false>(...)",
     TPS_KERNEL_GEMM},
    {"sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw", TPS_KERNEL_OTHER},
    {"void fbgemm_gpu::permute_2D_data_kernel<int, float>(int, int, ...)", TPS_KERNEL_OTHER},
    {"void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>",
     TPS_KERNEL_OTHER},
    {"flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>>", TPS_KERNEL_OTHER},
};

START_TEST(test_classify)
{
    ck_assert_msg(tps_trace_classify(class_cases[_i].name) == class_cases[_i].klass, "%s -> %s",
                  class_cases[_i].name,
                  tps_kernel_class_name(tps_trace_classify(class_cases[_i].name)));
}
END_TEST

static const struct {
    const char *name, *coll, *algo, *proto;
} nccl_cases[] = {
    {"ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "AllReduce",
     "RING", "LL"},
    {"ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)", "SendRecv", "RING", "SIMPLE"},
    {"ncclKernel_AllGather_RING_LL128_Sum_int8_t(ncclWorkElem)", "AllGather", "RING", "LL128"},
    {"ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
     "ReduceScatter", "RING", "LL"},
    {"ncclDevKernel_AllReduce_Sum_f32_TREE_LL128(ncclDevKernelArgsStorage<4096ul>)", "AllReduce",
     "TREE", "LL128"},
    {"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "AllGather", "RING",
     "LL"},
    {"ncclDevKernel_AllReduce_Sum_bf16_NVLS_SIMPLE(ncclDevKernelArgsStorage<4096ul>)", "AllReduce",
     "NVLS", "SIMPLE"},
    {"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", "SendRecv", NULL, NULL},
};

START_TEST(test_nccl_names)
{
    const char *coll = NULL, *algo = NULL, *proto = NULL;
    ck_assert(tps_trace_parse_nccl_name(nccl_cases[_i].name, &coll, &algo, &proto));
    ck_assert_pstr_eq(coll, nccl_cases[_i].coll);
    ck_assert_pstr_eq(algo, nccl_cases[_i].algo);
    ck_assert_pstr_eq(proto, nccl_cases[_i].proto);
}
END_TEST

START_TEST(test_not_nccl)
{
    ck_assert(!tps_trace_parse_nccl_name("ampere_sgemm_128x64_nn", NULL, NULL, NULL));
}
END_TEST

/* The input type of GEMM kernels from their names (issue 13: TF32 GEMMs
 * were fitted as bf16). Names as cuBLAS, cuBLASLt and CUTLASS write them;
 * the first two are in the shared A100 traces. */
static const struct {
    const char *name;
    TpsTraceDtype dtype;
} dtype_cases[] = {
    {"void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_64x64_32x6_tn_align4>(cutlass_80_"
     "tensorop_s1688gemm_64x64_32x6_tn_align4::Params)",
     TPS_TRACE_DTYPE_TF32},
    {"ampere_sgemm_128x64_nn", TPS_TRACE_DTYPE_FP32},
    {"sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1_"
     "tensor16x8x16",
     TPS_TRACE_DTYPE_BF16},
    {"ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn", TPS_TRACE_DTYPE_BF16},
    {"ampere_fp16_s16816gemm_fp16_256x128_ldg8_f2f_stages_64x3_nn", TPS_TRACE_DTYPE_FP16},
    {"sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize160x128x32", TPS_TRACE_DTYPE_FP16},
    {"volta_h884gemm_128x128_ldg8_nn", TPS_TRACE_DTYPE_FP16},
    {"sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x16", TPS_TRACE_DTYPE_TF32},
    {"void splitKreduce_kernel<float, float, float, float, true, false, false>(cublasSplitKParams"
     "<float>, float const*, float const*, float*, float const*, float const*, float const*)",
     TPS_TRACE_DTYPE_UNKNOWN},
    /* Not GEMMs: no type, even with a mark in the name. */
    {"sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw",
     TPS_TRACE_DTYPE_UNKNOWN},
    {"ncclKernel_AllReduce_RING_LL_Sum_bf16(ncclWorkElem)", TPS_TRACE_DTYPE_UNKNOWN},
};

START_TEST(test_gemm_dtype)
{
    ck_assert_msg(tps_trace_gemm_dtype(dtype_cases[_i].name) == dtype_cases[_i].dtype, "%s: %s",
                  dtype_cases[_i].name,
                  tps_trace_dtype_name(tps_trace_gemm_dtype(dtype_cases[_i].name)));
}
END_TEST

START_TEST(test_busbw_factor)
{
    ck_assert_double_eq_tol(tps_trace_busbw_factor("AllReduce", 8), 1.75, 1e-12);
    ck_assert_double_eq_tol(tps_trace_busbw_factor("AllGather", 8), 0.875, 1e-12);
    ck_assert_double_eq_tol(tps_trace_busbw_factor("ReduceScatter", 4), 0.75, 1e-12);
    ck_assert_double_eq_tol(tps_trace_busbw_factor("SendRecv", 0), 1.0, 1e-12);
    ck_assert_double_eq_tol(tps_trace_busbw_factor("Broadcast", 2), 1.0, 1e-12);
    ck_assert(isnan(tps_trace_busbw_factor("AllReduce", 0)));
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Shared traces against an independent scan                              */

/* The README's rule, written again here on purpose (not shared code). */
static int
ref_class(const char *name)
{
    if (strstr(name, "ncclKernel_") || strstr(name, "ncclDevKernel_"))
        return TPS_KERNEL_NCCL;
    if (strstr(name, "fbgemm_gpu::") || strstr(name, "implicit_gemm") ||
        strstr(name, "ImplicitGemm") || strstr(name, "cudnn") || strstr(name, "fprop") ||
        strstr(name, "dgrad") || strstr(name, "wgrad"))
        return TPS_KERNEL_OTHER;
    const char *marks[] = {"gemm", "s1688", "sgemm", "xmma", "splitKreduce", "gemv"};
    for (guint i = 0; i < G_N_ELEMENTS(marks); i++)
        if (strstr(name, marks[i]))
            return TPS_KERNEL_GEMM;
    return TPS_KERNEL_OTHER;
}

typedef struct {
    guint count;
    double total_us;
} RefFig;

typedef struct {
    RefFig classes[TPS_KERNEL_CLASS_COUNT];
    GHashTable *nccl_streams; /* "dev:stream" -> RefFig* */
    GHashTable *streams;      /* "dev:stream" -> RefFig* (all kernels) */
    GHashTable *colls;        /* collective -> RefFig* */
    GHashTable *coll_bytes;   /* collective -> GArray of double */
    char *gpu;
} Ref;

static RefFig *
ref_fig(GHashTable *table, const char *key)
{
    RefFig *f = g_hash_table_lookup(table, key);
    if (f == NULL) {
        f = g_new0(RefFig, 1);
        g_hash_table_insert(table, g_strdup(key), f);
    }
    return f;
}

static void
ref_clear(Ref *r)
{
    g_hash_table_unref(r->nccl_streams);
    g_hash_table_unref(r->streams);
    g_hash_table_unref(r->colls);
    g_hash_table_unref(r->coll_bytes);
    g_free(r->gpu);
}

static void
ref_scan(const char *path, Ref *r)
{
    memset(r, 0, sizeof *r);
    r->nccl_streams = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    r->streams = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    r->colls = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    r->coll_bytes =
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)g_array_unref);
    g_autoptr(GBytes) bytes = read_json_bytes(path);
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) error = NULL;
    gsize len;
    const char *data = g_bytes_get_data(bytes, &len);
    ck_assert_msg(json_parser_load_from_data(parser, data, (gssize)len, &error), "%s",
                  error ? error->message : "");
    JsonObject *root = json_node_get_object(json_parser_get_root(parser));
    JsonArray *events = json_object_get_array_member(root, "traceEvents");
    gint64 device = -1;
    for (guint i = 0; i < json_array_get_length(events); i++) {
        JsonObject *e = json_array_get_object_element(events, i);
        if (!json_object_has_member(e, "cat") ||
            g_strcmp0(json_object_get_string_member(e, "cat"), "kernel") != 0)
            continue;
        const char *name = json_object_get_string_member(e, "name");
        double dur = json_object_get_double_member(e, "dur");
        gint64 pid = json_object_get_int_member(e, "pid"),
               tid = json_object_get_int_member(e, "tid");
        device = pid;
        int c = ref_class(name);
        r->classes[c].count++;
        r->classes[c].total_us += dur;
        g_autofree char *key = g_strdup_printf("%" G_GINT64_FORMAT ":%" G_GINT64_FORMAT, pid, tid);
        RefFig *sf = ref_fig(r->streams, key);
        sf->count++, sf->total_us += dur;
        if (c != TPS_KERNEL_NCCL)
            continue;
        RefFig *f = ref_fig(r->nccl_streams, key);
        f->count++, f->total_us += dur;
        const char *after = strchr(name, '_') + 1;
        g_autofree char *coll = g_strndup(after, strcspn(after, "_("));
        f = ref_fig(r->colls, coll);
        f->count++, f->total_us += dur;
        JsonObject *args = json_object_get_object_member(e, "args");
        if (json_object_has_member(args, "In msg nelems")) {
            const char *dtype = json_object_get_string_member(args, "dtype");
            double size = strcmp(dtype, "Float") == 0 ? 4 : strcmp(dtype, "Long") == 0 ? 8 : 0;
            ck_assert_msg(size > 0, "dtype %s", dtype); /* the only ones in these files */
            double b = size * (double)MAX(json_object_get_int_member(args, "In msg nelems"),
                                          json_object_get_int_member(args, "Out msg nelems"));
            GArray *arr = g_hash_table_lookup(r->coll_bytes, coll);
            if (arr == NULL) {
                arr = g_array_new(FALSE, FALSE, sizeof(double));
                g_hash_table_insert(r->coll_bytes, g_strdup(coll), arr);
            }
            g_array_append_val(arr, b);
        }
    }
    if (json_object_has_member(root, "deviceProperties")) {
        JsonArray *props = json_object_get_array_member(root, "deviceProperties");
        for (guint i = 0; i < json_array_get_length(props); i++) {
            JsonObject *p = json_array_get_object_element(props, i);
            if (json_object_get_int_member(p, "id") == device || (i == 0 && r->gpu == NULL)) {
                g_free(r->gpu);
                r->gpu = g_strdup(json_object_get_string_member(p, "name"));
            }
        }
    }
}

static int
cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void
check_against_reference(const char *path)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(TpsTrace) trace = tps_trace_load(path, &error);
    ck_assert_msg(trace != NULL, "%s", error ? error->message : "");
    ck_assert_int_eq(tps_trace_format(trace), TPS_TRACE_KINETO);
    g_autoptr(TpsTraceSummary) s = tps_trace_summarize(trace);
    Ref r;
    ref_scan(path, &r);

    ck_assert_pstr_eq(s->gpu, r.gpu);
    for (guint c = 0; c < TPS_KERNEL_CLASS_COUNT; c++) {
        ck_assert_uint_eq(s->classes[c].count, r.classes[c].count);
        ck_assert_double_eq_tol(s->classes[c].total_ms, r.classes[c].total_us * 1e-3, 1e-6);
    }
    /* Streams: kernel counts, and busy time equal to the kernels' time
     * (no two kernels of one stream overlap in these files). */
    ck_assert_uint_eq(s->n_streams, g_hash_table_size(r.streams));
    for (guint i = 0; i < s->n_streams; i++) {
        g_autofree char *key = g_strdup_printf("%" G_GINT64_FORMAT ":%" G_GINT64_FORMAT,
                                               s->streams[i].device, s->streams[i].stream);
        RefFig *f = g_hash_table_lookup(r.streams, key);
        ck_assert_msg(f != NULL, "stream %s", key);
        ck_assert_uint_eq(s->streams[i].kernels, f->count);
        ck_assert_double_eq_tol(s->streams[i].busy_ms, f->total_us * 1e-3, 1e-6);
    }
    /* NCCL kernels per stream, from the importer's kernels. */
    g_autoptr(GHashTable) mine = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    guint n;
    const TpsTraceKernel *ks = tps_trace_kernels(trace, &n);
    for (guint i = 0; i < n; i++) {
        if (i > 0 && ks[i].device == ks[i - 1].device && ks[i].stream == ks[i - 1].stream)
            ck_assert(ks[i].ts_ns >= ks[i - 1].ts_ns);
        if (ks[i].klass != TPS_KERNEL_NCCL)
            continue;
        g_autofree char *key =
            g_strdup_printf("%" G_GINT64_FORMAT ":%" G_GINT64_FORMAT, ks[i].device, ks[i].stream);
        RefFig *f = ref_fig(mine, key);
        f->count++, f->total_us += ks[i].dur_us;
    }
    ck_assert_uint_eq(g_hash_table_size(mine), g_hash_table_size(r.nccl_streams));
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, r.nccl_streams);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        RefFig *f = g_hash_table_lookup(mine, k), *want = v;
        ck_assert_msg(f != NULL, "NCCL stream %s", (char *)k);
        ck_assert_uint_eq(f->count, want->count);
        ck_assert_double_eq_tol(f->total_us, want->total_us, 1e-3);
    }
    /* Collectives by type. */
    ck_assert_uint_eq(s->n_collectives, g_hash_table_size(r.colls));
    for (guint i = 0; i < s->n_collectives; i++) {
        const TpsCollectiveFigures *c = &s->collectives[i];
        RefFig *f = g_hash_table_lookup(r.colls, c->name);
        ck_assert_msg(f != NULL, "collective %s", c->name);
        ck_assert_uint_eq(c->count, f->count);
        GArray *b = g_hash_table_lookup(r.coll_bytes, c->name);
        if (b == NULL) {
            ck_assert(isnan(c->median_bytes));
            ck_assert(isnan(c->busbw_gbps));
        } else {
            qsort(b->data, b->len, sizeof(double), cmp_dbl);
            double *d = (double *)(void *)b->data;
            double med = b->len % 2 ? d[b->len / 2] : 0.5 * (d[b->len / 2 - 1] + d[b->len / 2]);
            ck_assert_double_eq_tol(c->median_bytes, med, 0.5);
            ck_assert(c->busbw_gbps > 0);
        }
    }
    ck_assert(s->comm_overlapped_fraction >= 0.0 && s->comm_overlapped_fraction <= 1.0);
    ref_clear(&r);
}

START_TEST(test_shared_reference)
{
    g_autofree char *path = shared_trace(_i);
    if (path == NULL)
        return;
    check_against_reference(path);
}
END_TEST

/* What the README says of the two large traces. */
START_TEST(test_shared_known)
{
    g_autofree char *control = shared_trace(6);
    g_autofree char *rank0 = shared_trace(5);
    if (control == NULL)
        return;
    g_autoptr(GError) error = NULL;
    g_autoptr(TpsTrace) t = tps_trace_load(control, &error);
    ck_assert_msg(t != NULL, "%s", error ? error->message : "");
    g_autoptr(TpsTraceSummary) s = tps_trace_summarize(t);
    ck_assert_uint_eq(s->classes[TPS_KERNEL_NCCL].count, 60);
    ck_assert_uint_eq(s->n_collectives, 2);
    ck_assert_str_eq(s->collectives[0].name, "AllReduce");
    ck_assert_uint_eq(s->collectives[0].count, 18);
    ck_assert_str_eq(s->collectives[0].algorithms, "RING/LL");
    ck_assert_str_eq(s->collectives[1].name, "SendRecv");
    ck_assert_uint_eq(s->collectives[1].count, 42);
    ck_assert_str_eq(s->collectives[1].algorithms, "RING/SIMPLE");
    ck_assert(s->gemm_shaped > 2000); /* aten::mm / addmm shapes through the launches */
    /* Every shaped GEMM links to a matrix-multiply op. */
    guint n;
    const TpsTraceKernel *ks = tps_trace_kernels(t, &n);
    for (guint i = 0; i < n; i++)
        if (ks[i].m > 0)
            ck_assert(g_str_has_prefix(ks[i].op, "aten::"));

    g_autoptr(TpsTrace) r0 = tps_trace_load(rank0, &error);
    ck_assert_msg(r0 != NULL, "%s", error ? error->message : "");
    g_autoptr(TpsTraceSummary) s0 = tps_trace_summarize(r0);
    ck_assert_str_eq(s0->gpu, "NVIDIA A100-SXM4-80GB");
    ck_assert_uint_eq(s0->classes[TPS_KERNEL_GEMM].count, 103);
    ck_assert_uint_eq(s0->classes[TPS_KERNEL_NCCL].count, 80);
    ck_assert_uint_eq(s0->n_collectives, 1);
    ck_assert_str_eq(s0->collectives[0].name, "SendRecv");
    guint nccl_streams = 0;
    for (guint i = 0; i < s0->n_streams; i++) {
        gboolean nccl = FALSE;
        const TpsTraceKernel *k0 = tps_trace_kernels(r0, &n);
        for (guint j = 0; j < n && !nccl; j++)
            nccl = k0[j].stream == s0->streams[i].stream && k0[j].klass == TPS_KERNEL_NCCL;
        nccl_streams += nccl;
    }
    ck_assert_uint_eq(nccl_streams, 3);
}
END_TEST

/* The DDP file: message sizes from args, float timestamps, newer linking. */
START_TEST(test_shared_ddp_sizes)
{
    g_autofree char *path = shared_trace(4);
    if (path == NULL)
        return;
    g_autoptr(GError) error = NULL;
    g_autoptr(TpsTrace) t = tps_trace_load(path, &error);
    ck_assert_msg(t != NULL, "%s", error ? error->message : "");
    guint n, seen = 0;
    gboolean exact = FALSE;
    const TpsTraceKernel *ks = tps_trace_kernels(t, &n);
    for (guint i = 0; i < n; i++) {
        if (ks[i].klass != TPS_KERNEL_NCCL)
            continue;
        seen++;
        ck_assert_uint_eq(ks[i].group_size, 2);
        ck_assert(ks[i].bytes > 0 && ks[i].bytes % 4 == 0);
        ck_assert_str_eq(ks[i].algorithm, "RING");
        ck_assert_str_eq(ks[i].protocol, "LL");
        /* Kernel ts 4458677009853.422 us: kept to the nanosecond. */
        exact |= ks[i].ts_ns == G_GINT64_CONSTANT(4458677009853422) && ks[i].dur_ns == 2636669;
    }
    ck_assert_uint_eq(seen, 21);
    ck_assert(exact);
    g_autoptr(TpsTraceSummary) s = tps_trace_summarize(t);
    /* AllReduce over 2 ranks: busbw = algbw (factor 1). */
    double bytes = 0, ns = 0;
    for (guint i = 0; i < n; i++)
        if (ks[i].klass == TPS_KERNEL_NCCL && strcmp(ks[i].collective, "AllReduce") == 0)
            bytes += (double)ks[i].bytes, ns += (double)ks[i].dur_ns;
    ck_assert_str_eq(s->collectives[0].name, "AllReduce");
    ck_assert_double_eq_tol(s->collectives[0].busbw_gbps, bytes / ns, 1e-9);
}
END_TEST

/* gzip and plain: one summary. */
START_TEST(test_gzip_and_plain)
{
    g_autofree char *path = shared_trace(_i);
    if (path == NULL)
        return;
    g_autoptr(GBytes) plain = read_json_bytes(path);
    gsize gz_len;
    g_autofree char *gz = read_file_bytes(path, &gz_len);
    g_autoptr(GError) error = NULL;
    g_autoptr(TpsTrace) a = tps_trace_load_data(gz, gz_len, "t.json", &error);
    ck_assert_msg(a != NULL, "%s", error ? error->message : "");
    gsize plain_len;
    const void *plain_data = g_bytes_get_data(plain, &plain_len);
    g_autoptr(TpsTrace) b = tps_trace_load_data(plain_data, plain_len, "t.json", &error);
    ck_assert_msg(b != NULL, "%s", error ? error->message : "");
    g_autoptr(TpsTraceSummary) sa = tps_trace_summarize(a);
    g_autoptr(TpsTraceSummary) sb = tps_trace_summarize(b);
    g_autofree char *ja = tps_trace_summary_to_json(sa);
    g_autofree char *jb = tps_trace_summary_to_json(sb);
    ck_assert_str_eq(ja, jb);
    g_autofree char *ta = tps_trace_summary_to_table(sa);
    g_autofree char *tb = tps_trace_summary_to_table(sb);
    ck_assert_str_eq(ta, tb);

    /* And through files: a plain copy on disk. */
    g_autofree char *dir = g_dir_make_tmp("tpsim-trace-XXXXXX", NULL);
    g_autofree char *copy = g_build_filename(dir, "t.json", NULL);
    ck_assert(g_file_set_contents(copy, plain_data, (gssize)plain_len, NULL));
    g_autoptr(TpsTrace) c = tps_trace_load(copy, &error);
    ck_assert_msg(c != NULL, "%s", error ? error->message : "");
    g_autoptr(TpsTraceSummary) sc = tps_trace_summarize(c);
    g_autofree char *jc = tps_trace_summary_to_json(sc);
    ck_assert_str_eq(ja, jc);
    g_unlink(copy);
    g_rmdir(dir);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Summary JSON keys                                                       */

static void
assert_members(JsonObject *o, const char *const *want, guint n_want, const char *where)
{
    ck_assert_msg(json_object_get_size(o) == n_want, "%s: %u members", where,
                  json_object_get_size(o));
    for (guint i = 0; i < n_want; i++)
        ck_assert_msg(json_object_has_member(o, want[i]), "%s: no %s", where, want[i]);
}

static void
check_json_keys(const char *json)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) error = NULL;
    ck_assert_msg(json_parser_load_from_data(parser, json, -1, &error), "%s", json);
    JsonObject *root = json_node_get_object(json_parser_get_root(parser));
    static const char *const top[] = {"file",        "gpu",     "classes",
                                      "collectives", "streams", "comm_overlapped_fraction"};
    assert_members(root, top, G_N_ELEMENTS(top), "top");
    JsonObject *classes = json_object_get_object_member(root, "classes");
    static const char *const cls[] = {"gemm", "nccl", "other"};
    static const char *const fig[] = {"count", "total_ms"};
    assert_members(classes, cls, 3, "classes");
    for (guint i = 0; i < 3; i++)
        assert_members(json_object_get_object_member(classes, cls[i]), fig, 2, cls[i]);
    static const char *const coll[] = {"name", "count", "median_us", "median_bytes", "busbw_GBps"};
    JsonArray *colls = json_object_get_array_member(root, "collectives");
    for (guint i = 0; i < json_array_get_length(colls); i++)
        assert_members(json_array_get_object_element(colls, i), coll, 5, "collective");
    static const char *const st[] = {"device", "stream", "kernels", "busy_ms"};
    JsonArray *streams = json_object_get_array_member(root, "streams");
    for (guint i = 0; i < json_array_get_length(streams); i++)
        assert_members(json_array_get_object_element(streams, i), st, 4, "stream");
    ck_assert(JSON_NODE_HOLDS_VALUE(json_object_get_member(root, "comm_overlapped_fraction")));
}

START_TEST(test_json_keys)
{
    g_autofree char *path = shared_trace(_i);
    if (path == NULL)
        return;
    g_autoptr(GError) error = NULL;
    g_autoptr(TpsTrace) t = tps_trace_load(path, &error);
    ck_assert_msg(t != NULL, "%s", error ? error->message : "");
    g_autoptr(TpsTraceSummary) s = tps_trace_summarize(t);
    g_autofree char *json = tps_trace_summary_to_json(s);
    check_json_keys(json);
    g_autofree char *base = g_path_get_basename(path);
    ck_assert_str_eq(s->file, base);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Synthetic traces                                                        */

/* Newer NCCL names, nanosecond float timestamps near 1.7e15 us, both ways
 * of linking, escapes, overlap. Device 0: GEMM [0, 100) us on stream 7,
 * all-gather [50, 250) on stream 20: overlapped 50 of 200 us; a second
 * all-gather [300, 400) alone. */
static const char synthetic[] =
    "{\"schemaVersion\": 1, \"deviceProperties\": [{\"id\": 1, \"name\": \"Other GPU\"},"
    " {\"id\": 0, \"name\": \"NVIDIA A100-SXM4-80GB\", \"numSms\": 108}],\n"
    " \"traceName\": \"x \\\"quoted\\\" \\u00e9\\ud83d\\ude00\", \"nested\": [[[{}]], null, true, "
    "-1.5e3],\n"
    " \"traceEvents\": [\n"
    "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::linear\", \"pid\": 9, \"tid\": 9,"
    "   \"ts\": 1700000000000000, \"dur\": 30, \"args\": {\"External id\": 5,"
    "   \"Input Dims\": [[4, 2048, 1024], [3072, 1024], [3072]]}},\n"
    "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::addmm\", \"pid\": 9, \"tid\": 9,"
    "   \"ts\": 1700000000000001, \"dur\": 20, \"args\": {\"External id\": 6,"
    "   \"Input Dims\": [[3072], [8192, 1024], [1024, 3072], [], []]}},\n"
    "  {\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 9, "
    "\"tid\": 9,"
    "   \"ts\": 1700000000000002, \"dur\": 5, \"args\": {\"correlation\": 77, \"External id\": "
    "6}},\n"
    "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n\","
    "   \"pid\": 0, \"tid\": 7, \"ts\": 1700000000000010.123, \"dur\": 100.0,"
    "   \"args\": {\"correlation\": 77, \"External id\": 77, \"device\": 0}},\n"
    "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::bmm\", \"pid\": 9, \"tid\": 9,"
    "   \"ts\": 1700000000000500, \"dur\": 20, \"args\": {\"External id\": 8,"
    "   \"Input Dims\": [[16, 128, 64], [16, 64, 256]]}},\n"
    "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ampere_sgemm_128x64_nn\","
    "   \"pid\": 0, \"tid\": 7, \"ts\": 1700000000000600, \"dur\": 10,"
    "   \"args\": {\"correlation\": 99, \"External id\": 8}},\n"
    "  {\"ph\": \"X\", \"cat\": \"kernel\","
    "   \"name\": \"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)\","
    "   \"pid\": 0, \"tid\": 20, \"ts\": 1700000000000060.123, \"dur\": 200,"
    "   \"args\": {\"In msg nelems\": 1048576, \"Out msg nelems\": 8388608, \"Group size\": 8,"
    "   \"dtype\": \"BFloat16\"}},\n"
    "  {\"ph\": \"X\", \"cat\": \"kernel\","
    "   \"name\": \"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)\","
    "   \"pid\": 0, \"tid\": 20, \"ts\": 1700000000000310.123, \"dur\": 100,"
    "   \"args\": {\"In msg nelems\": 1048576, \"Out msg nelems\": 8388608, \"Group size\": 8,"
    "   \"dtype\": \"BFloat16\"}},\n"
    "  {\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy DtoD\", \"pid\": 0, \"tid\": 7,"
    "   \"ts\": 1700000000001000, \"dur\": 10, \"args\": {\"bytes\": 100}},\n"
    "  {\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 0, \"tid\": 20, \"args\": {\"name\": "
    "\"stream 20 \"}},\n"
    "  {\"ph\": \"f\", \"id\": 77, \"pid\": 0, \"tid\": 7, \"ts\": 1700000000000010, \"cat\": "
    "\"ac2g\","
    "   \"name\": \"ac2g\", \"bp\": \"e\"}\n"
    " ]\n}\n";

/* ---- traces/gemm of `tpsim validate`: a split GEMM's two kernels ----
 *
 * One aten::mm of 64 x 16384 by 16384 x 64 run as cuBLAS's split-k does:
 * the TF32 tensor-op GEMM kernel (50 us) and its splitKreduce_kernel (10
 * us), both linked to the op. The GEMM model's time for the op covers the
 * two kernels (cost/gemm.c), so the set's point is 60 us measured against
 * one prediction. Hardware: one 64x64 tile at efficiency 1, no split, no
 * latency or k overhead; TF32's 156 TFLOP/s over 108 SMs is 1444.44
 * FLOP/ns per SM: 2 x 64 x 64 x 16384 / 1444.44 = 92920.4 ns of MMA (the
 * operand stream, 2 x 128 x 16384 / 66.8 = 62789.0 ns, is shorter), plus
 * 2 x 64 x 64 / 7214.4 = 1.1 ns of store: 92922 ns (times round up); the
 * 4202496 bytes through HBM take 2290 ns. Predicting the reduction kernel
 * as a GEMM of the op's shape too would add one at FP32's 19.5 TFLOP/s (its
 * name is no tensor-op kernel's), 8 x 92.92 us: 836.283 us in all. */
static const char split_trace[] =
    "{\"traceEvents\": [\n"
    "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 9, \"tid\": 9,"
    "   \"ts\": 100, \"dur\": 30, \"args\": {\"External id\": 5,"
    "   \"Input Dims\": [[64, 16384], [16384, 64]]}},\n"
    "  {\"ph\": \"X\", \"cat\": \"kernel\","
    "   \"name\": \"cutlass_80_tensorop_s1688gemm_64x64_32x6_tn_align4\","
    "   \"pid\": 0, \"tid\": 7, \"ts\": 200, \"dur\": 50, \"args\": {\"External id\": 5}},\n"
    "  {\"ph\": \"X\", \"cat\": \"kernel\","
    "   \"name\": \"void splitKreduce_kernel<float, float, float, float, true, false, false>()\","
    "   \"pid\": 0, \"tid\": 7, \"ts\": 260, \"dur\": 10, \"args\": {\"External id\": 5}}\n"
    " ]\n}\n";

START_TEST(test_validate_split_reduce)
{
    g_autofree char *dir = tps_test_tmpdir("tps-trace-validate");
    g_autofree char *calib = g_build_filename(dir, "calibration", NULL);
    g_autofree char *traces = g_build_filename(dir, "traces", NULL);
    g_autofree char *one = g_build_filename(traces, "one", NULL);
    ck_assert_int_eq(g_mkdir_with_parents(calib, 0755), 0);
    ck_assert_int_eq(g_mkdir_with_parents(one, 0755), 0);
    g_autofree char *spec = g_build_filename(calib, "public-microbenchmarks.yaml", NULL);
    g_autofree char *json = g_build_filename(one, "split.json", NULL);
    ck_assert(g_file_set_contents(
        spec, "a100_sxm4:\n  spec:\n    dense_tflops: {tf32: 156, fp32: 19.5}\n", -1, NULL));
    ck_assert(g_file_set_contents(json, split_trace, -1, NULL));

    TpsHardware hw = {
        .sms = 108,
        .peak_tflops = {312, 312},
        .hbm_gbps = 2039,
        .hbm_efficiency = 0.90,
        .sm_mem_gbps = 66.8,
        .l2_mib = 40,
        .gemm_store_exposed = 1.0,
        .split_k_max = 1,
        .split_k_min_k = 256,
        .n_tiles = 1,
        .tiles = {{64, 64, 1.0}},
    };
    TpsValidateContext ctx = {.hw = &hw, .calibration_dir = calib, .traces_dir = traces};
    guint n_rows;
    const TpsValidateDataset *rows = tps_trace_validate_datasets(&n_rows);
    g_autoptr(GPtrArray) sets = g_ptr_array_new_with_free_func((GDestroyNotify)tps_validate_set_free);
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_validate_run(&ctx, rows, n_rows, sets, &error), "%s",
                  error ? error->message : "");
    const TpsValidateSet *gemm = NULL;
    for (guint i = 0; i < sets->len; i++)
        if (strcmp(((TpsValidateSet *)sets->pdata[i])->name, "traces/gemm") == 0)
            gemm = sets->pdata[i];
    ck_assert_ptr_nonnull(gemm);
    ck_assert_uint_eq(gemm->points->len, 1);
    const TpsValidatePoint *p = &g_array_index(gemm->points, TpsValidatePoint, 0);
    ck_assert_double_eq_tol(p->measured, 60.0, 1e-9);
    ck_assert_double_eq_tol(p->predicted, 92.922, 1e-9);
    tps_test_remove_dir(dir);
}
END_TEST

START_TEST(test_synthetic)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(TpsTrace) t = tps_trace_load_data(synthetic, strlen(synthetic), "syn.json", &error);
    ck_assert_msg(t != NULL, "%s", error ? error->message : "");
    ck_assert_str_eq(tps_trace_gpu_name(t), "NVIDIA A100-SXM4-80GB");
    ck_assert_uint_eq(tps_trace_gpu_sms(t), 108);
    ck_assert_str_eq(tps_trace_stream_name(t, 0, 20), "stream 20");
    guint n;
    const TpsTraceKernel *ks = tps_trace_kernels(t, &n);
    ck_assert_uint_eq(n, 4); /* the memcpy is no kernel */
    ck_assert_int_eq(tps_trace_start_ns(t), G_GINT64_CONSTANT(1700000000000010123));
    /* Sorted by (device, stream, ts): two GEMMs on 7, then the NCCL ones. */
    ck_assert_int_eq(ks[0].klass, TPS_KERNEL_GEMM);
    ck_assert_int_eq(ks[0].ts_ns, G_GINT64_CONSTANT(1700000000000010123));
    ck_assert_int_eq(ks[0].dur_ns, 100000);
    ck_assert_double_eq_tol(ks[0].ts_us, 0.0, 1e-9);
    /* Linked through the launch: the innermost op is addmm, not linear. */
    ck_assert_str_eq(ks[0].op, "aten::addmm");
    ck_assert_int_eq(ks[0].m, 8192);
    ck_assert_int_eq(ks[0].k, 1024);
    ck_assert_int_eq(ks[0].n, 3072);
    /* Linked by External id (newer Kineto): a bmm. */
    ck_assert_str_eq(ks[1].op, "aten::bmm");
    ck_assert_int_eq(ks[1].batch, 16);
    ck_assert_int_eq(ks[1].m, 128);
    ck_assert_int_eq(ks[1].k, 64);
    ck_assert_int_eq(ks[1].n, 256);
    ck_assert_double_eq_tol(ks[1].ts_us, 589.877, 1e-9);
    ck_assert_int_eq(ks[2].klass, TPS_KERNEL_NCCL);
    ck_assert_str_eq(ks[2].collective, "AllGather");
    ck_assert_str_eq(ks[2].algorithm, "RING");
    ck_assert_str_eq(ks[2].protocol, "LL");
    ck_assert_int_eq(ks[2].bytes, 8388608 * 2);
    ck_assert_uint_eq(ks[2].group_size, 8);
    ck_assert_double_eq_tol(ks[2].ts_us, 50.0, 1e-9);

    g_autoptr(TpsTraceSummary) s = tps_trace_summarize(t);
    ck_assert_uint_eq(s->classes[TPS_KERNEL_GEMM].count, 2);
    ck_assert_double_eq_tol(s->classes[TPS_KERNEL_GEMM].total_ms, 0.110, 1e-12);
    ck_assert_uint_eq(s->classes[TPS_KERNEL_NCCL].count, 2);
    ck_assert_double_eq_tol(s->classes[TPS_KERNEL_NCCL].total_ms, 0.300, 1e-12);
    ck_assert_double_eq_tol(s->comm_overlapped_fraction, 50.0 / 300.0, 1e-12);
    ck_assert_uint_eq(s->n_collectives, 1);
    ck_assert_double_eq_tol(s->collectives[0].median_us, 150.0, 1e-9);
    ck_assert_double_eq_tol(s->collectives[0].median_bytes, 16777216.0, 1e-9);
    /* 2 x 16 MiB x 7/8 over 300 us. */
    ck_assert_double_eq_tol(s->collectives[0].busbw_gbps, 2 * 16777216.0 * 0.875 / 300e3, 1e-9);
    ck_assert_uint_eq(s->n_streams, 2);
    ck_assert_double_eq_tol(s->streams[0].busy_ms, 0.110, 1e-12);
    ck_assert_double_eq_tol(s->streams[1].busy_ms, 0.300, 1e-12);
    /* TFLOP/s of the shaped GEMMs: (2*8192*1024*3072 + 2*16*128*64*256) / 110 us. */
    double flops = 2.0 * 8192 * 1024 * 3072 + 2.0 * 16 * 128 * 64 * 256;
    ck_assert_double_eq_tol(s->gemm_tflops, flops / 110e-6 / 1e12, 1e-9);
    g_autofree char *json = tps_trace_summary_to_json(s);
    check_json_keys(json);
    ck_assert_ptr_nonnull(strstr(json, "\"busbw_GBps\": 97.867"));
}
END_TEST

/* A trace as `tpsim run --trace` writes it: Chrome JSON (object or array
 * format), one process per rank, one thread per stream named by metadata,
 * X events whose category is the engine's task kind. */
static const char tpsim_trace[] =
    "{\"traceEvents\": [\n"
    " {\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 0, \"args\": {\"name\": \"GPU0\"}},\n"
    " {\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 0, \"tid\": 1, \"args\": {\"name\": "
    "\"main\"}},\n"
    " {\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 0, \"tid\": 2, \"args\": {\"name\": "
    "\"nccl\"}},\n"
    " {\"ph\": \"X\", \"cat\": \"gemm\", \"name\": \"l1.qkv_fprop\", \"pid\": 0, \"tid\": 1,"
    "  \"ts\": 0.000, \"dur\": 412.345, \"args\": {\"flops\": 1e12}},\n"
    " {\"ph\": \"X\", \"cat\": \"memory\", \"name\": \"l1.ln\", \"pid\": 0, \"tid\": 1,"
    "  \"ts\": 412.345, \"dur\": 10.001},\n"
    " {\"ph\": \"X\", \"cat\": \"comm\", \"name\": \"l1.ag\", \"pid\": 0, \"tid\": 2,"
    "  \"ts\": 100.5, \"dur\": 200, \"args\": {\"bytes\": 1048576}},\n"
    " {\"ph\": \"X\", \"cat\": \"flow\", \"name\": \"l1.ag.flow\", \"pid\": 0, \"tid\": 3,"
    "  \"ts\": 100.5, \"dur\": 200},\n"
    " {\"ph\": \"X\", \"cat\": \"copy\", \"name\": \"l1.copy\", \"pid\": 0, \"tid\": 4,"
    "  \"ts\": 100.5, \"dur\": 20}\n"
    "]}\n";

START_TEST(test_tpsim_format)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(TpsTrace) t =
        tps_trace_load_data(tpsim_trace, strlen(tpsim_trace), "run.json", &error);
    ck_assert_msg(t != NULL, "%s", error ? error->message : "");
    ck_assert_int_eq(tps_trace_format(t), TPS_TRACE_TPSIM);
    ck_assert_ptr_null(tps_trace_gpu_name(t));
    ck_assert_str_eq(tps_trace_stream_name(t, 0, 1), "main");
    g_autoptr(TpsTraceSummary) s = tps_trace_summarize(t);
    ck_assert_uint_eq(s->classes[TPS_KERNEL_GEMM].count, 1);
    ck_assert_uint_eq(s->classes[TPS_KERNEL_OTHER].count, 1);
    ck_assert_uint_eq(s->classes[TPS_KERNEL_NCCL].count, 1);
    ck_assert_double_eq_tol(s->classes[TPS_KERNEL_GEMM].total_ms, 0.412345, 1e-12);
    ck_assert_uint_eq(s->n_streams, 2);
    ck_assert_str_eq(s->streams[0].name, "main");
    ck_assert_double_eq_tol(s->streams[0].busy_ms, 0.422346, 1e-12);
    ck_assert_double_eq_tol(s->comm_overlapped_fraction, 1.0, 1e-12);
    ck_assert_uint_eq(s->n_collectives, 1);
    ck_assert_str_eq(s->collectives[0].name, "AllGather");

    /* The JSON Array Format (a bare array of events) is read too. */
    const char *array = strchr(tpsim_trace, '[');
    gsize len = strlen(array) - 2; /* drop the closing "}\n" */
    g_autoptr(TpsTrace) u = tps_trace_load_data(array, len, "run.json", &error);
    ck_assert_msg(u != NULL, "%s", error ? error->message : "");
    guint n;
    tps_trace_kernels(u, &n);
    ck_assert_uint_eq(n, 3);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Errors                                                                  */

static const struct {
    const char *text;
    const char *message; /* a part of the message */
} bad_inputs[] = {
    {"", "empty file"},
    {"hello", "not a Kineto trace"},
    {"42", "not a Kineto trace"},
    {"{\"schemaVersion\": 1, \"deviceProperties\": []}", "no \"traceEvents\" array"},
    {"{\"traceEvents\": {}}", "traceEvents is not an array"},
    {"{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\"", "unexpected end of file"},
    {"{\"traceEvents\": [{\"ph\": \"X\" \"cat\": 1}]}", "invalid JSON at byte"},
    {"{\"traceEvents\": [], \"x\": tru}", "invalid JSON"},
    {"{\"traceEvents\": [\"\\q\"]}", "bad escape"},
    {"{\"traceEvents\": []} x", "data after the top-level value"},
    {"{\"traceEvents\": "
     "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
     "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"
     "]]}",
     "nesting too deep"},
    /* Issue 13, D7: values whose sums or products wrapped silently. */
    {"{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, "
     "\"tid\": 7, \"ts\": 9150000000000000, \"dur\": 1}]}",
     "event ending at byte 112: ts '9150000000000000' is out of range"},
    {"{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, "
     "\"tid\": 7, \"ts\": 0, \"dur\": 9.15e15}]}",
     "dur '9.15e15' is out of range"},
    {"{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, "
     "\"tid\": 7, \"ts\": -1e300, \"dur\": 1}]}",
     "ts '-1e300' is out of range"},
    /* Issue 24, 13: a negative duration counted as 0, a timestamp before
     * the epoch gave a trace of two kernels a span of 54 years. */
    {"{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, "
     "\"tid\": 7, \"ts\": 1, \"dur\": -5}]}",
     "event ending at byte 98: dur '-5' is out of range"},
    {"{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, "
     "\"tid\": 7, \"ts\": 1700000000000000, \"dur\": 5},"
     "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, "
     "\"tid\": 7, \"ts\": -9.2e12, \"dur\": 5}]}",
     "ts '-9.2e12' is out of range"},
    {"{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", "
     "\"pid\": 0, \"tid\": 7, \"ts\": 1, \"dur\": 1e18}]}",
     "dur '1e18' is out of range"},
    /* Each duration in range, their sum not: 3 x 2^61 ns. */
    {"{\"traceEvents\": ["
     "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, "
     "\"ts\": 0, \"dur\": 2305843009213693.952},"
     "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 8, "
     "\"ts\": 0, \"dur\": 2305843009213693.952},"
     "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 9, "
     "\"ts\": 0, \"dur\": 2305843009213693.952}]}",
     "the sum of the kernels' durations"},
    {"{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", "
     "\"name\": \"ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)\", \"pid\": 0, "
     "\"tid\": 7, \"ts\": 0, \"dur\": 1, \"args\": {\"In msg nelems\": 4611686018427387904, "
     "\"Out msg nelems\": 1, \"dtype\": \"Float\"}}]}",
     "the message size '4611686018427387904' is out of range"},
};

/* Issue 13, D7: dimensions whose product does not fit leave the shape
 * unknown (it wrapped to a nonsense shape before); the largest timestamps
 * and durations in range load exactly. */
static const char huge_dims[] =
    "{\"traceEvents\": [\n"
    "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 9, \"tid\": 9,"
    "   \"ts\": 10, \"dur\": 30, \"args\": {\"External id\": 5,"
    "   \"Input Dims\": [[2199023255552, 4], [4, 8]]}},\n"
    "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::linear\", \"pid\": 9, \"tid\": 9,"
    "   \"ts\": 100, \"dur\": 30, \"args\": {\"External id\": 6,"
    "   \"Input Dims\": [[4294967297, 4294967297, 64], [8, 64]]}},\n"
    "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ampere_sgemm_128x64_nn\","
    "   \"pid\": 0, \"tid\": 7, \"ts\": 12, \"dur\": 10, \"args\": {\"External id\": 5}},\n"
    "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ampere_sgemm_128x64_nn\","
    "   \"pid\": 0, \"tid\": 7, \"ts\": 102, \"dur\": 10, \"args\": {\"External id\": 6}},\n"
    "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 1, \"tid\": 7,"
    "   \"ts\": 2305843009213693.952, \"dur\": 2305843009213693.952},\n"
    "  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 1, \"tid\": 8,"
    "   \"ts\": 0, \"dur\": 1}\n"
    "]}\n";

START_TEST(test_huge_values)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(TpsTrace) t = tps_trace_load_data(huge_dims, strlen(huge_dims), "h.json", &error);
    ck_assert_msg(t != NULL, "%s", error ? error->message : "");
    guint n;
    const TpsTraceKernel *ks = tps_trace_kernels(t, &n);
    ck_assert_uint_eq(n, 4);
    /* Linked to their ops, but no shape: 2^41 rows are beyond a
     * dimension's range, and (2^32 + 1)^2 rows wrapped to 2^33 + 1. */
    ck_assert_str_eq(ks[0].op, "aten::mm");
    ck_assert_int_eq(ks[0].m, 0);
    ck_assert_str_eq(ks[1].op, "aten::linear");
    ck_assert_int_eq(ks[1].m, 0);
    ck_assert_int_eq(ks[2].ts_ns, G_GINT64_CONSTANT(2305843009213693952));
    ck_assert_int_eq(ks[2].dur_ns, G_GINT64_CONSTANT(2305843009213693952));
    ck_assert_int_eq(ks[3].ts_ns, 0);
    /* The summary's span: 2 x 2^61 ns, in ms. */
    g_autoptr(TpsTraceSummary) s = tps_trace_summarize(t);
    ck_assert_double_eq_tol(s->span_ms, 2.0 * 2305843009213693952.0 * 1e-6, 1e3);
    ck_assert(s->span_ms > 0);
}
END_TEST

/* A trace of `n` kernels on one stream, each of a collective of its own. */
static TpsTrace *
many_collectives(guint n)
{
    GString *text = g_string_new("{\"traceEvents\": [");
    for (guint i = 0; i < n; i++)
        g_string_append_printf(text,
                               "%s{\"ph\": \"X\", \"cat\": \"comm\", \"name\": \"c\", \"pid\": 0, "
                               "\"tid\": 1, \"ts\": %u, \"dur\": 1, \"args\": {\"collective\": "
                               "\"C%05u\"}}",
                               i ? "," : "", 2 * i, i);
    g_string_append(text, "]}");
    g_autoptr(GError) error = NULL;
    TpsTrace *t = tps_trace_load_data(text->str, text->len, "many.json", &error);
    g_string_free(text, TRUE);
    ck_assert_msg(t != NULL, "%s", error ? error->message : "");
    return t;
}

/* The CPU time of this thread, in seconds: unlike the wall clock, it does
 * not grow while other processes hold the cores (the ratio below failed
 * under a load average of 20 with the wall clock). */
static double
thread_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The fastest of three summaries of `t`, in seconds of CPU time. */
static double
summary_seconds(const TpsTrace *t)
{
    double best = G_MAXDOUBLE;
    for (int r = 0; r < 3; r++) {
        const double t0 = thread_seconds();
        TpsTraceSummary *s = tps_trace_summarize(t);
        best = MIN(best, thread_seconds() - t0);
        tps_trace_summary_free(s);
    }
    return best;
}

/* Issue 13, D8: the summary is linear in the kernels, also when each has a
 * collective of its own. Four times the kernels must cost about four times
 * as long, not sixteen (the quadratic version: 0.7 s for 15,000 kernels,
 * 11 s for 60,000); a ratio bound holds on slow machines and under
 * valgrind alike. The figures of the first and last names are checked too. */
START_TEST(test_summary_many_collectives)
{
    g_autoptr(TpsTrace) small = many_collectives(15000);
    g_autoptr(TpsTrace) large = many_collectives(60000);
    double a = summary_seconds(small), b = summary_seconds(large);
    printf("# summary of 15000 and 60000 collectives: %.3f s, %.3f s\n", a, b);
    ck_assert_msg(b < 8.0 * a + 0.05, "4x the kernels took %.1fx as long", b / a);
    g_autoptr(TpsTraceSummary) s = tps_trace_summarize(large);
    ck_assert_uint_eq(s->n_collectives, 60000);
    ck_assert_str_eq(s->collectives[0].name, "C00000");
    ck_assert_str_eq(s->collectives[59999].name, "C59999");
    ck_assert_uint_eq(s->collectives[59999].count, 1);
    ck_assert_double_eq_tol(s->collectives[59999].median_us, 1.0, 1e-12);
}
END_TEST

START_TEST(test_bad_input)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(TpsTrace) t =
        tps_trace_load_data(bad_inputs[_i].text, strlen(bad_inputs[_i].text), "bad.json", &error);
    ck_assert_ptr_null(t);
    ck_assert(error != NULL && error->domain == TPS_ERROR);
    ck_assert_msg(g_str_has_prefix(error->message, "bad.json: "), "%s", error->message);
    ck_assert_msg(strstr(error->message, bad_inputs[_i].message) != NULL, "%s", error->message);
}
END_TEST

START_TEST(test_truncated_gzip)
{
    g_autofree char *path = shared_trace(4);
    if (path == NULL)
        return;
    gsize len;
    g_autofree char *gz = read_file_bytes(path, &len);
    g_autoptr(GError) error = NULL;
    g_autoptr(TpsTrace) t = tps_trace_load_data(gz, len / 3, "cut.json.gz", &error);
    ck_assert_ptr_null(t);
    ck_assert_int_eq(error->code, TPS_ERROR_IO);
    ck_assert_msg(g_str_has_prefix(error->message, "cut.json.gz: truncated gzip"), "%s",
                  error->message);
    /* Corrupt deflate data. */
    g_clear_error(&error);
    for (gsize i = 100; i < 200; i++)
        gz[i] ^= 0x5a;
    g_autoptr(TpsTrace) u = tps_trace_load_data(gz, len, "bad.json.gz", &error);
    ck_assert_ptr_null(u);
    ck_assert_int_eq(error->code, TPS_ERROR_IO);
    ck_assert_msg(g_str_has_prefix(error->message, "bad.json.gz: "), "%s", error->message);
}
END_TEST

START_TEST(test_missing_file)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(TpsTrace) t = tps_trace_load("/nonexistent/trace.json", &error);
    ck_assert_ptr_null(t);
    ck_assert_int_eq(error->code, TPS_ERROR_IO);
    ck_assert(g_str_has_prefix(error->message, "/nonexistent/trace.json: "));
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Command line                                                            */

static int
run_tpsim(const char *const *args, char **out, char **err)
{
    return tps_test_spawn("TPSIM_BIN", NULL, args, out, err);
}

START_TEST(test_cli)
{
    g_autofree char *path = shared_trace(0);
    if (path == NULL)
        return;
    g_autofree char *out = NULL, *err = NULL;
    const char *json_args[] = {"trace", "summary", path, "--format", "json", NULL};
    int rc = run_tpsim(json_args, &out, &err);
    ck_assert_msg(rc == 0, "%s", err);
    check_json_keys(out);
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err, g_free);
    const char *table_args[] = {"trace", "summary", path, NULL};
    ck_assert_int_eq(run_tpsim(table_args, &out, &err), 0);
    ck_assert_ptr_nonnull(strstr(out, "NVIDIA A100-PG509-200"));
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err, g_free);
    const char *missing[] = {"trace", "summary", "/nonexistent.json", NULL};
    ck_assert_int_eq(run_tpsim(missing, &out, &err), 1);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent.json: "));
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err, g_free);
    const char *usage[] = {"trace", "summary", NULL};
    ck_assert_int_eq(run_tpsim(usage, &out, &err), 2);
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err, g_free);
    const char *format[] = {"trace", "summary", path, "--format", "xml", NULL};
    ck_assert_int_eq(run_tpsim(format, &out, &err), 2);
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err, g_free);
    const char *sub[] = {"trace", "frobnicate", NULL};
    ck_assert_int_eq(run_tpsim(sub, &out, &err), 2);
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err, g_free);
    g_autofree char *dir = g_dir_make_tmp("tpsim-trace-XXXXXX", NULL);
    g_autofree char *notjson = g_build_filename(dir, "x.json", NULL);
    ck_assert(g_file_set_contents(notjson, "not json", -1, NULL));
    const char *bad[] = {"trace", "summary", notjson, NULL};
    ck_assert_int_eq(run_tpsim(bad, &out, &err), 1);
    ck_assert_ptr_nonnull(strstr(err, "x.json: not a Kineto trace"));
    g_clear_pointer(&out, g_free);
    g_clear_pointer(&err, g_free);
    g_autofree char *written = g_build_filename(dir, "s.json", NULL);
    const char *to_file[] = {"trace", "summary",  path,    "--format",
                             "json",  "--output", written, NULL};
    ck_assert_int_eq(run_tpsim(to_file, &out, &err), 0);
    g_autofree char *contents = NULL;
    ck_assert(g_file_get_contents(written, &contents, NULL, NULL));
    check_json_keys(contents);
    g_unlink(written);
    g_unlink(notjson);
    g_rmdir(dir);
}
END_TEST

static Suite *
trace_import_suite(void)
{
    Suite *s = suite_create("trace-import");
    TCase *tc;

    tc = tcase_create("classify");
    tcase_add_loop_test(tc, test_classify, 0, G_N_ELEMENTS(class_cases));
    tcase_add_loop_test(tc, test_nccl_names, 0, G_N_ELEMENTS(nccl_cases));
    tcase_add_test(tc, test_not_nccl);
    tcase_add_test(tc, test_busbw_factor);
    tcase_add_loop_test(tc, test_gemm_dtype, 0, G_N_ELEMENTS(dtype_cases));
    suite_add_tcase(s, tc);

    /* The reference scan parses the whole JSON: the five smaller traces
     * (the two largest are checked against the README's figures). */
    tc = tcase_create("shared-traces");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, test_shared_reference, 0, 5);
    tcase_add_test(tc, test_shared_known);
    tcase_add_test(tc, test_shared_ddp_sizes);
    tcase_add_loop_test(tc, test_json_keys, 0, G_N_ELEMENTS(shared_traces));
    suite_add_tcase(s, tc);

    tc = tcase_create("gzip-and-plain");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, test_gzip_and_plain, 0, 5);
    suite_add_tcase(s, tc);

    tc = tcase_create("synthetic");
    tcase_add_test(tc, test_synthetic);
    tcase_add_test(tc, test_tpsim_format);
    tcase_add_test(tc, test_validate_split_reduce);
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_add_loop_test(tc, test_bad_input, 0, G_N_ELEMENTS(bad_inputs));
    tcase_add_test(tc, test_huge_values);
    tcase_add_test(tc, test_summary_many_collectives);
    tcase_add_test(tc, test_truncated_gzip);
    tcase_add_test(tc, test_missing_file);
    suite_add_tcase(s, tc);

    tc = tcase_create("cli");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_cli);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return tps_test_run(trace_import_suite());
}
