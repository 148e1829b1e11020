/* Fuzz target: the gzip path of the trace importer. The input is
 * compressed (so that the mutator works on the JSON behind it), then
 * loaded whole and cut short: the whole one loads as its plain form does
 * (or fails the same way), the cut one fails with a message and never
 * crashes. */
#include <gio/gio.h>
#include <glib.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/trace/trace-import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static GBytes *
gzip(const uint8_t *data, size_t size)
{
    g_autoptr(GZlibCompressor) comp = g_zlib_compressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP, 1);
    g_autoptr(GInputStream) plain = g_memory_input_stream_new_from_data(data, (gssize)size, NULL);
    g_autoptr(GInputStream) in = g_converter_input_stream_new(plain, G_CONVERTER(comp));
    g_autoptr(GOutputStream) out = g_memory_output_stream_new_resizable();
    g_assert(g_output_stream_splice(out, in, G_OUTPUT_STREAM_SPLICE_CLOSE_TARGET, NULL, NULL) >= 0);
    return g_memory_output_stream_steal_as_bytes(G_MEMORY_OUTPUT_STREAM(out));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 20) /* keep single runs fast */
        return 0;
    g_autoptr(GBytes) gz = gzip(data, size);
    gsize gz_len;
    const guint8 *gz_data = g_bytes_get_data(gz, &gz_len);

    g_autoptr(GError) plain_error = NULL, gz_error = NULL, cut_error = NULL;
    g_autoptr(TpsTrace) plain = tps_trace_load_data(data, size, "fuzz", &plain_error);
    g_autoptr(TpsTrace) whole = tps_trace_load_data(gz_data, gz_len, "fuzz", &gz_error);
    /* Plain input that starts with the gzip magic is itself decompressed:
     * the two then differ, and only the second is this target's. */
    const gboolean magic = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
    if (!magic) {
        g_assert((plain == NULL) == (whole == NULL));
        if (plain != NULL) {
            guint n1, n2;
            tps_trace_kernels(plain, &n1);
            tps_trace_kernels(whole, &n2);
            g_assert_cmpuint(n1, ==, n2);
        } else {
            g_assert_cmpstr(plain_error->message, ==, gz_error->message);
        }
    }
    g_autoptr(TpsTrace) cut = tps_trace_load_data(gz_data, gz_len / 2, "fuzz", &cut_error);
    if (cut == NULL)
        g_assert(cut_error != NULL && cut_error->domain == TPS_ERROR);
    return 0;
}
