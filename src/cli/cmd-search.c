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
#include "io/input/yaml-tree.h"
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
    "every strategy preset that applies; context parallelism cp from 1 to --max-cp\n"
    "(by default the largest power of two up to 16 leaving a CP rank 8192 tokens: 1,\n"
    "none, below 16K tokens), 2 cp dividing model.seq_len, dp = N / (tp cp pp), by\n"
    "ring attention (p2p), by all-to-all (a2a) where tp x cp divides the heads, and\n"
    "hierarchically (a2a+p2p, the a2a over the CP ranks of one NVLink domain).\n"
    "Layouts whose memory per GPU exceeds the\n"
    "GPU's are pruned before anything is simulated (--all lists them, fits = no);\n"
    "the others are simulated and ranked. The table shows the best --top layouts\n"
    "and why the best beats the runner-up; --output writes every row (CSV, or JSON\n"
    "for FILE.json) through the batch runner, streamed as layouts finish, ranked as\n"
    "the table (a rank column first), which --shard and tpsim merge keep; FILE.batch\n"
    "next to it says which search it is of. See docs/search.md.\n\n"
    "Exit status: 0 success, 1 invalid input, 2 usage error.";

/* One batch point per layout but the strategy: its presets are its rows. */
typedef struct {
    TpsSearch *search;
    GArray *first; /* guint: the search point of each batch point's first row, and n at the end */
    TpsObjective objective;
    guint max_cp; /* the search's --max-cp */
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
 * input id names the digest of the files the scenario read (`inputs`: its
 * own text, its hardware model file and ub_cfg file as resolved) and the
 * options that change the space, so that a resume or a merge refuses the
 * parts of another search. */
/* The scenario of a batch point: the search's with the layout of its
 * first row (its strategy's sequence parallelism included, as each row's
 * result columns have always been written with). */
static void
point_scenario(guint index, TpsScenario *sc, gpointer data)
{
    const SearchRun *run = data;
    tps_scenario_copy(sc, tps_search_scenario(run->search));
    tps_layout_apply(tps_search_layout(run->search, g_array_index(run->first, guint, index)), sc);
    /* A search over context parallelism writes its columns on every row. */
    sc->cp_columns = run->max_cp > 1;
}

static TpsBatch *
search_batch(TpsSearch *search, const char *inputs, const TpsSearchOptions *opt, SearchRun *run,
             GError **error)
{
    GArray *first = run->first;
    g_autofree char *cp =
        opt->max_cp > 1 ? g_strdup_printf(" max-cp=%u", opt->max_cp) : g_strdup("");
    g_autofree char *id = g_strdup_printf("search %s gpus=%u all=%d cross-node-tp=%d%s", inputs,
                                          opt->gpus, opt->all, opt->allow_cross_node_tp, cp);
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

/* A double as 16 hex digits whose strcmp() order is the numbers' order. */
static void
ordered_hex(GString *s, double v)
{
    guint64 u;
    memcpy(&u, &v, sizeof u);
    u = (u >> 63) ? ~u : u | (G_GUINT64_CONSTANT(1) << 63);
    g_string_append_printf(s, "%016" G_GINT64_MODIFIER "x", u);
}

/* The rank key of a row of the output file: the table's ranking
 * (tps_search_rank(): simulated first, by the objective, then the smaller
 * memory, then the enumeration order), so that the file is ranked as the
 * table is, exactly (the doubles, not their printed digits). */
static char *
rank_key(const TpsBatchPoint *point, const TpsBatchRow *row, gpointer data)
{
    const SearchRun *run = data;
    const guint lo = g_array_index(run->first, guint, point->index);
    const guint hi = g_array_index(run->first, guint, point->index + 1);
    guint i = lo;
    while (i < hi && tps_search_layout(run->search, i)->strategy != row->result.strategy)
        i++;
    GString *s = g_string_new(NULL);
    if (i == hi || row->skipped != NULL) { /* no layout's row: last, in point order */
        g_string_append_printf(s, "2%08x", point->index);
        return g_string_free(s, FALSE);
    }
    TpsSearchRow srow;
    tps_search_row_from_result(run->search, i, &row->result, &srow);
    g_string_append_c(s, srow.simulated ? '0' : '1');
    ordered_hex(s, !srow.simulated ? 0.0
                   : run->objective == TPS_OBJECTIVE_TOKENS_PER_GPU ? -srow.tokens_per_s_per_gpu
                                                                    : srow.step_time_s);
    ordered_hex(s, srow.memory_gib);
    g_string_append_printf(s, "%08x", srow.index);
    return g_string_free(s, FALSE);
}

/* An input error of the batch layer about an option is a usage error. */
static GError *
usage_error(GError *local)
{
    GError *error = g_error_new(TPS_ERROR, TPS_ERROR_USAGE, "search: %s", local->message);
    g_error_free(local);
    return error;
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

/* The command line of tpsim search. */
typedef struct {
    char *gpus_text, *top_text, *objective_name;
    char *output, *plot, *shard, *emit_ub_cfg;
    gboolean all, cross_node, resume, progress;
    gint max_cp;
    gint jobs;
    const char *scenario_path;
} SearchArgs;

static void
search_args_clear(SearchArgs *a)
{
    g_free(a->gpus_text);
    g_free(a->top_text);
    g_free(a->objective_name);
    g_free(a->output);
    g_free(a->plot);
    g_free(a->shard);
    g_free(a->emit_ub_cfg);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(SearchArgs, search_args_clear)

/* The options of the command line into `a`, removed from argv; the one
 * argument left is the scenario. */
static gboolean
parse_command_line(SearchArgs *a, int *argc, char ***argv, GError **error)
{
    GOptionEntry entries[] = {
        {"gpus", 'g', 0, G_OPTION_ARG_STRING, &a->gpus_text, "The number of GPUs (required)", "N"},
        {"top", 'k', 0, G_OPTION_ARG_STRING, &a->top_text,
         "Show the best K layouts in the table (default 10)", "K"},
        {"objective", 0, 0, G_OPTION_ARG_STRING, &a->objective_name,
         "Rank by step_time (default) or tokens_per_gpu", "NAME"},
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &a->output,
         "Write every row to FILE: CSV, or JSON for FILE.json (streamed to FILE.partial as "
         "layouts finish)",
         "FILE"},
        {"all", 'a', 0, G_OPTION_ARG_NONE, &a->all,
         "Also list the layouts that do not fit in memory (fits_memory false, not simulated)",
         NULL},
        {"allow-cross-node-tp", 0, 0, G_OPTION_ARG_NONE, &a->cross_node,
         "Let tp exceed the GPUs of one node", NULL},
        {"max-cp", 0, 0, G_OPTION_ARG_INT, &a->max_cp,
         "Enumerate context parallelism (ring attention; all-to-all and hierarchical where "
         "the heads divide) up to this size (default: the largest power of two up to 16 that "
         "leaves each CP rank 8192 tokens; 1, none, below 16K tokens)",
         "N"},
        {"emit-ub-cfg", 0, 0, G_OPTION_ARG_FILENAME, &a->emit_ub_cfg,
         "Write the overlap configuration of the best layout that uses userbuffers to FILE "
         "as the YAML Megatron's --tp-comm-overlap-cfg passes to Transformer Engine",
         "FILE"},
        {"plot", 0, 0, G_OPTION_ARG_FILENAME, &a->plot,
         "Draw step time against memory per GPU of every simulated layout, the Pareto front "
         "marked: .png, .svg or .pdf",
         "FILE"},
        {"jobs", 'j', 0, G_OPTION_ARG_INT, &a->jobs,
         "Evaluate J layouts at a time (default: the online CPUs)", "J"},
        {"resume", 0, 0, G_OPTION_ARG_NONE, &a->resume,
         "Continue a stopped search from FILE.partial (needs --output FILE)", NULL},
        {"shard", 0, 0, G_OPTION_ARG_STRING, &a->shard,
         "Evaluate only the layouts whose number modulo N is I; join the outputs with tpsim "
         "merge",
         "I/N"},
        {"progress", 0, 0, G_OPTION_ARG_NONE, &a->progress,
         "Show the progress bar on standard error even when it is not a terminal", NULL},
        {NULL},
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("SCENARIO.yaml");
    g_option_context_set_summary(ctx, "Find the best layouts of a scenario's model on a fixed "
                                      "number of GPUs.");
    g_option_context_set_description(ctx, search_help);
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_set_prgname("tpsim search");
    if (!g_option_context_parse(ctx, argc, argv, error))
        return FALSE;
    if (*argc != 2) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_USAGE,
                    *argc < 2 ? "search: missing SCENARIO.yaml (see tpsim search --help)"
                              : "search: one scenario at a time (see tpsim search --help)");
        return FALSE;
    }
    a->scenario_path = (*argv)[1];
    return TRUE;
}

/* --gpus, --top and --objective into the search's options and `*top`. */
static gboolean
search_options(const SearchArgs *a, TpsSearchOptions *opt, guint *top, GError **error)
{
    if (a->gpus_text == NULL) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_USAGE,
                    "search: --gpus N is required (see tpsim search --help)");
        return FALSE;
    }
    if (!parse_count("--gpus", a->gpus_text, 1u << 24, &opt->gpus, error) ||
        (a->top_text && !parse_count("--top", a->top_text, G_MAXUINT, top, error)))
        return FALSE;
    if (a->objective_name) {
        guint i;
        for (i = 0; tps_objective_names[i]; i++)
            if (strcmp(tps_objective_names[i], a->objective_name) == 0)
                break;
        if (tps_objective_names[i] == NULL) {
            g_set_error(error, TPS_ERROR, TPS_ERROR_USAGE,
                        "search: --objective takes step_time or tokens_per_gpu, not '%s'",
                        a->objective_name);
            return FALSE;
        }
        opt->objective = (TpsObjective)i;
    }
    return TRUE;
}

