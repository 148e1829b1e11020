/* Fuzz target: arbitrary bytes as a scenario file. Any input must either
 * load or fail with a TPS_ERROR_INPUT message that has a position; nothing
 * may crash, leak or emit a critical. Model names resolve through the
 * built-in models folder, so inputs naming a real model reach the overlap
 * checks too. */
#include <glib.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/error.h"
#include "io/input/scenario-file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autoptr(GError) error = NULL;
    TpsScenario scenario;

    if (size > 1 << 20) /* keep single runs fast */
        return 0;
    gboolean ok =
        tps_scenario_file_load_string("fuzz", (const char *)data, (gssize)size, &scenario, &error);
    if (ok) {
        g_assert(scenario.name != NULL && scenario.hardware_ref != NULL);
        g_assert(scenario.tp >= 1 && scenario.tp <= 64);
        g_assert(scenario.is_op ? scenario.m % scenario.tp == 0
                                : scenario.heads % scenario.tp == 0);
    } else {
        g_assert(error != NULL);
        g_assert(error->message != NULL);
    }
    tps_scenario_clear(&scenario);
    return 0;
}
