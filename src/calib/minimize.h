/* A small derivative-free minimiser for the calibration fits: Nelder-Mead
 * with restarts, then a coordinate (pattern) search to polish.
 *
 * The objectives are piecewise smooth at best (wave quantization, the
 * protocol and tile choices are discrete), so gradients are useless and a
 * simplex method is the simple robust choice; the restarts get it out of
 * the collapsed simplices that the kinks produce, and the coordinate search
 * guarantees that no single parameter can still be moved to improve. No
 * external library: the dimensions are small (at most a few dozen
 * parameters) and each evaluation costs microseconds.
 */
#pragma once

#include <glib.h>

/* The objective at `x` (n values). */
typedef double (*TpsMinimizeFn)(const double *x, guint n, gpointer user_data);

typedef struct {
    guint max_evals;  /* total budget of objective evaluations */
    double step;      /* initial simplex / pattern step, in units of x */
    double tolerance; /* stop when the simplex's values differ by less than this */
} TpsMinimizeOptions;

/* Minimises `fn` from `x` (n values, overwritten with the best point
 * found). Returns the objective there. Deterministic. */
double tps_minimize(TpsMinimizeFn fn, double *x, guint n, const TpsMinimizeOptions *options,
                    gpointer user_data);
