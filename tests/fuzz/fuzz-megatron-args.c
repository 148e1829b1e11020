/* Fuzz target: arbitrary bytes as a Megatron-LM launch script
 * (io/input/megatron-args.h), loaded as a scenario on the A100 80 GB model. Any
 * input must either load or fail with a TPS_ERROR_INPUT message placed at
 * FILE:LINE:COLUMN; nothing may crash, leak or emit a critical. */
#include <glib.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/input/megatron-args.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
    TpsScenario scenario;

    if (size > 1 << 20) /* keep single runs fast */
        return 0;
    gboolean ok = tps_megatron_scenario_load("fuzz", (const char *)data, (gssize)size, "fuzz",
                                             "a100-sxm4-80gb", &scenario, notes, &error);
    if (ok) {
        g_assert(scenario.layers >= 1 && scenario.hidden >= 1);
        g_assert(scenario.heads % scenario.tp == 0);
    } else {
        g_assert(error != NULL && error->message != NULL);
        g_assert(error->domain == TPS_ERROR && error->code == TPS_ERROR_INPUT);
        g_assert(g_str_has_prefix(error->message, "fuzz:"));
    }
    tps_scenario_clear(&scenario);
    return 0;
}
