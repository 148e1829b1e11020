/* tpsim run SCENARIO.yaml: simulate each strategy and print the results. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "core/error.h"
#include "core/output.h"
#include "io/input/megatron-args.h"
#include "io/input/model-file.h"
#include "io/output/result-writer.h"
#include "io/input/scenario-file.h"
#include "io/output/ub-cfg.h"
#include "render/draw.h"
#include "render/figure.h"
#include "render/step-figure.h"
#include "render/trace-export.h"
#include "sched/simulate.h"
#include "sched/strategy.h"

/* --timeline-rank, --timeline-pass, --timeline-window into options. */
static gboolean
parse_timeline_options(const char *rank, const char *pass, const char *window,
                       TpsTimelineOptions *opt, GError **error)
{
    tps_timeline_options_init(opt);
    if (rank && strcmp(rank, "all") == 0) {
        opt->rank = TPS_RANK_ALL;
    } else if (rank) {
        guint64 v;
        if (!g_ascii_string_to_unsigned(rank, 10, 0, 4096, &v, NULL)) {
            g_set_error(error, TPS_ERROR, TPS_ERROR_USAGE,
                        "run: --timeline-rank takes a rank number or 'all', not '%s'", rank);
            return FALSE;
        }
        opt->rank = (int)v;
    }
    if (pass) {
        guint i;
        for (i = 0; tps_pass_names[i]; i++)
            if (strcmp(tps_pass_names[i], pass) == 0)
                break;
        if (tps_pass_names[i] == NULL) {
            g_set_error(error, TPS_ERROR, TPS_ERROR_USAGE,
                        "run: --timeline-pass takes forward, backward or both, not '%s'", pass);
            return FALSE;
        }
        opt->pass = (TpsPass)i;
    }
    if (window) {
        g_auto(GStrv) parts = g_strsplit(window, ":", 2);
        char *end0 = NULL, *end1 = NULL;
        double a = parts[0] ? g_ascii_strtod(parts[0], &end0) : 0;
        double b = parts[0] && parts[1] ? g_ascii_strtod(parts[1], &end1) : 0;
        if (!parts[0] || !parts[1] || end0 == parts[0] || *end0 || end1 == parts[1] || *end1 ||
            a < 0 || b <= a) {
            g_set_error(error, TPS_ERROR, TPS_ERROR_USAGE,
                        "run: --timeline-window takes START_US:END_US with 0 <= START < END, "
                        "not '%s'",
                        window);
            return FALSE;
        }
        opt->window_start_us = a;
        opt->window_end_us = b;
    }
    return TRUE;
}

/* The text of --megatron-args: a file, or standard input for '-'. */
static char *
read_megatron_args(const char *path, gsize *len, GError **error)
{
    if (strcmp(path, "-") != 0) {
        char *text;
        if (!g_file_get_contents(path, &text, len, error))
            return NULL;
        return text;
    }
    GString *s = g_string_new(NULL);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, stdin)) > 0 && s->len <= TPS_MEGATRON_MAX_BYTES)
        g_string_append_len(s, buf, (gssize)n);
    *len = s->len;
    return g_string_free(s, FALSE);
}

/* A scenario name from the script's file name (names output files: letters,
 * digits, '.', '_' and '-'). */
static char *
megatron_scenario_name(const char *path)
{
    if (strcmp(path, "-") == 0)
        return g_strdup("megatron");
    g_autofree char *base = g_path_get_basename(path);
    char *dot = strrchr(base, '.');
    if (dot != NULL && dot != base)
        *dot = '\0';
    for (char *p = base; *p != '\0'; p++)
        if (!g_ascii_isalnum(*p) && *p != '.' && *p != '_' && *p != '-')
            *p = '-';
    if (strlen(base) > 64)
        base[64] = '\0';
    return g_strdup(base[0] != '\0' ? base : "megatron");
}

