/* tpsim search SCENARIO.yaml --gpus N: the best layouts of the scenario's
 * model on N GPUs (docs/search.md). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "core/error.h"
#include "core/output.h"
#include "io/scenario-file.h"
#include "io/search-writer.h"
#include "render/draw.h"
#include "render/search-plot.h"
#include "sched/search.h"

static const char search_help[] =
    "Every layout of the scenario's model on N GPUs is enumerated: tp (divisors of\n"
    "model.heads and of the GPUs of a node), pp (divisors of model.layers), vpp,\n"
    "dp = N / (tp pp), micro_batch (divisors of training.global_batch / dp),\n"
    "recompute (none, selective, full), the distributed optimizer off and on, and\n"
    "every strategy preset that applies. Layouts whose memory per GPU exceeds the\n"
    "GPU's are pruned before anything is simulated (--all lists them, fits = no);\n"
    "the others are simulated and ranked. The table shows the best --top layouts\n"
    "and why the best beats the runner-up; --output writes every row as CSV or JSON\n"
    "(by the file's extension). See docs/search.md.\n\n"
    "Exit status: 0 success, 1 invalid input, 2 usage error.";

/* --output's format from its extension: .csv or .json. */
static gboolean
output_format(const char *path, TpsFormat *format, GError **error)
{
    if (g_str_has_suffix(path, ".csv")) {
        *format = TPS_FORMAT_CSV;
        return TRUE;
    }
    if (g_str_has_suffix(path, ".json")) {
        *format = TPS_FORMAT_JSON;
        return TRUE;
    }
    g_set_error(error, TPS_ERROR, TPS_ERROR_USAGE,
                "search: --output takes a .csv or .json file, not '%s'", path);
    return FALSE;
}

static gboolean
parse_count(const char *option, const char *text, guint64 max, guint *value, GError **error)
{
    guint64 v;
    if (text == NULL || !g_ascii_string_to_unsigned(text, 10, 1, max, &v, NULL)) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_USAGE,
                    "search: %s takes a whole number from 1 to %" G_GUINT64_FORMAT ", not '%s'",
                    option, max, text ? text : "");
        return FALSE;
    }
    *value = (guint)v;
    return TRUE;
}

