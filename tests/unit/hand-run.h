/* A run built by hand for the tests of what reads runs (hand-run.c). */
#pragma once

#include "engine/run.h"

/* Ranks 0 and 1, windows [0, 500). Rank 0's exposed communication is
 * [0,30) [50,80) [150,200) [390,400) [410,420): 130 ns. */
#define TPS_TEST_HAND_RUN_EXPOSED_NS 130
TpsRun *tps_test_hand_run(void);
