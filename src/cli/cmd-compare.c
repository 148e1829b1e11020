/* tpsim compare --trace TRACE --scenario S.yaml: a measured trace against
 * the prediction of a scenario (docs/traces.md, "compare"). */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "core/error.h"
#include "core/output.h"
#include "io/output/result-writer.h"
#include "io/input/scenario-file.h"
#include "io/trace/trace-import.h"
#include "render/compare.h"
#include "render/draw.h"
#include "render/timeline.h"
#include "sched/simulate.h"
#include "sched/strategy.h"

/* The strategy to simulate: --strategy, else the one run in a trace that
 * tpsim wrote, else megatron (sp-blocking for op scenarios) when it
 * applies, else the first the scenario selects. */
static const TpsStrategy *
choose_strategy(const TpsScenario *scenario, const TpsTrace *trace, const char *name,
                GError **error)
{
    g_autofree char *from_trace = name ? NULL : tps_trace_tpsim_strategy(trace);
    const char *want = name ? name : from_trace;
    if (want == NULL) {
        const TpsStrategy *ref = tps_strategy_lookup(scenario->is_op ? "sp-blocking" : "megatron");
        if (ref && ref->implemented && tps_strategy_applies(ref, scenario, NULL))
            want = ref->name;
    }
    const char *requested[] = {want, NULL};
    g_autofree const TpsStrategy **chosen =
        tps_strategy_select(scenario, want ? requested : NULL, error);
    if (chosen == NULL)
        return NULL;
    if (chosen[0] == NULL) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "no strategy applies to the scenario");
        return NULL;
    }
    return chosen[0];
}

/* The command line of tpsim compare. */
typedef struct {
    char *trace_path;
    char *scenario_path;
    char *strategy_name;
    char *timeline;
    char *window;
    char *format_name;
    char *output;
    gboolean force;
    gboolean json;
    TpsTimelineOptions topt;
} CompareArgs;

static void
compare_args_clear(CompareArgs *a)
{
    g_free(a->trace_path);
    g_free(a->scenario_path);
    g_free(a->strategy_name);
    g_free(a->timeline);
    g_free(a->window);
    g_free(a->format_name);
    g_free(a->output);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(CompareArgs, compare_args_clear)

/* The options of the command line into `a`; no argument may be left, and
 * --trace and --scenario are required. */
static gboolean
parse_command_line(CompareArgs *a, int *argc, char ***argv, GError **error)
{
    GOptionEntry entries[] = {
        {"trace", 't', 0, G_OPTION_ARG_FILENAME, &a->trace_path,
         "Measured trace: PyTorch profiler (Kineto) JSON, gzipped or plain, or one written by "
         "`tpsim run --trace`",
         "TRACE"},
        {"scenario", 'S', 0, G_OPTION_ARG_FILENAME, &a->scenario_path, "Scenario to predict with",
         "SCENARIO.yaml"},
        {"strategy", 's', 0, G_OPTION_ARG_STRING, &a->strategy_name,
         "Strategy to simulate (default: the one in a tpsim trace, else megatron or sp-blocking)",
         "NAME"},
        {"timeline", 'T', 0, G_OPTION_ARG_FILENAME, &a->timeline,
         "Also draw the measured run above the predicted one (PNG, SVG or PDF)", "FILE"},
        {"timeline-window", 0, 0, G_OPTION_ARG_STRING, &a->window,
         "Only this part of the timeline, in microseconds from each run's start", "START:END"},
        {"format", 'f', 0, G_OPTION_ARG_STRING, &a->format_name,
         "Output format: table (default) or json", "FORMAT"},
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &a->output,
         "Write the comparison to FILE (atomically) instead of standard output", "FILE"},
        {"force", 0, 0, G_OPTION_ARG_NONE, &a->force,
         "Compare even when the trace's GEMM shapes and collective sizes say it is another "
         "workload than the scenario's (a warning instead of exit 1)",
         NULL},
        {NULL},
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new(NULL);
    g_option_context_set_summary(
        ctx, "Compare a measured trace with the prediction of a scenario: kernels and time per\n"
             "class (GEMM, NCCL, other) and busy time per stream, per device, with the error\n"
             "of the prediction in percent.");
    g_option_context_set_description(ctx,
                                     "See docs/traces.md; the scenario format and the JSON keys "
                                     "are in\ndocs/scenario-format.md.\n\n"
                                     "The trace must record the scenario's workload: the GEMM "
                                     "shapes of its kernels\n(or, without shapes, its collective "
                                     "sizes) are matched against the scenario's;\na different "
                                     "workload is refused with the evidence (exit 1) unless "
                                     "--force.\n\n"
                                     "Exit status: 0 success, 1 invalid input or different "
                                     "workloads, 2 usage error.");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_set_prgname("tpsim compare");
    if (!g_option_context_parse(ctx, argc, argv, error))
        return FALSE;
    if (*argc != 1 || a->trace_path == NULL || a->scenario_path == NULL) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_USAGE,
                    *argc != 1 ? "compare: unexpected argument '%s' (see tpsim compare --help)"
                               : "compare: --trace and --scenario are required (see tpsim compare "
                                 "--help)%s",
                    *argc != 1 ? (*argv)[1] : "");
        return FALSE;
    }
    return TRUE;
}

