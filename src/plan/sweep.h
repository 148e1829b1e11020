/* Sweep files (sweeps/NAME.yaml, docs/sweeps.md): a base scenario and the
 * values to vary, any scalar of the scenario or of its hardware model by
 * its dotted path, as a batch of points for the runner of plan/batch.h.
 *
 * Each point is the base scenario's YAML tree with the varied values set
 * and loaded by the scenario loader, the one owner of the keys, their
 * types and ranges (and, through tps_scenario_validate(), of the rules
 * between values). A path that is no key or a value of the wrong type is
 * an error of the sweep file at the value ("FILE:LINE:COLUMN: ..."); a
 * combination the rules refuse, or a GPU count of `keep:` that a point's
 * tp x pp does not divide, is a point that is skipped, its row saying why.
 */
#pragma once

#include <glib.h>

#include "plan/batch.h"

typedef struct TpsSweep TpsSweep;

/* Read a sweep file and build its points. */
TpsSweep *tps_sweep_load(const char *path, GError **error);
/* Same, from text (tests and fuzzing); `name` is used in messages, and a
 * base: path is taken from the working directory. */
TpsSweep *tps_sweep_load_string(const char *name, const char *text, gssize len, GError **error);
void tps_sweep_free(TpsSweep *sweep);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TpsSweep, tps_sweep_free)

/* The points (owned by the sweep): one per combination, the varied paths
 * as label columns in the file's order. */
const TpsBatch *tps_sweep_batch(const TpsSweep *sweep);

/* The evaluation of a sweep point (TpsBatchEval; `user` is the sweep):
 * every strategy of the point (the sweep's strategies:, else the
 * scenario's, else every preset that applies), a row each, ranked with the
 * gain over megatron as `tpsim run` does; a skipped row for a point that
 * cannot be run, and for a strategy whose simulation fails. */
gboolean tps_sweep_eval(const TpsBatchPoint *point, GArray *rows, gpointer user, GError **error);
