/* Small text helpers shared by the writers of YAML files (measurements,
 * fitted hardware models). */
#pragma once

#include <glib.h>

/* Append `s` as a double-quoted YAML scalar: backslash and quote escaped,
 * control characters dropped (device and file names carry none). */
void tps_text_append_quoted(GString *out, const char *s);
