/* Calibration fits: parameter registry, predictions, constraint test,
 * minimisation, report. */
#include "calib/calibrate.h"

#include <math.h>
#include <string.h>

#include "calib/minimize.h"
#include "core/error.h"
#include "core/stats.h"
#include "cost/collective.h"
#include "cost/hardware-schema.h"
#include "cost/kernel-cost.h"

/* Copy points smaller than this are not fitted: their time is dominated by
 * the fixed DMA setup, which the model (bytes / copy_engine_gbps, as
 * sched/overlap.c uses it) does not have. */
#define COPY_MIN_BYTES (8.0 * 1024 * 1024)
/* Constraint test: a parameter scaled by this either way must move some
 * prediction of its fit by more than CONSTRAINT_MIN_CHANGE. */
#define CONSTRAINT_SCALE 1.3
#define CONSTRAINT_MIN_CHANGE 5e-4
/* After the fit: a parameter is pinned when scaling it by this, up and
 * down, moves a prediction by CONSTRAINT_MIN_CHANGE both ways. */
#define PINNED_SCALE 1.02
/* GEMM fits: the scale of the pseudo-Huber loss of the relative errors
 * (docs/validation.md): quadratic below it, linear above, so the fit
 * minimises the typical error (the median and p90 the acceptance of
 * docs/validation.md measures) instead of trading many points' few percent
 * for the few shapes where cuBLAS's own kernel choice is far off (up to
 * 60-80% on a few small shapes, which a squared loss chases). 5%: the
 * resolution of the vidur medians (whole microseconds) at 20 us, the
 * shortest GEMMs of 512 tokens. */
#define GEMM_LOSS_SCALE 0.05
/* Weight of the pull towards the base values in the objective. */
#define PRIOR_WEIGHT 1e-4
/* Confidence: the step of the central differences (log space, 1%), and the
 * smallest pivot of the scaled normal matrix (unit diagonal) that still
 * counts as an independent direction. */
#define JACOBIAN_STEP 0.01
#define RANK_TOLERANCE 1e-3

typedef enum {
    FIT_LAUNCH,
    FIT_GEMM,
    FIT_COLL,
    FIT_COPY,
    FIT_COUNT
} FitKind;

static const char *const fit_names[] = {"launch", "gemm", "collectives", "copy"};

/* A fittable double of TpsHardware. */
typedef struct {
    char *key;
    gsize offset;
    double lo, hi;
    FitKind fit;
} Param;

static double *
param_ptr(TpsHardware *hw, const Param *p)
{
    return (double *)((char *)hw + p->offset);
}

static void
add_param(GArray *params, FitKind fit, const TpsHardwareField *f, const TpsHardware *hw,
          guint index)
{
    Param p = {tps_hardware_field_path(f, index), tps_hardware_field_offset(f, index), f->fit_min,
               f->fit_max, fit};
    g_array_append_val(params, p);
}

/* Does `f` belong to fit `k`, as a scalar (`scalar`) or a map or list? */
static gboolean
in_fit(const TpsHardwareField *f, FitKind k, gboolean scalar)
{
    return f->fit != NULL && strcmp(f->fit, fit_names[k]) == 0 &&
           (f->shape == TPS_HW_SCALAR) == scalar;
}

/* The fittable parameters: the entries of the hardware schema that name a
 * fit, grouped by fit in the order the fits run. Within a fit, element
 * (item) 0 of every map and list, then element 1, ..., then the scalars:
 * a protocol's parameters side by side. This is the order of the search's
 * axes, which its result depends on a little (minimize.c's simplex), so
 * test_param_order in tests/unit/test-calibrate.c pins it. */
static GArray *
registry(const TpsHardware *hw)
{
    GArray *params = g_array_new(FALSE, FALSE, sizeof(Param));
    guint n_fields;
    const TpsHardwareField *fields = tps_hardware_schema(&n_fields);

    for (guint i = 0; i < n_fields; i++) {
        if (fields[i].fit == NULL)
            continue;
        /* A misspelt fit in the schema would silently never be fitted; the
         * search works on doubles. */
        gboolean known = FALSE;
        for (guint k = 0; k < FIT_COUNT; k++)
            known |= strcmp(fields[i].fit, fit_names[k]) == 0;
        g_assert(known && fields[i].type == TPS_HW_DOUBLE);
    }
    for (guint k = 0; k < FIT_COUNT; k++) {
        guint elements = 0;
        for (guint i = 0; i < n_fields; i++)
            if (in_fit(&fields[i], k, FALSE))
                elements = MAX(elements, tps_hardware_field_count(&fields[i], hw));
        for (guint e = 0; e < elements; e++)
            for (guint i = 0; i < n_fields; i++)
                if (in_fit(&fields[i], k, FALSE) && e < tps_hardware_field_count(&fields[i], hw))
                    add_param(params, (FitKind)k, &fields[i], hw, e);
        for (guint i = 0; i < n_fields; i++)
            if (in_fit(&fields[i], k, TRUE))
                add_param(params, (FitKind)k, &fields[i], hw, 0);
    }
    return params;
}

