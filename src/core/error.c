#include "core/error.h"

/* The quark's name is stringified, dashes and all: not for clang-format. */
/* clang-format off */
G_DEFINE_QUARK(tps-error-quark, tps_error)
/* clang-format on */

gboolean
tps_input_error_atv(GError **error, const char *file, guint line, guint column,
                    const char *format, va_list args)
{
    g_autofree char *msg = g_strdup_vprintf(format, args);
    g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "%s:%u:%u: %s", file, line, column, msg);
    return FALSE;
}

gboolean
tps_input_error_at(GError **error, const char *file, guint line, guint column,
                   const char *format, ...)
{
    va_list args;
    va_start(args, format);
    tps_input_error_atv(error, file, line, column, format, args);
    va_end(args);
    return FALSE;
}