int
tps_cmd_search(int argc, char **argv)
{
    g_autofree char *gpus_text = NULL, *top_text = NULL, *objective_name = NULL;
    g_autofree char *output = NULL, *plot = NULL;
    gboolean all = FALSE, cross_node = FALSE;
    g_autoptr(GError) error = NULL;
    GOptionEntry entries[] = {
        {"gpus", 'g', 0, G_OPTION_ARG_STRING, &gpus_text, "The number of GPUs (required)", "N"},
        {"top", 'k', 0, G_OPTION_ARG_STRING, &top_text,
         "Show the best K layouts in the table (default 10)", "K"},
        {"objective", 0, 0, G_OPTION_ARG_STRING, &objective_name,
         "Rank by step_time (default) or tokens_per_gpu", "NAME"},
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
         "Write every row to FILE (atomically): .csv or .json", "FILE"},
        {"all", 'a', 0, G_OPTION_ARG_NONE, &all,
         "Also list the layouts that do not fit in memory (fits = no, not simulated)", NULL},
        {"allow-cross-node-tp", 0, 0, G_OPTION_ARG_NONE, &cross_node,
         "Let tp exceed the GPUs of one node", NULL},
        {"plot", 0, 0, G_OPTION_ARG_FILENAME, &plot,
         "Draw step time against memory per GPU of every simulated layout, the Pareto front "
         "marked: .png, .svg or .pdf",
         "FILE"},
        {NULL},
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("SCENARIO.yaml");
    g_option_context_set_summary(ctx, "Find the best layouts of a scenario's model on a fixed "
                                      "number of GPUs.");
    g_option_context_set_description(ctx, search_help);
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_set_prgname("tpsim search");
    if (!g_option_context_parse(ctx, &argc, &argv, &error))
        return tps_cli_fail(error);
    if (argc != 2) {
        g_set_error(&error, TPS_ERROR, TPS_ERROR_USAGE,
                    argc < 2 ? "search: missing SCENARIO.yaml (see tpsim search --help)"
                             : "search: one scenario at a time (see tpsim search --help)");
        return tps_cli_fail(error);
    }
    TpsSearchOptions opt = {.allow_cross_node_tp = cross_node, .all = all};
    guint top = 10;
    if (gpus_text == NULL) {
        g_set_error(&error, TPS_ERROR, TPS_ERROR_USAGE,
                    "search: --gpus N is required (see tpsim search --help)");
        return tps_cli_fail(error);
    }
    if (!parse_count("--gpus", gpus_text, 1u << 24, &opt.gpus, &error) ||
        (top_text && !parse_count("--top", top_text, G_MAXUINT, &top, &error)))
        return tps_cli_fail(error);
    if (objective_name) {
        guint i;
        for (i = 0; tps_objective_names[i]; i++)
            if (strcmp(tps_objective_names[i], objective_name) == 0)
                break;
        if (tps_objective_names[i] == NULL) {
            g_set_error(&error, TPS_ERROR, TPS_ERROR_USAGE,
                        "search: --objective takes step_time or tokens_per_gpu, not '%s'",
                        objective_name);
            return tps_cli_fail(error);
        }
        opt.objective = (TpsObjective)i;
    }
    TpsFormat format = TPS_FORMAT_CSV;
    if (output && !output_format(output, &format, &error))
        return tps_cli_fail(error);
    if (plot && !tps_cli_image_path(plot, &error))
        return tps_cli_fail(error);

    g_autoptr(TpsOutputSet) outputs = tps_output_set_begin("search");
    tps_output_set_add_input(outputs, argv[1]);
    if (!tps_cli_claim(outputs, "-", "--output", &error) ||
        (output && !tps_cli_claim(outputs, output, "--output", &error)) ||
        (plot && !tps_cli_claim(outputs, plot, "--plot", &error)))
        return tps_cli_fail(error);

    g_auto(TpsScenario) scenario = {0};
    if (!tps_scenario_file_load(argv[1], &scenario, &error))
        return tps_cli_fail(error);
    g_autoptr(TpsSearch) search = tps_search_new(&scenario, &opt, &error);
    if (search == NULL)
        return tps_cli_fail(error);

    const guint n = tps_search_n_points(search);
    g_autofree TpsSearchRow *rows = g_new0(TpsSearchRow, n);
    const gboolean progress = isatty(STDERR_FILENO);
    for (guint i = 0; i < n; i++) {
        if (progress && (i % 64 == 0 || i + 1 == n))
            fprintf(stderr, "\r[%u/%u] layouts\033[K", i + 1, n);
        if (!tps_search_evaluate(search, i, TRUE, &rows[i], &error)) {
            if (progress)
                fprintf(stderr, "\r\033[K");
            return tps_cli_fail(error);
        }
    }
    if (progress)
        fprintf(stderr, "\r\033[K");
    tps_search_rank(rows, n, opt.objective);

    g_autofree char *why = NULL;
    if (n >= 2 && rows[0].simulated && rows[1].simulated)
        why = tps_search_explain(&rows[0], &rows[1]);
    else if (n >= 1 && rows[0].simulated)
        why = g_strdup("One layout fits: nothing to compare it with.");
    g_autofree char *table = tps_search_format(&scenario, opt.gpus, rows, n, TPS_FORMAT_TABLE,
                                               top, why, tps_search_counts(search));
    g_autofree char *file = output ? tps_search_format(&scenario, opt.gpus, rows, n, format, top,
                                                       NULL, NULL)
                                   : NULL;
    g_autoptr(TpsSearchPlot) chart =
        plot ? tps_search_plot_new(&scenario, opt.gpus, rows, n, n ? &rows[0] : NULL) : NULL;
    int status = tps_cli_emit(table, NULL);
    if (status == TPS_EXIT_OK && output)
        status = tps_cli_emit(file, output);
    if (status == TPS_EXIT_OK && chart && !tps_search_plot_write(chart, plot, &error))
        status = tps_cli_fail(error);
    if (chart)
        tps_render_shutdown();
    if (status == TPS_EXIT_OK && !tps_output_set_commit(outputs, &error))
        status = tps_cli_fail(error);
    return status;
}