static char *
strategies_help(void)
{
    guint n;
    const TpsStrategy *table = tps_strategy_table(&n);
    GString *s =
        g_string_new("The scenario format (every key, its default and range) and the CSV and\n"
                     "JSON columns are described in docs/scenario-format.md.\n\n"
                     "Strategies:\n");
    for (guint i = 0; i < n; i++)
        g_string_append_printf(s, "  %-13s %s%s\n", table[i].name, table[i].summary,
                               table[i].implemented ? "" : " [not modelled yet]");
    g_string_append(s, "\nWithout --strategy, the scenario's strategies: list is run, or every\n"
                       "preset that applies (tp-allreduce without SP, the others with it).\n"
                       "Results are listed from fastest to slowest, with the time saved (%)\n"
                       "and the speedup (x) over megatron (op scenarios: over sp-blocking).\n"
                       "The layer columns (layer fwd/bwd, exposed comm/layer, TP comm/layer)\n"
                       "are one transformer layer and one micro-batch; step is the whole\n"
                       "global batch; tokens/GPU is tokens per second per GPU. A strategy that\n"
                       "does not apply to the scenario is a row 'skipped: REASON'.\n\n"
                       "Overlap efficiency (op scenarios' 'overlap eff.' and --breakdown):\n"
                       "1 - (time - GEMM alone) / (collective alone), the share of the\n"
                       "collective's blocking time hidden behind the GEMM (an op: against\n"
                       "sp-blocking's time). 1: fully hidden; about 0: nothing hidden (a\n"
                       "blocking collective); below 0: slower than back to back; above 1: the\n"
                       "pair took less than the unsplit GEMM alone with its launch.\n"
                       "--breakdown's method: the overlap method, or, without one,\n"
                       "'nccl-side-stream' (Megatron's NCCL stream beside the GEMM) or\n"
                       "'blocking' (on the compute stream).\n\n"
                       "With --megatron-args, a Megatron-LM command line or launch script is\n"
                       "the scenario (docs/megatron-args.md); what it sets that tpsim does not\n"
                       "use is listed on standard error. Strategy 'custom' is then the\n"
                       "script's own --tp-comm-overlap configuration.\n\n"
                       "Exit status: 0 success, 1 invalid input, 2 usage error.");
    return g_string_free(s, FALSE);
}

/* The command line of tpsim run. */
typedef struct {
    char *format_name;
    char *output;
    char **strategy_names;
    gboolean breakdown;
    char *timeline;
    char *trace;
    char *timeline_rank;
    char *timeline_pass;
    char *timeline_window;
    char *megatron_args;
    char *model_ref;
    char *nodes_text, *gpus_text;
    TpsMegatronLayout layout; /* --nodes, --gpus */
    char *emit_ub_cfg;
    char *timeline_step;
    const char *input; /* the scenario: the script of --megatron-args, or the file */
    const char *arg1;  /* the first argument left after the options */
    guint format;
    TpsTimelineOptions topt;
} RunArgs;

