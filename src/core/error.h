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
