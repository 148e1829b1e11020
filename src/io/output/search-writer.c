/* The search writers (search-writer.h). */
#include "io/output/search-writer.h"

#include <math.h>
#include <string.h>


/* In the order of issue 11's list; the table leaves out the GPU count
 * (the same on every row: it heads the table) and shows fits only with
 * --all. */
const TpsSearchColumn tps_search_columns[] = {
    {"rank", "rank", ""},
    {"gpus", NULL, NULL},
    {"tp", "tp", ""},
    {"pp", "pp", ""},
    {"vpp", "vpp", ""},
    {"dp", "dp", ""},
    {"micro_batch", "mb", ""},
    {"recompute", "recompute", ""},
    {"distributed_optimizer", "dist opt", ""},
    {"strategy", "strategy", ""},
    {"step_time_s", "step", "s"},
    {"tokens_per_s_per_gpu", "tokens/s", "per GPU"},
    {"mfu", "MFU", "% bf16"},
    {"memory_gib", "memory", "GiB"},
    {"fits", "fits", ""},
    {"memory_headroom_gib", "headroom", "GiB"},
    /* Shown after dp where a row has context parallelism. */
    {"cp", "cp", ""},
    /* Shown after mfu. */
    {"model_tflops_per_gpu", "model", "TFLOP/s"},
    /* And where the model is a mixture of experts: the expert layout. */
    {"ep", "ep", ""},
    {"etp", "etp", ""},
};
const guint tps_search_n_columns = G_N_ELEMENTS(tps_search_columns);

static const char *const recompute_names[] = {"none", "selective", "full"};

/* The text of column `c` of `row` (rank `rank`, 0 when not simulated):
 * for the table, or in full; NaN as `nan_text`. */
static void
cell(GString *s, guint c, const TpsSearchRow *row, guint rank, gboolean table, const char *nan_text)
{
    const TpsLayout *l = &row->layout;
    double v = NAN;
    int digits = 6;
    switch (c) {
    case 0:
        if (rank > 0)
            g_string_append_printf(s, "%u", rank);
        else
            g_string_append(s, nan_text);
        return;
    case 1:
        g_string_append_printf(s, "%u", l->tp * l->pp * l->dp * MAX(l->cp, 1u));
        return;
    case 2: g_string_append_printf(s, "%u", l->tp); return;
    case 3: g_string_append_printf(s, "%u", l->pp); return;
    case 4: g_string_append_printf(s, "%u", l->vpp); return;
    case 5: g_string_append_printf(s, "%u", l->dp); return;
    case 6: g_string_append_printf(s, "%" G_GUINT64_FORMAT, l->micro_batch); return;
    case 7: g_string_append(s, recompute_names[l->recompute]); return;
    case 8:
        g_string_append(s, table ? (l->distributed_optimizer ? "yes" : "no")
                                 : (l->distributed_optimizer ? "true" : "false"));
        return;
    case 9: g_string_append(s, l->strategy->name); return;
    case 10: v = row->step_time_s; digits = table ? 3 : 6; break;
    case 11: v = row->tokens_per_s_per_gpu; digits = table ? 0 : 3; break;
    case 12: v = table ? 100.0 * row->mfu : row->mfu; digits = table ? 1 : 6; break;
    case 13: v = row->memory_gib; digits = table ? 1 : 3; break;
    case 14:
        g_string_append(s, table ? (row->fits ? "yes" : "NO") : (row->fits ? "true" : "false"));
        return;
    case 15:
        v = row->memory_headroom_gib;
        digits = table ? 1 : 3;
        break;
    case 16:
        g_string_append_printf(s, "%u", MAX(l->cp, 1u));
        return;
    case 17:
        v = row->model_tflops_per_gpu;
        digits = table ? 1 : 3;
        break;
    case 18:
        g_string_append_printf(s, "%u", MAX(l->ep, 1u));
        return;
    case 19:
        g_string_append_printf(s, "%u", l->etp != 0 ? l->etp : l->tp);
        return;
    default: g_assert_not_reached();
    }
    if (isnan(v))
        g_string_append(s, nan_text);
    else
        g_string_append_printf(s, "%.*f", digits, v);
}

static gboolean
is_text(guint c)
{
    return c == 7 || c == 9;
}

static gboolean
is_flag(guint c)
{
    return c == 8 || c == 14;
}

