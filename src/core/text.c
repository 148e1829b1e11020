#include "core/text.h"

void
tps_text_append_quoted(GString *out, const char *s)
{
    g_string_append_c(out, '"');
    for (const char *c = s; *c; c++) {
        if (*c == '"' || *c == '\\')
            g_string_append_c(out, '\\');
        if ((unsigned char)*c >= 0x20)
            g_string_append_c(out, *c);
    }
    g_string_append_c(out, '"');
}
