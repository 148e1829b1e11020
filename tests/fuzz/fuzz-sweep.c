/* Fuzz target: arbitrary bytes as a sweep file. Any input must either
 * give a sweep whose points are well formed or fail with a TPS_ERROR_INPUT
 * message; nothing may crash, leak or emit a critical. A base: path
 * resolves from the working directory; an inline base reaches the dotted
 * paths, ranges and keep: {gpus}. The points are built, not simulated. */
#include <glib.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "plan/sweep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autoptr(GError) error = NULL;

    if (size > 1 << 16) /* keep single runs fast */
        return 0;
    g_autoptr(TpsSweep) sweep =
        tps_sweep_load_string("fuzz", (const char *)data, (gssize)size, &error);
    if (sweep == NULL) {
        g_assert(error != NULL && error->domain == TPS_ERROR && error->message != NULL);
        return 0;
    }
    const TpsBatch *batch = tps_sweep_batch(sweep);
    guint columns = g_strv_length(batch->label_columns);
    g_autoptr(GHashTable) keys = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint i = 0; i < batch->points->len; i++) {
        const TpsBatchPoint *p = g_ptr_array_index(batch->points, i);
        g_assert(p->index == i);
        g_assert(g_strv_length(p->label_values) == columns);
        g_assert(p->scenario.name != NULL);
        /* Keys tell the points apart (zip may repeat a combination). */
        g_hash_table_add(keys, p->key);
    }
    return 0;
}
