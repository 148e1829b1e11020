/* Fuzz target: arbitrary bytes as a nccl-tests log (io/input/nccl-tests.h). Any
 * input must either give points or fail with a TPS_ERROR_INPUT message
 * placed at FILE:LINE:COLUMN; nothing may crash, leak or emit a critical. */
#include <glib.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/error.h"
#include "io/input/nccl-tests.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(TpsMeasurements) m = tps_measurements_new();
    guint added = 0;

    if (size > 1 << 20) /* keep single runs fast */
        return 0;
    if (tps_nccl_tests_load_string("fuzz", (const char *)data, (gssize)size, m, &added, &error)) {
        g_assert(added > 0 && added == m->collectives->len);
        for (guint i = 0; i < m->collectives->len; i++) {
            const TpsCollPoint *p = &g_array_index(m->collectives, TpsCollPoint, i);
            g_assert(p->bytes > 0 && p->time_us > 0 && p->ranks >= 2);
        }
    } else {
        g_assert(error != NULL && error->domain == TPS_ERROR && error->code == TPS_ERROR_INPUT);
        g_assert(g_str_has_prefix(error->message, "fuzz:"));
    }
    return 0;
}