static void
registry_free(GArray *params)
{
    for (guint i = 0; i < params->len; i++)
        g_free(g_array_index(params, Param, i).key);
    g_array_unref(params);
}

/* --- Predictions --- */

double
tps_calib_predict_gemm(const TpsHardware *hw, const TpsGemmPoint *p)
{
    g_return_val_if_fail(hw != NULL && p != NULL, 0.0);
    guint sms = (p->sms == 0 || p->sms >= hw->sms) ? 0 : p->sms;
    TpsKernelCost cost;
    const TpsGemmRun run = {p->operands, p->loaded_us, p->tile_m, p->tile_n, p->split_k};
    tps_cost_gemm_run(hw, p->dtype, &run, p->m, p->n, p->k, sms, &cost);
    TpsTime t = tps_kernel_cost_solo_ns(hw, &cost, sms);
    return t > 0 ? cost.flops / (double)t / 1e3 : 0.0;
}

double
tps_calib_predict_coll(const TpsHardware *hw, const TpsCollPoint *p)
{
    g_return_val_if_fail(hw != NULL && p != NULL, 0.0);
    double launch_ns = p->launch_included ? (double)tps_cost_launch_ns(hw) : 0.0;
    if (p->kind == TPS_MEAS_SEND_RECV) {
        /* One Simple-protocol hop on NVLink at the payload rate of SM copies
         * (nvlink_gbps x nvlink_efficiency): NCCL's p2p path. */
        double link = hw->nvlink_gbps * hw->nvlink_efficiency;
        double ns = (hw->nccl_base_latency_us[TPS_PROTO_SIMPLE] +
                     hw->nccl_hw_latency_us[TPS_PROTO_SIMPLE]) *
                        1e3 +
                    p->bytes / link;
        return (launch_ns + ns) / 1e3;
    }
    TpsCollPlan plan;
    tps_coll_plan(hw, (TpsCollKind)p->kind, p->bytes, p->ranks, &plan);
    return (launch_ns + (double)tps_coll_time_ns(hw, &plan)) / 1e3;
}

double
tps_calib_predict_copy(const TpsHardware *hw, const TpsCopyPoint *p)
{
    g_return_val_if_fail(hw != NULL && p != NULL, 0.0);
    return p->bytes / hw->copy_engine_gbps / 1e3;
}

/* --- One fit: its points, as predicted/measured pairs --- */

typedef struct {
    FitKind kind;
    const TpsMeasurements *meas;
    GArray *index;   /* guint: the points of meas used */
    TpsHardware *hw; /* scratch model, modified during the search */
    const Param **params;
    guint n_params;
    const double *x0; /* the base values, in log space */
} Fit;

static double
measured(const Fit *f, guint i)
{
    guint j = g_array_index(f->index, guint, i);
    switch (f->kind) {
    case FIT_GEMM:
        return g_array_index(f->meas->gemm, TpsGemmPoint, j).tflops;
    case FIT_COLL:
        return g_array_index(f->meas->collectives, TpsCollPoint, j).time_us;
    case FIT_COPY:
        return g_array_index(f->meas->copies, TpsCopyPoint, j).time_us;
    case FIT_LAUNCH:
    case FIT_COUNT:
        break;
    }
    return g_array_index(f->meas->launch, TpsLaunchPoint, j).us;
}

static double
predicted(const Fit *f, const TpsHardware *hw, guint i)
{
    guint j = g_array_index(f->index, guint, i);
    switch (f->kind) {
    case FIT_GEMM:
        return tps_calib_predict_gemm(hw, &g_array_index(f->meas->gemm, TpsGemmPoint, j));
    case FIT_COLL:
        return tps_calib_predict_coll(hw, &g_array_index(f->meas->collectives, TpsCollPoint, j));
    case FIT_COPY:
        return tps_calib_predict_copy(hw, &g_array_index(f->meas->copies, TpsCopyPoint, j));
    case FIT_LAUNCH:
    case FIT_COUNT:
        break;
    }
    return hw->launch_us;
}

static void
residuals(const Fit *f, const TpsHardware *hw, double *max, double *rms)
{
    double sum = 0.0, worst = 0.0;
    guint n = f->index->len;
    for (guint i = 0; i < n; i++) {
        double r = predicted(f, hw, i) / measured(f, i) - 1.0;
        sum += r * r;
        worst = MAX(worst, fabs(r));
    }
    *max = worst;
    *rms = n > 0 ? sqrt(sum / n) : 0.0;
}

/* The loss the search minimises, without the prior. Collectives, copies and
 * launches: rms plus a touch of the max (it keeps the search from trading
 * one point's large error for many tiny gains). GEMMs: the mean
 * pseudo-Huber loss of the relative errors, in units of rms (sqrt(2 mean)),
 * so that it reads as the rms for errors below GEMM_LOSS_SCALE. */
