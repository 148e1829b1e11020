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

/* The command line of tpsim calibrate. */
typedef struct {
    char **traces;
    char **measurement_files;
    char **vidur_files;
    char **nccl_logs;
    char *kernels;
    char *base_ref;
    char *output;
    gboolean force;
} CalibArgs;

static void
calib_args_clear(CalibArgs *a)
{
    g_strfreev(a->traces);
    g_strfreev(a->measurement_files);
    g_strfreev(a->vidur_files);
    g_strfreev(a->nccl_logs);
    g_free(a->kernels);
    g_free(a->base_ref);
    g_free(a->output);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(CalibArgs, calib_args_clear)

/* The options of the command line into `a`, removed from argv. */
static gboolean
parse_command_line(CalibArgs *a, int *argc, char ***argv, GError **error)
{
    GOptionEntry entries[] = {
        {"trace", 't', 0, G_OPTION_ARG_FILENAME_ARRAY, &a->traces,
         "A PyTorch profiler (Kineto) trace, .json or .json.gz (repeatable): GEMM kernels with "
         "known shapes and NCCL kernels with message sizes become points",
         "TRACE"},
        {"measurements", 'm', 0, G_OPTION_ARG_FILENAME_ARRAY, &a->measurement_files,
         "A measurements file written by tpsim-gpubench (repeatable)", "FILE"},
        {"vidur", 'v', 0, G_OPTION_ARG_FILENAME_ARRAY, &a->vidur_files,
         "A vidur profile of linear layers (shared/calibration/measured/vidur-*-ops.csv, "
         "repeatable): its QKV, projection, MLP up and down GEMMs become GEMM points",
         "FILE.csv"},
        {"nccl-tests", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &a->nccl_logs,
         "The output of nccl-tests' all_gather_perf, reduce_scatter_perf or all_reduce_perf "
         "(repeatable): each row's out-of-place time becomes a collective point",
         "LOG"},
        {"kernels", 0, 0, G_OPTION_ARG_FILENAME, &a->kernels,
         "Fit each GEMM point on the whole GPU whose shape this measurements file's gemm_algos "
         "recorded (tpsim-gpubench --only algos) on that kernel's tile and split, not the "
         "model's own choice",
         "FILE.yaml"},
        {"base", 'b', 0, G_OPTION_ARG_STRING, &a->base_ref,
         "The model to start from: a NAME of models/ or a path (required)", "MODEL"},
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &a->output,
         "Write the calibrated model to FILE, atomically (required)", "NEW.yaml"},
        {"force", 0, 0, G_OPTION_ARG_NONE, &a->force,
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
    return g_option_context_parse(ctx, argc, argv, error);
}

/* No argument left, the required options, and at least one input. */
static gboolean
check_calib_args(const CalibArgs *a, int argc, char **argv, GError **error)
{
    if (argc > 1) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_USAGE,
                    "calibrate: unexpected argument '%s' (see tpsim calibrate --help)", argv[1]);
        return FALSE;
    }
    if (a->base_ref == NULL || a->output == NULL) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_USAGE,
                    "calibrate: --base MODEL and --output NEW.yaml are required (see tpsim "
                    "calibrate --help)");
        return FALSE;
    }
    if ((a->traces == NULL || a->traces[0] == NULL) &&
        (a->measurement_files == NULL || a->measurement_files[0] == NULL) &&
        (a->vidur_files == NULL || a->vidur_files[0] == NULL) &&
        (a->nccl_logs == NULL || a->nccl_logs[0] == NULL)) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_USAGE,
                    "calibrate: give at least one --trace, --measurements, --vidur or "
                    "--nccl-tests input");
        return FALSE;
    }
    return TRUE;
}

/* The inputs and the output in `outputs`: the output may overwrite none. */
static gboolean
claim_outputs(const CalibArgs *a, TpsOutputSet *outputs, GError **error)
{
    for (guint i = 0; a->traces && a->traces[i]; i++)
        tps_output_set_add_input(outputs, a->traces[i]);
    for (guint i = 0; a->measurement_files && a->measurement_files[i]; i++)
        tps_output_set_add_input(outputs, a->measurement_files[i]);
    for (guint i = 0; a->nccl_logs && a->nccl_logs[i]; i++)
        tps_output_set_add_input(outputs, a->nccl_logs[i]);
    g_autofree char *base_path = base_model_path(a->base_ref);
    if (base_path)
        tps_output_set_add_input(outputs, base_path);
    return tps_cli_claim(outputs, a->output, "--output", error);
}

