/* Fuzz target: `tpsim run` end to end on small scenarios. Arbitrary bytes
 * as a scenario file; what loads is shrunk to a few layers and
 * micro-batches (a sweep of layers or batch sizes would only repeat the
 * same graphs, slower) and, when that is still a valid scenario, every
 * strategy it selects is simulated, ranked and written as table, CSV and
 * JSON. Each simulation either succeeds with a finite, positive time or
 * fails with a message; nothing may crash, leak or emit a critical. */
#include <glib.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/error.h"
#include "io/output/result-writer.h"
#include "io/input/scenario-file.h"
#include "sched/simulate.h"
#include "sched/strategy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* At most this many layers per pipeline chunk and micro-batches per step. */
#define SMALL_LAYERS 2
#define SMALL_MICRO_BATCHES 4

/* Shrink `sc` in place; FALSE when it is too large to shrink (more ranks
 * or stages than a short run takes). */
static gboolean
shrink(TpsScenario *sc)
{
    if (sc->tp > 8 || sc->pp > 16 || sc->vpp > 8)
        return FALSE;
    if (sc->is_op)
        return TRUE;
    const guint64 chunks = (guint64)sc->pp * sc->vpp;
    sc->layers = chunks * MIN(sc->layers / chunks, SMALL_LAYERS);
    /* The interleaved schedule needs a multiple of pp micro-batches. */
    const guint64 per_step = sc->micro_batch * sc->dp;
    const guint64 unit = sc->vpp > 1 ? sc->pp : 1;
    const guint64 micro = sc->global_batch / per_step;
    sc->global_batch = per_step * MIN(micro, MAX(unit, SMALL_MICRO_BATCHES / unit * unit));
    return tps_scenario_validate(sc, NULL, NULL);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autoptr(GError) error = NULL;
    g_auto(TpsScenario) sc = {0};

    if (size > 1 << 16)
        return 0;
    if (!tps_scenario_file_load_string("fuzz", (const char *)data, (gssize)size, &sc, &error)) {
        g_assert(error != NULL && error->message != NULL);
        return 0;
    }
    if (!shrink(&sc))
        return 0;
    g_autofree const TpsStrategy **chosen = tps_strategy_select(&sc, NULL, &error);
    if (chosen == NULL) {
        g_assert(error != NULL);
        return 0;
    }
    guint n = 0;
    while (chosen[n])
        n++;
    g_autofree TpsResult *results = g_new0(TpsResult, MAX(n, 1));
    guint ok = 0;
    for (guint i = 0; i < n; i++) {
        g_autoptr(GError) sim_error = NULL;
        if (!tps_simulate(&sc, chosen[i], &results[ok], &sim_error)) {
            g_assert(sim_error != NULL && sim_error->message != NULL);
            continue;
        }
        const TpsResult *r = &results[ok++];
        if (sc.is_op)
            g_assert(isfinite(r->op_time_ms) && r->op_time_ms > 0);
        else
            g_assert(isfinite(r->step_time_s) && r->step_time_s > 0 && isfinite(r->forward_ms) &&
                     r->forward_ms > 0);
    }
    tps_results_rank(results, ok, ok > 0 ? &results[0] : NULL);
    for (guint f = 0; f < 3; f++) {
        g_autofree char *text = tps_result_format(&sc, results, ok, (TpsFormat)f, f == 0);
        g_assert(text != NULL);
    }
    return 0;
}
