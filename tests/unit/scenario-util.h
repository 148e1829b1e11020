/* Shipped scenarios for the tests that simulate them (test-render,
 * test-figures, test-sched, test-overlap, test-llama): loaded from the
 * source tree's scenarios/, and simulated with the run recorded. Both fail
 * the test (ck_assert) with the error's message. */
#pragma once

#include "engine/run.h"
#include "sched/scenario.h"
#include "sched/simulate.h"

/* scenarios/NAME into `sc`. */
void tps_test_load_scenario(const char *name, TpsScenario *sc);
/* `sc` simulated under the preset `strategy`, its run recorded (the
 * caller frees it); its result into `result` when not NULL. */
TpsRun *tps_test_record(const TpsScenario *sc, const char *strategy, TpsResult *result);
