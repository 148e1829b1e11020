/* tpsim calibrate: fit a hardware model to measurements and traces
 * (docs/calibration.md). */
#include <stdio.h>
#include <string.h>

#include "calib/calibrate.h"
#include "calib/validate.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/output.h"
#include "io/input/measurements-file.h"
#include "io/input/nccl-tests.h"
#include "io/input/model-file.h"
#include "io/output/model-writer.h"
#include "io/trace/trace-import.h"

#define UNCHANGED "unchanged from base (not constrained by the inputs)"

static char *
comment_for(const char *key, gpointer user_data)
{
    return tps_calib_report_comment(user_data, key);
}

/* The new model's name: the output file's base name without ".yaml" when
 * it is a valid model name (so that it resolves by NAME once copied into
 * models/), else the base model's name with "-calibrated". */
static char *
model_name(const char *output, const char *base_name)
{
    g_autofree char *file = g_path_get_basename(output);
    if (g_str_has_suffix(file, ".yaml"))
        file[strlen(file) - strlen(".yaml")] = '\0';
    gboolean ok = *file != '\0';
    for (const char *c = file; *c; c++)
        ok &= g_ascii_isalnum(*c) || *c == '.' || *c == '_' || *c == '-';
    return ok ? g_steal_pointer(&file) : g_strdup_printf("%s-calibrated", base_name);
}

/* The file --base names, when it can be found: a path as it is, a NAME
 * in the folders searched for models (io/input/model-file.h); NULL otherwise
 * (loading it then reports why). */
static char *
base_model_path(const char *ref)
{
    if (strchr(ref, '/') != NULL || g_str_has_suffix(ref, ".yaml"))
        return g_strdup(ref);
    g_auto(GStrv) dirs = tps_model_file_search_path();
    g_autofree char *file = g_strconcat(ref, ".yaml", NULL);
    for (guint i = 0; dirs[i] != NULL; i++) {
        char *path = g_build_filename(dirs[i], file, NULL);
        if (g_file_test(path, G_FILE_TEST_IS_REGULAR))
            return path;
        g_free(path);
    }
    return NULL;
}

