/* tpsim search SCENARIO.yaml --gpus N: the best layouts of the scenario's
 * model on N GPUs (docs/search.md). The layouts are evaluated on the batch
 * runner (plan/batch.h): threads, shards, the streamed and resumable
 * output and `tpsim merge` are the runner's. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "core/error.h"
#include "core/output.h"
#include "io/input/scenario-file.h"
#include "io/output/search-writer.h"
#include "io/output/ub-cfg.h"
#include "plan/batch.h"
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
    "and why the best beats the runner-up; --output writes every row (CSV, or JSON\n"
    "for FILE.json) through the batch runner, streamed as layouts finish, in the\n"
    "order of the layouts, which --shard and tpsim merge keep. See docs/search.md.\n\n"
    "Exit status: 0 success, 1 invalid input, 2 usage error.";

/* One batch point per layout but the strategy: its presets are its rows. */
typedef struct {
    TpsSearch *search;
    GArray *first; /* guint: the search point of each batch point's first row, and n at the end */
} SearchRun;

static gboolean
eval_point(const TpsBatchPoint *point, GArray *rows, gpointer user, GError **error)
{
    const SearchRun *run = user;
    const guint lo = g_array_index(run->first, guint, point->index);
    const guint hi = g_array_index(run->first, guint, point->index + 1);
    for (guint i = lo; i < hi; i++) {
        TpsResult result;
        if (!tps_search_evaluate(run->search, i, TRUE, NULL, &result, error))
            return FALSE;
        tps_batch_rows_add(rows, &result);
    }
    return TRUE;
}

/* The batch of a search: consecutive layouts that differ only in their
 * strategy (the innermost loop of the enumeration) are one point. The
 * input id names the scenario's content and the options that change the
 * space, so that a resume or a merge refuses the parts of another search. */
/* The scenario of a batch point: the search's with the layout of its
 * first row (its strategy's sequence parallelism included, as each row's
 * result columns have always been written with). */
static void
point_scenario(guint index, TpsScenario *sc, gpointer data)
{
    const SearchRun *run = data;
    tps_scenario_copy(sc, tps_search_scenario(run->search));
    tps_layout_apply(tps_search_layout(run->search, g_array_index(run->first, guint, index)), sc);
}

static TpsBatch *
search_batch(TpsSearch *search, const char *path, const TpsSearchOptions *opt, SearchRun *run,
             GError **error)
{
    GArray *first = run->first;
    g_autofree char *content = NULL;
    gsize len = 0;
    if (!g_file_get_contents(path, &content, &len, NULL))
        len = 0;
    g_autofree char *digest =
        g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)content, len);
    g_autofree char *id = g_strdup_printf("search %s gpus=%u all=%d cross-node-tp=%d", digest,
                                          opt->gpus, opt->all, opt->allow_cross_node_tp);
    (void)error;
    /* The points' scenarios are built when evaluated (point_scenario()):
     * a search has thousands of points, and memory must not grow with
     * them (docs/search.md, "Speed"). */
    TpsBatch *batch = tps_batch_new_lazy(id, NULL, point_scenario, run);
    const guint n = tps_search_n_points(search);
    for (guint i = 0; i < n; i++) {
        const TpsLayout *l = tps_search_layout(search, i);
        if (i > 0) {
            TpsLayout prev = *tps_search_layout(search, i - 1), cur = *l;
            prev.strategy = cur.strategy = NULL;
            if (memcmp(&prev, &cur, sizeof prev) == 0)
                continue;
        }
        g_array_append_val(first, i);
        g_autofree char *full = tps_layout_key(l);
        /* The key without the strategy. */
        g_autofree char *key = g_strndup(full, strlen(full) - strlen(l->strategy->name) - 1);
        tps_batch_add(batch, key, NULL, NULL);
    }
    g_array_append_val(first, n);
    return batch;
}

/* What the search keeps of the rows as they come (in point order): the
 * best for the table and --emit-ub-cfg, the figure's dots and front. */
typedef struct {
    SearchRun *run;
    TpsSearchTop *top;
    TpsSearchPlot *plot; /* NULL without --plot */
} SearchSink;

static void
take_rows(const TpsBatchPoint *point, const GArray *rows, gpointer data)
{
    SearchSink *sink = data;
    const guint lo = g_array_index(sink->run->first, guint, point->index);
    const guint hi = g_array_index(sink->run->first, guint, point->index + 1);
    for (guint r = 0; r < rows->len; r++) {
        const TpsBatchRow *row = &g_array_index(rows, TpsBatchRow, r);
        /* The search point of the row: its batch point's layout of its
         * strategy. */
        guint i = lo;
        while (i < hi && tps_search_layout(sink->run->search, i)->strategy != row->result.strategy)
            i++;
        g_return_if_fail(i < hi);
        TpsSearchRow srow;
        tps_search_row_from_result(sink->run->search, i, &row->result, &srow);
        tps_search_top_add(sink->top, &srow);
        if (sink->plot)
            tps_search_plot_add(sink->plot, &srow);
    }
}