/* `text` broken into lines of at most `width` characters at spaces. */
static char *
wrap(const char *text, guint width)
{
    GString *s = g_string_new(NULL);
    g_auto(GStrv) words = g_strsplit(text, " ", -1);
    guint line = 0;
    for (guint i = 0; words[i]; i++) {
        const guint len = (guint)strlen(words[i]);
        if (len == 0)
            continue;
        if (line > 0 && line + 1 + len > width) {
            g_string_append_c(s, '\n');
            line = 0;
        } else if (line > 0) {
            g_string_append_c(s, ' ');
            line++;
        }
        g_string_append(s, words[i]);
        line += len;
    }
    return g_string_free(s, FALSE);
}

/* `rows` are the first n of the ranking; `simulated` and `any_unfit`
 * count every row of the search. */
static char *
format_table(const TpsScenario *sc, const TpsSearchRow *rows, guint n, guint gpus, guint top,
             guint64 simulated, gboolean any_unfit, const char *why, const char *note)
{
    const guint shown = MIN(top, n);
    /* Cells first, then the widths. */
    g_autoptr(GPtrArray) cells = g_ptr_array_new_with_free_func(g_free);
    gboolean any_cp = FALSE;
    for (guint i = 0; i < n; i++)
        any_cp |= rows[i].layout.cp > 1;
    const gboolean moe = tps_scenario_is_moe(sc);
    guint cols[G_N_ELEMENTS(tps_search_columns)], ncols = 0;
    for (guint c = 0; c < tps_search_n_columns; c++) {
        if (c >= 16 || !tps_search_columns[c].head || (c == 14 && !any_unfit))
            continue;
        cols[ncols++] = c;
        if (c == 5 && any_cp)
            cols[ncols++] = 16;
        if (c == 5 && moe) {
            cols[ncols++] = 18;
            cols[ncols++] = 19;
        }
        if (c == 12)
            cols[ncols++] = 17;
    }
    for (guint r = 0; r < shown + 2; r++)
        for (guint k = 0; k < ncols; k++) {
            const TpsSearchColumn *col = &tps_search_columns[cols[k]];
            if (r == 0) {
                g_ptr_array_add(cells, g_strdup(col->head));
            } else if (r == 1) {
                g_ptr_array_add(cells, g_strdup(col->unit));
            } else {
                const TpsSearchRow *row = &rows[r - 2];
                GString *s = g_string_new(NULL);
                cell(s, cols[k], row, row->simulated ? r - 1 : 0, TRUE, "-");
                g_ptr_array_add(cells, g_string_free(s, FALSE));
            }
        }
    guint width[G_N_ELEMENTS(tps_search_columns)] = {0};
    for (guint r = 0; r < shown + 2; r++)
        for (guint k = 0; k < ncols; k++)
            width[k] = MAX(width[k], (guint)strlen(cells->pdata[r * ncols + k]));

    GString *s = g_string_new(NULL);
    g_string_append_printf(s, "%s on %u GPUs (%s): %" G_GUINT64_FORMAT " layouts simulated",
                           sc->name, gpus, sc->hardware.name, simulated);
    if (note) {
        g_autofree char *wrapped = wrap(note, 78);
        g_string_append_printf(s, "\n%s", wrapped);
    }
    g_string_append(s, "\n\n");
    for (guint r = 0; r < shown + 2; r++) {
        for (guint k = 0; k < ncols; k++) {
            const char *text = cells->pdata[r * ncols + k];
            /* Names left, numbers right. */
            const gboolean left = is_text(cols[k]) || is_flag(cols[k]);
            if (k)
                g_string_append(s, "  ");
            if (left)
                g_string_append_printf(s, "%-*s", (int)width[k], text);
            else
                g_string_append_printf(s, "%*s", (int)width[k], text);
        }
        while (s->len && s->str[s->len - 1] == ' ')
            g_string_truncate(s, s->len - 1);
        g_string_append_c(s, '\n');
    }
    if (why) {
        g_autofree char *wrapped = wrap(why, 78);
        g_string_append_printf(s, "\n%s\n", wrapped);
    }
    return g_string_free(s, FALSE);
}

char *
tps_search_table(const TpsScenario *sc, guint gpus, const TpsSearchRow *rows, guint n, guint top,
                 const char *why, const char *note)
{
    gboolean any_unfit = FALSE;
    guint64 simulated = 0;
    for (guint i = 0; i < n; i++) {
        any_unfit |= !rows[i].fits;
        simulated += rows[i].simulated;
    }
    return format_table(sc, rows, n, gpus, top, simulated, any_unfit, why, note);
}

char *
tps_search_table_top(const TpsScenario *sc, guint gpus, const TpsSearchTop *best, guint top,
                     const char *why, const char *note)
{
    return format_table(sc, (const TpsSearchRow *)best->rows->data, best->rows->len, gpus, top,
                        best->simulated, best->any_unfit, why, note);
}