static double
fit_loss(const Fit *f, const TpsHardware *hw)
{
    if (f->kind != FIT_GEMM) {
        double max, rms;
        residuals(f, hw, &max, &rms);
        return rms + 0.05 * max;
    }
    const double d = GEMM_LOSS_SCALE;
    double sum = 0.0;
    guint n = f->index->len;
    for (guint i = 0; i < n; i++) {
        double r = predicted(f, hw, i) / measured(f, i) - 1.0;
        sum += d * d * (sqrt(1.0 + (r / d) * (r / d)) - 1.0);
    }
    return n > 0 ? sqrt(2.0 * sum / n) : 0.0;
}

static void
set_from_x(const Fit *f, const double *x)
{
    for (guint i = 0; i < f->n_params; i++) {
        const Param *p = f->params[i];
        *param_ptr(f->hw, p) = CLAMP(exp(x[i]), p->lo, p->hi);
    }
}

static double
objective(const double *x, guint n, gpointer user_data)
{
    const Fit *f = user_data;
    set_from_x(f, x);
    /* The last term is a weak pull towards the base model (mean squared log ratio): along
     * directions the points do not see (two latencies that only their sum matters for, a rate that
     * only bounds another) the search would otherwise drift anywhere; with
     * weight 1e-4 it moves a well-determined fit by far less than the
     * noise of any measurement. */
    double prior = 0.0;
    for (guint i = 0; i < n; i++) {
        double d = x[i] - f->x0[i];
        prior += d * d;
    }
    return fit_loss(f, f->hw) + PRIOR_WEIGHT * prior / MAX(n, 1);
}

/* Does scaling `p` by `scale` move a prediction, either way (`both`
 * FALSE) or both ways (`both` TRUE)? */
static gboolean
sensitive(const Fit *f, const Param *p, double scale, gboolean both)
{
    guint n = f->index->len;
    double *ref = g_new(double, n);
    for (guint i = 0; i < n; i++)
        ref[i] = predicted(f, f->hw, i);
    double *v = param_ptr(f->hw, p);
    const double saved = *v;
    const double factors[] = {scale, 1.0 / scale};
    guint moved_ways = 0;
    for (guint s = 0; s < G_N_ELEMENTS(factors); s++) {
        *v = CLAMP(saved * factors[s], p->lo, p->hi);
        gboolean moved = FALSE;
        for (guint i = 0; i < n && !moved; i++) {
            double q = predicted(f, f->hw, i);
            moved = fabs(q - ref[i]) > CONSTRAINT_MIN_CHANGE * fabs(ref[i]);
        }
        moved_ways += moved;
    }
    *v = saved;
    g_free(ref);
    return both ? moved_ways == 2 : moved_ways > 0;
}

/* --- Confidence: the Jacobian at the optimum --- */

static void
residual_vector(const Fit *f, double *r)
{
    for (guint i = 0; i < f->index->len; i++)
        r[i] = predicted(f, f->hw, i) / measured(f, i) - 1.0;
}

/* Rank of the symmetric positive semi-definite `a` (p x p, unit diagonal,
 * destroyed): pivoted Cholesky, stopping at the first pivot below
 * RANK_TOLERANCE. */
static guint
psd_rank(double *a, guint p)
{
    guint rank = 0;
    g_autofree guint *perm = g_new(guint, MAX(p, 1));
    for (guint i = 0; i < p; i++)
        perm[i] = i;
    for (guint k = 0; k < p; k++) {
        guint best = k;
        for (guint i = k + 1; i < p; i++)
            if (a[perm[i] * p + perm[i]] > a[perm[best] * p + perm[best]])
                best = i;
        guint t = perm[k];
        perm[k] = perm[best];
        perm[best] = t;
        const guint pk = perm[k];
        double pivot = a[pk * p + pk];
        if (!(pivot > RANK_TOLERANCE))
            break;
        rank++;
        double l = sqrt(pivot);
        for (guint i = k + 1; i < p; i++)
            a[perm[i] * p + pk] /= l;
        for (guint i = k + 1; i < p; i++)
            for (guint j = k + 1; j < p; j++)
                a[perm[i] * p + perm[j]] -= a[perm[i] * p + pk] * a[perm[j] * p + pk];
    }
    return rank;
}

/* The inverse of `a` (p x p) into `inv` by Gauss-Jordan with partial
 * pivoting; FALSE when singular. `a` is destroyed. */
static gboolean
invert(double *a, double *inv, guint p)
{
    for (guint i = 0; i < p; i++)
        for (guint j = 0; j < p; j++)
            inv[i * p + j] = i == j;
    for (guint c = 0; c < p; c++) {
        guint best = c;
        for (guint r = c + 1; r < p; r++)
            if (fabs(a[r * p + c]) > fabs(a[best * p + c]))
                best = r;
        if (!(fabs(a[best * p + c]) > RANK_TOLERANCE))
            return FALSE;
        for (guint j = 0; j < p; j++) {
            double t = a[c * p + j];
            a[c * p + j] = a[best * p + j];
            a[best * p + j] = t;
            t = inv[c * p + j];
            inv[c * p + j] = inv[best * p + j];
            inv[best * p + j] = t;
        }
        double d = a[c * p + c];
        for (guint j = 0; j < p; j++) {
            a[c * p + j] /= d;
            inv[c * p + j] /= d;
        }
        for (guint r = 0; r < p; r++) {
            if (r == c)
                continue;
            double m = a[r * p + c];
            for (guint j = 0; j < p; j++) {
                a[r * p + j] -= m * a[c * p + j];
                inv[r * p + j] -= m * inv[c * p + j];
            }
        }
    }
    return TRUE;
}

