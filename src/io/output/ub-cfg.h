/* Transformer Engine userbuffers configurations written from a strategy:
 * the YAML that Megatron-LM passes to TE with --tp-comm-overlap-cfg FILE
 * (transformer_engine/pytorch/module/base.py, initialize_ub), read back by
 * tpsim as overlap: {ub_cfg: FILE} (docs/overlap-methods.md,
 * "Userbuffers configuration files").
 */
#pragma once

#include <glib.h>

#include "sched/scenario.h"
#include "sched/strategy.h"

/* The overlap table of `strategy` on `scenario` (a model scenario) as TE's
 * YAML, newly allocated: one entry per overlapped GEMM with only keys TE
 * accepts, in TE's names (method, num_sm, cga_size, set_sm_margin,
 * num_splits, aggregate, use_ce), the knobs resolved as tpsim simulates
 * them. A GEMM the strategy does not overlap cannot be switched off in the
 * file (TE overlaps every GEMM it knows): it is named in a comment with the
 * Megatron switch that turns its group off, and `*incomplete` (may be NULL)
 * is set. */
char *tps_ub_cfg_format(const TpsScenario *scenario, const TpsStrategy *strategy,
                        gboolean *incomplete);

/* The same for an overlap table `cfg` (TPS_GEMM_SLOT_COUNT entries, the
 * knobs resolved), whose header comment says it comes from `origin`
 * ("strategy te-a100", "tpsim tune"). */
char *tps_ub_cfg_format_table(const TpsScenario *scenario, const TpsOverlapConfig *cfg,
                              const char *origin, gboolean *incomplete);