/* --jobs, --shard, --resume, --output and --progress into the batch
 * runner's options. */
static gboolean
batch_options(const SearchArgs *a, TpsBatchOptions *bopt, GError **error)
{
    tps_batch_options_init(bopt);
    if (!tps_cli_jobs("search", a->jobs, &bopt->jobs, error))
        return FALSE;
    GError *local = NULL;
    if (a->shard &&
        !tps_batch_parse_shard(a->shard, &bopt->shard_index, &bopt->shard_count, &local)) {
        g_propagate_error(error, usage_error(local));
        return FALSE;
    }
    if (a->resume && (a->output == NULL || strcmp(a->output, "-") == 0)) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_USAGE,
                    "search: --resume needs --output FILE (FILE.partial says what is done)");
        return FALSE;
    }
    if (a->output && strcmp(a->output, "-") == 0) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_USAGE,
                    "search: --output needs a file: the table is on standard output");
        return FALSE;
    }
    bopt->resume = a->resume;
    bopt->output = a->output;
    bopt->format =
        a->output && g_str_has_suffix(a->output, ".json") ? TPS_FORMAT_JSON : TPS_FORMAT_CSV;
    bopt->progress = a->progress ? TPS_PROGRESS_ALWAYS : TPS_PROGRESS_AUTO;
    return TRUE;
}

