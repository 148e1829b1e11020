/* The report of tpsim tune (sched/tune.h) as text, the Megatron-LM flags
 * of its choice, and its userbuffers configuration file (ub-cfg.h). */
#pragma once

#include <glib.h>

#include "sched/tune.h"

/* The report: the search, the --top fastest configurations with their gain
 * over no userbuffers, its band and whether each is tied with rank 1, the
 * chosen configuration per GEMM with each method's gain there, and the
 * verdict (the flags to pass, or "do not overlap" and why). Without
 * `ub_path`, the configuration file is appended. Newly allocated. */
char *tps_tune_format_text(const TpsScenario *scenario, const TpsStrategy *base,
                           const TpsTuneReport *report, guint top, const char *ub_path);

/* The Megatron-LM command-line flags of the choice (`ub_path` the file
 * written, NULL: FILE). Newly allocated. */
char *tps_tune_megatron_flags(const TpsTuneReport *report, const char *ub_path);

/* The fastest configuration as Transformer Engine's YAML. Newly allocated. */
char *tps_tune_ub_cfg(const TpsScenario *scenario, const TpsTuneReport *report);