/* The points of each measurements file into `meas`, each file's line in
 * `inputs`. */
static gboolean
add_measurement_files(char **files, TpsMeasurements *meas, GString *inputs, GError **error)
{
    for (guint i = 0; files && files[i]; i++) {
        g_autoptr(TpsMeasurements) one = tps_measurements_new();
        if (!tps_measurements_file_load(files[i], one, error))
            return FALSE;
        g_string_append_printf(inputs, "\n  measurements %s: %u points", files[i],
                               tps_measurements_count(one));
        if (one->source)
            g_string_append_printf(inputs, " from %s", one->source);
        if (one->gpu)
            g_string_append_printf(inputs, " on %s", one->gpu);
        if (one->gpus)
            g_string_append_printf(inputs, " x %u", one->gpus);
        tps_measurements_merge(meas, one);
    }
    return TRUE;
}

/* The collective points of each nccl-tests log into `meas`, each log's
 * line in `inputs`. */
static gboolean
add_nccl_logs(char **logs, TpsMeasurements *meas, GString *inputs, GError **error)
{
    for (guint i = 0; logs && logs[i]; i++) {
        g_autoptr(TpsMeasurements) one = tps_measurements_new();
        guint added = 0;
        if (!tps_nccl_tests_load(logs[i], one, &added, error))
            return FALSE;
        g_string_append_printf(inputs, "\n  nccl-tests %s: %u collective points", logs[i], added);
        if (one->gpu)
            g_string_append_printf(inputs, " on %s", one->gpu);
        if (one->gpus)
            g_string_append_printf(inputs, " x %u", one->gpus);
        tps_measurements_merge(meas, one);
    }
    return TRUE;
}

/* The GEMM points of each vidur profile into `meas`, each profile's line
 * in `inputs`. */
static gboolean
add_vidur_files(char **files, TpsMeasurements *meas, GString *inputs, GError **error)
{
    for (guint i = 0; files && files[i]; i++) {
        g_autoptr(TpsCsv) csv = tps_csv_load(files[i], error);
        g_autoptr(GArray) rows = csv ? tps_vidur_rows_parse(csv, error) : NULL;
        if (rows == NULL)
            return FALSE;
        guint added = tps_vidur_gemm_points(rows, meas->gemm);
        g_string_append_printf(inputs, "\n  vidur %s: %u GEMM points (%u records)", files[i], added,
                               rows->len);
    }
    return TRUE;
}

/* The points of each profiler trace into `meas`, each trace's line in
 * `inputs`; what a trace gives nothing of is said on standard error. */
static gboolean
add_traces(char **traces, TpsMeasurements *meas, GString *inputs, GError **error)
{
    for (guint i = 0; traces && traces[i]; i++) {
        g_autoptr(TpsTrace) trace = tps_trace_load(traces[i], error);
        if (trace == NULL)
            return FALSE;
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
    return TRUE;
}

/* The fitted model's header comment: what was forced, the inputs, the
 * fits. */
static char *
model_header(const char *forced, const TpsHardware *fitted, const TpsHardware *base,
             const char *base_ref, const char *inputs, const char *summary)
{
    return g_strdup_printf(
        "%s%s: calibrated by `tpsim calibrate` (docs/calibration.md) from base model %s (%s).\n"
        "Inputs:%s\n"
        "Fits (relative error of the points, after and before):\n%s\n"
        "Each value says whether it was fitted (inputs, base -> fitted value, confidence, "
        "residual\n"
        "of its fit) or is %s.",
        forced, fitted->name, base->name, base_ref, inputs, summary, UNCHANGED);
}

/* The fitted model written to --output and the fit said on standard
 * output; refused (calib/calibrate.h): the reasons, and nothing written
 * unless --force, which marks the file. */
static int
write_fitted(const CalibArgs *a, const TpsHardware *base, const TpsHardware *fitted,
             TpsCalibReport *report, const char *inputs, TpsOutputSet *outputs)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *summary = tps_calib_report_summary(report);
    g_autofree char *params = tps_calib_report_params(report);
    g_autoptr(GString) refused = g_string_new(NULL);
    for (guint i = 0; i < report->refusals->len; i++)
        g_string_append_printf(refused, "\n  %s", (const char *)report->refusals->pdata[i]);
    if (refused->len > 0 && !a->force) {
        g_autofree char *why = tps_cli_printable(refused->str);
        fprintf(stderr,
                "%s\nfitted parameters (base -> fitted, confidence):\n%s\n"
                "tpsim: calibrate: the fitted model is refused, nothing written:%s\n"
                "(--force writes it anyway, marked as forced)\n",
                summary, params, why);
        return TPS_EXIT_INPUT;
    }
    g_autofree char *forced =
        refused->len > 0 ? g_strdup_printf("FORCED: written by `tpsim calibrate --force` although "
                                           "the fit was refused:%s\n",
                                           refused->str)
                         : g_strdup("");
    g_autofree char *header = model_header(forced, fitted, base, a->base_ref, inputs, summary);
    g_autofree char *text = tps_model_write(fitted, header, comment_for, report, UNCHANGED);

    g_autofree char *said =
        g_strdup_printf("%s\nfitted parameters (base -> fitted, confidence):\n%s\n%swrote %s%s\n",
                        summary, params, refused->len ? "refused, but --force: " : "", a->output,
                        refused->len ? " (marked FORCED)" : "");
    if (!tps_write_atomic(a->output, text, strlen(text), &error) ||
        !tps_write_atomic("-", said, strlen(said), &error) ||
        !tps_output_set_commit(outputs, &error))
        return tps_cli_fail(error);
    return TPS_EXIT_OK;
}

