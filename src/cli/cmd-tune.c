/* tpsim tune SCENARIO.yaml: the userbuffers configuration of the
 * scenario's layout (docs/tune.md, sched/tune.h). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "core/error.h"
#include "core/output.h"
#include "io/input/model-file.h"
#include "io/input/scenario-file.h"
#include "io/input/yaml-tree.h"
#include "io/output/tune-writer.h"
#include "sched/tune.h"

static const char tune_help[] =
    "For the scenario's layout, each GEMM slot's userbuffers method and knobs are\n"
    "searched under Transformer Engine's rules (the methods each slot takes; no\n"
    "slot without overlap on its own, only Megatron's groups switched off: the\n"
    "all-gather GEMMs, the reduce-scatter GEMMs, the bulk dgrad and wgrad\n"
    "overlaps; CUDA_DEVICE_MAX_CONNECTIONS=1). Every configuration is simulated as\n"
    "the strategy custom and its step compared with no userbuffers (megatron):\n"
    "the gain and its band, from the residuals of the classes of work in which\n"
    "the two steps differ. Configurations within the band of the fastest are\n"
    "marked tied. The search is exhaustive when the space is small, else\n"
    "coordinate descent from --strategy (default te-default: Transformer Engine's\n"
    "defaults) and from te-a100 (NVIDIA's tuned A100 table). The fastest\n"
    "configuration is written with --output as the YAML of Megatron's\n"
    "--tp-comm-overlap-cfg, with the flags to pass; when no configuration beats\n"
    "no userbuffers beyond the band, the report says 'do not overlap' and which\n"
    "mechanism loses, and no file is written. See docs/tune.md.\n\n"
    "Exit status: 0 success, 1 invalid input, 2 usage error.";

typedef struct {
    char *strategy, *output, *model, *top_text;
    gint jobs;
    gboolean progress;
    const char *scenario_path;
    guint top, njobs;
} TuneArgs;

static void
tune_args_clear(TuneArgs *a)
{
    g_free(a->strategy);
    g_free(a->output);
    g_free(a->model);
    g_free(a->top_text);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(TuneArgs, tune_args_clear)

static gboolean
parse_command_line(TuneArgs *a, int *argc, char ***argv, GError **error)
{
    a->jobs = TPS_CLI_JOBS_UNSET;
    GOptionEntry entries[] = {
        {"strategy", 's', 0, G_OPTION_ARG_STRING, &a->strategy,
         "Start from this userbuffers strategy's configuration (default te-default)", "BASE"},
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &a->output,
         "Write the fastest configuration to FILE (atomically) as Transformer Engine's YAML",
         "FILE"},
        {"model", 'm', 0, G_OPTION_ARG_STRING, &a->model,
         "Tune on this hardware model (a NAME of models/ or a path) instead of the "
         "scenario's hardware:",
         "MODEL"},
        {"top", 'k', 0, G_OPTION_ARG_STRING, &a->top_text,
         "Show the K fastest configurations (default 10)", "K"},
        {"jobs", 'j', 0, G_OPTION_ARG_INT, &a->jobs,
         "Simulate J configurations at a time (default: the online CPUs)", "J"},
        {"progress", 0, 0, G_OPTION_ARG_NONE, &a->progress,
         "Show progress on standard error even when it is not a terminal", NULL},
        {NULL},
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("SCENARIO.yaml");
    g_option_context_set_summary(ctx, "Find the userbuffers configuration (--tp-comm-overlap-cfg) "
                                      "of a scenario's layout, or that it should not overlap.");
    g_option_context_set_description(ctx, tune_help);
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_set_prgname("tpsim tune");
    if (!g_option_context_parse(ctx, argc, argv, error))
        return FALSE;
    if (*argc != 2) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_USAGE,
                    *argc < 2 ? "tune: missing SCENARIO.yaml (see tpsim tune --help)"
                              : "tune: one scenario at a time (see tpsim tune --help)");
        return FALSE;
    }
    a->scenario_path = (*argv)[1];
    return TRUE;
}

/* The option values: --top, --jobs, --strategy, --output, --model. */
static gboolean
check_args(TuneArgs *a, GError **error)
{
    guint64 top = 10;
    if (a->top_text != NULL &&
        !g_ascii_string_to_unsigned(a->top_text, 10, 1, G_MAXUINT, &top, NULL)) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_USAGE,
                    "tune: --top takes a whole number from 1, not '%s'", a->top_text);
        return FALSE;
    }
    a->top = (guint)top;
    if (!tps_cli_jobs("tune", a->jobs, &a->njobs, error))
        return FALSE;
    const char *names[] = {a->strategy, NULL};
    if (a->strategy != NULL && !tps_cli_strategy_names(names, error))
        return FALSE;
    if (a->strategy != NULL && !tps_strategy_lookup(a->strategy)->userbuffers) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_USAGE,
                    "tune: --strategy %s uses no userbuffers; start from one that does "
                    "(te-default, te-a100, ring-ag, ring-rs, pipeline-rs, bulk or custom)",
                    a->strategy);
        return FALSE;
    }
    if (a->output != NULL && strcmp(a->output, "-") == 0) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_USAGE,
                    "tune: --output needs a file: the report is on standard output");
        return FALSE;
    }
    if (a->model != NULL) {
        TpsHardware hw = {0};
        g_autoptr(GError) local = NULL;
        gboolean known = tps_model_file_resolve(a->model, NULL, &hw, &local);
        tps_hardware_clear(&hw);
        if (!known) {
            gboolean path = strchr(a->model, '/') != NULL || g_str_has_suffix(a->model, ".yaml");
            g_set_error(error, TPS_ERROR, path ? TPS_ERROR_INPUT : TPS_ERROR_USAGE,
                        "tune: --model: %s", local->message);
            return FALSE;
        }
    }
    return TRUE;
}

