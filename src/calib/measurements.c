/* Measurements: construction, merging and the YAML text. */
#include "calib/measurements.h"

#include "core/text.h"

#include <string.h>

const char *const tps_meas_coll_names[] = {"all_gather", "reduce_scatter", "all_reduce",
                                           "send_recv", NULL};
const char *const tps_meas_launch_names[] = {"kernel", "event", NULL};

TpsMeasurements *
tps_measurements_new(void)
{
    TpsMeasurements *m = g_new0(TpsMeasurements, 1);
    m->gemm = g_array_new(FALSE, FALSE, sizeof(TpsGemmPoint));
    m->collectives = g_array_new(FALSE, FALSE, sizeof(TpsCollPoint));
    m->copies = g_array_new(FALSE, FALSE, sizeof(TpsCopyPoint));
    m->launch = g_array_new(FALSE, FALSE, sizeof(TpsLaunchPoint));
    m->overlap = g_array_new(FALSE, FALSE, sizeof(TpsOverlapPoint));
    m->strategies = g_array_new(FALSE, FALSE, sizeof(TpsStrategyPoint));
    m->gemm_algos = g_array_new(FALSE, FALSE, sizeof(TpsGemmAlgoPoint));
    return m;
}

void
tps_measurements_free(TpsMeasurements *m)
{
    if (m == NULL)
        return;
    for (guint i = 0; i < m->strategies->len; i++) {
        TpsStrategyPoint *p = &g_array_index(m->strategies, TpsStrategyPoint, i);
        g_free(p->name);
        g_free(p->op);
    }
    g_array_unref(m->gemm);
    g_array_unref(m->collectives);
    g_array_unref(m->copies);
    g_array_unref(m->launch);
    g_array_unref(m->overlap);
    g_array_unref(m->strategies);
    g_array_unref(m->gemm_algos);
    g_free(m->source);
    g_free(m->gpu);
    g_free(m->cuda);
    g_free(m->nccl);
    g_free(m);
}

void
tps_measurements_add_strategy(TpsMeasurements *m, const TpsStrategyPoint *point)
{
    g_return_if_fail(m != NULL && point != NULL);
    TpsStrategyPoint copy = *point;
    copy.name = g_strdup(point->name);
    copy.op = g_strdup(point->op);
    g_array_append_val(m->strategies, copy);
}

static void
set_if_unset(char **dst, const char *src)
{
    if (*dst == NULL && src != NULL)
        *dst = g_strdup(src);
}

void
tps_measurements_merge(TpsMeasurements *dst, const TpsMeasurements *src)
{
    g_return_if_fail(dst != NULL && src != NULL);
    set_if_unset(&dst->source, src->source);
    set_if_unset(&dst->gpu, src->gpu);
    set_if_unset(&dst->cuda, src->cuda);
    set_if_unset(&dst->nccl, src->nccl);
    if (dst->sms == 0)
        dst->sms = src->sms;
    if (dst->gpus == 0)
        dst->gpus = src->gpus;
    g_array_append_vals(dst->gemm, src->gemm->data, src->gemm->len);
    g_array_append_vals(dst->collectives, src->collectives->data, src->collectives->len);
    g_array_append_vals(dst->copies, src->copies->data, src->copies->len);
    g_array_append_vals(dst->launch, src->launch->data, src->launch->len);
    g_array_append_vals(dst->overlap, src->overlap->data, src->overlap->len);
    g_array_append_vals(dst->gemm_algos, src->gemm_algos->data, src->gemm_algos->len);
    for (guint i = 0; i < src->strategies->len; i++)
        tps_measurements_add_strategy(dst, &g_array_index(src->strategies, TpsStrategyPoint, i));
}

guint
tps_measurements_count(const TpsMeasurements *m)
{
    g_return_val_if_fail(m != NULL, 0);
    return m->gemm->len + m->collectives->len + m->copies->len + m->launch->len + m->overlap->len +
           m->strategies->len + m->gemm_algos->len;
}