/* The recorded kernels of `path` onto the GEMM points of `meas`, the
 * count in `inputs`. */
static gboolean
attach_kernels(const char *path, const TpsHardware *base, TpsMeasurements *meas, GString *inputs,
               GError **error)
{
    g_autoptr(TpsGemmKernels) kernels = tps_gemm_kernels_load(path, base, error);
    if (kernels == NULL)
        return FALSE;
    guint attached = tps_gemm_kernels_attach(kernels, meas->gemm, base->sms);
    g_string_append_printf(inputs, "\n  kernels %s: %u of %u GEMM points on their recorded kernel",
                           path, attached, meas->gemm->len);
    return TRUE;
}

/* The inputs loaded, `base` fitted to them and the model written. */
static int
calibrate_from(const CalibArgs *a, const TpsHardware *base, TpsOutputSet *outputs)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(TpsMeasurements) meas = tps_measurements_new();
    g_autoptr(GString) inputs = g_string_new(NULL);
    if (!add_measurement_files(a->measurement_files, meas, inputs, &error) ||
        !add_nccl_logs(a->nccl_logs, meas, inputs, &error) ||
        !add_vidur_files(a->vidur_files, meas, inputs, &error) ||
        !add_traces(a->traces, meas, inputs, &error))
        return tps_cli_fail(error);
    if (a->kernels != NULL && !attach_kernels(a->kernels, base, meas, inputs, &error))
        return tps_cli_fail(error);
    if (meas->gpu && base->gpu_name && strcmp(meas->gpu, base->gpu_name) != 0) {
        g_autofree char *measured_on = tps_cli_printable(meas->gpu);
        g_autofree char *base_gpu = tps_cli_printable(base->gpu_name);
        fprintf(stderr, "tpsim calibrate: warning: measured on %s, base model is %s\n", measured_on,
                base_gpu);
    }

    TpsHardware fitted = {0};
    g_autoptr(TpsCalibReport) report = NULL;
    if (!tps_calibrate(base, meas, &fitted, &report, &error))
        return tps_cli_fail(error);
    g_free(fitted.name);
    fitted.name = model_name(a->output, base->name);
    int status = write_fitted(a, base, &fitted, report, inputs->str, outputs);
    tps_hardware_clear(&fitted);
    return status;
}

int
tps_cmd_calibrate(int argc, char **argv)
{
    g_auto(CalibArgs) a = {0};
    g_autoptr(GError) error = NULL;
    if (!parse_command_line(&a, &argc, &argv, &error) || !check_calib_args(&a, argc, argv, &error))
        return tps_cli_fail(error);
    g_autoptr(TpsOutputSet) outputs = tps_output_set_begin("calibrate");
    if (!claim_outputs(&a, outputs, &error))
        return tps_cli_fail(error);

    TpsHardware base = {0};
    int status = tps_model_file_resolve(a.base_ref, NULL, &base, &error)
                     ? calibrate_from(&a, &base, outputs)
                     : tps_cli_fail(error);
    tps_hardware_clear(&base);
    return status;
}
