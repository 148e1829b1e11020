/* Fuzz target: arbitrary bytes as a measurements file. Any input must
 * either load or fail with a TPS_ERROR_INPUT message that has a position;
 * what loads must write back (tps_measurements_format) to text that loads
 * to the same number of points. */
#include <glib.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/input/measurements-file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autoptr(GError) error = NULL;
    if (size > 1 << 20) /* keep single runs fast */
        return 0;
    g_autoptr(TpsMeasurements) m = tps_measurements_new();
    gboolean ok =
        tps_measurements_file_load_string("fuzz", (const char *)data, (gssize)size, m, &error);
    if (!ok) {
        g_assert(error != NULL && error->domain == TPS_ERROR && error->code == TPS_ERROR_INPUT);
        g_assert(g_str_has_prefix(error->message, "fuzz:"));
        return 0;
    }
    g_assert(error == NULL);
    g_autofree char *text = tps_measurements_format(m);
    g_autoptr(TpsMeasurements) back = tps_measurements_new();
    g_autoptr(GError) again = NULL;
    if (!tps_measurements_file_load_string("again", text, -1, back, &again))
        g_error("written measurements do not load: %s\n%s", again->message, text);
    g_assert(tps_measurements_count(back) == tps_measurements_count(m));
    return 0;
}
