/* Figures as text (report-text.h). */
#include "io/report-text.h"

#include <math.h>
#include <string.h>

void
tps_report_json_string(GString *out, const char *s)
{
    if (s == NULL) {
        g_string_append(out, "null");
        return;
    }
    g_string_append_c(out, '"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            g_string_append_printf(out, "\\%c", *p);
        else if (*p < 0x20)
            g_string_append_printf(out, "\\u%04x", *p);
        else
            g_string_append_c(out, (char)*p);
    }
    g_string_append_c(out, '"');
}

void
tps_report_json_number(GString *out, double v, int decimals)
{
    if (!isfinite(v)) {
        g_string_append(out, "null");
        return;
    }
    char fmt[16], buf[G_ASCII_DTOSTR_BUF_SIZE];
    g_snprintf(fmt, sizeof fmt, "%%.%df", decimals);
    g_ascii_formatd(buf, sizeof buf, fmt, v);
    if (strchr(buf, '.')) {
        char *e = buf + strlen(buf) - 1;
        while (*e == '0')
            *e-- = '\0';
        if (*e == '.')
            *e = '\0';
    }
    if (strcmp(buf, "-0") == 0)
        strcpy(buf, "0");
    g_string_append(out, buf);
}

void
tps_report_cell(GString *out, double v, int width, int decimals)
{
    if (isfinite(v))
        g_string_append_printf(out, "%*.*f", width, decimals, v);
    else
        g_string_append_printf(out, "%*s", width, "-");
}
