/* Nelder-Mead (standard coefficients 1, 2, 0.5, 0.5) with restarts around
 * the best vertex, then a coordinate pattern search with halving steps. */
#include "calib/minimize.h"

#include <math.h>
#include <string.h>

typedef struct {
    TpsMinimizeFn fn;
    gpointer user_data;
    guint evals;
    guint max_evals;
} Budget;

static double
eval(Budget *b, const double *x, guint n)
{
    b->evals++;
    double v = b->fn(x, n, b->user_data);
    return isfinite(v) ? v : INFINITY;
}

/* A simplex of n + 1 vertices in n dimensions: its vertices (row-major),
 * their values, and room for the centroid and two trial points. */
typedef struct {
    guint n;
    double *s, *f;
    double *centroid, *xr, *xe;
} Simplex;

/* Order: best first (insertion sort of the rows; n is small). */
static void
simplex_sort(Simplex *sx)
{
    const guint n = sx->n, np = n + 1;
    double *s = sx->s, *f = sx->f;
    for (guint i = 1; i < np; i++) {
        for (guint j = i; j > 0 && f[j] < f[j - 1]; j--) {
            double tf = f[j];
            f[j] = f[j - 1];
            f[j - 1] = tf;
            for (guint d = 0; d < n; d++) {
                double t = s[j * n + d];
                s[j * n + d] = s[(j - 1) * n + d];
                s[(j - 1) * n + d] = t;
            }
        }
    }
}

/* One step of a sorted simplex: the worst vertex reflected through the
 * centroid of the others, expanded or contracted; or, when nothing
 * helps, every vertex shrunk towards the best. */
static void
simplex_step(Budget *b, Simplex *sx)
{
    const guint n = sx->n, np = n + 1;
    double *s = sx->s, *f = sx->f, *centroid = sx->centroid, *xr = sx->xr, *xe = sx->xe;
    for (guint d = 0; d < n; d++) {
        double sum = 0.0;
        for (guint i = 0; i < n; i++)
            sum += s[i * n + d];
        centroid[d] = sum / n;
    }
    double *worst = &s[n * n];
    for (guint d = 0; d < n; d++)
        xr[d] = centroid[d] + (centroid[d] - worst[d]);
    double fr = eval(b, xr, n);

    if (fr < f[0]) {
        for (guint d = 0; d < n; d++)
            xe[d] = centroid[d] + 2.0 * (centroid[d] - worst[d]);
        double fe = eval(b, xe, n);
        if (fe < fr) {
            memcpy(worst, xe, n * sizeof(double));
            f[n] = fe;
        } else {
            memcpy(worst, xr, n * sizeof(double));
            f[n] = fr;
        }
    } else if (fr < f[n - 1]) {
        memcpy(worst, xr, n * sizeof(double));
        f[n] = fr;
    } else {
        /* Contraction: outside if the reflection helped the worst. */
        gboolean outside = fr < f[n];
        for (guint d = 0; d < n; d++)
            xe[d] = outside ? centroid[d] + 0.5 * (xr[d] - centroid[d])
                            : centroid[d] + 0.5 * (worst[d] - centroid[d]);
        double fc = eval(b, xe, n);
        if (fc < (outside ? fr : f[n])) {
            memcpy(worst, xe, n * sizeof(double));
            f[n] = fc;
        } else {
            /* Shrink towards the best. */
            for (guint i = 1; i < np; i++) {
                for (guint d = 0; d < n; d++)
                    s[i * n + d] = s[d] + 0.5 * (s[i * n + d] - s[d]);
                f[i] = eval(b, &s[i * n], n);
            }
        }
    }
}

/* One Nelder-Mead run from `x` (updated with the best vertex). */
static double
nelder_mead(Budget *b, double *x, guint n, double step, double tolerance)
{
    const guint np = n + 1;
    Simplex sx = {.n = n,
                  .s = g_new(double, (gsize)np *n),
                  .f = g_new(double, np),
                  .centroid = g_new(double, n),
                  .xr = g_new(double, n),
                  .xe = g_new(double, n)};
    double *s = sx.s, *f = sx.f;

    for (guint i = 0; i < np; i++) {
        memcpy(&s[i * n], x, n * sizeof(double));
        if (i > 0)
            s[i * n + (i - 1)] += step;
        f[i] = eval(b, &s[i * n], n);
    }
    while (b->evals < b->max_evals) {
        simplex_sort(&sx);
        if (fabs(f[np - 1] - f[0]) <= tolerance * (fabs(f[0]) + 1e-12))
            break;
        simplex_step(b, &sx);
    }

    guint best = 0;
    for (guint i = 1; i < np; i++)
        if (f[i] < f[best])
            best = i;
    memcpy(x, &s[best * n], n * sizeof(double));
    double fbest = f[best];
    g_free(sx.s);
    g_free(sx.f);
    g_free(sx.centroid);
    g_free(sx.xr);
    g_free(sx.xe);
    return fbest;
}

/* Coordinate pattern search: try +-step on each coordinate, keep any
 * improvement, halve the step when none helps. */
static double
pattern_search(Budget *b, double *x, guint n, double fx, double step, double min_step)
{
    double *trial = g_new(double, n);
    while (step >= min_step && b->evals < b->max_evals) {
        gboolean improved = FALSE;
        for (guint d = 0; d < n && b->evals < b->max_evals; d++) {
            for (int sign = -1; sign <= 1; sign += 2) {
                memcpy(trial, x, n * sizeof(double));
                trial[d] += sign * step;
                double ft = eval(b, trial, n);
                if (ft < fx) {
                    memcpy(x, trial, n * sizeof(double));
                    fx = ft;
                    improved = TRUE;
                    break;
                }
            }
        }
        if (!improved)
            step *= 0.5;
    }
    g_free(trial);
    return fx;
}

double
tps_minimize(TpsMinimizeFn fn, double *x, guint n, const TpsMinimizeOptions *options,
             gpointer user_data)
{
    g_return_val_if_fail(fn != NULL && x != NULL && options != NULL, INFINITY);
    Budget b = {fn, user_data, 0, options->max_evals};
    if (n == 0)
        return eval(&b, x, n);

    /* Restarts: a fresh simplex around the best point, with a smaller step
     * each time, until a restart no longer improves. The NM share of the
     * budget is 80%; the pattern search gets the rest. */
    const guint nm_budget = options->max_evals * 4 / 5;
    b.max_evals = nm_budget;
    double best = eval(&b, x, n);
    double step = options->step;
    for (guint restart = 0; restart < 8 && b.evals < nm_budget; restart++) {
        double fx = nelder_mead(&b, x, n, step, options->tolerance);
        gboolean done = !(fx < best - options->tolerance * (fabs(best) + 1e-12));
        best = MIN(best, fx);
        if (done && restart > 0)
            break;
        step *= 0.5;
    }
    b.max_evals = options->max_evals;
    return pattern_search(&b, x, n, best, options->step * 0.5, options->step * 1e-4);
}
