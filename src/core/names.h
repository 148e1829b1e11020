/* Name lookups shared by every table of names (keys, models, strategies).
 *
 * tps_names_closest() is used for "did you mean" suggestions: it returns the
 * candidate with the smallest edit distance when that distance is small
 * compared with the word, or NULL.
 */
#pragma once

#include <glib.h>

/* Levenshtein distance between two ASCII strings. */
guint tps_names_distance(const char *a, const char *b);

/* The closest of the NULL-terminated candidates, or NULL when none is close
 * (distance more than a third of the longer word, at least 2). The returned
 * string is one of the candidates (not a copy). */
const char *tps_names_closest(const char *word, const char *const *candidates);

/* A newly allocated ", "-separated list of the candidates. */
char *tps_names_join(const char *const *candidates);