/* The output format, the figure's path and its window into `a`. */
static gboolean
check_compare_args(CompareArgs *a, GError **error)
{
    static const char *const formats[] = {"table", "json", NULL};
    guint format;
    if (!tps_cli_format("compare", a->format_name, formats, &format, error))
        return FALSE;
    const char *const names[] = {a->strategy_name, NULL};
    if (!tps_cli_strategy_names(names, error))
        return FALSE;
    a->json = format == 1;
    tps_timeline_options_init(&a->topt);
    if (a->timeline) {
        if (!tps_cli_image_path(a->timeline, error))
            return FALSE;
    }
    if (a->window) {
        double lo, hi;
        char *end = NULL;
        lo = g_ascii_strtod(a->window, &end);
        if (end == a->window || *end != ':' || (hi = g_ascii_strtod(end + 1, &end), *end != '\0') ||
            !(lo >= 0 && hi > lo)) {
            g_set_error(error, TPS_ERROR, TPS_ERROR_USAGE,
                        "compare: --timeline-window takes START_US:END_US with 0 <= START < END, "
                        "not '%s'",
                        a->window);
            return FALSE;
        }
        a->topt.window_start_us = lo;
        a->topt.window_end_us = hi;
    }
    return TRUE;
}

/* The prediction: the scenario's run of the chosen strategy, refused when
 * the trace records another workload (unless --force: a warning). */
static TpsRun *
predict(const CompareArgs *a, const TpsTrace *trace, GError **error)
{
    TpsScenario scenario;
    if (!tps_scenario_file_load(a->scenario_path, &scenario, error)) {
        tps_scenario_clear(&scenario);
        return NULL;
    }
    const TpsStrategy *strategy = choose_strategy(&scenario, trace, a->strategy_name, error);
    if (strategy == NULL) {
        tps_scenario_clear(&scenario);
        return NULL;
    }
    TpsResult result;
    g_autoptr(TpsRun) record = NULL;
    if (!tps_simulate_record(&scenario, strategy, &result, &record, error)) {
        tps_scenario_clear(&scenario);
        return NULL;
    }
    /* Errors of -95% between a CNN's trace and a GPT layer say nothing:
     * refuse different workloads, with what tells them apart. */
    g_autofree char *evidence = NULL;
    if (!tps_trace_same_workload(trace, &result, &evidence)) {
        if (!a->force) {
            g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                        "compare: '%s' does not record the workload of scenario '%s': %s (use "
                        "--force to compare anyway)",
                        a->trace_path, scenario.name, evidence);
            tps_scenario_clear(&scenario);
            return NULL;
        }
        g_autofree char *shown = tps_cli_printable(evidence);
        fprintf(stderr,
                "tpsim: warning: compare: '%s' records another workload than scenario "
                "'%s' (--force): %s\n",
                a->trace_path, scenario.name, shown);
    }
    tps_scenario_clear(&scenario);
    return g_steal_pointer(&record);
}

/* The --timeline figure: measured above predicted, on one time axis,
 * rank 0 of each. */
static gboolean
draw_comparison(const CompareArgs *a, const TpsTrace *trace, const TpsRun *record,
                const TpsComparison *cmp, GError **error)
{
    gboolean is_op = record->is_op;
    g_autoptr(TpsRun) measured = tps_trace_to_run(trace, record->label, is_op, error);
    if (measured == NULL)
        return FALSE;
    g_autofree char *base = g_path_get_basename(a->trace_path);
    g_autofree char *h0 =
        g_strdup_printf("measured: %s (kernels span %.3f ms)", base, cmp->span.measured_ms);
    g_autofree char *h1 = g_strdup_printf("predicted: %s (kernels span %.3f ms)", record->label,
                                          cmp->span.predicted_ms);
    TpsTimelineRun runs[] = {{measured, h0}, {record, h1}};
    g_autofree char *title = g_strdup_printf("%s: measured and predicted", base);
    TpsTimeline *tl = tps_timeline_new(runs, 2, title, NULL, &a->topt, error);
    gboolean drawn = tl != NULL && tps_timeline_write(tl, a->timeline, error);
    tps_timeline_free(tl);
    tps_render_shutdown(); /* font caches: a clean exit for leak checkers */
    return drawn;
}

int
tps_cmd_compare(int argc, char **argv)
{
    g_auto(CompareArgs) a = {0};
    g_autoptr(GError) error = NULL;
    if (!parse_command_line(&a, &argc, &argv, &error) || !check_compare_args(&a, &error))
        return tps_cli_fail(error);

    g_autoptr(TpsOutputSet) outputs = tps_output_set_begin("compare");
    tps_output_set_add_input(outputs, a.trace_path);
    tps_output_set_add_input(outputs, a.scenario_path);
    if (!tps_cli_claim(outputs, a.output ? a.output : "-", "--output", &error) ||
        (a.timeline && !tps_cli_claim(outputs, a.timeline, "--timeline", &error)))
        return tps_cli_fail(error);

    g_autoptr(TpsTrace) trace = tps_trace_load(a.trace_path, &error);
    if (trace == NULL)
        return tps_cli_fail(error);
    g_autoptr(TpsRun) record = predict(&a, trace, &error);
    if (record == NULL)
        return tps_cli_fail(error);
    g_autoptr(TpsComparison) cmp = tps_trace_compare(trace, record, &error);
    if (cmp == NULL)
        return tps_cli_fail(error);
    if (a.timeline && !draw_comparison(&a, trace, record, cmp, &error))
        return tps_cli_fail(error);
    g_autofree char *text = a.json ? tps_comparison_to_json(cmp) : tps_comparison_to_table(cmp);
    int status = tps_cli_emit(text, a.output);
    if (status == TPS_EXIT_OK && !tps_output_set_commit(outputs, &error))
        status = tps_cli_fail(error);
    return status;
}
