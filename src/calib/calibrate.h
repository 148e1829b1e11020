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
 * Each fitted parameter gets a confidence: its relative standard error
 * from the Jacobian of the relative residuals at the optimum (linearised
 * least squares: covariance s^2 (J^T J)^-1 over the pinned parameters of the
 * fit, s^2 = sum r^2 / (points - parameters), derivatives by central
 * differences of 1% in log space); the launch fit, a median, gets the
 * standard error of the median (1.2533 s / sqrt(n)). NAN where it is
 * undetermined: a parameter only bounded, or a fit with no more points than
 * pinned parameters, or whose Jacobian is singular.
 *
 * A fit is refused (report->refusals lists why; `tpsim calibrate` then
 * writes nothing unless --force) when its error exceeds TPS_CALIB_MAX_RMS or
 * TPS_CALIB_MAX_ERROR, when it has fewer points than fitted parameters or
 * its points determine fewer directions (the rank of the Jacobian) than it
 * has pinned parameters, when an efficiency leaves (0, 1], when any other
 * parameter moves more than TPS_CALIB_MAX_FACTOR from the base model, and
 * when a parameter ends at the edge of its fit range.
 *
 * The report owns its strings; the io layer turns it into the comments of
 * the written model.
 */
#pragma once

#include <glib.h>

#include "calib/measurements.h"
#include "cost/hardware.h"

/* Refusal thresholds (docs/calibration.md, "When calibrate refuses"): a fit
 * at the noise of gpubench's measurements has an RMS error of 1-2%; the
 * GEMM model itself is within about 10% of real shapes (validation). */
#define TPS_CALIB_MAX_RMS 0.10
#define TPS_CALIB_MAX_ERROR 0.25
/* A parameter that must move further than this from the base model
 * describes another machine, or a mechanism the model lacks. */
#define TPS_CALIB_MAX_FACTOR 4.0

typedef struct {
    char *key;         /* model key path: "gpu.launch_us", "gemm.tiles.2.efficiency",
                          "nccl.channel_gbps.simple", ... */
    double base;       /* value in the base model */
    double value;      /* value written (== base unless fitted) */
    gboolean fitted;   /* constrained by the inputs, and fitted */
    gboolean pinned;   /* fitted, and a 2% change of the fitted value up and down moves
                          some prediction by 0.05% both ways: the inputs determine it; a
                          fitted parameter that is not pinned is only bounded (a tile or
                          protocol that no point uses at the fitted values, kept from
                          winning) */
    gboolean at_bound; /* fitted to the edge of its allowed range (the model cannot follow
                          the inputs further: suspect the inputs or a missing mechanism) */
    int fit;           /* index into report->fits of the fit it belongs to; -1: none ran */
    double sigma;      /* relative standard error of the fitted value (see above); NAN when
                          undetermined or not fitted */
} TpsCalibParam;

typedef struct {
    char *name;   /* "launch", "gemm", "collectives", "copy" */
    char *inputs; /* what was fitted to, one line */
    guint points;
    guint fitted;              /* parameters fitted */
    double base_max, base_rms; /* relative error of the base model on the points */
    double max, rms;           /* after the fit */
    guint pinned;              /* fitted parameters the points determine (TpsCalibParam.pinned) */
    guint rank;                /* independent directions the points give the pinned parameters:
                                  the rank of the Jacobian of the residuals */
} TpsCalibFit;

typedef struct {
    GPtrArray *fits;     /* TpsCalibFit *, in the order run */
    GArray *params;      /* TpsCalibParam, every fittable parameter of the model */
    GPtrArray *notes;    /* char *: measurements recorded but not fitted, warnings */
    GPtrArray *refusals; /* char *: why the fitted model must not be used; empty when fine */
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

/* One line per fitted parameter: key, base and fitted values, confidence
 * ("+-1.2%", "bounded only", "undetermined"), newly allocated, no trailing
 * newline. */
char *tps_calib_report_params(const TpsCalibReport *report);

/* Predictions of the cost model for one point, as the fits compute them:
 * TFLOP/s of a GEMM point; microseconds per call of a collective or
 * send/recv point (launch included where the point's time includes it);
 * microseconds of a copy. Exposed for
 * tests and for generating synthetic measurements. */
double tps_calib_predict_gemm(const TpsHardware *hw, const TpsGemmPoint *p);
double tps_calib_predict_coll(const TpsHardware *hw, const TpsCollPoint *p);
double tps_calib_predict_copy(const TpsHardware *hw, const TpsCopyPoint *p);
