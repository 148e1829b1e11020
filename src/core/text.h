/* Small text helpers shared by the writers of YAML files (measurements,
 * fitted hardware models) and of JSON (every JSON writer formats its
 * numbers through tps_text_double()). */
#pragma once

#include <glib.h>

/* Append `s` as a double-quoted YAML scalar: backslash and quote escaped,
 * control characters dropped (device and file names carry none). */
void tps_text_append_quoted(GString *out, const char *s);

/* Room for tps_text_double(), sign, 17 digits, point and exponent included. */
#define TPS_TEXT_DOUBLE_LEN G_ASCII_DTOSTR_BUF_SIZE

/* `v` in the shortest decimal form that reads back as the same double
 * (5.247856, not json-glib's %.17g 5.2478559999999996): %.15g, else %.16g,
 * else %.17g, which always round-trips. Locale-independent; negative zero
 * is written "0" (a sign on a zero figure only misleads). `v` must be
 * finite: JSON has no NaN, so the writers put null there themselves.
 * Returns `buf`. */
char *tps_text_double(char buf[TPS_TEXT_DOUBLE_LEN], double v);