static void
run_args_clear(RunArgs *a)
{
    g_free(a->format_name);
    g_free(a->output);
    g_strfreev(a->strategy_names);
    g_free(a->timeline);
    g_free(a->trace);
    g_free(a->timeline_rank);
    g_free(a->timeline_pass);
    g_free(a->timeline_window);
    g_free(a->megatron_args);
    g_free(a->model_ref);
    g_free(a->nodes_text);
    g_free(a->gpus_text);
    g_free(a->emit_ub_cfg);
    g_free(a->timeline_step);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(RunArgs, run_args_clear)

/* The options of the command line into `a`, removed from argv. */
static gboolean
parse_command_line(RunArgs *a, int *argc, char ***argv, GError **error)
{
    GOptionEntry entries[] = {
        {"format", 'f', 0, G_OPTION_ARG_STRING, &a->format_name,
         "Output format: table (default), csv or json", "FORMAT"},
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &a->output,
         "Write the results to FILE (atomically) instead of standard output", "FILE"},
        {"strategy", 's', 0, G_OPTION_ARG_STRING_ARRAY, &a->strategy_names,
         "Simulate this strategy (repeatable)", "NAME"},
        {"breakdown", 'b', 0, G_OPTION_ARG_NONE, &a->breakdown,
         "Add each GEMM of the layer (or op): collective, method, GEMM, communication and "
         "exposed time, overlap efficiency (a table per strategy; CSV: a row per GEMM; JSON: "
         "a gemms array)",
         NULL},
        {"timeline", 0, 0, G_OPTION_ARG_FILENAME, &a->timeline,
         "Draw the timeline of the layer (or op) to FILE: .png, .svg or .pdf; several "
         "strategies give one panel each on a shared time axis",
         "FILE"},
        {"timeline-step", 0, 0, G_OPTION_ARG_FILENAME, &a->timeline_step,
         "Draw one training step of the fastest strategy to FILE (.png, .svg or .pdf): "
         "pipeline stages, forward/backward chunks, bubbles, P2P, DP reduction, optimizer",
         "FILE"},
        {"trace", 0, 0, G_OPTION_ARG_FILENAME, &a->trace,
         "Write the spans as a Chrome trace (JSON) for Perfetto or chrome://tracing", "FILE.json"},
        {"timeline-rank", 0, 0, G_OPTION_ARG_STRING, &a->timeline_rank,
         "Rank to draw, or 'all' (default 0)", "N|all"},
        {"timeline-pass", 0, 0, G_OPTION_ARG_STRING, &a->timeline_pass,
         "Pass to draw: forward, backward or both (default both)", "PASS"},
        {"timeline-window", 0, 0, G_OPTION_ARG_STRING, &a->timeline_window,
         "Draw only this window, in microseconds from the start of the pass (with "
         "--timeline-step: of the step)",
         "START_US:END_US"},
        {"megatron-args", 0, 0, G_OPTION_ARG_FILENAME, &a->megatron_args,
         "Read the scenario from a Megatron-LM command line or launch script ('-': standard "
         "input) instead of SCENARIO.yaml",
         "FILE"},
        {"emit-ub-cfg", 0, 0, G_OPTION_ARG_FILENAME, &a->emit_ub_cfg,
         "Write the overlap configuration of the fastest userbuffers strategy to FILE as the "
         "YAML Megatron's --tp-comm-overlap-cfg passes to Transformer Engine",
         "FILE"},
        {"model", 'm', 0, G_OPTION_ARG_STRING, &a->model_ref,
         "With --megatron-args: the hardware model, a NAME of models/ or a path (default "
         "a100-sxm4-80gb)",
         "MODEL"},
        {"nodes", 0, 0, G_OPTION_ARG_STRING, &a->nodes_text,
         "With --megatron-args: run the script on N nodes of its GPUs per node (torchrun's "
         "--nproc-per-node, or GPUS_PER_NODE), dp derived again",
         "N"},
        {"gpus", 0, 0, G_OPTION_ARG_STRING, &a->gpus_text,
         "With --megatron-args: run the script on N GPUs in all, dp derived again", "N"},
        {NULL},
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("SCENARIO.yaml");
    g_autofree char *help = strategies_help();
    g_option_context_set_summary(ctx, "Simulate each strategy of a scenario: step time, layer "
                                      "forward/backward time,\nexposed and total TP "
                                      "communication, MFU and memory per GPU.");
    g_option_context_set_description(ctx, help);
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_set_prgname("tpsim run");
    return g_option_context_parse(ctx, argc, argv, error);
}

/* The arguments left (`argc` of them) against the options, and the
 * options' values: the output format, the figure options and paths. */
static gboolean
check_run_args(RunArgs *a, int argc, char **argv, GError **error)
{
    if (a->megatron_args != NULL && argc != 1) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_USAGE,
                    "run: --megatron-args is the scenario; no SCENARIO.yaml with it (a scenario "
                    "file takes a script as megatron_args:)");
        return FALSE;
    }
    if (a->model_ref != NULL && a->megatron_args == NULL) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_USAGE,
                    "run: --model goes with --megatron-args (a scenario file names its "
                    "hardware:)");
        return FALSE;
    }
    const struct {
        const char *option, *text;
        guint64 *out;
    } sizes[] = {{"--nodes", a->nodes_text, &a->layout.nodes},
                 {"--gpus", a->gpus_text, &a->layout.gpus}};
    for (guint i = 0; i < G_N_ELEMENTS(sizes); i++) {
        if (sizes[i].text == NULL)
            continue;
        if (a->megatron_args == NULL) {
            g_set_error(error, TPS_ERROR, TPS_ERROR_USAGE,
                        "run: %s goes with --megatron-args (a scenario file sets parallel.dp)",
                        sizes[i].option);
            return FALSE;
        }
        if (!g_ascii_string_to_unsigned(sizes[i].text, 10, 1, 1u << 24, sizes[i].out, NULL)) {
            g_set_error(error, TPS_ERROR, TPS_ERROR_USAGE,
                        "run: %s takes a whole number from 1 to %u, not '%s'", sizes[i].option,
                        1u << 24, sizes[i].text);
            return FALSE;
        }
    }
    if (a->nodes_text != NULL && a->gpus_text != NULL) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_USAGE,
                    "run: --nodes or --gpus, not both (the GPUs are the nodes x GPUs per node)");
        return FALSE;
    }
    if (a->model_ref != NULL) {
        /* The option's value, checked as the option: an unknown name is a
         * usage error, a model file that does not load an input error. */
        TpsHardware hw = {0};
        g_autoptr(GError) local = NULL;
        gboolean known = tps_model_file_resolve(a->model_ref, NULL, &hw, &local);
        tps_hardware_clear(&hw);
        if (!known) {
            gboolean path = strchr(a->model_ref, '/') != NULL ||
                            g_str_has_suffix(a->model_ref, ".yaml");
            g_set_error(error, TPS_ERROR, path ? TPS_ERROR_INPUT : TPS_ERROR_USAGE,
                        "run: --model: %s", local->message);
            return FALSE;
        }
    }
    if (a->megatron_args == NULL && argc != 2) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_USAGE,
                    argc < 2 ? "run: missing SCENARIO.yaml (see tpsim run --help)"
                             : "run: one scenario at a time (see tpsim run --help)");
        return FALSE;
    }
    a->input = a->megatron_args != NULL ? a->megatron_args : argv[1];
    a->arg1 = argv[1];
    if (!tps_cli_strategy_names((const char *const *)a->strategy_names, error))
        return FALSE;

    if (!tps_cli_format("run", a->format_name, tps_format_names, &a->format, error))
        return FALSE;
    if (!parse_timeline_options(a->timeline_rank, a->timeline_pass, a->timeline_window, &a->topt,
                                error))
        return FALSE;
    if (a->timeline) {
        if (!tps_cli_image_path(a->timeline, error))
            return FALSE;
    }
    if (a->timeline_step && !tps_cli_image_path(a->timeline_step, error))
        return FALSE;
    return TRUE;
}

