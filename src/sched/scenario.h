/* A scenario: what to simulate, as read from a scenario file (design.md,
 * "Scenario file"). The io layer fills it; the sched layer turns it into
 * dependency graphs. Plain data, owned by the caller; tps_scenario_clear()
 * frees the strings and arrays inside.
 */
#pragma once

#include <glib.h>

#include "cost/hardware.h"

typedef enum {
    TPS_ATTENTION_FLASH,
    TPS_ATTENTION_UNFUSED,
} TpsAttention;

typedef enum {
    TPS_RECOMPUTE_NONE,
    TPS_RECOMPUTE_SELECTIVE,
    TPS_RECOMPUTE_FULL,
} TpsRecompute;

typedef enum {
    TPS_OP_AG_GEMM,
    TPS_OP_GEMM_RS,
} TpsOpKind;

/* Overlap methods of real-schedules.md section 2; what each one is (slots,
 * defaults, graph builders) is its row in sched/method.h. */
typedef enum {
    TPS_METHOD_NONE,
    TPS_METHOD_RING_EXCHANGE,
    TPS_METHOD_PIPELINE,
    TPS_METHOD_BULK,
    TPS_METHOD_COUNT
} TpsMethod;

/* The per-GEMM overlap names of real-schedules.md section 2 (plus `op`, the
 * single key of op scenarios). */
typedef enum {
    TPS_GEMM_QKV_FPROP,
    TPS_GEMM_FC1_FPROP,
    TPS_GEMM_PROJ_FPROP,
    TPS_GEMM_FC2_FPROP,
    TPS_GEMM_PROJ_DGRAD,
    TPS_GEMM_FC2_DGRAD,
    TPS_GEMM_QKV_DGRAD,
    TPS_GEMM_FC1_DGRAD,
    TPS_GEMM_QKV_WGRAD,
    TPS_GEMM_FC1_WGRAD,
    TPS_GEMM_OP,
    TPS_GEMM_SLOT_COUNT
} TpsGemmSlot;

/* NULL-terminated names, indexed by TpsGemmSlot / TpsMethod (the method
 * names are defined beside the method table, in method.c). */
extern const char *const tps_gemm_slot_names[];
extern const char *const tps_method_names[];

typedef struct {
    gboolean set;          /* given in the scenario */
    guint line, column;    /* where, for messages about combinations */
    TpsMethod method;
    guint num_splits;      /* 0: the method's default */
    guint num_sm;          /* 0: the method's default */
    guint cga_size;        /* default 2 */
    gboolean set_sm_margin;
    gboolean aggregate;
    gboolean use_ce;       /* default TRUE */
} TpsOverlapConfig;

typedef struct {
    char *name;
    char *hardware_ref;    /* as written: a model NAME or a path */
    char *file;            /* the scenario file, for messages */
    guint64 seed;

    gboolean is_op;        /* op scenario (op:) rather than model scenario (model:) */

    /* model: */
    guint64 hidden, heads, ffn_hidden, layers, seq_len, vocab;
    TpsDtype dtype;
    TpsAttention attention;

    /* training: */
    guint64 micro_batch, global_batch;
    TpsRecompute recompute;
    gboolean distributed_optimizer; /* shard optimizer states over dp (RS + AG of gradients
                                       and parameters instead of an all-reduce) */
    gboolean overlap_grad_reduce;   /* reduce gradient buckets during the last backward
                                       (default true, as Megatron-core runs it) */

    /* parallel: */
    guint tp, pp, vpp, dp;
    gboolean sp;

    /* op: (dtype above is shared) */
    TpsOpKind op_kind;
    guint64 m, n, k;

    /* strategies: names as written (NULL-terminated), or NULL for "every preset
     * that applies". */
    char **strategies;
    guint strategies_line, strategies_column;

    TpsOverlapConfig overlap[TPS_GEMM_SLOT_COUNT];
    gboolean has_overlap;

    TpsHardware hardware;  /* resolved model */
} TpsScenario;

/* Fill the defaults of design.md (seed 1, vocab 51200, dtype bf16, flash,
 * micro_batch 1, tp/pp/vpp/dp 1, sp false, ...). */
void tps_scenario_init(TpsScenario *scenario);
void tps_scenario_clear(TpsScenario *scenario);