/* No output may be the scenario, a file it reads (its hardware model,
 * its ub_cfg: the loader notes them into the set) or another output; the
 * scenario is loaded into `scenario` here. The runner's files are its own
 * (plan/batch.h): this set ends before the run; the table and the figure
 * are a second one's, after it. */
static gboolean
check_outputs_and_load(const SearchArgs *a, TpsScenario *scenario, GChecksum *inputs,
                       GError **error)
{
    g_autoptr(TpsOutputSet) check = tps_output_set_begin("search");
    tps_output_set_add_input(check, a->scenario_path);
    if ((a->output && !tps_cli_claim(check, a->output, "--output", error)) ||
        (a->plot && !tps_cli_claim(check, a->plot, "--plot", error)) ||
        (a->emit_ub_cfg && !tps_cli_claim(check, a->emit_ub_cfg, "--emit-ub-cfg", error)))
        return FALSE;
    GChecksum *before = tps_yaml_record_reads(inputs);
    const gboolean loaded = tps_scenario_file_load(a->scenario_path, scenario, error);
    tps_yaml_record_reads(before);
    return loaded;
}

/* Why the best beats the runner-up, when there is one; NULL when nothing
 * was simulated. */
static char *
explain_best(const TpsSearchRow *rows, guint n)
{
    if (n >= 2 && rows[0].simulated && rows[1].simulated)
        return tps_search_explain(&rows[0], &rows[1]);
    if (n >= 1 && rows[0].simulated)
        return g_strdup("One layout fits: nothing to compare it with.");
    return NULL;
}

