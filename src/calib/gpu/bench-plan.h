/* tpsim-gpubench, CPU side: options, the GEMM shapes (from a scenario, a
 * list, or the defaults), the message-size sweep, the SM counts and rank
 * counts, and the driver that runs a plan on a device table and collects a
 * TpsMeasurements. Compiled into both the CUDA build and the stub, so that
 * all of it is tested on machines without a GPU (tests/unit/test-gpubench.c
 * drives it with a fake device table).
 */
#pragma once

#include <glib.h>
#include <stdio.h>

#include "calib/gpu/bench-device.h"
#include "calib/measurements.h"
#include "sched/scenario.h"

/* What to measure: bits of TpsBenchOptions.sections. */
typedef enum {
    TPS_BENCH_SECTION_LAUNCH = 1 << 0,
    TPS_BENCH_SECTION_GEMM = 1 << 1,        /* all SMs and the reduced SM counts */
    TPS_BENCH_SECTION_COLLECTIVES = 1 << 2, /* AG, RS, AR, send/recv over the size sweep */
    TPS_BENCH_SECTION_COPIES = 1 << 3,
    TPS_BENCH_SECTION_OVERLAP = 1 << 4,
    TPS_BENCH_SECTION_STRATEGIES = 1 << 5,
    TPS_BENCH_SECTION_ALGOS = 1 << 6, /* cuBLASLt's kernel for each GEMM shape (not timed) */
    TPS_BENCH_SECTION_ALL = (1 << 7) - 1,
} TpsBenchSection;

/* "launch", "gemm", "collectives", "copies", "overlap", "strategies", "algos";
 * NULL-terminated (bit i is name i). */
extern const char *const tps_bench_section_names[];
/* "blocking_ag_gemm", ...: TPS_BENCH_* strategy order; NULL-terminated. */
extern const char *const tps_bench_strategy_names[];

typedef struct {
    guint64 m, n, k;
    TpsDtype dtype;
} TpsBenchShape;

typedef struct {
    char *output;   /* NULL: standard output */
    char *scenario; /* --scenario: shapes (and the strategy op) from it */
    GArray *shapes; /* TpsBenchShape, deduplicated, in order of first use */
    GArray *sms;    /* guint: reduced SM counts asked for (empty: the defaults) */
    guint64 min_bytes, max_bytes;
    guint iters;
    guint max_gpus;     /* 0: all */
    guint sections;     /* TpsBenchSection bits */
    gboolean plan_only; /* --plan: print the plan and exit, no GPU needed */
    TpsBenchShape op;   /* the op the strategies run: ag_gemm [m,k] x [k,n/tp] */
    guint op_tp;        /* 0: all GPUs (at most 8) */
    guint splits;       /* chunks of the pipeline strategy */
} TpsBenchOptions;

void tps_bench_options_init(TpsBenchOptions *o);
void tps_bench_options_clear(TpsBenchOptions *o);

/* Parses the command line (argv[0] is the program). Usage problems are
 * TPS_ERROR_USAGE (exit 2); an invalid scenario TPS_ERROR_INPUT (exit 1).
 * Fills the default shapes when neither --shape nor --scenario is given. */
gboolean tps_bench_options_parse(TpsBenchOptions *o, int argc, char **argv, GError **error);

/* "MxNxK" or "MxNxK:fp16" (default bf16). */
gboolean tps_bench_parse_shape(const char *text, TpsBenchShape *out, GError **error);
/* "1024", "64K", "16M", "1G" (powers of 1024). */
gboolean tps_bench_parse_bytes(const char *text, guint64 *out, GError **error);

/* Appends `shape` unless it is there already. */
void tps_bench_add_shape(GArray *shapes, const TpsBenchShape *shape);

/* The GEMMs of one transformer layer under Megatron TP (forward, dgrad,
 * wgrad of QKV, projection, FC1, FC2 on one rank) for `tokens` tokens, and
 * the chunks a ring exchange over `tp` ranks runs (tokens / tp rows). */
void tps_bench_layer_shapes(GArray *shapes, guint64 tokens, guint64 hidden, guint64 ffn_hidden,
                            guint tp, TpsDtype dtype);
/* The GEMMs of every record of a vidur ops profile (vidur's mlp.csv: the
 * QKV, attention output, up and down projections on one rank, fp16 as
 * vidur runs them; calib/validate.h tps_vidur_gemm_shape), the shapes
 * `tpsim validate` replays. An unreadable file is TPS_ERROR_INPUT. */
gboolean tps_bench_vidur_shapes(GArray *shapes, const char *path, GError **error);
/* The defaults: GPT-3 175B with TP 8 (seq 2048, micro-batch 1) and the
 * square GEMMs 1024^3 .. 16384^3 of the public cuBLASLt benchmark. */
void tps_bench_default_shapes(GArray *shapes);
/* The shapes a scenario needs: its layer's GEMMs (model scenario) or its
 * op's full and chunk GEMMs (op scenario). */
void tps_bench_scenario_shapes(GArray *shapes, const TpsScenario *scenario);

/* Powers of two from min to max bytes inclusive (min rounded up to one). */
GArray *tps_bench_size_sweep(guint64 min_bytes, guint64 max_bytes);
/* Repetitions for a message of `bytes`: `iters` up to 64 MiB, then fewer so
 * that each size takes about as long, never under 3. */
guint tps_bench_iters_for(guint iters, double bytes);
/* SM counts to run each GEMM on: all, then `requested` (those below
 * `device_sms`), or by default what NCCL's channels leave free (device -
 * 8, 16, 24, 32) and 3/4, 1/2, 1/4 of the device; descending, unique. */
GArray *tps_bench_sm_counts(guint device_sms, const GArray *requested);
/* Rank counts for collectives: 2, 4, 8, ... up to `gpus`, and `gpus`. */
GArray *tps_bench_rank_counts(guint gpus);

/* What a run on `gpus` GPUs of `sms` SMs would measure, for --plan. */
char *tps_bench_plan_describe(const TpsBenchOptions *o, guint gpus, guint sms);

/* Runs the plan on an opened device, appending points to `out` (and its
 * source/gpu/version strings). Progress lines go to `log` when not NULL.
 * A device error is TPS_ERROR_IO with its message. */
gboolean tps_bench_run(const TpsBenchDevice *dev, const TpsBenchDeviceInfo *info,
                       const TpsBenchOptions *o, TpsMeasurements *out, FILE *log, GError **error);