/* The Jacobian of the relative residuals over `params` (log space) at the
 * values in f->hw: how many independent directions the points give them
 * (*rank), and each one's relative standard error (sigma[j], NAN when
 * undetermined). */
static void
confidence(const Fit *f, const Param *const *params, guint p, guint *rank, double *sigma)
{
    const guint n = f->index->len;
    for (guint j = 0; j < p; j++)
        sigma[j] = NAN;
    *rank = 0;
    if (p == 0 || n == 0)
        return;
    g_autofree double *jac = g_new0(double, (gsize)n *p);
    g_autofree double *r0 = g_new(double, n);
    g_autofree double *up = g_new(double, n);
    g_autofree double *down = g_new(double, n);
    residual_vector(f, r0);
    for (guint j = 0; j < p; j++) {
        double *v = param_ptr(f->hw, params[j]);
        const double saved = *v;
        const double hi = MIN(saved * exp(JACOBIAN_STEP), params[j]->hi);
        const double lo = MAX(saved * exp(-JACOBIAN_STEP), params[j]->lo);
        *v = hi;
        residual_vector(f, up);
        *v = lo;
        residual_vector(f, down);
        *v = saved;
        const double dx = log(hi) - log(lo);
        for (guint i = 0; i < n && dx > 0; i++)
            jac[(gsize)i * p + j] = (up[i] - down[i]) / dx;
    }
    /* The normal matrix J^T J, scaled to a unit diagonal (d: the scales). */
    g_autofree double *a = g_new0(double, (gsize)p *p);
    g_autofree double *d = g_new0(double, p);
    for (guint j = 0; j < p; j++)
        for (guint k = 0; k < p; k++)
            for (guint i = 0; i < n; i++)
                a[j * p + k] += jac[(gsize)i * p + j] * jac[(gsize)i * p + k];
    for (guint j = 0; j < p; j++)
        d[j] = sqrt(a[j * p + j]);
    for (guint j = 0; j < p; j++)
        for (guint k = 0; k < p; k++)
            a[j * p + k] = d[j] > 0 && d[k] > 0 ? a[j * p + k] / (d[j] * d[k]) : 0.0;
    g_autofree double *work = g_memdup2(a, sizeof(double) * p * p);
    *rank = psd_rank(work, p);
    if (*rank < p || n <= p)
        return;
    double ss = 0.0;
    for (guint i = 0; i < n; i++)
        ss += r0[i] * r0[i];
    const double s2 = ss / (double)(n - p);
    g_autofree double *inv = g_new(double, (gsize)p *p);
    memcpy(work, a, sizeof(double) * p * p);
    if (!invert(work, inv, p))
        return;
    for (guint j = 0; j < p; j++)
        sigma[j] = sqrt(MAX(s2 * inv[j * p + j], 0.0)) / d[j];
}

/* --- Descriptions of the inputs --- */

static char *
describe_gemm(const TpsMeasurements *m, GArray *index)
{
    guint64 lo = G_MAXUINT64, hi = 0;
    guint sms_lo = G_MAXUINT, sms_hi = 0;
    gboolean dtypes[TPS_DTYPE_COUNT] = {FALSE};
    for (guint i = 0; i < index->len; i++) {
        const TpsGemmPoint *p =
            &g_array_index(m->gemm, TpsGemmPoint, g_array_index(index, guint, i));
        guint64 flops = p->m * p->n * p->k;
        lo = MIN(lo, flops);
        hi = MAX(hi, flops);
        sms_lo = MIN(sms_lo, p->sms);
        sms_hi = MAX(sms_hi, p->sms);
        dtypes[p->dtype] = TRUE;
    }
    GString *s = g_string_new(NULL);
    g_string_append_printf(s, "%u GEMM points (", index->len);
    for (guint d = 0, first = 1; d < TPS_DTYPE_COUNT; d++)
        if (dtypes[d]) {
            g_string_append_printf(s, "%s%s", first ? "" : "+", tps_dtype_names[d]);
            first = 0;
        }
    g_string_append_printf(s, ", m*n*k %.3g to %.3g", (double)lo, (double)hi);
    if (sms_hi > 0)
        g_string_append_printf(s, ", %u to %u SMs (0: all)", sms_lo, sms_hi);
    g_string_append(s, ")");
    return g_string_free(s, FALSE);
}

