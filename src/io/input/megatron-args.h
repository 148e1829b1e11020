/* Megatron-LM command lines and launch scripts as scenarios
 * (docs/megatron-args.md).
 *
 * A launch script is read as the shell would read the parts that matter
 * (shell-script.h: line continuations, comments, quotes, the variables and
 * arrays assigned earlier in the script, as in Megatron's examples/
 * scripts). Every command that carries a Megatron or
 * torchrun option is read; the options are mapped onto the keys of a
 * scenario file (model:, training:, parallel:, overlap:), each value node
 * placed where the script sets it, so that the scenario loader's messages
 * point into the script.
 *
 * Every problem is TPS_ERROR_INPUT "file:line:column: message". What the
 * script says that tpsim does not use (learning rates, paths, options it
 * does not know) and what it reads but does not model is returned as
 * notes, for the caller to print on standard error.
 */
#pragma once

#include <glib.h>

#include "io/input/yaml-tree.h"
#include "sched/scenario.h"

/* The longest script read (a launch script is a few kilobytes). */
#define TPS_MEGATRON_MAX_BYTES ((gsize)1 << 20)

/* Read `text` (`len` bytes, or NUL-terminated when -1) as a Megatron
 * command line or launch script named `file` in messages. Positions start
 * at `line0`:`column0` (1:1 for a file; the position of a scenario's
 * megatron_args: value for text inside a scenario). Returns a map node with
 * the sections model:, training:, parallel: and, with --tp-comm-overlap,
 * overlap: (free with tps_yaml_node_free()), or NULL with the error set.
 * Notes (strings) are appended to `notes` when it is not NULL. */
TpsYamlNode *tps_megatron_args_parse(const char *file, const char *text, gssize len, guint line0,
                                     guint column0, GPtrArray *notes, GError **error);

/* What replaces the script's layout before it is mapped (0: the script's
 * value), so that what Megatron derives from it follows: dp from the world
 * size over tp x pp, sequence parallelism only at tp > 1 (when the script
 * asks for it), the vocabulary padded for tp. `gpus` is the world size,
 * `nodes` the world in nodes of the script's GPUs per node (torchrun's
 * --nproc-per-node, else GPUS_PER_NODE). */
typedef struct {
    guint64 tp, pp;
    guint64 nodes, gpus;
} TpsMegatronLayout;

/* tps_megatron_args_parse() with `layout` (NULL: the script's). */
TpsYamlNode *tps_megatron_args_parse_layout(const char *file, const char *text, gssize len,
                                            guint line0, guint column0,
                                            const TpsMegatronLayout *layout, GPtrArray *notes,
                                            GError **error);

/* A whole scenario from a script: the sections of
 * tps_megatron_args_parse(), `name` and the hardware model `hardware_ref`
 * (a model NAME or path), loaded and validated by the scenario loader. */
gboolean tps_megatron_scenario_load(const char *file, const char *text, gssize len,
                                    const char *name, const char *hardware_ref,
                                    TpsScenario *scenario, GPtrArray *notes, GError **error);

/* tps_megatron_scenario_load() with `layout` (NULL: the script's). */
gboolean tps_megatron_scenario_load_layout(const char *file, const char *text, gssize len,
                                           const char *name, const char *hardware_ref,
                                           const TpsMegatronLayout *layout,
                                           TpsScenario *scenario, GPtrArray *notes,
                                           GError **error);

/* Print each note on standard error as "PREFIX: note", each distinct line
 * once per process (the points of a sweep load the same script again). */
void tps_input_notes_print(const char *prefix, const GPtrArray *notes);

/* tps_input_notes_print() with the prefix "megatron args". */
void tps_megatron_notes_print(const GPtrArray *notes);
