/* Rendering benchmark: the timeline of one GPT-3 175B layer (forward and
 * backward, scenarios/gpt3-175b-tp8.yaml) for all 8 ranks, laid out and
 * drawn to PNG, SVG and PDF. Reports wall time per figure (target < 0.5 s
 * for the PNG); the simulation itself is not timed. Never fails on time. */
#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>

#include "io/input/scenario-file.h"
#include "render/draw.h"
#include "render/figure.h"
#include "render/trace-export.h"
#include "sched/simulate.h"
#include "sched/strategy.h"

int
main(int argc, char **argv)
{
    const char *src = g_getenv("TPSIM_SOURCE_DIR");
    g_autofree char *path =
        g_build_filename(src ? src : ".", "scenarios", "gpt3-175b-tp8.yaml", NULL);
    TpsScenario sc;
    g_autoptr(GError) error = NULL;
    if (!tps_scenario_file_load(path, &sc, &error)) {
        fprintf(stderr, "%s\n", error->message);
        return 1;
    }
    static const char *const strategies[] = {"megatron", "te-a100"};
    g_autofree char *dir = g_dir_make_tmp("tpsim-bench-render-XXXXXX", NULL);
    int status = 0;
    for (guint s = 0; s < G_N_ELEMENTS(strategies) && status == 0; s++) {
        TpsResult res;
        TpsRun *rec = NULL;
        if (!tps_simulate_record(&sc, tps_strategy_lookup(strategies[s]), &res, &rec, &error)) {
            fprintf(stderr, "%s\n", error->message);
            status = 1;
            break;
        }
        TpsTimelineOptions opt;
        tps_timeline_options_init(&opt);
        opt.rank = TPS_RANK_ALL;
        static const char *const exts[] = {"png", "svg", "pdf"};
        for (guint e = 0; e < G_N_ELEMENTS(exts); e++) {
            g_autofree char *name = g_strdup_printf("%s.%s", strategies[s], exts[e]);
            g_autofree char *out = g_build_filename(dir, name, NULL);
            gint64 t0 = g_get_monotonic_time();
            g_autoptr(TpsTimeline) tl = tps_figure_timeline(&sc, &rec, &res, 1, NULL, &opt, &error);
            gint64 t1 = g_get_monotonic_time();
            if (tl == NULL || !tps_timeline_write(tl, out, &error)) {
                fprintf(stderr, "%s\n", error->message);
                status = 1;
                break;
            }
            gint64 t2 = g_get_monotonic_time();
            GStatBuf st;
            g_stat(out, &st);
            printf("render %-9s %s all 8 ranks: %u lanes, %u boxes: layout %.3f s, draw %.3f s, "
                   "total %.3f s (target < 0.5 s), %.1f MB\n",
                   strategies[s], exts[e], tl->lanes->len, tl->boxes->len, (t1 - t0) / 1e6,
                   (t2 - t1) / 1e6, (t2 - t0) / 1e6, st.st_size / 1e6);
            g_unlink(out);
        }
        gint64 t0 = g_get_monotonic_time();
        g_autofree char *json = tps_trace_export(&rec, 1, sc.name);
        printf("trace     %-9s json: %.3f s, %.1f MB\n", strategies[s],
               (g_get_monotonic_time() - t0) / 1e6, strlen(json) / 1e6);
        tps_run_free(rec);
    }
    g_rmdir(dir);
    tps_scenario_clear(&sc);
    return status;
}
