/* Trace datasets of `tpsim validate`: see trace-validate.h.
 *
 * The traces' GEMMs are FP32 models' (none of the files is a transformer
 * in half precision): CUTLASS/cuBLAS tensor-op kernels (`s1688`, `xmma`,
 * `tf32`) run TF32 on the tensor cores, the others (`sgemm`, GEMV) FP32 on
 * the CUDA cores. They are predicted by the GEMM model of the hardware with
 * its peak replaced by the spec rate of that math (calib
 * a100_sxm4.spec.dense_tflops.{tf32,fp32}, read from
 * public-microbenchmarks.yaml); the model knows only 2-byte elements, so
 * the memory-bound floor of these 4-byte GEMMs is half what it should be
 * (docs/validation.md says so beside the figures). A NCCL kernel's duration
 * includes its wait for the peer ranks, which the trace of one rank does
 * not show, so its prediction is the lone collective on an idle ring of its
 * group in one node.
 */
#include "io/trace/trace-validate.h"

#include <string.h>

#include "core/error.h"
#include "cost/collective.h"
#include "cost/kernel-cost.h"
#include "io/trace/trace-import.h"
#include "io/input/yaml-tree.h"

typedef struct {
    char *name; /* folder/file under shared/traces */
    TpsTrace *trace;
} TraceFile;

typedef struct {
    GArray *files; /* TraceFile, sorted by name */
    double tf32_tflops, fp32_tflops;
} TraceData;

static void
trace_data_free(gpointer p)
{
    TraceData *d = p;
    if (d == NULL)
        return;
    for (guint i = 0; i < d->files->len; i++) {
        TraceFile *f = &g_array_index(d->files, TraceFile, i);
        g_free(f->name);
        tps_trace_free(f->trace);
    }
    g_array_unref(d->files);
    g_free(d);
}

static int
cmp_file(gconstpointer a, gconstpointer b)
{
    return strcmp(((const TraceFile *)a)->name, ((const TraceFile *)b)->name);
}

static gboolean
spec_rate(const TpsYamlDoc *doc, const TpsYamlNode *rates, const char *key, double *out,
          GError **error)
{
    const TpsYamlNode *v = rates ? tps_yaml_get(rates, key) : NULL;
    if (v == NULL) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "%s: no a100_sxm4.spec.dense_tflops.%s",
                    doc->file, key);
        return FALSE;
    }
    return tps_yaml_double(doc, v, key, 0.001, 1e6, out, error);
}

/* Every *.json.gz of the folders of ctx->traces_dir, and the spec rates of
 * the calibration file `path`. */
static gpointer
traces_load(const TpsValidateContext *ctx, const char *path, GError **error)
{
    g_autoptr(TpsYamlDoc) doc = tps_yaml_load_file(path, error);
    if (doc == NULL)
        return NULL;
    const TpsYamlNode *a100 = doc->root ? tps_yaml_get(doc->root, "a100_sxm4") : NULL;
    const TpsYamlNode *spec = a100 ? tps_yaml_get(a100, "spec") : NULL;
    const TpsYamlNode *rates = spec ? tps_yaml_get(spec, "dense_tflops") : NULL;
    TraceData *d = g_new0(TraceData, 1);
    d->files = g_array_new(FALSE, FALSE, sizeof(TraceFile));
    if (!spec_rate(doc, rates, "tf32", &d->tf32_tflops, error) ||
        !spec_rate(doc, rates, "fp32", &d->fp32_tflops, error)) {
        trace_data_free(d);
        return NULL;
    }

    g_autoptr(GDir) top = g_dir_open(ctx->traces_dir, 0, NULL);
    if (top == NULL) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_IO, "%s: cannot read the folder", ctx->traces_dir);
        trace_data_free(d);
        return NULL;
    }
    const char *sub;
    while ((sub = g_dir_read_name(top)) != NULL) {
        g_autofree char *dir = g_build_filename(ctx->traces_dir, sub, NULL);
        g_autoptr(GDir) inner = g_dir_open(dir, 0, NULL);
        if (inner == NULL)
            continue; /* a file (README, licence) */
        const char *file;
        while ((file = g_dir_read_name(inner)) != NULL) {
            if (!g_str_has_suffix(file, ".json.gz") && !g_str_has_suffix(file, ".json"))
                continue;
            g_autofree char *full = g_build_filename(dir, file, NULL);
            TpsTrace *trace = tps_trace_load(full, error);
            if (trace == NULL) {
                trace_data_free(d);
                return NULL;
            }
            TraceFile f = {g_strdup_printf("%s/%s", sub, file), trace};
            g_array_append_val(d->files, f);
        }
    }
    g_array_sort(d->files, cmp_file);
    return d;
}

