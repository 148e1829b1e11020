/* Fuzz target: arbitrary bytes as a hardware model file. Any input must
 * either load or fail with a TPS_ERROR_INPUT message that has a position;
 * what loads must write back (tps_model_write, as `tpsim calibrate` does)
 * to text that loads again, to the same values as written. */
#include <glib.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/input/model-file.h"
#include "io/output/model-writer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autoptr(GError) error = NULL;
    TpsHardware hw = {0};

    if (size > 1 << 20) /* keep single runs fast */
        return 0;
    if (!tps_model_file_load_string("fuzz", (const char *)data, (gssize)size, &hw, &error)) {
        g_assert(error != NULL && error->domain == TPS_ERROR && error->code == TPS_ERROR_INPUT);
        g_assert(g_str_has_prefix(error->message, "fuzz:"));
        tps_hardware_clear(&hw);
        return 0;
    }
    g_assert(error == NULL && hw.name != NULL && hw.sms > 0);
    g_autofree char *text = tps_model_write(&hw, "fuzz", NULL, NULL, "fuzz");
    TpsHardware back = {0};
    g_autoptr(GError) again = NULL;
    if (!tps_model_file_load_string("again", text, -1, &back, &again))
        g_error("a written model does not load: %s\n%s", again->message, text);
    /* Written once more, the text is the same: the first writing lost
     * nothing that the second would. */
    g_autofree char *text2 = tps_model_write(&back, "fuzz", NULL, NULL, "fuzz");
    g_assert_cmpstr(text, ==, text2);
    tps_hardware_clear(&hw);
    tps_hardware_clear(&back);
    return 0;
}