/* The ranks of the table (its first `top` rows) tied with rank 1: the
 * band of their step's difference, from the classes of work in which the
 * two differ, holds 0 (sched/simulate.h, tps_result_tied()). NULL when
 * none is or a row cannot be simulated again. */
static char *
ties_note(TpsSearch *search, const TpsSearchRow *rows, guint n, guint top)
{
    if (n < 2 || !rows[0].simulated)
        return NULL;
    TpsResult best, other;
    if (!tps_search_evaluate(search, rows[0].index, TRUE, NULL, &best, NULL))
        return NULL;
    GString *s = g_string_new(NULL);
    for (guint i = 1; i < MIN(n, top); i++) {
        if (!rows[i].simulated || !rows[i].fits ||
            !tps_search_evaluate(search, rows[i].index, TRUE, NULL, &other, NULL) ||
            !tps_result_tied(tps_search_scenario(search), &other, &best))
            continue;
        g_string_append_printf(s, "%s%u", s->len ? ", " : "", i + 1);
    }
    if (s->len == 0)
        return g_string_free(s, TRUE), NULL;
    g_string_prepend(s, "Tied with rank 1 (the band of their difference, from the classes of "
                        "work in which they differ, holds 0: the model cannot rank them): ranks ");
    g_string_append_c(s, '.');
    return g_string_free(s, FALSE);
}

/* The table's note: the layouts pruned and broken, the shard, a resume. */
static char *
search_note(const SearchArgs *a, const TpsSearchCounts *counts, const TpsBatchOptions *bopt)
{
    GString *note = g_string_new(NULL);
    g_string_append_printf(
        note,
        "Of %" G_GUINT64_FORMAT " layouts, %" G_GUINT64_FORMAT
        " do not fit in memory (%s), %" G_GUINT64_FORMAT " break a rule between the values.",
        counts->candidates, counts->no_memory,
        a->all ? "listed, not simulated" : "pruned before simulating", counts->invalid);
    if (bopt->shard_count > 1)
        g_string_append_printf(note, " Shard %u/%u: the best of its layouts only.",
                               bopt->shard_index, bopt->shard_count);
    if (a->resume)
        g_string_append_printf(note,
                               " Resumed: the layouts done before are in %s, not in this "
                               "table.",
                               a->output);
    return g_string_free(note, FALSE);
}

/* The best layout Transformer Engine runs with userbuffers (rows are
 * ranked), its table written as TE's configuration. */
static char *
ub_cfg_text(const TpsScenario *scenario, const TpsSearchTop *best, GError **error)
{
    const TpsSearchRow *rows = (const TpsSearchRow *)best->rows->data;
    const TpsSearchRow *best_ub = best->has_best_ub ? &best->best_ub : NULL;
    if (best_ub == NULL) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "search: --emit-ub-cfg: no layout that fits uses userbuffers; nothing "
                    "written");
        return NULL;
    }
    g_auto(TpsScenario) layout_sc = {0};
    tps_scenario_copy(&layout_sc, scenario);
    tps_layout_apply(&best_ub->layout, &layout_sc);
    gboolean incomplete = FALSE;
    char *text = tps_ub_cfg_format(&layout_sc, best_ub->layout.strategy, &incomplete);
    if (best_ub->index != rows[0].index)
        fprintf(stderr,
                "tpsim search: --emit-ub-cfg: the best layout runs without userbuffers; "
                "writing the best that uses them (%s)\n",
                best_ub->layout.strategy->name);
    return text;
}

/* The table, the configuration file and the figure, all or none. */
static int
write_outputs(const SearchArgs *a, const char *table, const char *ub_text, TpsSearchPlot *chart,
              TpsOutputSet *outputs)
{
    g_autoptr(GError) error = NULL;
    int status = tps_cli_emit(table, NULL);
    if (status == TPS_EXIT_OK && ub_text)
        status = tps_cli_emit(ub_text, a->emit_ub_cfg);
    if (status == TPS_EXIT_OK && chart && !tps_search_plot_write(chart, a->plot, &error))
        status = tps_cli_fail(error);
    if (chart)
        tps_render_shutdown();
    if (status == TPS_EXIT_OK && !tps_output_set_commit(outputs, &error))
        status = tps_cli_fail(error);
    return status;
}

