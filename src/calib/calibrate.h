/* Calibration: fitting the cost-model parameters of a hardware model to
 * measurements (docs/calibration.md).
 *
 * Four independent fits, in this order (each uses the values fitted
 * before it):
 *   launch       gpu.launch_us: the median of the kernel-launch samples;
 *   gemm         gemm.tiles[i].efficiency, gemm.k_overhead: TFLOP/s of GEMM
 *                points through tps_cost_gemm (cost/gemm.c);
 *   collectives  nccl.{base,hw,net}_latency_us, nccl.channel_gbps,
 *                nccl.slot_bytes per protocol, node.nvlink_efficiency: time of
 *                collective and send/recv points through tps_coll_plan
 *                (cost/collective.c) plus one launch where the point's
 *                time includes it;
 *   copy         node.copy_engine_gbps: large copy-engine P2P copies.
 * The parameters of a fit are the entries of the hardware schema
 * (cost/hardware-schema.h) whose `fit` names it, within its fit range.
 * Each fit minimises the RMS relative error of its points (calib/minimize.h,
 * in log space so that every parameter stays positive and within bounds).
 * A parameter is fitted only if the inputs constrain it: when scaling it by
 * 1.3 either way changes no prediction of its fit by 0.05%, it is left as in
 * the base model and reported as not constrained. The protocol and tile
 * choices make the objective piecewise: a parameter of a protocol that no
 * point uses is unconstrained unless moving it would make the protocol win.
 *
 * The report owns its strings; the io layer turns it into the comments of
 * the written model.
 */
#pragma once

#include <glib.h>

#include "calib/measurements.h"
#include "cost/hardware.h"

typedef struct {
    char *key;        /* model key path: "gpu.launch_us", "gemm.tiles.2.efficiency",
                         "nccl.channel_gbps.simple", ... */
    double base;      /* value in the base model */
    double value;     /* value written (== base unless fitted) */
    gboolean fitted;  /* constrained by the inputs, and fitted */
    gboolean pinned;  /* fitted, and a 2% change of the fitted value up and down moves
                         some prediction by 0.05% both ways: the inputs determine it; a
                         fitted parameter that is not pinned is only bounded (a tile or
                         protocol that no point uses at the fitted values, kept from
                         winning) */
    gboolean at_bound;/* fitted to the edge of its allowed range (the model cannot follow
                         the inputs further: suspect the inputs or a missing mechanism) */
    int fit;          /* index into report->fits of the fit it belongs to; -1: none ran */
} TpsCalibParam;

typedef struct {
    char *name;       /* "launch", "gemm", "collectives", "copy" */
    char *inputs;     /* what was fitted to, one line */
    guint points;
    guint fitted;     /* parameters fitted */
    double base_max, base_rms; /* relative error of the base model on the points */
    double max, rms;           /* after the fit */
} TpsCalibFit;

typedef struct {
    GPtrArray *fits;  /* TpsCalibFit *, in the order run */
    GArray *params;   /* TpsCalibParam, every fittable parameter of the model */
    GPtrArray *notes; /* char *: measurements recorded but not fitted, warnings */
} TpsCalibReport;

/* Fits `base` to `meas`; `out` (overwritten, not cleared) receives the
 * calibrated model, `*report` (newly allocated) what was done. Fails with
 * TPS_ERROR_INPUT when no measurement constrains any parameter. */
gboolean tps_calibrate(const TpsHardware *base, const TpsMeasurements *meas, TpsHardware *out,
                       TpsCalibReport **report, GError **error);

void tps_calib_report_free(TpsCalibReport *report);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TpsCalibReport, tps_calib_report_free)

/* The parameter of `key`, or NULL. */
const TpsCalibParam *tps_calib_report_param(const TpsCalibReport *report, const char *key);

/* The comment for `key` in a written model (newly allocated): for a fitted
 * parameter, the inputs, base and fitted values and the residual of its fit;
 * NULL for the others (the writer marks them unchanged from base). */
char *tps_calib_report_comment(const TpsCalibReport *report, const char *key);

/* A few lines summing up the fits (for the model's header and the
 * terminal), newly allocated, no trailing newline. */
char *tps_calib_report_summary(const TpsCalibReport *report);

/* Predictions of the cost model for one point, as the fits compute them:
 * TFLOP/s of a GEMM point; microseconds per call of a collective or
 * send/recv point (launch included where the point's time includes it);
 * microseconds of a copy. Exposed for
 * tests and for generating synthetic measurements. */
double tps_calib_predict_gemm(const TpsHardware *hw, const TpsGemmPoint *p);
double tps_calib_predict_coll(const TpsHardware *hw, const TpsCollPoint *p);
double tps_calib_predict_copy(const TpsHardware *hw, const TpsCopyPoint *p);
