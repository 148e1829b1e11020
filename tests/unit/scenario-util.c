/* Shipped scenarios for the tests (see scenario-util.h). */
#include "scenario-util.h"

#include <check.h>

#include "io/input/scenario-file.h"
#include "sched/strategy.h"

void
tps_test_load_scenario(const char *name, TpsScenario *sc)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *path = g_build_filename(g_getenv("TPSIM_SOURCE_DIR"), "scenarios", name, NULL);
    ck_assert_msg(tps_scenario_file_load(path, sc, &error), "%s", error ? error->message : "");
}

TpsRun *
tps_test_record(const TpsScenario *sc, const char *strategy, TpsResult *result)
{
    g_autoptr(GError) error = NULL;
    TpsRun *rec = NULL;
    TpsResult scratch;
    ck_assert_msg(tps_simulate_record(sc, tps_strategy_lookup(strategy), result ? result : &scratch,
                                      &rec, &error),
                  "%s", error ? error->message : "");
    return rec;
}
