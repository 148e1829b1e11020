/* tpsim validate: the cost models against every dataset of the calibration
 * set, with error statistics per dataset (docs/validation.md). */
#include <stdio.h>
#include <string.h>

#include "calib/validate.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/output.h"
#include "io/input/interference-validate.h"
#include "io/input/measurements-file.h"
#include "io/input/model-file.h"
#include "io/output/validation-text.h"
#include "io/trace/trace-validate.h"
#include "render/draw.h"
#include "render/validation-report.h"

/* shared/ next to the source tree, unless the environment names one. */
/* The models of the clusters some datasets were measured on (ctx->model):
 * loaded once by name, kept in the table model_data. */
static void
free_model(gpointer data)
{
    tps_hardware_clear(data);
    g_free(data);
}

static const TpsHardware *
cluster_model(const TpsValidateContext *ctx, const char *name, GError **error)
{
    GHashTable *models = ctx->model_data;
    TpsHardware *hw = g_hash_table_lookup(models, name);
    if (hw != NULL)
        return hw;
    hw = g_new0(TpsHardware, 1);
    if (!tps_model_file_resolve(name, NULL, hw, error)) {
        free_model(hw);
        return NULL;
    }
    g_hash_table_insert(models, g_strdup(name), hw);
    return hw;
}

static char *
default_data_dir(void)
{
    const char *env = g_getenv("TPSIM_SHARED_DIR");
    if (env != NULL && *env != '\0')
        return g_strdup(env);
    return g_build_filename(TPS_SOURCE_DIR, "..", "shared", NULL);
}

/* The command line of tpsim validate. */
typedef struct {
    char *format_name;
    char *output;
    char *model_ref;
    char *data_dir;
    char *doc;
    char *points;
    char *plot_dir;
    char *kernels;
    guint format; /* 0 table, 1 json */
} ValidateArgs;

static void
validate_args_clear(ValidateArgs *a)
{
    g_free(a->format_name);
    g_free(a->output);
    g_free(a->model_ref);
    g_free(a->data_dir);
    g_free(a->doc);
    g_free(a->points);
    g_free(a->plot_dir);
    g_free(a->kernels);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(ValidateArgs, validate_args_clear)

/* The options of the command line into `a`, checked: no argument left,
 * --doc with --plot-dir, a known format. */
static gboolean
parse_command_line(ValidateArgs *a, int *argc, char ***argv, GError **error)
{
    GOptionEntry entries[] = {
        {"format", 'f', 0, G_OPTION_ARG_STRING, &a->format_name,
         "Output format: table (default) or json", "FORMAT"},
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &a->output,
         "Write the figures to FILE (atomically) instead of standard output", "FILE"},
        {"model", 'm', 0, G_OPTION_ARG_STRING, &a->model_ref,
         "The hardware model validated: a NAME of models/ or a path (default "
         "a100-sxm4-80gb, the GPU of every dataset)",
         "MODEL"},
        {"data", 'd', 0, G_OPTION_ARG_FILENAME, &a->data_dir,
         "The folder holding calibration/ and traces/ (default: $TPSIM_SHARED_DIR, else "
         "../shared beside the source tree)",
         "DIR"},
        {"doc", 0, 0, G_OPTION_ARG_FILENAME, &a->doc,
         "Also rewrite the generated block of this Markdown page (docs/validation.md: the "
         "table and the residual plots); needs --plot-dir",
         "FILE.md"},
        {"plot-dir", 0, 0, G_OPTION_ARG_FILENAME, &a->plot_dir,
         "Where --doc writes its plots, validation-FAMILY.png (docs/img)", "DIR"},
        {"kernels", 0, 0, G_OPTION_ARG_FILENAME, &a->kernels,
         "Run each vidur GEMM shape on the kernel this measurements file's gemm_algos recorded "
         "(tpsim-gpubench --only algos) instead of the model's own tile choice; adds the sets "
         "NAME/kernels (the points >= 512 tokens that had one)",
         "FILE.yaml"},
        {"points", 0, 0, G_OPTION_ARG_FILENAME, &a->points,
         "Also write every point (dataset, x, measured and predicted us, error %) to this CSV "
         "file (atomically)",
         "FILE.csv"},
        {NULL},
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new(NULL);
    g_option_context_set_summary(
        ctx, "Replay every dataset of the calibration set (vidur GEMM and add profiles,\n"
             "all-reduce and send/recv curves, aicb collectives, the real traces' kernel\n"
             "totals) through the cost models and print, per dataset, the points and the\n"
             "median, p90 and largest |error| and the mean signed error, in percent of the\n"
             "measurement (positive: the model is slower).");
    g_option_context_set_description(ctx, "See docs/validation.md.\n\nExit status: 0 success, "
                                          "1 unreadable or malformed data, 2 usage error.");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_set_prgname("tpsim validate");
    if (!g_option_context_parse(ctx, argc, argv, error))
        return FALSE;
    if (*argc > 1) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_USAGE,
                    "validate: unexpected argument '%s' (see tpsim validate --help)", (*argv)[1]);
        return FALSE;
    }
    if ((a->doc == NULL) != (a->plot_dir == NULL)) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_USAGE,
                    "validate: --doc and --plot-dir go together");
        return FALSE;
    }
    if (a->kernels != NULL && a->doc != NULL) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_USAGE,
                    "validate: --kernels is a what-if on recorded kernels; --doc records the "
                    "model as it stands, so they do not go together");
        return FALSE;
    }
    static const char *const formats[] = {"table", "json", NULL};
    return tps_cli_format("validate", a->format_name, formats, &a->format, error);
}