static char *
describe_coll(const TpsMeasurements *m, GArray *index)
{
    guint counts[TPS_MEAS_COLL_COUNT] = {0};
    double lo = INFINITY, hi = 0.0;
    guint ranks_mask = 0;
    guint ranks_hi = 0;
    for (guint i = 0; i < index->len; i++) {
        const TpsCollPoint *p =
            &g_array_index(m->collectives, TpsCollPoint, g_array_index(index, guint, i));
        counts[p->kind]++;
        lo = MIN(lo, p->bytes);
        hi = MAX(hi, p->bytes);
        if (p->ranks < 32)
            ranks_mask |= 1u << p->ranks;
        ranks_hi = MAX(ranks_hi, p->ranks);
    }
    GString *s = g_string_new(NULL);
    g_string_append_printf(s, "%u collective points (", index->len);
    gboolean first = TRUE;
    for (guint k = 0; k < TPS_MEAS_COLL_COUNT; k++)
        if (counts[k] > 0) {
            g_string_append_printf(s, "%s%s %u", first ? "" : ", ", tps_meas_coll_names[k],
                                   counts[k]);
            first = FALSE;
        }
    g_string_append_printf(s, "; %.0f to %.0f bytes; ranks", lo, hi);
    for (guint r = 0; r < 32; r++)
        if (ranks_mask & (1u << r))
            g_string_append_printf(s, " %u", r);
    if (ranks_hi >= 32)
        g_string_append_printf(s, " .. %u", ranks_hi);
    g_string_append(s, ")");
    return g_string_free(s, FALSE);
}

/* --- The report --- */

static TpsCalibFit *
fit_new(FitKind kind, char *inputs, guint points)
{
    TpsCalibFit *f = g_new0(TpsCalibFit, 1);
    f->name = g_strdup(fit_names[kind]);
    f->inputs = inputs;
    f->points = points;
    return f;
}

static void
fit_free(gpointer data)
{
    TpsCalibFit *f = data;
    g_free(f->name);
    g_free(f->inputs);
    g_free(f);
}

void
tps_calib_report_free(TpsCalibReport *report)
{
    if (report == NULL)
        return;
    g_ptr_array_unref(report->fits);
    for (guint i = 0; i < report->params->len; i++)
        g_free(g_array_index(report->params, TpsCalibParam, i).key);
    g_array_unref(report->params);
    g_ptr_array_unref(report->notes);
    g_ptr_array_unref(report->refusals);
    g_free(report);
}

const TpsCalibParam *
tps_calib_report_param(const TpsCalibReport *report, const char *key)
{
    g_return_val_if_fail(report != NULL && key != NULL, NULL);
    for (guint i = 0; i < report->params->len; i++) {
        const TpsCalibParam *p = &g_array_index(report->params, TpsCalibParam, i);
        if (strcmp(p->key, key) == 0)
            return p;
    }
    return NULL;
}

/* "+-1.2% (1 sigma)", "bounded only", "undetermined". */
static char *
confidence_text(const TpsCalibParam *p)
{
    if (p->fitted && !p->pinned)
        return g_strdup("bounded only");
    if (isnan(p->sigma))
        return g_strdup("undetermined");
    return g_strdup_printf("+-%.2g%% (1 sigma)", 100 * p->sigma);
}

char *
tps_calib_report_comment(const TpsCalibReport *report, const char *key)
{
    const TpsCalibParam *p = tps_calib_report_param(report, key);
    if (p == NULL || !p->fitted || p->fit < 0)
        return NULL;
    const TpsCalibFit *f = report->fits->pdata[p->fit];
    const char *note = "";
    if (p->at_bound)
        note = " (at the bound of its range: the inputs push it further than the model can "
               "follow)";
    else if (!p->pinned)
        note = " (bounded only: no point uses it at the fitted values, it only must not win)";
    g_autofree char *conf = confidence_text(p);
    return g_strdup_printf("fit (%s) to %s: base %.6g -> %.6g, %s%s; residual max %.1f%%, "
                           "rms %.1f%% (base model: max %.1f%%, rms %.1f%%)",
                           f->name, f->inputs, p->base, p->value, conf, note, 100 * f->max,
                           100 * f->rms, 100 * f->base_max, 100 * f->base_rms);
}

char *
tps_calib_report_params(const TpsCalibReport *report)
{
    g_return_val_if_fail(report != NULL, NULL);
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < report->params->len; i++) {
        const TpsCalibParam *p = &g_array_index(report->params, TpsCalibParam, i);
        if (!p->fitted)
            continue;
        g_autofree char *conf = confidence_text(p);
        if (s->len > 0)
            g_string_append_c(s, '\n');
        g_string_append_printf(s, "  %-30s %12.6g -> %-12.6g %s%s", p->key, p->base, p->value, conf,
                               p->at_bound ? ", at the edge of its fit range" : "");
    }
    return g_string_free(s, FALSE);
}

char *
tps_calib_report_summary(const TpsCalibReport *report)
{
    g_return_val_if_fail(report != NULL, NULL);
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < report->fits->len; i++) {
        const TpsCalibFit *f = report->fits->pdata[i];
        if (s->len > 0)
            g_string_append_c(s, '\n');
        g_string_append_printf(s,
                               "%s: %u parameter%s fitted to %s; relative error max %.1f%%, "
                               "rms %.1f%% (base model: max %.1f%%, rms %.1f%%)%s",
                               f->name, f->fitted, f->fitted == 1 ? "" : "s", f->inputs,
                               100 * f->max, 100 * f->rms, 100 * f->base_max, 100 * f->base_rms,
                               f->points < f->fitted ? "; fewer points than parameters: the pull "
                                                       "towards the base decides the rest"
                                                     : "");
    }
    for (guint i = 0; i < report->notes->len; i++) {
        if (s->len > 0)
            g_string_append_c(s, '\n');
        g_string_append(s, report->notes->pdata[i]);
    }
    return g_string_free(s, FALSE);
}

