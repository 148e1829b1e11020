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
} TpsStrategyId;

typedef struct {
    const char *name;
    const char *summary;
    gboolean implemented; /* FALSE: a fixed preset name that this version cannot simulate yet */
    gboolean needs_sp;    /* applies only with sequence parallelism (else only without) */
    gboolean for_model;   /* applies to model scenarios */
    gboolean for_op;      /* applies to op scenarios */
    TpsStrategyId id;
} TpsStrategy;

/* The table, sorted by name; `n` receives its length. */
const TpsStrategy *tps_strategy_table(guint *n);

const TpsStrategy *tps_strategy_lookup(const char *name);

/* Whether `strategy` applies to `scenario`; when not, `why` (if non-NULL)
 * receives a newly allocated reason. */
gboolean tps_strategy_applies(const TpsStrategy *strategy, const TpsScenario *scenario,
                              char **why);

/* The strategies to run for the scenario: `requested` (names, NULL for the
 * scenario's own `strategies:` or, when that is absent too, every
 * implemented preset that applies). Errors (unknown name with a suggestion,
 * not applicable, not implemented) are TPS_ERROR_INPUT; when the names come
 * from the scenario, the message carries its file:line:column. Returns a
 * newly allocated NULL-terminated array of table entries (free with g_free). */
const TpsStrategy **tps_strategy_select(const TpsScenario *scenario, const char *const *requested,
                                        GError **error);
