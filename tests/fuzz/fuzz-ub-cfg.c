/* Fuzz target: arbitrary bytes as a Transformer Engine userbuffers
 * configuration (overlap: {ub_cfg: FILE}) applied to a small TP 8 scenario.
 * Any input must either apply or fail with a TPS_ERROR_INPUT message placed
 * at FILE:LINE:COLUMN; nothing may crash, leak or emit a critical. */
#include <glib.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/error.h"
#include "io/input/scenario-file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char base[] = "name: f\nhardware: a100-sxm4-80gb\n"
                               "model: {hidden: 1024, heads: 16, layers: 2, seq_len: 1024}\n"
                               "parallel: {tp: 8, sp: true}\n";
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
    TpsScenario scenario;

    if (size > 1 << 20) /* keep single runs fast */
        return 0;
    if (!tps_scenario_file_load_string("base", base, -1, &scenario, &error))
        g_error("%s", error->message);
    if (tps_scenario_apply_ub_cfg_string(&scenario, "fuzz", (const char *)data, (gssize)size,
                                         notes, &error)) {
        for (guint s = 0; s < TPS_GEMM_OP; s++)
            g_assert(scenario.overlap[s].method < TPS_METHOD_COUNT);
    } else {
        g_assert(error != NULL && error->domain == TPS_ERROR && error->code == TPS_ERROR_INPUT);
        g_assert(g_str_has_prefix(error->message, "fuzz:"));
    }
    tps_scenario_clear(&scenario);
    return 0;
}
