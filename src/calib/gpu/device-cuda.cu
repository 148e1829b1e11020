/* The CUDA/NCCL backend of tpsim-gpubench (bench-device.h): one process
 * drives every local GPU, NCCL communicators come from ncclCommInitAll (no
 * MPI), GEMMs from cuBLAS.
 *
 * Timing: GEMMs and copies with CUDA events around `iters` back-to-back
 * calls on one stream (GPU time per call); collectives, launches and the
 * strategies with the host clock around `iters` calls and a final
 * synchronisation (time per call as the host sees it, launch included, as
 * nccl-tests reports). Every measurement is preceded by two untimed calls.
 *
 * Reduced SM counts use cublasSetSmCountTarget (cuBLAS >= 11.3), which
 * makes the heuristics pick kernels and grids for that many SMs, the way a
 * GEMM beside NCCL's channels runs (Transformer Engine's sm_margin does
 * the same). A persistent kernel parked on the other SMs was the
 * alternative; the CUDA scheduler does not promise where it lands.
 *
 * The gemm-beside-collective measurement parks the GEMM and the
 * collectives behind a gate (a one-thread kernel spinning on a mapped host
 * flag) so that both start together however long the host takes to
 * enqueue them.
 */
#include <chrono>
#include <cstdio>
#include <cstring>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include "calib/gpu/bench-device.h"

namespace {

constexpr int kMaxGpus = 16;
constexpr int kSlots = 6; /* buffers per GPU: 0 shard/send, 1 gathered/recv, 2 weight,
                             3 output, 4 independent input, 5 spare */

struct State {
    int gpus = 0;
    int sms = 0;
    cudaStream_t compute[kMaxGpus] = {};
    cudaStream_t side[kMaxGpus] = {};
    cudaStream_t copy[kMaxGpus] = {};
    cublasHandle_t blas[kMaxGpus] = {};
    cublasLtHandle_t lt = nullptr; /* GPU 0's, for the heuristic queries */
    int major = 0;                 /* GPU 0's compute capability */
    ncclComm_t comms[kMaxGpus + 1][kMaxGpus] = {};
    bool have_comms[kMaxGpus + 1] = {};
    void *buf[kMaxGpus][kSlots] = {};
    size_t buf_bytes[kMaxGpus][kSlots] = {};
    volatile int *gate = nullptr; /* mapped host memory */
    int *gate_dev[kMaxGpus] = {};
};

State g;

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(err, err_len, __VA_ARGS__);                                                       \
        return TPS_BENCH_FAILED;                                                                   \
    } while (0)
/* A library call that returns a status: fail with the call and the
 * library's own description of the status. */
#define STATUS_TRY(call, ok, describe)                                                             \
    do {                                                                                           \
        auto status_ = (call);                                                                     \
        if (status_ != (ok))                                                                       \
            FAIL("%s: %s", #call, describe(status_));                                              \
    } while (0)
#define CUDA_TRY(call) STATUS_TRY(call, cudaSuccess, cudaGetErrorString)
#define BLAS_TRY(call) STATUS_TRY(call, CUBLAS_STATUS_SUCCESS, cublasGetStatusString)
#define NCCL_TRY(call) STATUS_TRY(call, ncclSuccess, ncclGetErrorString)
#define CHECK(call)                                                                                \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ != TPS_BENCH_OK)                                                                   \
            return rc_;                                                                            \
    } while (0)

__global__ void
empty_kernel()
{
}

/* Valid, finite, non-zero 16-bit values (bf16 and fp16 alike): tensor
 * cores run slower on data than on zeros, as real training does. */
__global__ void
fill_kernel(unsigned short *p, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)(i * 2654435761u);
        p[i] = (unsigned short)(0x3800u + ((h >> 16) & 0x3ffu));
    }
}

__global__ void
gate_kernel(const volatile int *flag)
{
    while (*flag == 0) {
    }
}