/* Every output of the command in `outputs`: none may overwrite the
 * scenario or another output. */
static gboolean
claim_outputs(const RunArgs *a, TpsOutputSet *outputs, GError **error)
{
    if (strcmp(a->input, "-") != 0)
        tps_output_set_add_input(outputs, a->input);
    return tps_cli_claim(outputs, a->output ? a->output : "-", "--output", error) &&
           (!a->timeline || tps_cli_claim(outputs, a->timeline, "--timeline", error)) &&
           (!a->trace || tps_cli_claim(outputs, a->trace, "--trace", error)) &&
           (!a->emit_ub_cfg || tps_cli_claim(outputs, a->emit_ub_cfg, "--emit-ub-cfg", error)) &&
           (!a->timeline_step ||
            tps_cli_claim(outputs, a->timeline_step, "--timeline-step", error));
}

/* The scenario of a Megatron-LM script (its notes on standard error) or of
 * a scenario file; on failure nothing is left to clear. */
static gboolean
load_scenario(const RunArgs *a, TpsScenario *scenario, GError **error)
{
    gboolean loaded;
    if (a->megatron_args != NULL) {
        gsize len = 0;
        g_autofree char *text = read_megatron_args(a->megatron_args, &len, error);
        if (text == NULL) {
            /* An unreadable script is an input error, as a scenario file. */
            GError *input_error = g_error_new(TPS_ERROR, TPS_ERROR_INPUT, "%s", (*error)->message);
            g_clear_error(error);
            g_propagate_error(error, input_error);
            return FALSE;
        }
        g_autofree char *name = megatron_scenario_name(a->megatron_args);
        g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
        const char *file = strcmp(a->megatron_args, "-") == 0 ? "<stdin>" : a->megatron_args;
        loaded = tps_megatron_scenario_load_layout(
            file, text, (gssize)len, name, a->model_ref != NULL ? a->model_ref : "a100-sxm4-80gb",
            &a->layout, scenario, notes, error);
        tps_megatron_notes_print(notes);
    } else {
        loaded = tps_scenario_file_load(a->input, scenario, error);
    }
    if (!loaded)
        tps_scenario_clear(scenario);
    return loaded;
}

