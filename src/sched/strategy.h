/* Strategy presets (design.md, "Strategy presets"): one sorted table that
 * serves help text, validation and dispatch.
 *
 * A preset fixes how each TP collective of a layer is scheduled. Which
 * presets apply follows the scenario: `tp-allreduce` without sequence
 * parallelism, the others with it; op scenarios take the presets that make
 * sense for one AG+GEMM or GEMM+RS.
 */
#pragma once

#include <glib.h>

#include "sched/scenario.h"

typedef enum {
    TPS_STRATEGY_TP_ALLREDUCE,
    TPS_STRATEGY_SP_BLOCKING,
    TPS_STRATEGY_MEGATRON,
    TPS_STRATEGY_RING_AG,
    TPS_STRATEGY_RING_RS,
    TPS_STRATEGY_PIPELINE_RS,
    TPS_STRATEGY_BULK,
    TPS_STRATEGY_TE_DEFAULT,
    TPS_STRATEGY_TE_A100,
    TPS_STRATEGY_CUSTOM,
} TpsStrategyId;

/* Which op scenarios a preset applies to (bits of TpsOpKind). */
#define TPS_OPS_AG (1u << TPS_OP_AG_GEMM)
#define TPS_OPS_RS (1u << TPS_OP_GEMM_RS)

typedef struct {
    const char *name;
    const char *summary;
    gboolean implemented; /* FALSE: a fixed preset name that this version cannot simulate yet */
    gboolean needs_sp;    /* applies only with sequence parallelism (else only without) */
    gboolean for_model;   /* applies to model scenarios */
    guint ops;            /* op scenario kinds it applies to (TPS_OPS_*) */
    gboolean userbuffers; /* uses comm+GEMM overlap (single NVLink domain only) */
    TpsStrategyId id;
} TpsStrategy;

/* The table, sorted by name; `n` receives its length. */
const TpsStrategy *tps_strategy_table(guint *n);

const TpsStrategy *tps_strategy_lookup(const char *name);
const TpsStrategy *tps_strategy_by_id(TpsStrategyId id);

/* The overlap configuration of every GEMM slot under `strategy`, the
 * knobs nobody wrote (TpsOverlapConfig.given) filled in with Transformer
 * Engine's defaults (tps_strategy_fill_defaults()). Slots without overlap
 * get TPS_METHOD_NONE. */
void tps_strategy_overlap(const TpsStrategy *strategy, const TpsScenario *scenario,
                          TpsOverlapConfig out[TPS_GEMM_SLOT_COUNT]);

/* Transformer Engine's defaults for the knobs of `c` (on `slot`, TP size
 * `tp`) that are not in c->given, or are 0 where 0 means "the default":
 * TE 2.0 and later's get_default_config() of the slot's default method
 * (the dgrad's own method when it reduce-scatters): ring_exchange num_sm 1,
 * cga_size 1, no SM margin; pipeline and bulk num_sm 16, cga_size 2, SM
 * margin; pipeline 4 splits; ring_exchange always tp splits; aggregate
 * off; copy engine on (docs/overlap-methods.md, "Defaults"). */
void tps_strategy_fill_defaults(TpsOverlapConfig *c, TpsGemmSlot slot, guint tp, TpsOpKind op_kind);

/* Whether `strategy` applies to `scenario`; when not, `why` (if non-NULL)
 * receives a newly allocated reason. */
gboolean tps_strategy_applies(const TpsStrategy *strategy, const TpsScenario *scenario, char **why);

/* Whether `strategy` can be simulated on `scenario`: it applies
 * (tps_strategy_applies()) and this version models it. When not, `why`
 * (if non-NULL) receives a newly allocated reason, as "skipped: REASON"
 * rows show it. The one test of a preset against a scenario for every
 * caller that runs presets (run, sweeps, searches). */
gboolean tps_strategy_usable(const TpsStrategy *strategy, const TpsScenario *scenario, char **why);

/* As tps_strategy_select(), but a requested strategy that is not usable
 * on the scenario is returned too rather than an error (the caller reports
 * it, with tps_strategy_usable()'s reason, and runs the others); unknown
 * names are still errors. Without names (and no `strategies:`), only the
 * usable presets. */
const TpsStrategy **tps_strategy_select_all(const TpsScenario *scenario,
                                            const char *const *requested, GError **error);

/* The strategies to run for the scenario: `requested` (names, NULL for the
 * scenario's own `strategies:` or, when that is absent too, every
 * implemented preset that applies). Errors (unknown name with a suggestion,
 * not applicable, not implemented) are TPS_ERROR_INPUT; when the names come
 * from the scenario, the message carries its file:line:column. Returns a
 * newly allocated NULL-terminated array of table entries (free with g_free). */
const TpsStrategy **tps_strategy_select(const TpsScenario *scenario, const char *const *requested,
                                        GError **error);