int
tps_cmd_search(int argc, char **argv)
{
    g_auto(SearchArgs) a = {.jobs = TPS_CLI_JOBS_UNSET, .max_cp = -1};
    g_autoptr(GError) error = NULL;
    if (!parse_command_line(&a, &argc, &argv, &error))
        return tps_cli_fail(error);
    TpsSearchOptions opt = {
        .allow_cross_node_tp = a.cross_node, .all = a.all, .max_cp = (guint)MAX(a.max_cp, 0)};
    guint top = 10;
    TpsBatchOptions bopt;
    g_auto(TpsScenario) scenario = {0};
    /* The batch's input: every file the scenario reads, as resolved (its
     * hardware model file, a ub_cfg file), not only its own text. */
    g_autoptr(GChecksum) inputs = g_checksum_new(G_CHECKSUM_SHA256);
    if (!search_options(&a, &opt, &top, &error) || !batch_options(&a, &bopt, &error) ||
        (a.plot && !tps_cli_image_path(a.plot, &error)) ||
        !check_outputs_and_load(&a, &scenario, inputs, &error))
        return tps_cli_fail(error);
    if (a.max_cp < 0)
        opt.max_cp = tps_search_default_max_cp(&scenario);
    g_autoptr(TpsSearch) search = tps_search_new(&scenario, &opt, &error);
    if (search == NULL)
        return tps_cli_fail(error);

    g_autoptr(GArray) first = g_array_new(FALSE, FALSE, sizeof(guint));
    SearchRun run = {search, first, opt.objective, opt.max_cp};
    g_autoptr(TpsBatch) batch =
        search_batch(search, g_checksum_get_string(inputs), &opt, &run, &error);
    /* The table's rows, and two for the comparison of the best with the
     * runner-up. */
    g_autoptr(TpsSearchTop) best = tps_search_top_new(MAX(top, 2), opt.objective);
    g_autoptr(TpsSearchPlot) chart = a.plot ? tps_search_plot_begin(&scenario, opt.gpus) : NULL;
    SearchSink sink = {&run, best, chart};
    bopt.rows_func = take_rows;
    bopt.rows_data = &sink;
    /* The file is ranked as the table: best first, with its rank. */
    bopt.rank_key = rank_key;
    bopt.rank_data = &run;
    if (!tps_batch_run(batch, eval_point, &run, &bopt, &error))
        return tps_cli_fail(error);

    const guint n = best->rows->len;
    const TpsSearchRow *rows = (const TpsSearchRow *)best->rows->data;
    g_autofree char *why = explain_best(rows, n);
    g_autofree char *note_text = search_note(&a, tps_search_counts(search), &bopt);
    g_autofree char *ties = ties_note(search, rows, n, top);
    if (ties != NULL) {
        char *joined = g_strdup_printf("%s %s", note_text, ties);
        g_free(note_text);
        note_text = joined;
    }
    g_autoptr(TpsOutputSet) outputs = tps_output_set_begin("search");
    tps_output_set_add_input(outputs, a.scenario_path);
    if (!tps_cli_claim(outputs, "-", "--output", &error) ||
        (a.plot && !tps_cli_claim(outputs, a.plot, "--plot", &error)) ||
        (a.emit_ub_cfg && !tps_cli_claim(outputs, a.emit_ub_cfg, "--emit-ub-cfg", &error)))
        return tps_cli_fail(error);
    g_autofree char *ub_text = NULL;
    if (a.emit_ub_cfg && (ub_text = ub_cfg_text(&scenario, best, &error)) == NULL)
        return tps_cli_fail(error);
    g_autofree char *table = tps_search_table_top(&scenario, opt.gpus, best, top, why, note_text);
    if (chart)
        tps_search_plot_end(chart, n ? &rows[0] : NULL);
    return write_outputs(&a, table, ub_text, chart, outputs);
}