/* --- Fitting --- */

static void
fit_launch(const TpsMeasurements *meas, TpsHardware *hw, TpsCalibReport *report, GArray *params)
{
    GArray *samples = g_array_new(FALSE, FALSE, sizeof(double));
    for (guint i = 0; i < meas->launch->len; i++) {
        const TpsLaunchPoint *p = &g_array_index(meas->launch, TpsLaunchPoint, i);
        if (p->what == TPS_MEAS_LAUNCH_KERNEL)
            g_array_append_val(samples, p->us);
    }
    if (samples->len == 0) {
        g_array_unref(samples);
        return;
    }
    guint n = samples->len;
    double *v = (double *)(void *)samples->data;
    double median = tps_median(v, n);

    TpsCalibFit *f = fit_new(FIT_LAUNCH, g_strdup_printf("%u kernel-launch samples", n), n);
    double sum = 0, sum_base = 0;
    for (guint i = 0; i < n; i++) {
        double r = median / v[i] - 1.0, rb = hw->launch_us / v[i] - 1.0;
        f->max = MAX(f->max, fabs(r));
        f->base_max = MAX(f->base_max, fabs(rb));
        sum += r * r;
        sum_base += rb * rb;
    }
    f->rms = sqrt(sum / n);
    f->base_rms = sqrt(sum_base / n);
    f->fitted = f->pinned = f->rank = 1;
    g_ptr_array_add(report->fits, f);
    /* The standard error of a median, 1.2533 s / sqrt(n) for normal
     * samples, relative to the median. */
    double sigma = NAN;
    if (n >= 2) {
        double mean = 0, var = 0;
        for (guint i = 0; i < n; i++)
            mean += v[i] / n;
        for (guint i = 0; i < n; i++)
            var += (v[i] - mean) * (v[i] - mean) / (n - 1);
        sigma = 1.2533 * sqrt(var) / sqrt((double)n) / median;
    }
    for (guint i = 0; i < params->len; i++) {
        TpsCalibParam *p = &g_array_index(params, TpsCalibParam, i);
        if (strcmp(p->key, "gpu.launch_us") == 0) {
            p->value = median;
            p->fitted = TRUE;
            p->pinned = TRUE;
            p->fit = (int)report->fits->len - 1;
            p->sigma = sigma;
        }
    }
    hw->launch_us = median;
    g_array_unref(samples);
}

/* Fits the parameters of `kind` on the points in `index`. */
static void
fit_generic(FitKind kind, const TpsMeasurements *meas, GArray *index, char *inputs, TpsHardware *hw,
            GArray *reg, TpsCalibReport *report)
{
    if (index->len == 0) {
        g_free(inputs);
        return;
    }
    TpsHardware scratch;
    tps_hardware_copy(&scratch, hw);
    Fit fit = {kind, meas, index, &scratch, NULL, 0, NULL};

    const Param **chosen = g_new(const Param *, reg->len);
    guint n = 0;
    for (guint i = 0; i < reg->len; i++) {
        const Param *p = &g_array_index(reg, Param, i);
        if (p->fit == kind && sensitive(&fit, p, CONSTRAINT_SCALE, FALSE))
            chosen[n++] = p;
    }
    fit.params = chosen;
    fit.n_params = n;

    TpsCalibFit *f = fit_new(kind, inputs, index->len);
    residuals(&fit, hw, &f->base_max, &f->base_rms);
    const double base_loss = fit_loss(&fit, hw);
    f->fitted = n;

    double *x = g_new(double, MAX(n, 1));
    double *x0 = g_new(double, MAX(n, 1));
    for (guint i = 0; i < n; i++)
        x0[i] = x[i] = log(*param_ptr(hw, chosen[i]));
    fit.x0 = x0;
    if (n > 0) {
        TpsMinimizeOptions opts = {.max_evals = 4000 + 600 * n, .step = 0.15, .tolerance = 1e-7};
        tps_minimize(objective, x, n, &opts, &fit);
        set_from_x(&fit, x);
        /* Keep the base values if the search found nothing better (it
         * starts there, so only rounding can make this happen). */
        if (fit_loss(&fit, &scratch) <= base_loss) {
            for (guint i = 0; i < n; i++)
                *param_ptr(hw, chosen[i]) = *param_ptr(&scratch, chosen[i]);
        }
    }
    residuals(&fit, hw, &f->max, &f->rms);
    g_ptr_array_add(report->fits, f);

    tps_hardware_clear(&scratch);
    tps_hardware_copy(&scratch, hw);
    for (guint i = 0; i < n; i++) {
        TpsCalibParam *p = &g_array_index(report->params, TpsCalibParam,
                                          (guint)(chosen[i] - (const Param *)reg->data));
        p->value = *param_ptr(hw, chosen[i]);
        p->fitted = TRUE;
        p->pinned = sensitive(&fit, chosen[i], PINNED_SCALE, TRUE);
        p->at_bound = p->value <= chosen[i]->lo * 1.001 || p->value >= chosen[i]->hi * 0.999;
        p->fit = (int)report->fits->len - 1;
        if (p->pinned)
            f->pinned++;
    }
    /* The confidence of the pinned ones, on the fitted model. */
    g_autofree const Param **pinned = g_new(const Param *, MAX(n, 1));
    g_autofree TpsCalibParam **pinned_report = g_new(TpsCalibParam *, MAX(n, 1));
    guint np = 0;
    for (guint i = 0; i < n; i++) {
        TpsCalibParam *p = &g_array_index(report->params, TpsCalibParam,
                                          (guint)(chosen[i] - (const Param *)reg->data));
        if (p->pinned) {
            pinned[np] = chosen[i];
            pinned_report[np++] = p;
        }
    }
    g_autofree double *sigma = g_new(double, MAX(np, 1));
    confidence(&fit, pinned, np, &f->rank, sigma);
    for (guint j = 0; j < np; j++)
        pinned_report[j]->sigma = sigma[j];
    g_free(x);
    g_free(x0);
    g_free(chosen);
    tps_hardware_clear(&scratch);
}