/* The scenario, its hardware: replaced by --model (a path from the
 * working directory, as the option is given). */
static gboolean
load_scenario(const TuneArgs *a, TpsScenario *sc, GError **error)
{
    if (a->model == NULL)
        return tps_scenario_file_load(a->scenario_path, sc, error);
    g_autoptr(TpsYamlDoc) doc = tps_yaml_load_file(a->scenario_path, error);
    if (doc == NULL)
        return FALSE;
    if (doc->root == NULL || doc->root->type != TPS_YAML_MAP)
        return tps_scenario_file_load(a->scenario_path, sc, error); /* its own message */
    gboolean path = strchr(a->model, '/') != NULL || g_str_has_suffix(a->model, ".yaml");
    g_autofree char *ref = path ? g_canonicalize_filename(a->model, NULL) : g_strdup(a->model);
    tps_yaml_map_set(doc->root, tps_yaml_node_new(TPS_YAML_SCALAR, "hardware", 1, 1),
                     tps_yaml_node_new(TPS_YAML_SCALAR, ref, 1, 1));
    g_autofree char *dir = g_path_get_dirname(a->scenario_path);
    return tps_scenario_file_load_doc(doc, dir, FALSE, sc, error);
}

static void
show_progress(guint pass, const char *what, guint done, guint total, gpointer data)
{
    fprintf(stderr, "\r[pass %u] %s: %u/%u simulated\033[K", pass, what, done, total);
}

int
tps_cmd_tune(int argc, char **argv)
{
    g_auto(TuneArgs) a = {0};
    g_autoptr(GError) error = NULL;
    if (!parse_command_line(&a, &argc, &argv, &error) || !check_args(&a, &error))
        return tps_cli_fail(error);
    g_autoptr(TpsOutputSet) outputs = tps_output_set_begin("tune");
    tps_output_set_add_input(outputs, a.scenario_path);
    if (!tps_cli_claim(outputs, "-", "--output", &error) ||
        (a.output && !tps_cli_claim(outputs, a.output, "--output", &error)))
        return tps_cli_fail(error);

    g_auto(TpsScenario) sc = {0};
    if (!load_scenario(&a, &sc, &error))
        return tps_cli_fail(error);
    const TpsStrategy *base = tps_strategy_lookup(a.strategy ? a.strategy : "te-default");
    TpsTuneSpace space;
    tps_tune_space_default(&sc, &space);
    const gboolean progress = a.progress || isatty(STDERR_FILENO);
    TpsTuneReport report;
    gboolean ok = tps_tune(&sc, base, &space, a.njobs, progress ? show_progress : NULL, NULL,
                           &report, &error);
    if (progress)
        fprintf(stderr, "\r\033[K");
    if (!ok)
        return tps_cli_fail(error);
    const char *ub_path = report.overlap_pays ? a.output : NULL;
    g_autofree char *text = tps_tune_format_text(&sc, base, &report, a.top, ub_path);
    int status = tps_cli_emit(text, NULL);
    if (status == TPS_EXIT_OK && ub_path != NULL) {
        g_autofree char *ub = tps_tune_ub_cfg(&sc, &report);
        status = tps_cli_emit(ub, ub_path);
    } else if (status == TPS_EXIT_OK && a.output != NULL) {
        fprintf(stderr, "tpsim tune: %s not written: do not overlap\n", a.output);
    }
    if (status == TPS_EXIT_OK && !tps_output_set_commit(outputs, &error))
        status = tps_cli_fail(error);
    tps_tune_report_clear(&report);
    return status;
}
