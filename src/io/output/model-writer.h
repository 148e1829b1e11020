/* Writing hardware model files (models/NAME.yaml) that tps_model_file_load
 * reads back to the same values (to the 6 significant digits written).
 *
 * Every value carries a comment, as the hand-written models do: the caller
 * supplies it per key path ("gpu.launch_us", "gemm.tiles.2.efficiency",
 * "nccl.slot_bytes.ll", ...: the paths of cost/hardware-schema.h, a tile's
 * line by its efficiency), or `default_comment` is written. The writer
 * knows nothing of calibration: calib's report provides the comments
 * through the callback.
 */
#pragma once

#include <glib.h>

#include "cost/hardware.h"

/* The comment for `key`, newly allocated, or NULL for the default. */
typedef char *(*TpsModelCommentFn)(const char *key, gpointer user_data);

/* The YAML text of `hw`, newly allocated. `header` (may be NULL) is
 * written first, each of its lines as a comment. `comment` may be NULL
 * (every value gets `default_comment`; NULL: no comment). */
char *tps_model_write(const TpsHardware *hw, const char *header, TpsModelCommentFn comment,
                      gpointer user_data, const char *default_comment);