/* Why the fitted model must not be used (calibrate.h), into
 * report->refusals. */
static void
judge(TpsCalibReport *report, const GArray *reg)
{
    GPtrArray *why = report->refusals;
    for (guint i = 0; i < report->fits->len; i++) {
        const TpsCalibFit *f = report->fits->pdata[i];
        if (f->max > TPS_CALIB_MAX_ERROR || f->rms > TPS_CALIB_MAX_RMS)
            g_ptr_array_add(why,
                            g_strdup_printf("%s: relative error max %.1f%%, rms %.1f%% "
                                            "over %u points (limits: max %.0f%%, rms %.0f%%)",
                                            f->name, 100 * f->max, 100 * f->rms, f->points,
                                            100 * TPS_CALIB_MAX_ERROR, 100 * TPS_CALIB_MAX_RMS));
        if (f->points < f->fitted)
            g_ptr_array_add(why, g_strdup_printf("%s: %u point%s for %u fitted parameters", f->name,
                                                 f->points, f->points == 1 ? "" : "s", f->fitted));
        else if (f->rank < f->pinned)
            g_ptr_array_add(why,
                            g_strdup_printf("%s: the points determine %u independent "
                                            "direction%s for %u parameters they move (rank "
                                            "of the Jacobian)",
                                            f->name, f->rank, f->rank == 1 ? "" : "s", f->pinned));
    }
    for (guint i = 0; i < report->params->len; i++) {
        const TpsCalibParam *p = &g_array_index(report->params, TpsCalibParam, i);
        const Param *range = &g_array_index(reg, Param, i);
        if (!p->fitted)
            continue;
        if (strstr(p->key, "efficiency") != NULL) {
            if (!(p->value > 0.0 && p->value <= 1.0))
                g_ptr_array_add(why, g_strdup_printf("%s: %.6g is not an efficiency in (0, 1]",
                                                     p->key, p->value));
        } else if (p->base > 0.0 && (p->value > p->base * TPS_CALIB_MAX_FACTOR ||
                                     p->value < p->base / TPS_CALIB_MAX_FACTOR)) {
            g_ptr_array_add(why, g_strdup_printf("%s: %.6g is %.3gx the base model's %.6g (more "
                                                 "than %.0fx either way)",
                                                 p->key, p->value, p->value / p->base, p->base,
                                                 TPS_CALIB_MAX_FACTOR));
        }
        if (p->at_bound)
            g_ptr_array_add(why, g_strdup_printf("%s: %.6g is at the edge of its fit range [%g, "
                                                 "%g]: the points push it further than the "
                                                 "model can follow",
                                                 p->key, p->value, range->lo, range->hi));
    }
}

/* An empty report of the parameters of `reg`, each at its value in `hw`. */
static TpsCalibReport *
report_new(const GArray *reg, TpsHardware *hw)
{
    TpsCalibReport *report = g_new0(TpsCalibReport, 1);
    report->fits = g_ptr_array_new_with_free_func(fit_free);
    report->params = g_array_new(FALSE, FALSE, sizeof(TpsCalibParam));
    report->notes = g_ptr_array_new_with_free_func(g_free);
    report->refusals = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < reg->len; i++) {
        const Param *p = &g_array_index(reg, Param, i);
        double v = *param_ptr(hw, p);
        TpsCalibParam cp = {g_strdup(p->key), v, v, FALSE, FALSE, FALSE, -1, NAN};
        g_array_append_val(report->params, cp);
    }
    return report;
}

