/* The device interface of tpsim-gpubench: a const table of measurement
 * functions, implemented by the CUDA/NCCL backend (device-cuda.cu) or by
 * the CPU stub (device-stub.c), whichever the build has; the driver
 * (bench-run.c) and everything else on the CPU side only see this table,
 * as wlroots' backends are seen through their interface.
 *
 * Plain C with no GLib types, so that nvcc compiles the CUDA side without
 * GLib's headers. Every function returns TPS_BENCH_OK, or an error status
 * with a one-line message in `err` (err_len bytes, always NUL-terminated).
 * Times are means over `iters` repetitions after a warm-up, measured with
 * CUDA events (GPU time) unless said otherwise.
 */
#pragma once

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    TPS_BENCH_OK = 0,
    TPS_BENCH_FAILED = 1,    /* a CUDA, cuBLAS or NCCL call failed */
    TPS_BENCH_NO_DEVICE = 3, /* no GPU (or built without CUDA): the exit status too */
};

/* Collectives, in the order of calib's TpsMeasColl. */
enum {
    TPS_BENCH_ALL_GATHER,
    TPS_BENCH_REDUCE_SCATTER,
    TPS_BENCH_ALL_REDUCE,
    TPS_BENCH_SEND_RECV,
};

/* Strategies (small real implementations, on GPUs 0..tp-1). */
enum {
    TPS_BENCH_BLOCKING_AG_GEMM,      /* NCCL all-gather, then one GEMM on the gathered input */
    TPS_BENCH_RING_EXCHANGE_AG_GEMM, /* tp chunk GEMMs; P2P cudaMemcpyAsync of the next chunk
                                        to the ring neighbour on a copy stream meanwhile */
    TPS_BENCH_PIPELINE_GEMM_RS,      /* `splits` chunk GEMMs, each followed by an NCCL
                                        reduce-scatter on a side stream */
    TPS_BENCH_BULK_OVERLAP,          /* an all-gather on a side stream beside an independent
                                        GEMM on the compute stream */
    TPS_BENCH_STRATEGY_COUNT
};

typedef struct {
    int gpus;       /* GPUs driven */
    int sms;        /* SMs of GPU 0 */
    char name[256]; /* GPU 0's name */
    char cuda[32];  /* runtime version, "13.0" */
    char nccl[32];  /* "2.28.9" */
} TpsBenchDeviceInfo;

/* cuBLASLt's first heuristic answer for a GEMM, as the library's ids
 * (cublasLtMatmulAlgoConfigGetAttribute): bench-algo.c names them. */
typedef struct {
    int algo;       /* CUBLASLT_ALGO_CONFIG_ID */
    int tile_id;    /* CUBLASLT_ALGO_CONFIG_TILE_ID, a cublasLtMatmulTile_t */
    int split_k;    /* CUBLASLT_ALGO_CONFIG_SPLITK_NUM (1: none) */
    int cluster_id; /* CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, a cublasLtClusterShape_t (0: auto) */
} TpsBenchGemmAlgo;

typedef struct {
    const char *name; /* "cuda", "stub" */
    /* Opens up to `max_gpus` GPUs (0: all). TPS_BENCH_NO_DEVICE when there
     * is none (cudaGetDeviceCount fails or gives 0) or no CUDA in the build. */
    int (*open)(int max_gpus, TpsBenchDeviceInfo *info, char *err, size_t err_len);
    /* C[m,n] = A[m,k] B[k,n] on GPU 0, dtype 0 bf16 / 1 fp16, FP32 accumulate,
     * on at most `sms` SMs (0: all). */
    int (*gemm)(long m, long n, long k, int dtype, int sms, int iters, double *time_us, char *err,
                size_t err_len);
    /* The kernel cuBLASLt's heuristic picks first for the GEMM that `gemm`
     * runs (the same layouts, types and FP32 compute, the workspace cuBLAS
     * recommends for the GPU), without running it. */
    int (*gemm_algo)(long m, long n, long k, int dtype, TpsBenchGemmAlgo *out, char *err,
                     size_t err_len);
    /* A collective of `bytes` (full buffer per rank) over GPUs 0..ranks-1, or a
     * send/recv of `bytes` from GPU 0 to 1: host time per call over `iters`
     * back-to-back calls (launch included, as nccl-tests). */
    int (*collective)(int kind, size_t bytes, int ranks, int iters, double *time_us, char *err,
                      size_t err_len);
    /* Copy-engine cudaMemcpyPeerAsync of `bytes` from GPU 0 to GPU 1. */
    int (*copy)(size_t bytes, int iters, double *time_us, char *err, size_t err_len);
    /* Host time of launching one empty kernel, and of one cudaEventRecord. */
    int (*launch)(int iters, double *kernel_us, double *event_us, char *err, size_t err_len);
    /* The GEMM alone, and beside a collective of `bytes` over `ranks` GPUs
     * running at the same time on GPU 0 (the collective repeated so that it
     * lasts the whole GEMM). */
    int (*overlap)(long m, long n, long k, int dtype, int comm, size_t bytes, int ranks, int iters,
                   double *alone_us, double *beside_us, char *err, size_t err_len);
    /* One strategy (TPS_BENCH_*) for the op m x n x k over `tp` GPUs: the
     * time from the first launch to the end of the last kernel on every GPU. */
    int (*strategy)(int strategy, long m, long n, long k, int dtype, int tp, int splits, int iters,
                    double *time_us, char *err, size_t err_len);
    void (*close)(void);
} TpsBenchDevice;

/* The backend of this build. */
extern const TpsBenchDevice tps_bench_device;

#ifdef __cplusplus
}
#endif
