/* The interference entries of the calibration set
 * (shared/calibration/overlap-interference.yaml) as datasets of `tpsim
 * validate`: one set "interference/<entry>" per entry that states numbers,
 * its points the entry's quantities (times, rates or ratios of times),
 * predicted by sched/validate-interference.h. The situations run on the
 * GPUs the entries name (a100-sxm4-80gb, h100-sxm), whatever model is
 * validated. The registry row lives here, above sched and calib, with the
 * row type of calib/validate.h; `tpsim validate` runs it after the others.
 */
#pragma once

#include <glib.h>

#include "calib/validate.h"

const TpsValidateDataset *tps_interference_validate_datasets(guint *n_rows);