/* The GEMM fit, on the points with a rate. */
static void
fit_gemm_points(const TpsMeasurements *meas, TpsHardware *hw, GArray *reg, TpsCalibReport *report)
{
    g_autoptr(GArray) index = g_array_new(FALSE, FALSE, sizeof(guint));
    for (guint i = 0; i < meas->gemm->len; i++) {
        const TpsGemmPoint *p = &g_array_index(meas->gemm, TpsGemmPoint, i);
        if (p->tflops > 0.0)
            g_array_append_val(index, i);
    }
    fit_generic(FIT_GEMM, meas, index, describe_gemm(meas, index), hw, reg, report);
}

/* The collectives' fit, on the points of 2 ranks or more that move bytes
 * (the others noted). */
static void
fit_coll_points(const TpsMeasurements *meas, TpsHardware *hw, GArray *reg, TpsCalibReport *report)
{
    g_autoptr(GArray) index = g_array_new(FALSE, FALSE, sizeof(guint));
    guint skipped = 0;
    for (guint i = 0; i < meas->collectives->len; i++) {
        const TpsCollPoint *p = &g_array_index(meas->collectives, TpsCollPoint, i);
        if (p->time_us > 0.0 && p->bytes > 0.0 && p->ranks >= 2)
            g_array_append_val(index, i);
        else
            skipped++;
    }
    if (skipped > 0)
        g_ptr_array_add(report->notes,
                        g_strdup_printf("%u collective point%s with fewer than 2 ranks or no "
                                        "bytes not fitted",
                                        skipped, skipped == 1 ? "" : "s"));
    fit_generic(FIT_COLL, meas, index, describe_coll(meas, index), hw, reg, report);
}

/* The copy engine's fit, on the copies of COPY_MIN_BYTES or more (none
 * without them). */
static void
fit_copy_points(const TpsMeasurements *meas, TpsHardware *hw, GArray *reg, TpsCalibReport *report)
{
    g_autoptr(GArray) index = g_array_new(FALSE, FALSE, sizeof(guint));
    for (guint i = 0; i < meas->copies->len; i++) {
        const TpsCopyPoint *p = &g_array_index(meas->copies, TpsCopyPoint, i);
        if (p->bytes >= COPY_MIN_BYTES && p->time_us > 0.0)
            g_array_append_val(index, i);
    }
    if (index->len > 0)
        fit_generic(FIT_COPY, meas, index,
                    g_strdup_printf("%u copy-engine P2P points of 8 MiB or more", index->len), hw,
                    reg, report);
}

/* Notes on the measurements recorded but not fitted: event overheads,
 * GEMMs beside communication, strategy timings. */
static void
note_unfitted(const TpsMeasurements *meas, TpsCalibReport *report)
{
    guint events = 0;
    for (guint i = 0; i < meas->launch->len; i++)
        events += g_array_index(meas->launch, TpsLaunchPoint, i).what == TPS_MEAS_LAUNCH_EVENT;
    if (events > 0)
        g_ptr_array_add(report->notes,
                        g_strdup_printf("%u event-overhead sample%s recorded, not fitted "
                                        "(no model parameter)",
                                        events, events == 1 ? "" : "s"));
    if (meas->overlap->len > 0)
        g_ptr_array_add(report->notes,
                        g_strdup_printf("%u GEMM-beside-communication point%s recorded, not "
                                        "fitted (contention comes from the engine's shared SMs "
                                        "and HBM)",
                                        meas->overlap->len, meas->overlap->len == 1 ? "" : "s"));
    if (meas->strategies->len > 0)
        g_ptr_array_add(report->notes,
                        g_strdup_printf("%u strategy timing%s recorded, not fitted (held out "
                                        "to check predictions)",
                                        meas->strategies->len,
                                        meas->strategies->len == 1 ? "" : "s"));
    if (meas->gemm_algos->len > 0)
        g_ptr_array_add(report->notes,
                        g_strdup_printf("%u GEMM kernel choice%s recorded, not fitted (`tpsim "
                                        "calibrate --kernels` and `tpsim validate --kernels` "
                                        "run the model on them)",
                                        meas->gemm_algos->len,
                                        meas->gemm_algos->len == 1 ? "" : "s"));
}

gboolean
tps_calibrate(const TpsHardware *base, const TpsMeasurements *meas, TpsHardware *out,
              TpsCalibReport **report_out, GError **error)
{
    g_return_val_if_fail(base != NULL && meas != NULL && out != NULL && report_out != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);

    tps_hardware_copy(out, base);
    GArray *reg = registry(base);
    TpsCalibReport *report = report_new(reg, out);
    fit_launch(meas, out, report, report->params);
    fit_gemm_points(meas, out, reg, report);
    fit_coll_points(meas, out, reg, report);
    fit_copy_points(meas, out, reg, report);
    judge(report, reg);
    registry_free(reg);
    note_unfitted(meas, report);

    gboolean any = FALSE;
    for (guint i = 0; i < report->params->len; i++)
        any |= g_array_index(report->params, TpsCalibParam, i).fitted;
    if (!any) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "no measurement constrains any parameter of the model (%u points: "
                    "calibration needs GEMM, collective, copy or launch measurements)",
                    tps_measurements_count(meas));
        tps_calib_report_free(report);
        tps_hardware_clear(out);
        return FALSE;
    }
    *report_out = report;
    return TRUE;
}
