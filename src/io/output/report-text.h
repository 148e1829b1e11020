/* Figures as text, for the hand-written JSON and table outputs of the trace
 * summary (io/trace/trace-summary.h) and the comparison (render/compare.h). Both
 * write numbers the same way, so the helpers live once, here.
 *
 * JSON numbers are locale-independent; table cells use printf, which is
 * too while tpsim leaves the C locale alone. A number that is not finite
 * (NAN for "unknown") is JSON null or a table cell "-".
 */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

/* `s` as a JSON string literal (quote, backslash and control characters
 * escaped); null for NULL. */
void tps_report_json_string(GString *out, const char *s);

/* `v` rounded to `decimals` decimals, in the shortest form that reads back
 * as that rounded double (tps_text_double(): trailing zeros and a trailing
 * point dropped, "-0" written as "0"); null when not finite. */
void tps_report_json_number(GString *out, double v, int decimals);

/* `v` right-aligned in `width` columns with `decimals` decimals; "-" when
 * not finite. */
void tps_report_cell(GString *out, double v, int width, int decimals);

/* The document `root` as pretty JSON (two-space indent, json-glib's
 * layout, a final newline), newly allocated: json-glib's own generator
 * prints doubles with %.17g (5.2478559999999996); this one writes them
 * with tps_text_double() (5.247856). Every JSON document json-glib builds
 * for output goes through here. */
char *tps_report_json_text(JsonNode *root);
