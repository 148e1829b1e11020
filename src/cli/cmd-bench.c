/* tpsim bench: the simulator's own speed, as figures (never a pass/fail).
 *
 * Times every modelled preset on a scenario (default: GPT-3 175B at TP=8),
 * repeated to get a stable median, and reports the peak resident memory.
 * The engine's raw throughput on a synthetic graph of a million tasks is
 * measured by the bench suite (meson test --benchmark).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "core/alloc.h"
#include "core/error.h"
#include "core/stats.h"
#include "io/input/scenario-file.h"
#include "sched/simulate.h"
#include "sched/strategy.h"

int
tps_cmd_bench(int argc, char **argv)
{
    gint repeat = 5;
    g_autoptr(GError) error = NULL;
    GOptionEntry entries[] = {
        {"repeat", 'r', 0, G_OPTION_ARG_INT, &repeat,
         "Runs per strategy (median reported), default 5", "N"},
        {NULL},
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("[SCENARIO.yaml]");
    g_option_context_set_summary(ctx, "Time the simulation of every modelled preset of a scenario "
                                      "(default:\nscenarios/gpt3-175b-tp8.yaml of the source "
                                      "tree) and report wall time and peak memory.");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_set_prgname("tpsim bench");
    if (!g_option_context_parse(ctx, &argc, &argv, &error))
        return tps_cli_fail(error);
    if (repeat < 1 || argc > 2) {
        g_set_error(&error, TPS_ERROR, TPS_ERROR_USAGE, "bench: see tpsim bench --help");
        return tps_cli_fail(error);
    }
    const char *path = argc == 2 ? argv[1] : TPS_SOURCE_DIR "/scenarios/gpt3-175b-tp8.yaml";

    TpsScenario scenario;
    if (!tps_scenario_file_load(path, &scenario, &error)) {
        tps_scenario_clear(&scenario);
        return tps_cli_fail(error);
    }
    guint n;
    const TpsStrategy *table = tps_strategy_table(&n);
    double total_ms = 0.0;
    printf("%-13s %10s %10s %12s %10s\n", "strategy", "wall ms", "tasks", "events", "Mevents/s");
    const gboolean sp = scenario.sp;
    for (guint i = 0; i < n; i++) {
        const TpsStrategy *s = &table[i];
        /* Every modelled preset is timed: the SP setting follows the preset
         * (tp-allreduce without SP, the others with it). */
        if (!scenario.is_op)
            scenario.sp = s->needs_sp;
        if (!s->implemented || !tps_strategy_applies(s, &scenario, NULL))
            continue;
        g_autofree double *wall = g_new(double, repeat);
        TpsResult result;
        for (gint r = 0; r < repeat; r++) {
            gint64 t0 = g_get_monotonic_time();
            if (!tps_simulate(&scenario, s, &result, &error)) {
                tps_scenario_clear(&scenario);
                return tps_cli_fail(error);
            }
            wall[r] = (double)(g_get_monotonic_time() - t0) / 1e3;
        }
        double median = tps_median(wall, (guint)repeat);
        total_ms += median;
        printf("%-13s %10.3f %10u %12" G_GUINT64_FORMAT " %10.2f\n", s->name, median, result.tasks,
               result.stats.events, (double)result.stats.events / (median * 1e3));
    }
    scenario.sp = sp;
    printf("total         %10.3f ms wall (median of %d runs each)\n", total_ms, repeat);
    printf("peak RSS      %10.1f MiB\n", tps_alloc_peak_rss_mib());
    tps_scenario_clear(&scenario);
    return TPS_EXIT_OK;
}
