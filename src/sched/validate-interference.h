/* The interference entries of the calibration set
 * (shared/calibration/overlap-interference.yaml) replayed through the
 * model, for `tpsim validate`.
 *
 * Each entry that states numbers is rebuilt as the situation it describes
 * (a kernel beside a collective, an all-gather + GEMM op, a layer under
 * two strategies) and predicted; the entries that cannot be rebuilt are
 * listed with the reason. The situations, their assumptions and the
 * residuals are in docs/cost-model.md ("Interference"). This lives in sched
 * (not calib) because the userbuffers and end-to-end entries need the
 * graph builders.
 */
#pragma once

#include <glib.h>

#include "cost/hardware.h"

#define TPS_INTERFERENCE_MAX_POINTS 4

/* One entry: `points` pairs of predicted and measured values of the
 * quantity named in `quantity` (a time, a rate or a ratio of times). */
typedef struct {
    const char *name;     /* short id, e.g. "nccl-1428" */
    const char *source;   /* the entry's source in the calibration file */
    const char *quantity; /* what the points are, with the unit */
    guint points;
    const char *labels[TPS_INTERFERENCE_MAX_POINTS];
    double predicted[TPS_INTERFERENCE_MAX_POINTS];
    double measured[TPS_INTERFERENCE_MAX_POINTS];
} TpsInterferenceEntry;

/* An entry the model cannot rebuild, and why. */
typedef struct {
    const char *name;
    const char *source;
    const char *why;
} TpsInterferenceSkipped;

/* A statement without a measured number (a direction, a bound), and the
 * model's figure for the same situation: the model agrees when `low` <=
 * `predicted` <= `high`. */
typedef struct {
    const char *name;
    const char *source;
    const char *claim;    /* what the source states */
    const char *quantity; /* the model's figure, with the unit */
    double predicted;
    double low, high;
} TpsInterferenceCheck;

/* Predict every entry that states numbers, appending TpsInterferenceEntry
 * values to `entries`. `a100` is the a100-sxm4-80gb model and `h100` the
 * h100-sxm model (the entries run on those GPUs; the A800 of the Flux rows
 * is the A100 with the A800's NVLink). FALSE with the error of a
 * simulation that failed. */
gboolean tps_validate_interference(const TpsHardware *a100, const TpsHardware *h100,
                                   GArray *entries, GError **error);

/* Rebuild the entries that state a direction or a bound only, appending
 * TpsInterferenceCheck values to `checks`. `a100` as above; `h20` the h20
 * model (Megatron-LM #2662 ran on H20s). FALSE with the error of a
 * simulation that failed. */
gboolean tps_validate_interference_checks(const TpsHardware *a100, const TpsHardware *h20,
                                          GArray *checks, GError **error);

/* The entries left out of the numeric ones, with the reason (a static
 * table). */
const TpsInterferenceSkipped *tps_validate_interference_skipped(guint *n);
