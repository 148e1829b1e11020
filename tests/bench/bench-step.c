/* Benchmark of the training-step frame (figures only, never a failure):
 *  1. a 1T-class scenario (128 layers, pp 64, interleaved, 512
 *     micro-batches per replica) under every preset that applies;
 *  2. GPT-3 175B-class step configurations (pp, vpp, dp, micro-batch,
 *     strategy) evaluated one after another in one process, with the
 *     pieces cache, as a capacity planner's sweep does.
 * Each size is reported as CPU ms per configuration beside the figure
 * recorded for an analytical model of the same configuration beside this
 * program's own (Calculon, its in-process evaluation, on the same machine
 * on 2026-12-02: docs/step-model.md says how), which this program does
 * not run.
 * Run with `meson test -C build --benchmark step`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/alloc.h"
#include "io/input/scenario-file.h"
#include "sched/simulate.h"
#include "sched/strategy.h"

/* CPU ms per configuration of the analytical model and of this program
 * when last measured side by side, in the same minutes on one machine
 * (docs/step-model.md, "Side by side after the fold", 2026-12-02: the
 * medians of 5 rounds). Machines and loads move both; their ratio is the
 * figure to compare. */
typedef struct {
    double analytical_ms, tpsim_ms;
} Recorded;

static const Recorded recorded_1t = {4.31, 3.73};
static const Recorded recorded_175b = {3.93, 0.88};
static const Recorded recorded_175b_cache = {3.93, 0.21};

static double
now_s(void)
{
    return (double)g_get_monotonic_time() / 1e6;
}

/* CPU time of the process: the figure to read on a shared machine. */
static double
cpu_s(void)
{
    return (double)clock() / CLOCKS_PER_SEC;
}

static int
cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static gboolean
load(const char *name, TpsScenario *sc)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *path = g_build_filename(
        g_getenv("TPSIM_SOURCE_DIR") ? g_getenv("TPSIM_SOURCE_DIR") : ".", "scenarios", name, NULL);
    if (!tps_scenario_file_load(path, sc, &error)) {
        fprintf(stderr, "%s\n", error->message);
        return FALSE;
    }
    return TRUE;
}

/* `sc` under every preset that applies, each evaluated from scratch
 * (tps_simulate(): the layer's pieces, then the step) RUNS times after a
 * first pass: the median CPU ms per preset, their mean, whether the
 * in-order pass gave each preset's step, and the steady periods the
 * ordered replays jumped over. */
static gboolean
presets_from_scratch(const char *label, TpsScenario *sc, const Recorded *rec)
{
    g_autoptr(GError) error = NULL;
    g_autofree const TpsStrategy **all = tps_strategy_select(sc, NULL, &error);
    if (all == NULL) {
        fprintf(stderr, "%s\n", error->message);
        return FALSE;
    }
    guint n = 0;
    while (all[n])
        n++;
    enum { RUNS = 5 };
    g_autofree double *runs = g_new(double, (gsize)n * RUNS);
    for (guint k = 0; k <= RUNS; k++)
        for (guint i = 0; i < n; i++) {
            TpsResult r;
            const double c = cpu_s();
            if (!tps_simulate(sc, all[i], &r, &error)) {
                fprintf(stderr, "%s\n", error->message);
                return FALSE;
            }
            if (k > 0)
                runs[i * RUNS + k - 1] = cpu_s() - c;
        }
    double sum = 0.0;
    guint in_order = 0;
    guint64 periods = 0, part_ops = 0;
    for (guint i = 0; i < n; i++) {
        qsort(&runs[i * RUNS], RUNS, sizeof(double), cmp_double);
        sum += runs[i * RUNS + RUNS / 2];
        TpsPieceTimes pc;
        TpsStepResult step;
        if (!tps_simulate_pieces(sc, all[i], &pc, &error) ||
            !tps_pipeline_simulate(sc, &pc, &step, &error)) {
            fprintf(stderr, "%s\n", error->message);
            return FALSE;
        }
        in_order += step.in_order ? 1 : 0;
        periods += step.periods;
        part_ops += step.part_ops;
    }
    printf("%s: %.2f ms of CPU per configuration (mean over %u presets of the median of %u; "
           "%u of them by the in-order pass, the others jumping %" G_GUINT64_FORMAT
           " steady periods and %" G_GUINT64_FORMAT " more of stage 0's ops in all); "
           "recorded: analytical model %.2f ms beside this program's %.2f\n",
           label, 1e3 * sum / MAX(n, 1u), n, RUNS, in_order, periods, part_ops,
           rec->analytical_ms, rec->tpsim_ms);
    return TRUE;
}

/* GPT-3 175B-class step configurations (pp, vpp, dp, micro-batch,
 * strategy) of `sc` one after another, with the pieces cache, as a
 * capacity planner's sweep does: configurations a second of CPU. */
