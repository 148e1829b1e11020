/* Classification of trace kernels by name (docs/traces.md): kernel
 * classes, NCCL kernel names, GEMM input types, dtype sizes and collective
 * names of Kineto's arguments. Pure functions of strings, apart from the
 * reading of the trace (trace-import.c). */
#include "io/trace/trace-classify.h"

#include <string.h>

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

const char *
tps_trace_dtype_name(TpsTraceDtype dtype)
{
    static const char *const names[] = {"unknown", "fp32", "tf32", "fp16", "bf16"};
    g_return_val_if_fail((guint)dtype < TPS_TRACE_DTYPE_COUNT, "unknown");
    return names[dtype];
}

/* The marks of cuBLAS, cuBLASLt and CUTLASS kernel names, most specific
 * first: "bf16" before "f16" (which it contains), the tensor-core tf32 of
 * Ampere's "s1688" (m16n8k8 on tf32 inputs) before the SIMT "sgemm"
 * (cutlass_80_tensorop_s1688gemm_64x64_32x6_tn_align4, ampere_sgemm_128x64_nn,
 * sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n, ampere_fp16_s16816gemm_fp16_...,
 * volta_h884gemm_...). A "s16816" name carries its input type in front
 * (bf16_s16816gemm, fp16_s16816gemm); alone it says nothing. */
TpsTraceDtype
tps_trace_gemm_dtype(const char *name)
{
    g_return_val_if_fail(name != NULL, TPS_TRACE_DTYPE_UNKNOWN);
    static const struct {
        const char *mark;
        TpsTraceDtype dtype;
    } marks[] = {
        {"bf16", TPS_TRACE_DTYPE_BF16},         {"tf32", TPS_TRACE_DTYPE_TF32},
        {"fp16", TPS_TRACE_DTYPE_FP16},         {"f16f16", TPS_TRACE_DTYPE_FP16},
        {"h16816", TPS_TRACE_DTYPE_FP16},       {"h1688", TPS_TRACE_DTYPE_FP16},
        {"h884", TPS_TRACE_DTYPE_FP16},         {"hgemm", TPS_TRACE_DTYPE_FP16},
        {"tensorop_f16", TPS_TRACE_DTYPE_FP16}, {"s1688", TPS_TRACE_DTYPE_TF32},
        {"sgemm", TPS_TRACE_DTYPE_FP32},
    };
    if (tps_trace_classify(name) != TPS_KERNEL_GEMM)
        return TPS_TRACE_DTYPE_UNKNOWN;
    for (guint i = 0; i < G_N_ELEMENTS(marks); i++)
        if (strstr(name, marks[i].mark))
            return marks[i].dtype;
    return TPS_TRACE_DTYPE_UNKNOWN;
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
int
tps_trace_dtype_size(const char *dtype)
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
const char *
tps_trace_collective_from_arg(const char *arg)
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