/* The strategies asked (`*n` of them, NULL-terminated); NULL when none
 * applies. A strategy that does not apply is a row "skipped: REASON"; the
 * others still run. */
static const TpsStrategy **
choose_strategies(const RunArgs *a, const TpsScenario *scenario, guint *n_out, GError **error)
{
    const TpsStrategy **chosen =
        tps_strategy_select_all(scenario, (const char *const *)a->strategy_names, error);
    if (chosen == NULL)
        return NULL;
    guint n = 0, usable = 0;
    while (chosen[n])
        usable += tps_strategy_usable(chosen[n++], scenario, NULL);
    if (usable == 0) {
        /* Nothing to run: the error of the first that does not apply, as
         * tps_strategy_select() words it (with the scenario's position). */
        g_autofree const TpsStrategy **none =
            tps_strategy_select(scenario, (const char *const *)a->strategy_names, error);
        if (none != NULL)
            g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "%s: no strategy applies", a->arg1);
        g_free(chosen);
        return NULL;
    }
    *n_out = n;
    return chosen;
}

/* Each chosen strategy into results[i] (or its reason to skip), with a
 * progress line on a terminal; with `records`, the runs too, in the order
 * asked, and their results in record_results. */
static gboolean
simulate_chosen(const TpsScenario *scenario, const TpsStrategy **chosen, guint n, gboolean progress,
                TpsResult *results, GPtrArray *records, TpsResult *record_results, GError **error)
{
    for (guint i = 0; i < n; i++) {
        g_autofree char *why = NULL;
        if (!tps_strategy_usable(chosen[i], scenario, &why)) {
            results[i].strategy = chosen[i];
            g_strlcpy(results[i].skipped, why, sizeof results[i].skipped);
            continue;
        }
        if (progress)
            fprintf(stderr, "\r[%u/%u] simulating %s...\033[K", i + 1, n, chosen[i]->name);
        TpsRun *record = NULL;
        gboolean ok = records != NULL
                          ? tps_simulate_record(scenario, chosen[i], &results[i], &record, error)
                          : tps_simulate(scenario, chosen[i], &results[i], error);
        if (ok && record) {
            record_results[records->len] = results[i];
            g_ptr_array_add(records, record);
        }
        if (!ok) {
            if (progress)
                fprintf(stderr, "\r\033[K");
            return FALSE;
        }
    }
    return TRUE;
}

/* The reference of the gain column into `*reference` (NULL when it does
 * not apply): megatron for model scenarios, the blocking strategy for op
 * scenarios; simulated on the side into `*ref_result` when it was not
 * asked for. */
