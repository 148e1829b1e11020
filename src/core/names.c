#include "core/names.h"

#include <string.h>

guint
tps_names_distance(const char *a, const char *b)
{
    gsize la = strlen(a), lb = strlen(b);
    g_autofree guint *row = g_new(guint, lb + 1);

    for (gsize j = 0; j <= lb; j++)
        row[j] = (guint)j;
    for (gsize i = 1; i <= la; i++) {
        guint diag = row[0];
        row[0] = (guint)i;
        for (gsize j = 1; j <= lb; j++) {
            guint up = row[j];
            guint cost = a[i - 1] == b[j - 1] ? 0 : 1;
            guint best = MIN(row[j] + 1, row[j - 1] + 1);
            row[j] = MIN(best, diag + cost);
            diag = up;
        }
    }
    return row[lb];
}

const char *
tps_names_closest(const char *word, const char *const *candidates)
{
    const char *best = NULL;
    guint best_d = G_MAXUINT;

    g_return_val_if_fail(word != NULL, NULL);
    for (const char *const *c = candidates; c && *c; c++) {
        guint d = tps_names_distance(word, *c);
        if (d < best_d) {
            best_d = d;
            best = *c;
        }
    }
    if (best == NULL)
        return NULL;
    gsize longest = MAX(strlen(word), strlen(best));
    guint limit = MAX(2u, (guint)(longest / 3));
    return best_d <= limit ? best : NULL;
}

char *
tps_names_join(const char *const *candidates)
{
    GString *s = g_string_new(NULL);
    for (const char *const *c = candidates; c && *c; c++) {
        if (s->len)
            g_string_append(s, ", ");
        g_string_append(s, *c);
    }
    return g_string_free(s, FALSE);
}
