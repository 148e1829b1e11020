/* Error domain of tpsim.
 *
 * Setup and I/O layers report failures through GError in this domain and add
 * context (`file:line:column: ...`) with g_prefix_error(). The engine's hot
 * path never creates a GError; it reports deadlocks once, at the end.
 */
#pragma once

#include <glib.h>

#define TPS_ERROR (tps_error_quark())

typedef enum {
    TPS_ERROR_INPUT,    /* invalid scenario, model or option value: exit 1 */
    TPS_ERROR_USAGE,    /* bad command line: exit 2 */
    TPS_ERROR_IO,       /* cannot read or write a file: exit 1 */
    TPS_ERROR_DEADLOCK, /* a dependency graph that can never finish */
    TPS_ERROR_NO_DEVICE /* no GPU for the CUDA backend: exit 3 */
} TpsErrorCode;

GQuark tps_error_quark(void);

/* Sets an input error located at `file:line:column: message` (line and
 * column 1-based, as every parser of tpsim reports them) and returns
 * FALSE, so that a parser can `return tps_input_error_at(...)`. */
gboolean tps_input_error_at(GError **error, const char *file, guint line, guint column,
                            const char *format, ...) G_GNUC_PRINTF(5, 6);
gboolean tps_input_error_atv(GError **error, const char *file, guint line, guint column,
                             const char *format, va_list args) G_GNUC_PRINTF(5, 0);