static gboolean
simulate_reference(const TpsScenario *scenario, const TpsResult *results, guint n,
                   gboolean progress, TpsResult *ref_result, const TpsResult **reference,
                   GError **error)
{
    const TpsStrategy *ref = tps_strategy_lookup(scenario->is_op ? "sp-blocking" : "megatron");
    *reference = NULL;
    for (guint i = 0; i < n; i++)
        if (results[i].strategy == ref)
            *ref_result = results[i], *reference = ref_result;
    if (*reference == NULL && tps_strategy_applies(ref, scenario, NULL)) {
        if (progress)
            fprintf(stderr, "\r[ref] simulating %s...\033[K", ref->name);
        if (!tps_simulate(scenario, ref, ref_result, error))
            return FALSE;
        *reference = ref_result;
    }
    return TRUE;
}

/* The --emit-ub-cfg file of the fastest strategy that Transformer Engine
 * runs (results are ranked): a strategy without userbuffers has no
 * configuration file. */
static char *
ub_cfg_text(const TpsScenario *scenario, const TpsResult *results, guint n, GError **error)
{
    const TpsStrategy *best = NULL;
    for (guint i = 0; i < n && best == NULL; i++)
        if (results[i].strategy->userbuffers && results[i].skipped[0] == '\0')
            best = results[i].strategy;
    if (scenario->is_op || best == NULL) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_USAGE,
                    "run: --emit-ub-cfg needs a model scenario and a userbuffers strategy "
                    "among those run (%s)",
                    scenario->is_op ? "this is an op scenario" : "none was run");
        return NULL;
    }
    gboolean incomplete = FALSE;
    char *text = tps_ub_cfg_format(scenario, best, &incomplete);
    if (results[0].strategy != best)
        fprintf(stderr,
                "tpsim run: --emit-ub-cfg: %s is faster but runs without userbuffers; "
                "writing %s, the fastest that uses them\n",
                results[0].strategy->name, best->name);
    if (incomplete)
        fprintf(stderr,
                "tpsim run: --emit-ub-cfg: %s leaves GEMMs without overlap, which a "
                "configuration file cannot say: see the Megatron switches in its comments\n",
                best->name);
    return text;
}

/* The --timeline-step figure: one step of the fastest strategy (the
 * table's first row). */
static TpsTimeline *
step_figure_new(const TpsScenario *scenario, const TpsResult *results, guint n,
                const TpsTimelineOptions *topt, GError **error)
{
    g_autoptr(TpsStepSchedule) schedule = NULL;
    if (scenario->is_op)
        g_set_error(error, TPS_ERROR, TPS_ERROR_USAGE,
                    "run: --timeline-step needs a model scenario (an op has no step)");
    else if (n == 0 || results[0].skipped[0] != '\0')
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "run: --timeline-step: no strategy asked applies to the scenario");
    else if (tps_simulate_step_schedule(scenario, results[0].strategy, &schedule, error))
        return tps_step_figure_new(scenario, &results[0], schedule, 0, topt->window_start_us,
                                   topt->window_end_us);
    return NULL;
}

/* Every output asked, then the output set committed: all or none. */
static int
write_outputs(const RunArgs *a, const char *text, const char *ub_text, TpsTimeline *figure,
              TpsTimeline *step_figure, GPtrArray *records, const TpsResult *record_results,
              const char *scenario_name, TpsOutputSet *outputs)
{
    g_autoptr(GError) error = NULL;
    int status = tps_cli_emit(text, a->output);
    if (status == TPS_EXIT_OK && ub_text)
        status = tps_cli_emit(ub_text, a->emit_ub_cfg);
    if (status == TPS_EXIT_OK && figure && !tps_timeline_write(figure, a->timeline, &error))
        status = tps_cli_fail(error);
    if (status == TPS_EXIT_OK && step_figure &&
        !tps_timeline_write(step_figure, a->timeline_step, &error))
        status = tps_cli_fail(error);
    if (figure || step_figure)
        tps_render_shutdown(); /* font caches: a clean exit for leak checkers */
    if (status == TPS_EXIT_OK && a->trace &&
        !tps_trace_export_write_results((TpsRun *const *)records->pdata, record_results,
                                        records->len, scenario_name, a->trace, &error))
        status = tps_cli_fail(error);
    if (status == TPS_EXIT_OK && !tps_output_set_commit(outputs, &error))
        status = tps_cli_fail(error);
    return status;
}