/* A double as YAML: "%.9g", in the C locale whatever the process's is. */
static void
append_double(GString *out, double v)
{
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    g_string_append(out, g_ascii_formatd(buf, sizeof(buf), "%.9g", v));
}

/* A byte count: exactly when it is an integer (the usual case), else as
 * any double. */
static void
append_bytes(GString *out, double v)
{
    if (v >= 0 && v < 9007199254740992.0 && v == (double)(guint64)v)
        g_string_append_printf(out, "%" G_GUINT64_FORMAT, (guint64)v);
    else
        append_double(out, v);
}

static void
append_meta(GString *out, const char *key, const char *value)
{
    if (value == NULL)
        return;
    g_string_append_printf(out, "%s: ", key);
    tps_text_append_quoted(out, value);
    g_string_append_c(out, '\n');
}

/* The gemm: list (nothing when there are no GEMM points). */
static void
append_gemm(GString *out, const TpsMeasurements *m)
{
    if (m->gemm->len == 0)
        return;
    g_string_append(out, "gemm:  # TFLOP/s of one GEMM alone on `sms` SMs (0: all)\n");
    for (guint i = 0; i < m->gemm->len; i++) {
        const TpsGemmPoint *p = &g_array_index(m->gemm, TpsGemmPoint, i);
        g_string_append_printf(out,
                               "  - {m: %" G_GUINT64_FORMAT ", n: %" G_GUINT64_FORMAT
                               ", k: %" G_GUINT64_FORMAT ", dtype: %s, sms: %u, tflops: ",
                               p->m, p->n, p->k, tps_dtype_names[p->dtype], p->sms);
        append_double(out, p->tflops);
        g_string_append(out, "}\n");
    }
}

/* The collectives: list. */
static void
append_collectives(GString *out, const TpsMeasurements *m)
{
    if (m->collectives->len == 0)
        return;
    g_string_append(out, "collectives:  # time per call, host-side, launch included\n");
    for (guint i = 0; i < m->collectives->len; i++) {
        const TpsCollPoint *p = &g_array_index(m->collectives, TpsCollPoint, i);
        g_string_append_printf(out, "  - {kind: %s, bytes: ", tps_meas_coll_names[p->kind]);
        append_bytes(out, p->bytes);
        g_string_append_printf(out, ", ranks: %u, time_us: ", p->ranks);
        append_double(out, p->time_us);
        g_string_append(out, p->launch_included ? "}\n" : ", launch_included: false}\n");
    }
}

/* The copies: list. */
static void
append_copies(GString *out, const TpsMeasurements *m)
{
    if (m->copies->len == 0)
        return;
    g_string_append(out, "copies:  # copy-engine P2P cudaMemcpyAsync to a peer GPU\n");
    for (guint i = 0; i < m->copies->len; i++) {
        const TpsCopyPoint *p = &g_array_index(m->copies, TpsCopyPoint, i);
        g_string_append(out, "  - {bytes: ");
        append_bytes(out, p->bytes);
        g_string_append(out, ", time_us: ");
        append_double(out, p->time_us);
        g_string_append(out, "}\n");
    }
}

/* The launch: list. */
static void
append_launch(GString *out, const TpsMeasurements *m)
{
    if (m->launch->len == 0)
        return;
    g_string_append(out, "launch:  # host cost per call\n");
    for (guint i = 0; i < m->launch->len; i++) {
        const TpsLaunchPoint *p = &g_array_index(m->launch, TpsLaunchPoint, i);
        g_string_append_printf(out, "  - {what: %s, us: ", tps_meas_launch_names[p->what]);
        append_double(out, p->us);
        g_string_append(out, "}\n");
    }
}