/* TF32 tensor-op kernels by name; everything else FP32 on CUDA cores. */
static gboolean
is_tensor_op(const char *name)
{
    return strstr(name, "s1688") != NULL || strstr(name, "xmma") != NULL ||
           strstr(name, "tf32") != NULL || strstr(name, "tensorop") != NULL;
}

static TpsCollKind
coll_kind(const char *collective, gboolean *ok)
{
    *ok = TRUE;
    if (g_strcmp0(collective, "AllReduce") == 0)
        return TPS_COLL_ALL_REDUCE;
    if (g_strcmp0(collective, "AllGather") == 0)
        return TPS_COLL_ALL_GATHER;
    if (g_strcmp0(collective, "ReduceScatter") == 0)
        return TPS_COLL_REDUCE_SCATTER;
    *ok = FALSE;
    return TPS_COLL_COUNT;
}

static gboolean
traces_eval(const TpsValidateContext *ctx, const TpsValidateDataset *row, gconstpointer data,
            GPtrArray *sets, GError **error)
{
    (void)error;
    const TraceData *d = data;
    g_autofree char *gemm_name = g_strdup_printf("%s/gemm", row->name);
    g_autofree char *nccl_name = g_strdup_printf("%s/nccl", row->name);
    TpsValidateSet *gemm = tps_validate_set_new(gemm_name, row->family, "trace", FALSE);
    TpsValidateSet *nccl = tps_validate_set_new(nccl_name, row->family, "trace", FALSE);
    TpsHardware tf32 = *ctx->hw, fp32 = *ctx->hw; /* shallow: numbers only change */
    tf32.peak_tflops[TPS_DTYPE_FP16] = d->tf32_tflops;
    fp32.peak_tflops[TPS_DTYPE_FP16] = d->fp32_tflops;

    for (guint f = 0; f < d->files->len; f++) {
        const TraceFile *file = &g_array_index(d->files, TraceFile, f);
        guint n;
        const TpsTraceKernel *k = tps_trace_kernels(file->trace, &n);
        double gemm_meas = 0, gemm_pred = 0, nccl_meas = 0, nccl_pred = 0;
        for (guint i = 0; i < n; i++) {
            if (k[i].klass == TPS_KERNEL_GEMM && k[i].m > 0 && k[i].n > 0 && k[i].k > 0 &&
                strstr(k[i].name, "splitKreduce") != NULL) {
                /* cuBLAS's split-k reduction, a kernel of its own after the
                 * GEMM kernel of the same op: the model's time for that
                 * GEMM includes it (cost/gemm.c), so it is measured here
                 * and not predicted a second time. */
                gemm_meas += k[i].dur_us;
            } else if (k[i].klass == TPS_KERNEL_GEMM && k[i].m > 0 && k[i].n > 0 && k[i].k > 0) {
                const TpsHardware *hw = is_tensor_op(k[i].name) ? &tf32 : &fp32;
                TpsKernelCost cost;
                tps_cost_batched_gemm(hw, TPS_DTYPE_FP16, (guint64)MAX(k[i].batch, 1),
                                      (guint64)k[i].m, (guint64)k[i].n, (guint64)k[i].k, 0, &cost);
                gemm_pred += (double)tps_kernel_cost_solo_ns(hw, &cost, hw->sms) / 1e3;
                gemm_meas += k[i].dur_us;
            } else if (k[i].klass == TPS_KERNEL_NCCL && k[i].bytes > 0 && k[i].group_size >= 2) {
                gboolean ok;
                TpsCollKind kind = coll_kind(k[i].collective, &ok);
                if (!ok)
                    continue;
                TpsHardware local = *ctx->hw;
                local.gpus_per_node = MAX(local.gpus_per_node, k[i].group_size);
                local.nvlink_domain_gpus = MAX(local.nvlink_domain_gpus, k[i].group_size);
                TpsCollPlan plan;
                tps_coll_plan(&local, kind, (double)k[i].bytes, k[i].group_size, &plan);
                nccl_pred += (double)tps_coll_time_ns(&local, &plan) / 1e3;
                nccl_meas += k[i].dur_us;
            }
        }
        if (gemm_meas > 0)
            tps_validate_set_add(gemm, f, gemm_meas, gemm_pred);
        if (nccl_meas > 0)
            tps_validate_set_add(nccl, f, nccl_meas, nccl_pred);
    }
    g_ptr_array_add(sets, gemm);
    g_ptr_array_add(sets, nccl);
    return TRUE;
}

static const TpsValidateDataset datasets[] = {
    {"traces", "traces", "public-microbenchmarks.yaml", traces_load, traces_eval, trace_data_free,
     NULL},
};

const TpsValidateDataset *
tps_trace_validate_datasets(guint *n_rows)
{
    g_return_val_if_fail(n_rows != NULL, NULL);
    *n_rows = G_N_ELEMENTS(datasets);
    return datasets;
}