/* An input error of the batch layer about an option is a usage error. */
static int
usage_error(GError *local)
{
    g_autoptr(GError) error =
        g_error_new(TPS_ERROR, TPS_ERROR_USAGE, "search: %s", local->message);
    g_error_free(local);
    return tps_cli_fail(error);
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
    g_autofree char *output = NULL, *plot = NULL, *shard = NULL, *emit_ub_cfg = NULL;
    gboolean all = FALSE, cross_node = FALSE, resume = FALSE, progress = FALSE;
    gint jobs = 0;
    g_autoptr(GError) error = NULL;
    GOptionEntry entries[] = {
        {"gpus", 'g', 0, G_OPTION_ARG_STRING, &gpus_text, "The number of GPUs (required)", "N"},
        {"top", 'k', 0, G_OPTION_ARG_STRING, &top_text,
         "Show the best K layouts in the table (default 10)", "K"},
        {"objective", 0, 0, G_OPTION_ARG_STRING, &objective_name,
         "Rank by step_time (default) or tokens_per_gpu", "NAME"},
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
         "Write every row to FILE: CSV, or JSON for FILE.json (streamed to FILE.partial as "
         "layouts finish)",
         "FILE"},
        {"all", 'a', 0, G_OPTION_ARG_NONE, &all,
         "Also list the layouts that do not fit in memory (fits_memory false, not simulated)",
         NULL},
        {"allow-cross-node-tp", 0, 0, G_OPTION_ARG_NONE, &cross_node,
         "Let tp exceed the GPUs of one node", NULL},
        {"emit-ub-cfg", 0, 0, G_OPTION_ARG_FILENAME, &emit_ub_cfg,
         "Write the overlap configuration of the best layout that uses userbuffers to FILE "
         "as the YAML Megatron's --tp-comm-overlap-cfg passes to Transformer Engine",
         "FILE"},
        {"plot", 0, 0, G_OPTION_ARG_FILENAME, &plot,
         "Draw step time against memory per GPU of every simulated layout, the Pareto front "
         "marked: .png, .svg or .pdf",
         "FILE"},
        {"jobs", 'j', 0, G_OPTION_ARG_INT, &jobs,
         "Evaluate J layouts at a time (default: the online CPUs)", "J"},
        {"resume", 0, 0, G_OPTION_ARG_NONE, &resume,
         "Continue a stopped search from FILE.partial (needs --output FILE)", NULL},
        {"shard", 0, 0, G_OPTION_ARG_STRING, &shard,
         "Evaluate only the layouts whose number modulo N is I; join the outputs with tpsim "
         "merge",
         "I/N"},
        {"progress", 0, 0, G_OPTION_ARG_NONE, &progress,
         "Show the progress bar on standard error even when it is not a terminal", NULL},
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
    TpsBatchOptions bopt;
    tps_batch_options_init(&bopt);
    if (jobs < 0 || jobs > 4096) {
        g_set_error(&error, TPS_ERROR, TPS_ERROR_USAGE, "search: --jobs takes 1 to 4096, not %d",
                    jobs);
        return tps_cli_fail(error);
    }
    bopt.jobs = (guint)jobs;
    if (shard && !tps_batch_parse_shard(shard, &bopt.shard_index, &bopt.shard_count, &error))
        return usage_error(g_steal_pointer(&error));
    if (resume && (output == NULL || strcmp(output, "-") == 0)) {
        g_set_error(&error, TPS_ERROR, TPS_ERROR_USAGE,
                    "search: --resume needs --output FILE (FILE.partial says what is done)");
        return tps_cli_fail(error);
    }
    if (output && strcmp(output, "-") == 0) {
        g_set_error(&error, TPS_ERROR, TPS_ERROR_USAGE,
                    "search: --output needs a file: the table is on standard output");
        return tps_cli_fail(error);
    }
    bopt.resume = resume;
    bopt.output = output;
    bopt.format = output && g_str_has_suffix(output, ".json") ? TPS_FORMAT_JSON : TPS_FORMAT_CSV;
    bopt.progress = progress ? TPS_PROGRESS_ALWAYS : TPS_PROGRESS_AUTO;
    if (plot && !tps_cli_image_path(plot, &error))
        return tps_cli_fail(error);

    /* No output may be the scenario or another output. The runner's files
     * are its own (plan/batch.h): this set ends before the run; the table
     * and the figure are a second one's, after it. */
    {
        g_autoptr(TpsOutputSet) check = tps_output_set_begin("search");
        tps_output_set_add_input(check, argv[1]);
        if ((output && !tps_cli_claim(check, output, "--output", &error)) ||
            (plot && !tps_cli_claim(check, plot, "--plot", &error)))
            return tps_cli_fail(error);
    }
    g_auto(TpsScenario) scenario = {0};
    if (!tps_scenario_file_load(argv[1], &scenario, &error))
        return tps_cli_fail(error);
    g_autoptr(TpsSearch) search = tps_search_new(&scenario, &opt, &error);
    if (search == NULL)
        return tps_cli_fail(error);

    g_autoptr(GArray) first = g_array_new(FALSE, FALSE, sizeof(guint));
    SearchRun run = {search, first};
    g_autoptr(TpsBatch) batch = search_batch(search, argv[1], &opt, &run, &error);
    /* The table's rows, and two for the comparison of the best with the
     * runner-up. */
    g_autoptr(TpsSearchTop) best = tps_search_top_new(MAX(top, 2), opt.objective);
    g_autoptr(TpsSearchPlot) chart = plot ? tps_search_plot_begin(&scenario, opt.gpus) : NULL;
    SearchSink sink = {&run, best, chart};
    bopt.rows_func = take_rows;
    bopt.rows_data = &sink;
    if (!tps_batch_run(batch, eval_point, &run, &bopt, &error))
        return tps_cli_fail(error);

    const guint n = best->rows->len;
    const TpsSearchRow *rows = (const TpsSearchRow *)best->rows->data;
    g_autofree char *why = NULL;
    if (n >= 2 && rows[0].simulated && rows[1].simulated)
        why = tps_search_explain(&rows[0], &rows[1]);
    else if (n >= 1 && rows[0].simulated)
        why = g_strdup("One layout fits: nothing to compare it with.");
    const TpsSearchCounts *counts = tps_search_counts(search);
    GString *note = g_string_new(NULL);
    g_string_append_printf(note,
                           "Of %" G_GUINT64_FORMAT " layouts, %" G_GUINT64_FORMAT
                           " do not fit in memory (%s), %" G_GUINT64_FORMAT
                           " break a rule between the values.",
                           counts->candidates, counts->no_memory,
                           all ? "listed, not simulated" : "pruned before simulating",
                           counts->invalid);
    if (bopt.shard_count > 1)
        g_string_append_printf(note, " Shard %u/%u: the best of its layouts only.",
                               bopt.shard_index, bopt.shard_count);
    if (resume)
        g_string_append_printf(note, " Resumed: the layouts done before are in %s, not in this "
                                     "table.",
                               output);
    g_autofree char *note_text = g_string_free(note, FALSE);
    g_autoptr(TpsOutputSet) outputs = tps_output_set_begin("search");
    tps_output_set_add_input(outputs, argv[1]);
    if (!tps_cli_claim(outputs, "-", "--output", &error) ||
        (plot && !tps_cli_claim(outputs, plot, "--plot", &error)) ||
        (emit_ub_cfg && !tps_cli_claim(outputs, emit_ub_cfg, "--emit-ub-cfg", &error)))
        return tps_cli_fail(error);
    /* The best layout Transformer Engine runs with userbuffers (rows are
     * ranked), its table written as TE's configuration. */
    g_autofree char *ub_text = NULL;
    if (emit_ub_cfg) {
        const TpsSearchRow *best_ub = best->has_best_ub ? &best->best_ub : NULL;
        if (best_ub == NULL) {
            g_set_error(&error, TPS_ERROR, TPS_ERROR_INPUT,
                        "search: --emit-ub-cfg: no layout that fits uses userbuffers; nothing "
                        "written");
            return tps_cli_fail(error);
        }
        g_auto(TpsScenario) layout_sc = {0};
        tps_scenario_copy(&layout_sc, &scenario);
        tps_layout_apply(&best_ub->layout, &layout_sc);
        gboolean incomplete = FALSE;
        ub_text = tps_ub_cfg_format(&layout_sc, best_ub->layout.strategy, &incomplete);
        if (best_ub->index != rows[0].index)
            fprintf(stderr,
                    "tpsim search: --emit-ub-cfg: the best layout runs without userbuffers; "
                    "writing the best that uses them (%s)\n",
                    best_ub->layout.strategy->name);
    }
    g_autofree char *table = tps_search_table_top(&scenario, opt.gpus, best, top, why, note_text);
    if (chart)
        tps_search_plot_end(chart, n ? &rows[0] : NULL);
    int status = tps_cli_emit(table, NULL);
    if (status == TPS_EXIT_OK && ub_text)
        status = tps_cli_emit(ub_text, emit_ub_cfg);
    if (status == TPS_EXIT_OK && chart && !tps_search_plot_write(chart, plot, &error))
        status = tps_cli_fail(error);
    if (chart)
        tps_render_shutdown();
    if (status == TPS_EXIT_OK && !tps_output_set_commit(outputs, &error))
        status = tps_cli_fail(error);
    return status;
}
