/* The overlap-method table: one row per TpsMethod, the single owner of what
 * a method is. The scenario loader asks it where a method may be set and
 * why not, the presets take their knobs from its defaults, the layer and op
 * graphs dispatch to its graph builders, and plots ask it which methods
 * split their GEMM. Adding a method is one enum value, one row here and its
 * builders in overlap.c (docs/extending.md).
 *
 * Rows are indexed by TpsMethod (the enum order is the order of the file
 * format's messages: none, ring_exchange, pipeline, bulk). The table is
 * static and constant; the returned pointers live for the program.
 */
#pragma once

#include <glib.h>

#include "sched/overlap.h"
#include "sched/scenario.h"
#include "sched/strategy.h"

/* Bit of a TpsGemmSlot in TpsMethodInfo.slots. */
#define TPS_METHOD_SLOT(slot) (1u << (slot))

/* A GEMM with its own all-gather (into it) or reduce-scatter (of its
 * output), split by the method: tps_overlap_ag_gemm / tps_overlap_gemm_rs
 * call it. */
typedef void (*TpsMethodGemmFunc)(TpsBuilder *b, const TpsGemmShape *gemm,
                                  const TpsOverlapConfig *cfg);
/* A collective that does not depend on the GEMM beside it (the backward's
 * all-gather of the saved input beside dgrad, or reduce-scatter of
 * grad_input beside wgrad): tps_overlap_bulk's signature. */
typedef void (*TpsMethodBulkFunc)(TpsBuilder *b, TpsCollKind kind, double bytes,
                                  const TpsOverlapConfig *cfg, const char *name, TpsOpIds *out);

typedef struct {
    TpsMethod id;
    const char *name;    /* as scenario files and outputs spell it (Transformer Engine's) */
    const char *summary; /* one line, for docs and help */
    /* Where it may be set: TPS_METHOD_SLOT() of each model GEMM slot (the
     * op slot is not in it), and the op kinds (TPS_OPS_*) whose op slot may
     * take it. */
    guint slots;
    guint ops;
    /* Why the loader rejects it on a slot outside `slots`/`ops` (a wgrad
     * slot has its own message); NULL for none, which fits everywhere. */
    const char *rejected;
    gboolean has_splits;      /* splits its GEMM into num_splits chunks */
    gboolean splits_per_rank; /* num_splits is always tp, whatever is written */
    gboolean has_sms;         /* SM-based communication kernels of num_sm CTAs */
    /* Transformer Engine's get_default_config() for a GEMM whose default
     * method is this one (TE 2.0 and later, transformer_engine/pytorch/
     * module/base.py; docs/overlap-methods.md, "Defaults"): the knobs a
     * configuration leaves out take the values of the row of the slot's
     * TE default method (tps_method_te_default()), as TE's update() of
     * that dictionary does; num_splits only where has_splits. */
    TpsOverlapConfig defaults;
    /* Graph builders, NULL where the method has none: an AG+GEMM or
     * GEMM+RS slot without a builder runs blocking NCCL, and a backward
     * slot without one runs Megatron's NCCL side stream. none has none. */
    TpsMethodGemmFunc ag_gemm;
    TpsMethodGemmFunc gemm_rs;
    TpsMethodBulkFunc bulk;
} TpsMethodInfo;

/* The row of `method` (a valid TpsMethod). */
const TpsMethodInfo *tps_method_info(TpsMethod method);

/* Transformer Engine's default method of `slot` (initialize_ub's
 * `methods` table, unchanged from TE 0.11 to 2.x): ring_exchange for the
 * GEMMs fed by an all-gather, pipeline for the row-parallel forward, bulk
 * for the column-parallel dgrad and wgrad; the op slot by its kind. */
TpsMethod tps_method_te_default(TpsGemmSlot slot, TpsOpKind op_kind);

/* The row named `name`, or NULL. */
const TpsMethodInfo *tps_method_lookup(const char *name);

/* Whether `method` may be set on `slot`; `op_kind` is the op scenario's
 * kind, used only for TPS_GEMM_OP. */
gboolean tps_method_allows(const TpsMethodInfo *method, TpsGemmSlot slot, TpsOpKind op_kind);

/* A newly allocated list of the names of the methods in `methods` (bits
 * 1 << TpsMethod), in table order, each between `quote`s: "a", "a or b",
 * "a, b or c"; "" when empty. For messages that name methods. */
char *tps_method_join(guint methods, const char *quote);
