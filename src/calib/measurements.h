/* Measurements: the points that calibration fits, as tpsim-gpubench writes
 * them (docs/calibration.md, "Measurements file") and as they are taken from
 * real traces.
 *
 * A TpsMeasurements owns plain arrays of points plus a few strings that
 * describe where they came from. The YAML text is produced here
 * (tps_measurements_format, needs nothing but GLib) and read back by the io
 * layer (io/input/measurements-file.c), so the backend can write it without
 * libyaml and the reader can be strict with positions.
 */
#pragma once

#include <glib.h>

#include "cost/hardware.h"
#include "cost/kernel-cost.h"

/* What a collective point measured. The first three are TpsCollKind's. */
typedef enum {
    TPS_MEAS_ALL_GATHER,
    TPS_MEAS_REDUCE_SCATTER,
    TPS_MEAS_ALL_REDUCE,
    TPS_MEAS_SEND_RECV,
    TPS_MEAS_COLL_COUNT
} TpsMeasColl;

/* "all_gather", "reduce_scatter", "all_reduce", "send_recv"; NULL-terminated. */
extern const char *const tps_meas_coll_names[];

typedef enum {
    TPS_MEAS_LAUNCH_KERNEL, /* host cost of launching one empty kernel */
    TPS_MEAS_LAUNCH_EVENT,  /* host cost of one cudaEventRecord (not a model parameter) */
    TPS_MEAS_LAUNCH_COUNT
} TpsMeasLaunch;

/* "kernel", "event"; NULL-terminated. */
extern const char *const tps_meas_launch_names[];

/* One GEMM C[m,n] = A[m,k] B[k,n] alone on `sms` SMs (0: the whole GPU),
 * on operands that hold `operands` (data unless the source says why not),
 * timed `loaded_us` after the GPU started running load from idle (0:
 * under sustained load, unless the source says otherwise), on its own
 * choice of kernel unless `tile_m` is set. */
typedef struct {
    guint64 m, n, k;
    TpsDtype dtype;
    guint sms;
    double tflops;
    TpsGemmOperands operands;
    double loaded_us;
    /* The kernel it ran on where one was recorded (`tpsim calibrate
     * --kernels`, gemm-kernels.h); 0: the model's own choice. */
    guint tile_m, tile_n, split_k;
} TpsGemmPoint;

/* One collective of `bytes` (the full buffer per rank, as collective.h) over
 * `ranks` GPUs, or a send/recv of `bytes` between two. tpsim-gpubench
 * gives the time per call over many back-to-back calls, launch included
 * (as nccl-tests); a trace gives the kernel's duration, launch excluded. */
typedef struct {
    TpsMeasColl kind;
    double bytes;
    guint ranks;
    double time_us;
    gboolean launch_included; /* YAML `launch_included`, default true */
} TpsCollPoint;

/* One copy-engine P2P cudaMemcpyAsync of `bytes` to a peer GPU. */
typedef struct {
    double bytes;
    double time_us;
} TpsCopyPoint;

typedef struct {
    TpsMeasLaunch what;
    double us;
} TpsLaunchPoint;

/* A GEMM alone and beside a communication kernel running at the same time
 * (the slowdown contention gives). Recorded, not fitted: the engine derives
 * contention from shared SMs and HBM. */
typedef struct {
    guint64 m, n, k;
    TpsDtype dtype;
    TpsMeasColl comm;
    double bytes;
    guint ranks;
    double gemm_alone_us;
    double gemm_beside_us;
} TpsOverlapPoint;

/* One small real implementation of a strategy, timed end to end. */
typedef struct {
    char
        *name; /* "blocking_ag_gemm", "ring_exchange_ag_gemm", "pipeline_gemm_rs", "bulk_overlap" */
    char *op;  /* "ag_gemm" or "gemm_rs" (design.md op scenarios) */
    guint64 m, n, k;
    TpsDtype dtype;
    guint tp;
    guint splits;
    double time_us;
} TpsStrategyPoint;

/* The kernel the GEMM library chose for one shape (tpsim-gpubench's
 * `algos`: cuBLASLt's first heuristic answer for C[m,n] = A[m,k] B[k,n] as
 * the `gemm` points run it): the library's algorithm and tile ids, the CTA
 * tile in this project's m x n (0 x 0: a tile id gpubench cannot name), the
 * k split, and the thread-block cluster along m and n (0 x 0: not said).
 * Recorded, not fitted: `tpsim validate --kernels` runs the model on these
 * kernels instead of its own choice (cost/kernel-cost.h, TpsGemmRun). */
typedef struct {
    guint64 m, n, k;
    TpsDtype dtype;
    gint algo;
    guint tile_id;
    guint tile_m, tile_n;
    guint split_k;
    guint cluster_m, cluster_n;
} TpsGemmAlgoPoint;

typedef struct {
    char *source;        /* "tpsim-gpubench 0.1.0", a trace file, ... (may be NULL) */
    char *gpu;           /* device name (may be NULL) */
    guint sms;           /* SMs of the device (0: unknown) */
    guint gpus;          /* GPUs driven (0: unknown) */
    char *cuda;          /* runtime version text (may be NULL) */
    char *nccl;          /* NCCL version text (may be NULL) */
    GArray *gemm;        /* TpsGemmPoint */
    GArray *collectives; /* TpsCollPoint */
    GArray *copies;      /* TpsCopyPoint */
    GArray *launch;      /* TpsLaunchPoint */
    GArray *overlap;     /* TpsOverlapPoint */
    GArray *strategies;  /* TpsStrategyPoint (strings owned) */
    GArray *gemm_algos;  /* TpsGemmAlgoPoint */
} TpsMeasurements;

TpsMeasurements *tps_measurements_new(void);
void tps_measurements_free(TpsMeasurements *m);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TpsMeasurements, tps_measurements_free)

/* Appends copies of every point of `src` to `dst`; descriptive strings of
 * `dst` are set from `src` where `dst` has none. */
void tps_measurements_merge(TpsMeasurements *dst, const TpsMeasurements *src);

/* Adds one strategy point (strings copied). */
void tps_measurements_add_strategy(TpsMeasurements *m, const TpsStrategyPoint *point);

/* Total number of points. */
guint tps_measurements_count(const TpsMeasurements *m);

/* The measurements YAML of docs/calibration.md, newly allocated. Numbers
 * are written as "%.9g": more than any measurement deserves, few enough to
 * stay readable; integers and byte counts exactly. */
char *tps_measurements_format(const TpsMeasurements *m);