static gboolean
sweep_175b(TpsScenario *sc)
{
    g_autoptr(GError) error = NULL;
    static const guint pps[] = {4, 6, 8, 12, 16};
    static const guint vpps[] = {1, 2, 4};
    static const guint dps[] = {4, 8, 16, 32};
    static const guint mbs[] = {1, 2};
    static const char *const strategies[] = {"megatron", "te-a100", "ring-ag"};
    g_autoptr(TpsSimCache) cache = tps_sim_cache_new();
    guint configs = 0;
    double best = 0.0;
    guint64 tasks = 0;
    const double t0 = now_s(), c0 = cpu_s();
    for (guint a = 0; a < G_N_ELEMENTS(pps); a++)
        for (guint v = 0; v < G_N_ELEMENTS(vpps); v++)
            for (guint d = 0; d < G_N_ELEMENTS(dps); d++)
                for (guint m = 0; m < G_N_ELEMENTS(mbs); m++)
                    for (guint s = 0; s < G_N_ELEMENTS(strategies); s++) {
                        sc->pp = pps[a];
                        sc->vpp = vpps[v];
                        sc->dp = dps[d];
                        sc->micro_batch = mbs[m];
                        sc->global_batch = 1536;
                        guint64 micro = sc->global_batch / (sc->micro_batch * sc->dp);
                        if (sc->layers % ((guint64)sc->pp * sc->vpp) != 0 ||
                            sc->global_batch % (sc->micro_batch * sc->dp) != 0 ||
                            (sc->vpp > 1 && micro % sc->pp != 0))
                            continue;
                        TpsResult r;
                        if (!tps_simulate_cached(sc, tps_strategy_lookup(strategies[s]), cache, &r,
                                                 NULL, &error)) {
                            fprintf(stderr, "%s\n", error->message);
                            return FALSE;
                        }
                        best = MAX(best, r.mfu);
                        tasks += r.micro_batches * sc->pp * sc->vpp * 2;
                        configs++;
                    }
    double wall = now_s() - t0, cpu = cpu_s() - c0;
    guint64 hits, misses;
    tps_sim_cache_stats(cache, &hits, &misses);
    printf("GPT-3 175B-class step configurations: %u in %.3f s wall, %.3f s CPU = %.0f "
           "configurations/s of CPU (%.0f pipeline chunks each on average; pieces simulated "
           "%" G_GUINT64_FORMAT " times, reused %" G_GUINT64_FORMAT "; best MFU %.1f%%)\n",
           configs, wall, cpu, configs / cpu, (double)tasks / configs, misses, hits, 100.0 * best);
    printf("175B-class, with the pieces cache: %.2f ms of CPU per configuration; recorded: "
           "analytical model %.2f ms beside this program's %.2f\n",
           1e3 * cpu / MAX(configs, 1u), recorded_175b_cache.analytical_ms,
           recorded_175b_cache.tpsim_ms);
    return TRUE;
}

int
main(void)
{
    TpsScenario sc;
    g_autoptr(GError) error = NULL;

    tps_alloc_tune();
    /* 1. The 1T-class scenario, every preset. */
    if (!load("gpt-1t.yaml", &sc))
        return EXIT_FAILURE;
    g_autofree const TpsStrategy **all = tps_strategy_select(&sc, NULL, &error);
    guint n = 0;
    while (all[n])
        n++;
    /* A first pass in a fresh process (its allocations touch new pages),
     * then RUNS more: per preset the median of those, the steady cost in
     * a process that evaluates presets one after another (tpsim run,
     * search, sweep). */
    enum { RUNS = 5 };
    g_autofree double *runs = g_new(double, (gsize)n * RUNS);
    double t0 = now_s(), c0 = cpu_s(), cold = 0.0;
    for (guint k = 0; k <= RUNS; k++)
        for (guint i = 0; i < n; i++) {
            TpsResult r;
            const double c = cpu_s();
            if (!tps_simulate(&sc, all[i], &r, &error)) {
                fprintf(stderr, "%s\n", error->message);
                return EXIT_FAILURE;
            }
            if (k == 0)
                cold += cpu_s() - c;
            else
                runs[i * RUNS + k - 1] = cpu_s() - c;
        }
    printf("1T-class (128 layers, pp 64, vpp 2, 512 micro-batches), %u presets x %u passes: "
           "%.3f s wall, %.3f s CPU; first pass %.1f ms of CPU per preset\n",
           n, RUNS + 1, now_s() - t0, cpu_s() - c0, 1e3 * cold / MAX(n, 1u));
    double sum = 0.0, worst = 0.0;
    for (guint i = 0; i < n; i++) {
        double *c = &runs[i * RUNS];
        qsort(c, RUNS, sizeof(double), cmp_double);
        printf("  %-12s %.1f ms of CPU (median of %u)\n", all[i]->name, 1e3 * c[RUNS / 2], RUNS);
        sum += c[RUNS / 2];
        worst = MAX(worst, c[RUNS / 2]);
    }
    printf("  per preset: mean %.1f ms, slowest %.1f ms (target < 5)\n", 1e3 * sum / MAX(n, 1u),
           1e3 * worst);

    /* Of which the step frame (the replayed pipeline), on the first
     * preset's pieces. */
    TpsPieceTimes pieces;
    if (n > 0 && tps_simulate_pieces(&sc, all[0], &pieces, &error)) {
        TpsStepResult step;
        c0 = cpu_s();
        for (guint i = 0; i < n; i++)
            if (!tps_pipeline_simulate(&sc, &pieces, &step, &error))
                break;
        printf("  of which the step frame: %.1f ms of CPU (%" G_GUINT64_FORMAT
               " transfers resolved alone, %" G_GUINT64_FORMAT " instants of sharing)\n",
               1e3 * (cpu_s() - c0) / n, step.lone, step.shared);
    }
    if (error) {
        fprintf(stderr, "%s\n", error->message);
        return EXIT_FAILURE;
    }
    if (!presets_from_scratch("1T-class, from scratch", &sc, &recorded_1t))
        return EXIT_FAILURE;
    tps_scenario_clear(&sc);

    /* 2. GPT-3 175B-class configurations. */
    if (!load("gpt3-175b-pp8.yaml", &sc))
        return EXIT_FAILURE;
    if (!presets_from_scratch("175B-class (gpt3-175b-pp8), from scratch", &sc, &recorded_175b))
        return EXIT_FAILURE;
    if (!sweep_175b(&sc))
        return EXIT_FAILURE;
    printf("peak RSS %.1f MiB\n", tps_alloc_peak_rss_mib());
    tps_scenario_clear(&sc);
    return EXIT_SUCCESS;
}
