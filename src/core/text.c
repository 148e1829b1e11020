#include "core/text.h"

#include <math.h>
#include <string.h>

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

char *
tps_text_double(char buf[TPS_TEXT_DOUBLE_LEN], double v)
{
    g_return_val_if_fail(isfinite(v), strcpy(buf, "0"));
    if (v == 0) /* both zeros */
        return strcpy(buf, "0");
    /* 15 significant digits always survive decimal -> double -> decimal
     * (DBL_DIG), so most figures stop there; 17 always round-trip. */
    static const char *const formats[] = {"%.15g", "%.16g", "%.17g"};
    for (guint i = 0; i < G_N_ELEMENTS(formats); i++) {
        g_ascii_formatd(buf, TPS_TEXT_DOUBLE_LEN, formats[i], v);
        if (g_ascii_strtod(buf, NULL) == v)
            break;
    }
    return buf;
}