/* Every dataset replayed into `sets`: the calibration set's, the real
 * traces', the interference measurements'. */
static gboolean
run_datasets(const TpsValidateContext *vctx, GPtrArray *sets, GError **error)
{
    guint n_rows;
    /* An H100 model is judged on what was measured on H100 alone: the
     * A100 files, traces and interference entries measure another GPU. */
    if (tps_validate_measured_on_h100(vctx->hw)) {
        const TpsValidateDataset *h100 = tps_validate_h100_datasets(&n_rows);
        return tps_validate_run(vctx, h100, n_rows, sets, error);
    }
    const TpsValidateDataset *rows = tps_validate_datasets(&n_rows);
    guint n_trace_rows;
    const TpsValidateDataset *trace_rows = tps_trace_validate_datasets(&n_trace_rows);
    guint n_interference_rows;
    const TpsValidateDataset *interference_rows =
        tps_interference_validate_datasets(&n_interference_rows);
    return tps_validate_run(vctx, rows, n_rows, sets, error) &&
           tps_validate_run(vctx, trace_rows, n_trace_rows, sets, error) &&
           tps_validate_run(vctx, interference_rows, n_interference_rows, sets, error);
}

int
tps_cmd_validate(int argc, char **argv)
{
    g_auto(ValidateArgs) a = {0};
    g_autoptr(GError) error = NULL;
    if (!parse_command_line(&a, &argc, &argv, &error))
        return tps_cli_fail(error);

    /* All outputs or none (core/output.h), and none may replace the model
     * file read (the loader notes it into the set). */
    g_autoptr(TpsOutputSet) outputs = tps_output_set_begin("validate");
    if (!tps_cli_claim(outputs, a.output ? a.output : "-", "--output", &error) ||
        (a.points != NULL && !tps_cli_claim(outputs, a.points, "--points", &error)))
        return tps_cli_fail(error);
    TpsHardware hw = {0};
    if (!tps_model_file_resolve(a.model_ref ? a.model_ref : "a100-sxm4-80gb", NULL, &hw, &error)) {
        tps_hardware_clear(&hw);
        return tps_cli_fail(error);
    }
    if (a.data_dir == NULL)
        a.data_dir = default_data_dir();
    g_autofree char *calibration = g_build_filename(a.data_dir, "calibration", NULL);
    g_autofree char *traces = g_build_filename(a.data_dir, "traces", NULL);
    g_autoptr(GHashTable) clusters =
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, free_model);
    g_autoptr(TpsGemmKernels) kernels = NULL;
    if (a.kernels != NULL && (kernels = tps_gemm_kernels_load(a.kernels, &hw, &error)) == NULL) {
        tps_hardware_clear(&hw);
        return tps_cli_fail(error);
    }
    TpsValidateContext vctx = {&hw, calibration, traces, cluster_model, clusters, kernels};

    g_autoptr(GPtrArray) sets =
        g_ptr_array_new_with_free_func((GDestroyNotify)tps_validate_set_free);
    gboolean ok = run_datasets(&vctx, sets, &error);
    if (ok && a.points != NULL) {
        g_autofree char *csv = tps_validation_points_csv(sets);
        ok = tps_write_atomic(a.points, csv, strlen(csv), &error);
    }
    if (ok && a.doc != NULL)
        ok = tps_validation_report_update(sets, hw.name, a.doc, a.plot_dir, &error);
    if (a.doc != NULL)
        tps_render_shutdown(); /* font caches: a clean exit for leak checkers */
    g_autofree char *text = NULL;
    if (ok)
        text =
            a.format == 1 ? tps_validation_to_json(sets, &hw) : tps_validation_to_table(sets, &hw);
    tps_hardware_clear(&hw);
    if (!ok)
        return tps_cli_fail(error);
    int status = tps_cli_emit(text, a.output);
    if (status == TPS_EXIT_OK && !tps_output_set_commit(outputs, &error))
        status = tps_cli_fail(error);
    return status;
}
