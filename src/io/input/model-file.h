/* Hardware model files (models/NAME.yaml): strict loading and lookup.
 *
 * A reference is a model NAME, or a path when it contains '/' or ends with
 * ".yaml" (a relative path is taken from `base_dir`, the folder of the
 * scenario that names it, only; from the working directory when `base_dir`
 * is NULL: a command-line option). A NAME is looked up in the
 * folders of TPSIM_MODEL_PATH (colon-separated), then in the project's
 * models/ folder (the build tree's, then the installed one).
 */
#pragma once

#include <glib.h>

#include "cost/hardware.h"
#include "io/input/yaml-tree.h"

/* Load and validate one model file into `hw` (overwritten). Unknown keys,
 * wrong types, out-of-range values: TPS_ERROR_INPUT "file:line:col: ...". */
gboolean tps_model_file_load(const char *path, TpsHardware *hw, GError **error);

/* Same, from text (tests and fuzzing); `name` is used in messages. */
gboolean tps_model_file_load_string(const char *name, const char *text, gssize len, TpsHardware *hw,
                                    GError **error);

/* Resolve `ref` and load it. An unknown NAME gives a message that lists the
 * available models. */
gboolean tps_model_file_resolve(const char *ref, const char *base_dir, TpsHardware *hw,
                                GError **error);
/* The same, with the file it loaded, absolute, into `path_out` (g_free
 * it; not set on failure; NULL: not wanted). */
gboolean tps_model_file_resolve_at(const char *ref, const char *base_dir, TpsHardware *hw,
                                   char **path_out, GError **error);

/* A what-if (a scenario's `hardware: {base: NAME, node: {nvlink_gbps:
 * 150}}`): set the values the sections of `map` give (any key of the
 * model file but its name; the elements given of a map; a list replaced
 * whole) in `hw`, checked as the loader checks them. The keys of `map`
 * named in `skip` (NULL-terminated; may be NULL) are not sections and are
 * left alone. On an error (located in `doc`), `hw` is unchanged. */
gboolean tps_model_file_apply(const TpsYamlDoc *doc, const TpsYamlNode *map,
                              const char *const *skip, TpsHardware *hw, GError **error);

/* The folders searched for model NAMEs, in order (NULL-terminated, newly
 * allocated). */
char **tps_model_file_search_path(void);

/* Sorted names of the available models (NULL-terminated, newly allocated). */
char **tps_model_file_list(void);