double
seconds_since(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int
ensure(int dev, int slot, size_t bytes, void **out, char *err, size_t err_len)
{
    if (g.buf_bytes[dev][slot] < bytes) {
        CUDA_TRY(cudaSetDevice(dev));
        if (g.buf[dev][slot])
            CUDA_TRY(cudaFree(g.buf[dev][slot]));
        g.buf[dev][slot] = nullptr;
        g.buf_bytes[dev][slot] = 0;
        CUDA_TRY(cudaMalloc(&g.buf[dev][slot], bytes));
        g.buf_bytes[dev][slot] = bytes;
        fill_kernel<<<256, 256, 0, g.compute[dev]>>>((unsigned short *)g.buf[dev][slot], bytes / 2);
        CUDA_TRY(cudaGetLastError());
        CUDA_TRY(cudaStreamSynchronize(g.compute[dev]));
    }
    *out = g.buf[dev][slot];
    return TPS_BENCH_OK;
}

int
sync_all(int gpus, char *err, size_t err_len)
{
    for (int d = 0; d < gpus; d++) {
        CUDA_TRY(cudaSetDevice(d));
        CUDA_TRY(cudaDeviceSynchronize());
    }
    return TPS_BENCH_OK;
}

int
comms_for(int ranks, ncclComm_t **out, char *err, size_t err_len)
{
    if (ranks < 2 || ranks > g.gpus)
        FAIL("%d ranks asked, %d GPUs open", ranks, g.gpus);
    if (!g.have_comms[ranks]) {
        int devs[kMaxGpus];
        for (int i = 0; i < ranks; i++)
            devs[i] = i;
        NCCL_TRY(ncclCommInitAll(g.comms[ranks], ranks, devs));
        g.have_comms[ranks] = true;
    }
    *out = g.comms[ranks];
    return TPS_BENCH_OK;
}

cudaDataType_t
cuda_type(int dtype)
{
    return dtype == 1 ? CUDA_R_16F : CUDA_R_16BF;
}

ncclDataType_t
nccl_type(int dtype)
{
    return dtype == 1 ? ncclHalf : ncclBfloat16;
}

/* Row-major C[m,n] = A[m,k] B[k,n] on `stream` of `dev`: cuBLAS is
 * column-major, so it computes C^T = B^T A^T. */
int
gemm_launch(int dev, cudaStream_t stream, long m, long n, long k, int dtype, const void *a,
            const void *b, void *c, int ldc, char *err, size_t err_len)
{
    const float alpha = 1.0f, beta = 0.0f;
    BLAS_TRY(cublasSetStream(g.blas[dev], stream));
    BLAS_TRY(cublasGemmEx(g.blas[dev], CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m, (int)k, &alpha, b,
                          cuda_type(dtype), (int)n, a, cuda_type(dtype), (int)k, &beta, c,
                          cuda_type(dtype), ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return TPS_BENCH_OK;
}

int
gemm_buffers(int dev, long m, long n, long k, void **a, void **b, void **c, char *err,
             size_t err_len)
{
    CHECK(ensure(dev, 4, (size_t)m * k * 2, a, err, err_len));
    CHECK(ensure(dev, 2, (size_t)k * n * 2, b, err, err_len));
    CHECK(ensure(dev, 3, (size_t)m * n * 2, c, err, err_len));
    return TPS_BENCH_OK;
}

/* CUDA events around repeated work on one stream: start, stop (recorded
 * after the work is queued), then read the mean time per repetition, which
 * waits for the stop and destroys both events. */
struct EventTimer {
    cudaEvent_t start, stop;
};

static int
timer_start(EventTimer *t, cudaStream_t stream, char *err, size_t err_len)
{
    CUDA_TRY(cudaEventCreate(&t->start));
    CUDA_TRY(cudaEventCreate(&t->stop));
    CUDA_TRY(cudaEventRecord(t->start, stream));
    return TPS_BENCH_OK;
}

static int
timer_stop(EventTimer *t, cudaStream_t stream, char *err, size_t err_len)
{
    CUDA_TRY(cudaEventRecord(t->stop, stream));
    return TPS_BENCH_OK;
}

static int
timer_read(EventTimer *t, int iters, double *time_us, char *err, size_t err_len)
{
    float ms = 0;
    CUDA_TRY(cudaEventSynchronize(t->stop));
    CUDA_TRY(cudaEventElapsedTime(&ms, t->start, t->stop));
    CUDA_TRY(cudaEventDestroy(t->start));
    CUDA_TRY(cudaEventDestroy(t->stop));
    *time_us = ms * 1e3 / iters;
    return TPS_BENCH_OK;
}

/* Mean GPU time of `iters` GEMMs on GPU 0's compute stream. */
int
time_gemm(long m, long n, long k, int dtype, int iters, double *time_us, char *err, size_t err_len)
{
    void *a, *b, *c;
    CHECK(gemm_buffers(0, m, n, k, &a, &b, &c, err, err_len));
    CUDA_TRY(cudaSetDevice(0));
    for (int i = 0; i < 2; i++)
        CHECK(gemm_launch(0, g.compute[0], m, n, k, dtype, a, b, c, (int)n, err, err_len));
    EventTimer t;
    CHECK(timer_start(&t, g.compute[0], err, err_len));
    for (int i = 0; i < iters; i++)
        CHECK(gemm_launch(0, g.compute[0], m, n, k, dtype, a, b, c, (int)n, err, err_len));
    CHECK(timer_stop(&t, g.compute[0], err, err_len));
    return timer_read(&t, iters, time_us, err, err_len);
}

/* Enqueues one collective of `bytes` over `ranks` on their side streams
 * (or the compute streams when `on_compute`). */
int
enqueue_collective(int kind, size_t bytes, int ranks, bool on_compute, char *err, size_t err_len)
{
    ncclComm_t *comms;
    CHECK(comms_for(kind == TPS_BENCH_SEND_RECV ? 2 : ranks, &comms, err, err_len));
    if (kind == TPS_BENCH_SEND_RECV)
        ranks = 2;
    void *send[kMaxGpus], *recv[kMaxGpus];
    for (int r = 0; r < ranks; r++) {
        CHECK(ensure(r, 0, bytes, &send[r], err, err_len));
        CHECK(ensure(r, 1, bytes, &recv[r], err, err_len));
    }
    const size_t elems = bytes / 2;
    NCCL_TRY(ncclGroupStart());
    for (int r = 0; r < ranks; r++) {
        cudaStream_t s = on_compute ? g.compute[r] : g.side[r];
        switch (kind) {
        case TPS_BENCH_ALL_GATHER:
            NCCL_TRY(ncclAllGather(send[r], recv[r], elems / ranks, ncclBfloat16, comms[r], s));
            break;
        case TPS_BENCH_REDUCE_SCATTER:
            NCCL_TRY(ncclReduceScatter(send[r], recv[r], elems / ranks, ncclBfloat16, ncclSum,
                                       comms[r], s));
            break;
        case TPS_BENCH_ALL_REDUCE:
            NCCL_TRY(ncclAllReduce(send[r], recv[r], elems, ncclBfloat16, ncclSum, comms[r], s));
            break;
        default:
            if (r == 0)
                NCCL_TRY(ncclSend(send[0], elems, ncclBfloat16, 1, comms[0], s));
            else
                NCCL_TRY(ncclRecv(recv[1], elems, ncclBfloat16, 0, comms[1], s));
            break;
        }
    }
    NCCL_TRY(ncclGroupEnd());
    return TPS_BENCH_OK;
}

int
cuda_open(int max_gpus, TpsBenchDeviceInfo *info, char *err, size_t err_len)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        snprintf(err, err_len, "no GPU: cudaGetDeviceCount: %s", cudaGetErrorString(e));
        return TPS_BENCH_NO_DEVICE;
    }
    if (count <= 0) {
        snprintf(err, err_len, "no GPU: cudaGetDeviceCount found no CUDA device");
        return TPS_BENCH_NO_DEVICE;
    }
    g.gpus = count < kMaxGpus ? count : kMaxGpus;
    if (max_gpus > 0 && max_gpus < g.gpus)
        g.gpus = max_gpus;

    cudaDeviceProp prop;
    CUDA_TRY(cudaGetDeviceProperties(&prop, 0));
    g.sms = prop.multiProcessorCount;
    g.major = prop.major;
    snprintf(info->name, sizeof(info->name), "%s", prop.name);
    info->gpus = g.gpus;
    info->sms = g.sms;
    int rt = 0;
    CUDA_TRY(cudaRuntimeGetVersion(&rt));
    snprintf(info->cuda, sizeof(info->cuda), "%d.%d", rt / 1000, (rt % 1000) / 10);
    int nv = 0;
    NCCL_TRY(ncclGetVersion(&nv));
    snprintf(info->nccl, sizeof(info->nccl), "%d.%d.%d", nv / 10000, (nv / 100) % 100, nv % 100);

    CUDA_TRY(
        cudaHostAlloc((void **)&g.gate, sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable));
    *g.gate = 0;
    for (int d = 0; d < g.gpus; d++) {
        CUDA_TRY(cudaSetDevice(d));
        CUDA_TRY(cudaStreamCreateWithFlags(&g.compute[d], cudaStreamNonBlocking));
        CUDA_TRY(cudaStreamCreateWithFlags(&g.side[d], cudaStreamNonBlocking));
        CUDA_TRY(cudaStreamCreateWithFlags(&g.copy[d], cudaStreamNonBlocking));
        BLAS_TRY(cublasCreate(&g.blas[d]));
        CUDA_TRY(cudaHostGetDevicePointer((void **)&g.gate_dev[d], (void *)g.gate, 0));
        for (int p = 0; p < g.gpus; p++) {
            int can = 0;
            if (p != d && cudaDeviceCanAccessPeer(&can, d, p) == cudaSuccess && can) {
                cudaError_t pe = cudaDeviceEnablePeerAccess(p, 0);
                if (pe != cudaSuccess && pe != cudaErrorPeerAccessAlreadyEnabled)
                    FAIL("cudaDeviceEnablePeerAccess(%d -> %d): %s", d, p, cudaGetErrorString(pe));
                (void)cudaGetLastError();
            }
        }
    }
    return TPS_BENCH_OK;
}

/* The descriptors of one heuristic query, destroyed together. */
struct LtQuery {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulPreference_t pref = nullptr;
    ~LtQuery()
    {
        if (pref)
            cublasLtMatmulPreferenceDestroy(pref);
        if (c)
            cublasLtMatrixLayoutDestroy(c);
        if (b)
            cublasLtMatrixLayoutDestroy(b);
        if (a)
            cublasLtMatrixLayoutDestroy(a);
        if (op)
            cublasLtMatmulDescDestroy(op);
    }
};

/* One attribute of an algorithm's configuration, read as the library's
 * type T (int32, uint32 or uint16: cublasLt.h) and returned as an int. */
template <typename T>
int
algo_attr(const cublasLtMatmulAlgo_t *algo, cublasLtMatmulAlgoConfigAttributes_t attr, int *out,
          char *err, size_t err_len)
{
    T v = 0;
    size_t written = 0;
    BLAS_TRY(cublasLtMatmulAlgoConfigGetAttribute(algo, attr, &v, sizeof(v), &written));
    *out = (int)v;
    return TPS_BENCH_OK;
}

/* The problem gemm_launch gives cublasGemmEx, column-major C^T[n,m] =
 * B^T[n,k] A^T[k,m], asked of cuBLASLt with the workspace the cuBLAS
 * documentation recommends (cublasSetWorkspace: 32 MiB on Hopper and
 * later, 4 MiB before). */
int
cuda_gemm_algo(long m, long n, long k, int dtype, TpsBenchGemmAlgo *out, char *err, size_t err_len)
{
    CUDA_TRY(cudaSetDevice(0));
    if (g.lt == nullptr)
        BLAS_TRY(cublasLtCreate(&g.lt));
    const cudaDataType_t t = cuda_type(dtype);
    LtQuery q;
    BLAS_TRY(cublasLtMatmulDescCreate(&q.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    BLAS_TRY(cublasLtMatrixLayoutCreate(&q.a, t, (uint64_t)n, (uint64_t)k, (int64_t)n));
    BLAS_TRY(cublasLtMatrixLayoutCreate(&q.b, t, (uint64_t)k, (uint64_t)m, (int64_t)k));
    BLAS_TRY(cublasLtMatrixLayoutCreate(&q.c, t, (uint64_t)n, (uint64_t)m, (int64_t)n));
    BLAS_TRY(cublasLtMatmulPreferenceCreate(&q.pref));
    const size_t workspace = (size_t)(g.major >= 9 ? 32 : 4) << 20;
    BLAS_TRY(cublasLtMatmulPreferenceSetAttribute(q.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &workspace, sizeof(workspace)));
    cublasLtMatmulHeuristicResult_t result = {};
    int found = 0;
    BLAS_TRY(
        cublasLtMatmulAlgoGetHeuristic(g.lt, q.op, q.a, q.b, q.c, q.c, q.pref, 1, &result, &found));
    if (found < 1 || result.state != CUBLAS_STATUS_SUCCESS)
        FAIL("cublasLtMatmulAlgoGetHeuristic: no algorithm for %ldx%ldx%ld", m, n, k);
    CHECK(algo_attr<int32_t>(&result.algo, CUBLASLT_ALGO_CONFIG_ID, &out->algo, err, err_len));
    CHECK(algo_attr<uint32_t>(&result.algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &out->tile_id, err,
                              err_len));
    CHECK(algo_attr<int32_t>(&result.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &out->split_k, err,
                             err_len));
    CHECK(algo_attr<uint16_t>(&result.algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &out->cluster_id,
                              err, err_len));
    return TPS_BENCH_OK;
}

int
cuda_gemm(long m, long n, long k, int dtype, int sms, int iters, double *time_us, char *err,
          size_t err_len)
{
    BLAS_TRY(cublasSetSmCountTarget(g.blas[0], sms > 0 ? sms : 0));
    int rc = time_gemm(m, n, k, dtype, iters, time_us, err, err_len);
    cublasSetSmCountTarget(g.blas[0], 0);
    return rc;
}

int
cuda_collective(int kind, size_t bytes, int ranks, int iters, double *time_us, char *err,
                size_t err_len)
{
    const int n = kind == TPS_BENCH_SEND_RECV ? 2 : ranks;
    for (int i = 0; i < 2; i++)
        CHECK(enqueue_collective(kind, bytes, ranks, false, err, err_len));
    CHECK(sync_all(n, err, err_len));
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; i++)
        CHECK(enqueue_collective(kind, bytes, ranks, false, err, err_len));
    CHECK(sync_all(n, err, err_len));
    *time_us = seconds_since(t0) * 1e6 / iters;
    return TPS_BENCH_OK;
}

int
cuda_copy(size_t bytes, int iters, double *time_us, char *err, size_t err_len)
{
    if (g.gpus < 2)
        FAIL("copy: needs 2 GPUs");
    void *src, *dst;
    CHECK(ensure(0, 0, bytes, &src, err, err_len));
    CHECK(ensure(1, 1, bytes, &dst, err, err_len));
    CUDA_TRY(cudaSetDevice(0));
    for (int i = 0; i < 2; i++)
        CUDA_TRY(cudaMemcpyPeerAsync(dst, 1, src, 0, bytes, g.copy[0]));
    EventTimer t;
    CHECK(timer_start(&t, g.copy[0], err, err_len));
    for (int i = 0; i < iters; i++)
        CUDA_TRY(cudaMemcpyPeerAsync(dst, 1, src, 0, bytes, g.copy[0]));
    CHECK(timer_stop(&t, g.copy[0], err, err_len));
    return timer_read(&t, iters, time_us, err, err_len);
}

int
cuda_launch(int iters, double *kernel_us, double *event_us, char *err, size_t err_len)
{
    CUDA_TRY(cudaSetDevice(0));
    cudaStream_t s = g.compute[0];
    for (int i = 0; i < 10; i++)
        empty_kernel<<<1, 1, 0, s>>>();
    CUDA_TRY(cudaGetLastError());
    CUDA_TRY(cudaStreamSynchronize(s));
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; i++)
        empty_kernel<<<1, 1, 0, s>>>();
    *kernel_us = seconds_since(t0) * 1e6 / iters;
    CUDA_TRY(cudaGetLastError());
    CUDA_TRY(cudaStreamSynchronize(s));

    cudaEvent_t ev;
    CUDA_TRY(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; i++)
        CUDA_TRY(cudaEventRecord(ev, s));
    *event_us = seconds_since(t0) * 1e6 / iters;
    CUDA_TRY(cudaStreamSynchronize(s));
    CUDA_TRY(cudaEventDestroy(ev));
    return TPS_BENCH_OK;
}

int
cuda_overlap(long m, long n, long k, int dtype, int comm, size_t bytes, int ranks, int iters,
             double *alone_us, double *beside_us, char *err, size_t err_len)
{
    CHECK(cuda_gemm(m, n, k, dtype, 0, iters, alone_us, err, err_len));
    double coll_us;
    CHECK(cuda_collective(comm, bytes, ranks, 2, &coll_us, err, err_len));
    /* Enough collectives to cover the GEMMs twice over, but everything is
     * enqueued behind the closed gate, so the total must stay well within
     * CUDA's queue of pending launches (about a thousand per stream) or the
     * host would block on a launch that can never drain. */
    if (iters > 64)
        iters = 64;
    int reps = (int)(2.0 * *alone_us * iters / (coll_us > 1.0 ? coll_us : 1.0)) + 1;
    if (reps > 256)
        reps = 256;

    void *a, *b, *c;
    CHECK(gemm_buffers(0, m, n, k, &a, &b, &c, err, err_len));
    *g.gate = 0;
    for (int r = 0; r < ranks; r++) {
        CUDA_TRY(cudaSetDevice(r));
        gate_kernel<<<1, 1, 0, g.side[r]>>>(g.gate_dev[r]);
        CUDA_TRY(cudaGetLastError());
    }
    CUDA_TRY(cudaSetDevice(0));
    gate_kernel<<<1, 1, 0, g.compute[0]>>>(g.gate_dev[0]);
    CUDA_TRY(cudaGetLastError());
    for (int i = 0; i < reps; i++)
        CHECK(enqueue_collective(comm, bytes, ranks, false, err, err_len));
    EventTimer t;
    CUDA_TRY(cudaSetDevice(0));
    CHECK(timer_start(&t, g.compute[0], err, err_len));
    for (int i = 0; i < iters; i++)
        CHECK(gemm_launch(0, g.compute[0], m, n, k, dtype, a, b, c, (int)n, err, err_len));
    CHECK(timer_stop(&t, g.compute[0], err, err_len));
    *g.gate = 1; /* release the communication queued behind the gate */
    CHECK(timer_read(&t, iters, beside_us, err, err_len));
    CHECK(sync_all(ranks, err, err_len));
    *g.gate = 0;
    return TPS_BENCH_OK;
}

/* pipeline-gemm-rs: C[m, n] = A[m, k/tp] W[k/tp, n] in `splits` row
 * chunks, each reduce-scattered on the side stream once its GEMM is
 * done. */
int
enqueue_pipeline_gemm_rs(ncclComm_t *comms, long m, long n, long k, int dtype, int tp, int splits,
                         cudaEvent_t (*ev)[kMaxGpus * 2], char *err, size_t err_len)
{
    const long kl = k / tp; /* local share of k */
    const long rows = m / splits;
    void *a[kMaxGpus], *w[kMaxGpus], *c[kMaxGpus], *out[kMaxGpus];
    for (int r = 0; r < tp; r++) {
        CHECK(ensure(r, 4, (size_t)m * kl * 2, &a[r], err, err_len));
        CHECK(ensure(r, 2, (size_t)kl * n * 2, &w[r], err, err_len));
        CHECK(ensure(r, 3, (size_t)m * n * 2, &c[r], err, err_len));
        CHECK(ensure(r, 1, (size_t)m * n * 2 / tp + 2, &out[r], err, err_len));
    }
    for (int j = 0; j < splits; j++) {
        for (int r = 0; r < tp; r++) {
            CUDA_TRY(cudaSetDevice(r));
            CHECK(gemm_launch(r, g.compute[r], rows, n, kl, dtype,
                              (char *)a[r] + (size_t)j * rows * kl * 2, w[r],
                              (char *)c[r] + (size_t)j * rows * n * 2, (int)n, err, err_len));
            CUDA_TRY(cudaEventRecord(ev[r][j % (kMaxGpus * 2)], g.compute[r]));
            CUDA_TRY(cudaStreamWaitEvent(g.side[r], ev[r][j % (kMaxGpus * 2)], 0));
        }
        NCCL_TRY(ncclGroupStart());
        for (int r = 0; r < tp; r++)
            NCCL_TRY(ncclReduceScatter((char *)c[r] + (size_t)j * rows * n * 2,
                                       (char *)out[r] + (size_t)j * (rows / tp) * n * 2,
                                       (size_t)(rows / tp) * n, nccl_type(dtype), ncclSum, comms[r],
                                       g.side[r]));
        NCCL_TRY(ncclGroupEnd());
    }
    return TPS_BENCH_OK;
}

/* The buffers of an all-gather + GEMM op on each rank: its shard of the
 * input, the gathered input, its columns of the weight, its output. */
struct AgGemm {
    long m, nl, k; /* nl: columns of the local weight */
    long mc;       /* rows of a rank's shard */
    size_t shard;  /* bytes of a rank's shard */
    void *in[kMaxGpus], *full[kMaxGpus], *w[kMaxGpus], *out[kMaxGpus];
};

/* blocking-ag-gemm: the all-gather, then the GEMM, on the compute
 * stream. */
int
enqueue_blocking_ag_gemm(ncclComm_t *comms, AgGemm *o, int dtype, int tp, char *err, size_t err_len)
{
    NCCL_TRY(ncclGroupStart());
    for (int r = 0; r < tp; r++)
        NCCL_TRY(ncclAllGather(o->in[r], o->full[r], o->shard / 2, nccl_type(dtype), comms[r],
                               g.compute[r]));
    NCCL_TRY(ncclGroupEnd());
    for (int r = 0; r < tp; r++) {
        CUDA_TRY(cudaSetDevice(r));
        CHECK(gemm_launch(r, g.compute[r], o->m, o->nl, o->k, dtype, o->full[r], o->w[r], o->out[r],
                          (int)o->nl, err, err_len));
    }
    return TPS_BENCH_OK;
}

/* ring-exchange-ag-gemm: step s, rank r multiplies chunk (r - s) mod tp,
 * which it owns (s = 0) or received from r - 1 at step s - 1, and
 * forwards it to r + 1 with a copy-engine P2P copy on its copy stream.
 * ev[r][s] marks the copy of step s from r done. */
int
enqueue_ring_exchange(AgGemm *o, int dtype, int tp, cudaEvent_t (*ev)[kMaxGpus * 2], char *err,
                      size_t err_len)
{
    const size_t shard = o->shard;
    for (int s = 0; s < tp; s++) {
        for (int r = 0; r < tp; r++) {
            const int c = ((r - s) % tp + tp) % tp;
            const int prev = (r - 1 + tp) % tp, next = (r + 1) % tp;
            char *chunk = (char *)o->full[r] + (size_t)c * shard;
            CUDA_TRY(cudaSetDevice(r));
            if (s == 0)
                CUDA_TRY(
                    cudaMemcpyAsync(chunk, o->in[r], shard, cudaMemcpyDeviceToDevice, g.copy[r]));
            else {
                CUDA_TRY(cudaStreamWaitEvent(g.copy[r], ev[prev][s - 1], 0));
                CUDA_TRY(cudaStreamWaitEvent(g.compute[r], ev[prev][s - 1], 0));
            }
            if (s == 0) {
                CUDA_TRY(cudaEventRecord(ev[r][tp + 0], g.copy[r]));
                CUDA_TRY(cudaStreamWaitEvent(g.compute[r], ev[r][tp + 0], 0));
            }
            if (s < tp - 1) {
                char *dst = (char *)o->full[next] + (size_t)c * shard;
                CUDA_TRY(cudaMemcpyPeerAsync(dst, next, chunk, r, shard, g.copy[r]));
                CUDA_TRY(cudaEventRecord(ev[r][s], g.copy[r]));
            }
            CHECK(gemm_launch(r, g.compute[r], o->mc, o->nl, o->k, dtype, chunk, o->w[r],
                              (char *)o->out[r] + (size_t)c * o->mc * o->nl * 2, (int)o->nl, err,
                              err_len));
        }
    }
    return TPS_BENCH_OK;
}

/* bulk-overlap: the all-gather of one tensor on the side stream beside a
 * GEMM that does not need it (Megatron's backward: dgrad beside the AG of
 * the input for wgrad). */
int
enqueue_bulk_overlap(ncclComm_t *comms, AgGemm *o, int dtype, int tp, char *err, size_t err_len)
{
    void *other[kMaxGpus];
    for (int r = 0; r < tp; r++)
        CHECK(ensure(r, 4, (size_t)o->m * o->k * 2, &other[r], err, err_len));
    NCCL_TRY(ncclGroupStart());
    for (int r = 0; r < tp; r++)
        NCCL_TRY(ncclAllGather(o->in[r], o->full[r], o->shard / 2, nccl_type(dtype), comms[r],
                               g.side[r]));
    NCCL_TRY(ncclGroupEnd());
    for (int r = 0; r < tp; r++) {
        CUDA_TRY(cudaSetDevice(r));
        CHECK(gemm_launch(r, g.compute[r], o->m, o->nl, o->k, dtype, other[r], o->w[r], o->out[r],
                          (int)o->nl, err, err_len));
    }
    return TPS_BENCH_OK;
}

/* One iteration of a strategy, enqueued on GPUs 0..tp-1. */
int
enqueue_strategy(int strategy, long m, long n, long k, int dtype, int tp, int splits,
                 cudaEvent_t (*ev)[kMaxGpus * 2], char *err, size_t err_len)
{
    ncclComm_t *comms;
    CHECK(comms_for(tp, &comms, err, err_len));
    if (strategy == TPS_BENCH_PIPELINE_GEMM_RS)
        return enqueue_pipeline_gemm_rs(comms, m, n, k, dtype, tp, splits, ev, err, err_len);

    AgGemm o;
    o.m = m;
    o.nl = n / tp;
    o.k = k;
    o.mc = m / tp;
    o.shard = (size_t)o.mc * k * 2;
    for (int r = 0; r < tp; r++) {
        CHECK(ensure(r, 0, o.shard, &o.in[r], err, err_len));
        CHECK(ensure(r, 1, o.shard * tp, &o.full[r], err, err_len));
        CHECK(ensure(r, 2, (size_t)k * o.nl * 2, &o.w[r], err, err_len));
        CHECK(ensure(r, 3, (size_t)m * o.nl * 2, &o.out[r], err, err_len));
    }
    switch (strategy) {
    case TPS_BENCH_BLOCKING_AG_GEMM:
        return enqueue_blocking_ag_gemm(comms, &o, dtype, tp, err, err_len);
    case TPS_BENCH_RING_EXCHANGE_AG_GEMM:
        return enqueue_ring_exchange(&o, dtype, tp, ev, err, err_len);
    case TPS_BENCH_BULK_OVERLAP:
        return enqueue_bulk_overlap(comms, &o, dtype, tp, err, err_len);
    default:
        FAIL("unknown strategy %d", strategy);
    }
}

int
cuda_strategy(int strategy, long m, long n, long k, int dtype, int tp, int splits, int iters,
              double *time_us, char *err, size_t err_len)
{
    if (tp < 2 || tp > g.gpus)
        FAIL("strategy over %d GPUs, %d open", tp, g.gpus);
    if (m % tp != 0 || n % tp != 0 || k % tp != 0 || (m / splits) % tp != 0)
        FAIL("op %ldx%ldx%ld does not split over tp %d and %d splits", m, n, k, tp, splits);
    if (splits > kMaxGpus * 2)
        FAIL("at most %d splits", kMaxGpus * 2);
    static cudaEvent_t ev[kMaxGpus][kMaxGpus * 2];
    static bool have_events = false;
    if (!have_events) {
        for (int r = 0; r < g.gpus; r++) {
            CUDA_TRY(cudaSetDevice(r));
            for (int i = 0; i < kMaxGpus * 2; i++)
                CUDA_TRY(cudaEventCreateWithFlags(&ev[r][i], cudaEventDisableTiming));
        }
        have_events = true;
    }
    for (int i = 0; i < 2; i++) {
        CHECK(enqueue_strategy(strategy, m, n, k, dtype, tp, splits, ev, err, err_len));
        CHECK(sync_all(tp, err, err_len));
    }
    /* Every iteration ends with a synchronisation of all GPUs, as a
     * training step's next dependency would, so that buffers are not
     * overwritten under a running iteration. */
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; i++) {
        CHECK(enqueue_strategy(strategy, m, n, k, dtype, tp, splits, ev, err, err_len));
        CHECK(sync_all(tp, err, err_len));
    }
    *time_us = seconds_since(t0) * 1e6 / iters;
    return TPS_BENCH_OK;
}

void
cuda_close(void)
{
    for (int r = 2; r <= kMaxGpus; r++)
        if (g.have_comms[r])
            for (int i = 0; i < r; i++)
                ncclCommDestroy(g.comms[r][i]);
    for (int d = 0; d < g.gpus; d++) {
        cudaSetDevice(d);
        for (int s = 0; s < kSlots; s++)
            if (g.buf[d][s])
                cudaFree(g.buf[d][s]);
        if (g.blas[d])
            cublasDestroy(g.blas[d]);
        cudaStreamDestroy(g.compute[d]);
        cudaStreamDestroy(g.side[d]);
        cudaStreamDestroy(g.copy[d]);
    }
    if (g.gate)
        cudaFreeHost((void *)g.gate);
    if (g.lt)
        cublasLtDestroy(g.lt);
    g = State();
}

} // namespace

extern "C" const TpsBenchDevice tps_bench_device = {
    "cuda",    cuda_open,   cuda_gemm,    cuda_gemm_algo, cuda_collective,
    cuda_copy, cuda_launch, cuda_overlap, cuda_strategy,  cuda_close,
};
