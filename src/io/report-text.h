/* Figures as text, for the hand-written JSON and table outputs of the trace
 * summary (io/trace-summary.h) and the comparison (render/compare.h). Both
 * write numbers the same way, so the helpers live once, here.
 *
 * JSON numbers are locale-independent; table cells use printf, which is
 * too while tpsim leaves the C locale alone. A number that is not finite
 * (NAN for "unknown") is JSON null or a table cell "-".
 */
#pragma once

#include <glib.h>

/* `s` as a JSON string literal (quote, backslash and control characters
 * escaped); null for NULL. */
void tps_report_json_string(GString *out, const char *s);

/* `v` with at most `decimals` decimals, trailing zeros and a trailing point
 * dropped, "-0" written as "0"; null when not finite. */
void tps_report_json_number(GString *out, double v, int decimals);

/* `v` right-aligned in `width` columns with `decimals` decimals; "-" when
 * not finite. */
void tps_report_cell(GString *out, double v, int width, int decimals);
