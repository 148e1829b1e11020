/* Scenario files (scenarios/NAME.yaml, design.md "Scenario file"): strict
 * loading into a TpsScenario, the hardware model resolved.
 *
 * Every problem is reported as TPS_ERROR_INPUT "file:line:column: message":
 * unknown keys (with the closest known key suggested), wrong types,
 * out-of-range values, inconsistent values (heads or ffn_hidden not
 * divisible by tp, seq_len not divisible by tp under sp, global_batch not a
 * multiple of micro_batch * dp, layers not divisible by pp, ...).
 */
#pragma once

#include <glib.h>

#include "io/input/yaml-tree.h"
#include "sched/scenario.h"

/* Load `path` into `scenario` (initialised here; clear it after use even
 * on failure). */
gboolean tps_scenario_file_load(const char *path, TpsScenario *scenario, GError **error);

/* Same, from text (for tests and fuzzing); `name` is used in messages and
 * relative model paths resolve from the working directory. */
gboolean tps_scenario_file_load_string(const char *name, const char *text, gssize len,
                                       TpsScenario *scenario, GError **error);

/* Load a scenario from its YAML tree (a sweep's base: and each sweep point,
 * plan/sweep.c); relative model paths resolve from `base_dir` (NULL: the
 * working directory). With `values_only`, only the keys and each value on
 * its own are checked (shape, types and ranges, the hardware model and its
 * what-ifs, the overlap: entries), not the rules between values that
 * tps_scenario_validate() owns. */
gboolean tps_scenario_file_load_doc(const TpsYamlDoc *doc, const char *base_dir,
                                    gboolean values_only, TpsScenario *scenario, GError **error);

/* Apply a Transformer Engine userbuffers configuration (the YAML of
 * Megatron's --tp-comm-overlap-cfg; `name` in messages) to the overlap
 * table of a loaded model scenario, as overlap: {ub_cfg: FILE} does: TE's
 * default method for every GEMM, each GEMM the file names as it says.
 * What TE accepts and tpsim does not model (atomic_gemm, fp8_buf,
 * priorities, the external wgrad overlaps) is appended to `notes` as
 * "NAME:LINE:COLUMN: note". For tests and fuzzing. */
gboolean tps_scenario_apply_ub_cfg_string(TpsScenario *scenario, const char *name,
                                          const char *text, gssize len, GPtrArray *notes,
                                          GError **error);
