/* tpsim calibrate: fit a hardware model to measurements and traces
 * (docs/calibration.md). */
#include <stdio.h>
#include <string.h>

#include "calib/calibrate.h"
#include "calib/validate.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/output.h"
#include "io/measurements-file.h"
#include "io/model-file.h"
#include "io/model-writer.h"
#include "io/trace-import.h"

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

int
tps_cmd_calibrate(int argc, char **argv)
{
    g_auto(GStrv) traces = NULL;
    g_auto(GStrv) measurement_files = NULL;
    g_auto(GStrv) vidur_files = NULL;
    g_autofree char *base_ref = NULL;
    g_autofree char *output = NULL;
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
        {"base", 'b', 0, G_OPTION_ARG_STRING, &base_ref,
         "The model to start from: a NAME of models/ or a path (required)", "MODEL"},
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
         "Write the calibrated model to FILE, atomically (required)", "NEW.yaml"},
        {NULL},
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new(NULL);
    g_option_context_set_summary(
        ctx, "Fit the cost-model parameters of a hardware model (GEMM tile efficiencies,\n"
             "NCCL latencies and rates per protocol, copy-engine bandwidth, launch latency)\n"
             "to measurements and traces, and write a new model whose comments record the\n"
             "inputs, the fitted values and the residual of each fit. Parameters the inputs\n"
             "do not constrain are kept from the base model and marked so.");
    g_option_context_set_description(ctx, "See docs/calibration.md; the measurements and hardware "
                                          "model formats,\nkey by key, are in "
                                          "docs/scenario-format.md.\n\nExit status: 0 success, "
                                          "1 invalid input, 2 usage error.");
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
        (vidur_files == NULL || vidur_files[0] == NULL)) {
        g_set_error(&error, TPS_ERROR, TPS_ERROR_USAGE,
                    "calibrate: give at least one --trace, --measurements or --vidur input");
        return tps_cli_fail(error);
    }

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
        guint added = tps_measurements_from_trace(trace, meas);
        g_string_append_printf(inputs, "\n  trace %s: %u points (GEMM shapes, NCCL sizes)",
                               traces[i], added);
        if (added == 0)
            fprintf(stderr,
                    "tpsim calibrate: warning: %s has no GEMM kernel with a known shape and no "
                    "NCCL kernel with a message size\n",
                    traces[i]);
    }
    if (meas->gpu && base.gpu_name && strcmp(meas->gpu, base.gpu_name) != 0)
        fprintf(stderr, "tpsim calibrate: warning: measured on %s, base model is %s\n", meas->gpu,
                base.gpu_name);

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
    g_autofree char *header = g_strdup_printf(
        "%s: calibrated by `tpsim calibrate` (docs/calibration.md) from base model %s (%s).\n"
        "Inputs:%s\n"
        "Fits (relative error of the points, after and before):\n%s\n"
        "Each value says whether it was fitted (inputs, base -> fitted value, residual of its fit)\n"
        "or is %s.",
        fitted.name, base.name, base_ref, inputs->str, summary, UNCHANGED);
    g_string_free(inputs, TRUE);
    g_autofree char *text = tps_model_write(&fitted, header, comment_for, report, UNCHANGED);

    gboolean ok = tps_write_atomic(output, text, strlen(text), &error);
    tps_hardware_clear(&base);
    tps_hardware_clear(&fitted);
    if (!ok)
        return tps_cli_fail(error);
    printf("%s\nwrote %s\n", summary, output);
    return TPS_EXIT_OK;
}