/* A failure once the scenario is loaded: the scenario cleared, then the
 * error reported. */
static int
fail_clearing(TpsScenario *scenario, GError *error)
{
    tps_scenario_clear(scenario);
    return tps_cli_fail(error);
}

int
tps_cmd_run(int argc, char **argv)
{
    g_auto(RunArgs) a = {0};
    g_autoptr(GError) error = NULL;
    if (!parse_command_line(&a, &argc, &argv, &error) || !check_run_args(&a, argc, argv, &error))
        return tps_cli_fail(error);
    /* All outputs or none (core/output.h): a failing --trace leaves no
     * --output behind, and no output may overwrite the scenario or
     * another output. */
    g_autoptr(TpsOutputSet) outputs = tps_output_set_begin("run");
    if (!claim_outputs(&a, outputs, &error))
        return tps_cli_fail(error);
    const gboolean want_records = a.timeline != NULL || a.trace != NULL;

    TpsScenario scenario;
    if (!load_scenario(&a, &scenario, &error))
        return tps_cli_fail(error);
    guint n = 0;
    g_autofree const TpsStrategy **chosen = choose_strategies(&a, &scenario, &n, &error);
    if (chosen == NULL)
        return fail_clearing(&scenario, error);

    g_autofree TpsResult *results = g_new0(TpsResult, MAX(n, 1));
    /* Figures keep the runs in the order asked, before ranking. */
    g_autoptr(GPtrArray) records = g_ptr_array_new_with_free_func((GDestroyNotify)tps_run_free);
    g_autofree TpsResult *record_results = g_new0(TpsResult, MAX(n, 1));
    gboolean progress = isatty(STDERR_FILENO);
    if (!simulate_chosen(&scenario, chosen, n, progress, results, want_records ? records : NULL,
                         record_results, &error))
        return fail_clearing(&scenario, error);
    TpsResult ref_result;
    const TpsResult *reference = NULL;
    if (!simulate_reference(&scenario, results, n, progress, &ref_result, &reference, &error))
        return fail_clearing(&scenario, error);
    if (progress)
        fprintf(stderr, "\r\033[K");
    tps_results_rank(results, n, reference);

    g_autofree char *ub_text = NULL;
    if (a.emit_ub_cfg && (ub_text = ub_cfg_text(&scenario, results, n, &error)) == NULL)
        return fail_clearing(&scenario, error);

    g_autofree char *text =
        tps_result_format(&scenario, results, n, (TpsFormat)a.format, a.breakdown);
    /* Lay the figures out before writing anything, so that a bad figure
     * option leaves no file behind. */
    g_autoptr(TpsTimeline) figure = NULL;
    if (a.timeline && records->len > 0 && a.topt.rank != TPS_RANK_ALL &&
        (guint)a.topt.rank >= ((TpsRun *)g_ptr_array_index(records, 0))->ranks) {
        /* A rank the scenario does not have: the option's value is bad. */
        g_set_error(&error, TPS_ERROR, TPS_ERROR_USAGE,
                    "run: --timeline-rank %d: the TP group has ranks 0 to %u", a.topt.rank,
                    ((TpsRun *)g_ptr_array_index(records, 0))->ranks - 1);
        return fail_clearing(&scenario, error);
    }
    if (a.timeline) {
        figure = tps_figure_timeline(&scenario, (TpsRun *const *)records->pdata, record_results,
                                     records->len, NULL, &a.topt, &error);
        if (figure == NULL)
            return fail_clearing(&scenario, error);
    }
    g_autoptr(TpsTimeline) step_figure = NULL;
    if (a.timeline_step && (step_figure = step_figure_new(&scenario, results, n, &a.topt, &error)) == NULL)
        return fail_clearing(&scenario, error);
    int status =
        write_outputs(&a, text, ub_text, figure, step_figure, records, record_results,
                      scenario.name, outputs);
    tps_scenario_clear(&scenario);
    return status;
}