/* The overlap: list. */
static void
append_overlap(GString *out, const TpsMeasurements *m)
{
    if (m->overlap->len == 0)
        return;
    g_string_append(out, "overlap:  # a GEMM alone and beside a communication kernel\n");
    for (guint i = 0; i < m->overlap->len; i++) {
        const TpsOverlapPoint *p = &g_array_index(m->overlap, TpsOverlapPoint, i);
        g_string_append_printf(out,
                               "  - {m: %" G_GUINT64_FORMAT ", n: %" G_GUINT64_FORMAT
                               ", k: %" G_GUINT64_FORMAT ", dtype: %s, comm: %s, bytes: ",
                               p->m, p->n, p->k, tps_dtype_names[p->dtype],
                               tps_meas_coll_names[p->comm]);
        append_bytes(out, p->bytes);
        g_string_append_printf(out, ", ranks: %u, gemm_alone_us: ", p->ranks);
        append_double(out, p->gemm_alone_us);
        g_string_append(out, ", gemm_beside_us: ");
        append_double(out, p->gemm_beside_us);
        g_string_append(out, "}\n");
    }
}

/* The strategies: list. */
static void
append_strategies(GString *out, const TpsMeasurements *m)
{
    if (m->strategies->len == 0)
        return;
    g_string_append(out, "strategies:  # small real implementations, timed end to end\n");
    for (guint i = 0; i < m->strategies->len; i++) {
        const TpsStrategyPoint *p = &g_array_index(m->strategies, TpsStrategyPoint, i);
        g_string_append_printf(
            out,
            "  - {name: %s, op: %s, m: %" G_GUINT64_FORMAT ", n: %" G_GUINT64_FORMAT
            ", k: %" G_GUINT64_FORMAT ", dtype: %s, tp: %u, splits: %u, time_us: ",
            p->name, p->op, p->m, p->n, p->k, tps_dtype_names[p->dtype], p->tp, p->splits);
        append_double(out, p->time_us);
        g_string_append(out, "}\n");
    }
}

/* The gemm_algos: list. */
static void
append_gemm_algos(GString *out, const TpsMeasurements *m)
{
    if (m->gemm_algos->len == 0)
        return;
    g_string_append(out, "gemm_algos:  # the library's kernel for each GEMM shape\n");
    for (guint i = 0; i < m->gemm_algos->len; i++) {
        const TpsGemmAlgoPoint *p = &g_array_index(m->gemm_algos, TpsGemmAlgoPoint, i);
        g_string_append_printf(out,
                               "  - {m: %" G_GUINT64_FORMAT ", n: %" G_GUINT64_FORMAT
                               ", k: %" G_GUINT64_FORMAT ", dtype: %s, algo: %d, tile_id: %u"
                               ", tile_m: %u, tile_n: %u, split_k: %u, cluster_m: %u"
                               ", cluster_n: %u}\n",
                               p->m, p->n, p->k, tps_dtype_names[p->dtype], p->algo, p->tile_id,
                               p->tile_m, p->tile_n, p->split_k, p->cluster_m, p->cluster_n);
    }
}

char *
tps_measurements_format(const TpsMeasurements *m)
{
    g_return_val_if_fail(m != NULL, NULL);
    GString *out = g_string_new("# tpsim measurements (docs/calibration.md); read by "
                                "`tpsim calibrate --measurements`.\n");

    append_meta(out, "source", m->source);
    append_meta(out, "gpu", m->gpu);
    if (m->sms > 0)
        g_string_append_printf(out, "sms: %u\n", m->sms);
    if (m->gpus > 0)
        g_string_append_printf(out, "gpus: %u\n", m->gpus);
    append_meta(out, "cuda", m->cuda);
    append_meta(out, "nccl", m->nccl);

    append_gemm(out, m);
    append_collectives(out, m);
    append_copies(out, m);
    append_launch(out, m);
    append_overlap(out, m);
    append_strategies(out, m);
    append_gemm_algos(out, m);
    return g_string_free(out, FALSE);
}