int
tps_cmd_calibrate(int argc, char **argv)
{
    g_auto(GStrv) traces = NULL;
    g_auto(GStrv) measurement_files = NULL;
    g_auto(GStrv) vidur_files = NULL;
    g_auto(GStrv) nccl_logs = NULL;
    g_autofree char *base_ref = NULL;
    g_autofree char *output = NULL;
    gboolean force = FALSE;
    g_autoptr(GError) error = NULL;
    GOptionEntry entries[] = {
        {"trace", 't', 0, G_OPTION_ARG_FILENAME_ARRAY, &traces,
         "A PyTorch profiler (Kineto) trace, .json or .json.gz (repeatable): GEMM kernels with "
         "known shapes and NCCL kernels with message sizes become points",
         "TRACE"},
        {"measurements", 'm', 0, G_OPTION_ARG_FILENAME_ARRAY, &measurement_files,
         "A measurements file written by tpsim-gpubench (repeatable)", "FILE"},
        {"vidur", 'v', 0, G_OPTION_ARG_FILENAME_ARRAY, &vidur_files,
         "A vidur profile of linear layers (shared/calibration/measured/vidur-*-ops.csv, "
         "repeatable): its QKV, projection, MLP up and down GEMMs become GEMM points",
         "FILE.csv"},
        {"nccl-tests", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &nccl_logs,
         "The output of nccl-tests' all_gather_perf, reduce_scatter_perf or all_reduce_perf "
         "(repeatable): each row's out-of-place time becomes a collective point",
         "LOG"},
        {"base", 'b', 0, G_OPTION_ARG_STRING, &base_ref,
         "The model to start from: a NAME of models/ or a path (required)", "MODEL"},
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
         "Write the calibrated model to FILE, atomically (required)", "NEW.yaml"},
        {"force", 0, 0, G_OPTION_ARG_NONE, &force,
         "Write the model even when the fit is refused (too large an error, too few points, "
         "parameters out of bounds); the file says it was forced",
         NULL},
        {NULL},
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new(NULL);
    g_option_context_set_summary(
        ctx, "Fit the cost-model parameters of a hardware model (GEMM tile efficiencies,\n"
             "NCCL latencies and rates per protocol, copy-engine bandwidth, launch latency)\n"
             "to measurements and traces, and write a new model whose comments record the\n"
             "inputs, the fitted values, their confidence and the residual of each fit.\n"
             "Parameters the inputs do not constrain are kept from the base model and marked\n"
             "so. A fit whose error is too large, that has too few independent points, or\n"
             "that moves a parameter out of physical bounds is refused: exit 1, the reasons\n"
             "listed, nothing written (unless --force).");
    g_option_context_set_description(ctx, "See docs/calibration.md; the measurements and hardware "
                                          "model formats,\nkey by key, are in "
                                          "docs/scenario-format.md.\n\nExit status: 0 success, "
                                          "1 invalid input or a refused fit, 2 usage "
                                          "error.");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_set_prgname("tpsim calibrate");
    if (!g_option_context_parse(ctx, &argc, &argv, &error))
        return tps_cli_fail(error);
    if (argc > 1) {
        g_set_error(&error, TPS_ERROR, TPS_ERROR_USAGE,
                    "calibrate: unexpected argument '%s' (see tpsim calibrate --help)", argv[1]);
        return tps_cli_fail(error);
    }
    if (base_ref == NULL || output == NULL) {
        g_set_error(&error, TPS_ERROR, TPS_ERROR_USAGE,
                    "calibrate: --base MODEL and --output NEW.yaml are required (see tpsim "
                    "calibrate --help)");
        return tps_cli_fail(error);
    }
    if ((traces == NULL || traces[0] == NULL) &&
        (measurement_files == NULL || measurement_files[0] == NULL) &&
        (vidur_files == NULL || vidur_files[0] == NULL) &&
        (nccl_logs == NULL || nccl_logs[0] == NULL)) {
        g_set_error(&error, TPS_ERROR, TPS_ERROR_USAGE,
                    "calibrate: give at least one --trace, --measurements, --vidur or "
                    "--nccl-tests input");
        return tps_cli_fail(error);
    }

    g_autoptr(TpsOutputSet) outputs = tps_output_set_begin("calibrate");
    for (guint i = 0; traces && traces[i]; i++)
        tps_output_set_add_input(outputs, traces[i]);
    for (guint i = 0; measurement_files && measurement_files[i]; i++)
        tps_output_set_add_input(outputs, measurement_files[i]);
    for (guint i = 0; nccl_logs && nccl_logs[i]; i++)
        tps_output_set_add_input(outputs, nccl_logs[i]);
    g_autofree char *base_path = base_model_path(base_ref);
    if (base_path)
        tps_output_set_add_input(outputs, base_path);
    if (!tps_cli_claim(outputs, output, "--output", &error))
        return tps_cli_fail(error);

    TpsHardware base = {0};
    if (!tps_model_file_resolve(base_ref, NULL, &base, &error)) {
        tps_hardware_clear(&base);
        return tps_cli_fail(error);
    }

    g_autoptr(TpsMeasurements) meas = tps_measurements_new();
    GString *inputs = g_string_new(NULL);
    for (guint i = 0; measurement_files && measurement_files[i]; i++) {
        g_autoptr(TpsMeasurements) one = tps_measurements_new();
        if (!tps_measurements_file_load(measurement_files[i], one, &error)) {
            tps_hardware_clear(&base);
            g_string_free(inputs, TRUE);
            return tps_cli_fail(error);
        }
        g_string_append_printf(inputs, "\n  measurements %s: %u points", measurement_files[i],
                               tps_measurements_count(one));
        if (one->source)
            g_string_append_printf(inputs, " from %s", one->source);
        if (one->gpu)
            g_string_append_printf(inputs, " on %s", one->gpu);
        if (one->gpus)
            g_string_append_printf(inputs, " x %u", one->gpus);
        tps_measurements_merge(meas, one);
    }
    for (guint i = 0; nccl_logs && nccl_logs[i]; i++) {
        g_autoptr(TpsMeasurements) one = tps_measurements_new();
        guint added = 0;
        if (!tps_nccl_tests_load(nccl_logs[i], one, &added, &error)) {
            tps_hardware_clear(&base);
            g_string_free(inputs, TRUE);
            return tps_cli_fail(error);
        }
        g_string_append_printf(inputs, "\n  nccl-tests %s: %u collective points", nccl_logs[i],
                               added);
        if (one->gpu)
            g_string_append_printf(inputs, " on %s", one->gpu);
        if (one->gpus)
            g_string_append_printf(inputs, " x %u", one->gpus);
        tps_measurements_merge(meas, one);
    }
    for (guint i = 0; vidur_files && vidur_files[i]; i++) {
        g_autoptr(TpsCsv) csv = tps_csv_load(vidur_files[i], &error);
        g_autoptr(GArray) rows = csv ? tps_vidur_rows_parse(csv, &error) : NULL;
        if (rows == NULL) {
            tps_hardware_clear(&base);
            g_string_free(inputs, TRUE);
            return tps_cli_fail(error);
        }
        guint added = tps_vidur_gemm_points(rows, meas->gemm);
        g_string_append_printf(inputs, "\n  vidur %s: %u GEMM points (%u records)", vidur_files[i],
                               added, rows->len);
    }
    for (guint i = 0; traces && traces[i]; i++) {
        g_autoptr(TpsTrace) trace = tps_trace_load(traces[i], &error);
        if (trace == NULL) {
            tps_hardware_clear(&base);
            g_string_free(inputs, TRUE);
            return tps_cli_fail(error);
        }
        TpsTraceUse use;
        guint added = tps_measurements_from_trace(trace, meas, &use);
        g_string_append_printf(inputs, "\n  trace %s: %u points (%u GEMM shapes, %u NCCL sizes)",
                               traces[i], added, use.gemm_points, use.coll_points);
        /* GEMMs of another input type than the model's peaks (bf16, fp16)
         * are never fitted as bf16: say how many there were. */
        g_autoptr(GString) other = g_string_new(NULL);
        for (guint d = 0; d < TPS_TRACE_DTYPE_COUNT; d++)
            if (use.gemm_ops[d] > 0 && d != TPS_TRACE_DTYPE_BF16 && d != TPS_TRACE_DTYPE_FP16)
                g_string_append_printf(other, "%s%u %s", other->len ? ", " : "", use.gemm_ops[d],
                                       tps_trace_dtype_name((TpsTraceDtype)d));
        if (other->len > 0) {
            g_string_append_printf(inputs,
                                   "; GEMM calls not used (the model's tensor peak is bf16/fp16): "
                                   "%s",
                                   other->str);
            g_autofree char *name = tps_cli_printable(traces[i]);
            fprintf(stderr,
                    "tpsim calibrate: %s: GEMM calls not used, of input types the model has no "
                    "peak for: %s\n",
                    name, other->str);
        }
        if (added == 0 && other->len == 0) {
            g_autofree char *name = tps_cli_printable(traces[i]);
            fprintf(stderr,
                    "tpsim calibrate: warning: %s has no GEMM kernel with a known shape and no "
                    "NCCL kernel with a message size\n",
                    name);
        }
    }
    if (meas->gpu && base.gpu_name && strcmp(meas->gpu, base.gpu_name) != 0) {
        g_autofree char *measured_on = tps_cli_printable(meas->gpu);
        g_autofree char *base_gpu = tps_cli_printable(base.gpu_name);
        fprintf(stderr, "tpsim calibrate: warning: measured on %s, base model is %s\n", measured_on,
                base_gpu);
    }

    TpsHardware fitted = {0};
    g_autoptr(TpsCalibReport) report = NULL;
    if (!tps_calibrate(&base, meas, &fitted, &report, &error)) {
        tps_hardware_clear(&base);
        g_string_free(inputs, TRUE);
        return tps_cli_fail(error);
    }
    g_free(fitted.name);
    fitted.name = model_name(output, base.name);

    g_autofree char *summary = tps_calib_report_summary(report);
    g_autofree char *params = tps_calib_report_params(report);
    /* Refused (calib/calibrate.h): the reasons, and nothing written unless
     * --force, which marks the file. */
    g_autoptr(GString) refused = g_string_new(NULL);
    for (guint i = 0; i < report->refusals->len; i++)
        g_string_append_printf(refused, "\n  %s", (const char *)report->refusals->pdata[i]);
    if (refused->len > 0 && !force) {
        g_autofree char *why = tps_cli_printable(refused->str);
        fprintf(stderr,
                "%s\nfitted parameters (base -> fitted, confidence):\n%s\n"
                "tpsim: calibrate: the fitted model is refused, nothing written:%s\n"
                "(--force writes it anyway, marked as forced)\n",
                summary, params, why);
        tps_hardware_clear(&base);
        tps_hardware_clear(&fitted);
        g_string_free(inputs, TRUE);
        return TPS_EXIT_INPUT;
    }
    g_autofree char *forced =
        refused->len > 0 ? g_strdup_printf("FORCED: written by `tpsim calibrate --force` although "
                                           "the fit was refused:%s\n",
                                           refused->str)
                         : g_strdup("");
    g_autofree char *header = g_strdup_printf(
        "%s%s: calibrated by `tpsim calibrate` (docs/calibration.md) from base model %s (%s).\n"
        "Inputs:%s\n"
        "Fits (relative error of the points, after and before):\n%s\n"
        "Each value says whether it was fitted (inputs, base -> fitted value, confidence, "
        "residual\n"
        "of its fit) or is %s.",
        forced, fitted.name, base.name, base_ref, inputs->str, summary, UNCHANGED);
    g_string_free(inputs, TRUE);
    g_autofree char *text = tps_model_write(&fitted, header, comment_for, report, UNCHANGED);

    g_autofree char *said =
        g_strdup_printf("%s\nfitted parameters (base -> fitted, confidence):\n%s\n%swrote %s%s\n",
                        summary, params, refused->len ? "refused, but --force: " : "", output,
                        refused->len ? " (marked FORCED)" : "");
    gboolean ok = tps_write_atomic(output, text, strlen(text), &error) &&
                  tps_write_atomic("-", said, strlen(said), &error) &&
                  tps_output_set_commit(outputs, &error);
    tps_hardware_clear(&base);
    tps_hardware_clear(&fitted);
    if (!ok)
        return tps_cli_fail(error);
    return TPS_EXIT_OK;
}
