/* The generated block of docs/validation.md: see validation-report.h. */
#include "render/validation-report.h"

#include <math.h>
#include <string.h>

#include "core/error.h"
#include "core/output.h"
#include "render/chart.h"

#define BEGIN_MARK "<!-- validate: begin"
#define END_MARK "<!-- validate: end -->"

static void
cell(GString *out, double v)
{
    if (isfinite(v))
        g_string_append_printf(out, " %.1f |", v);
    else
        g_string_append(out, " - |");
}

char *
tps_validation_report_table(const GPtrArray *sets)
{
    g_return_val_if_fail(sets != NULL, NULL);
    GString *out = g_string_new("| dataset | points | median \\|err\\| % | p90 \\|err\\| % | "
                                "max \\|err\\| % | bias % |\n|---|---:|---:|---:|---:|---:|\n");
    for (guint i = 0; i < sets->len; i++) {
        const TpsValidateSet *set = sets->pdata[i];
        TpsValidateStats st;
        tps_validate_set_stats(set, &st);
        g_string_append_printf(out, "| %s%s%s | %u |", set->summary ? "**" : "`", set->name,
                               set->summary ? "**" : "`", st.points);
        cell(out, st.median_abs_pct);
        cell(out, st.p90_abs_pct);
        cell(out, st.max_abs_pct);
        cell(out, st.bias_pct);
        g_string_append_c(out, '\n');
    }
    return g_string_free(out, FALSE);
}

/* The families in the order their first set comes. */
static GPtrArray *
families(const GPtrArray *sets)
{
    GPtrArray *names = g_ptr_array_new();
    for (guint i = 0; i < sets->len; i++) {
        const TpsValidateSet *set = sets->pdata[i];
        gboolean seen = FALSE;
        for (guint j = 0; j < names->len && !seen; j++)
            seen = strcmp(names->pdata[j], set->family) == 0;
        if (!seen && !set->summary)
            g_ptr_array_add(names, set->family);
    }
    return names;
}

/* The length of `name`'s part before '/', 0 without one. */
static gsize
prefix_length(const char *name)
{
    const char *slash = strchr(name, '/');
    return slash ? (gsize)(slash - name) : 0;
}

/* The family's prefix ("vidur-gemm/") says nothing the title does not;
 * without it the legend column holds the names. Two sources of one
 * family (vidur-all-reduce/, vtrain-all-reduce/) keep theirs. */
char *
tps_validation_report_series_label(const GPtrArray *sets, const TpsValidateSet *set)
{
    g_return_val_if_fail(sets != NULL && set != NULL, NULL);
    const gsize n = prefix_length(set->name);
    if (n == 0)
        return g_strdup(set->name);
    for (guint i = 0; i < sets->len; i++) {
        const TpsValidateSet *other = sets->pdata[i];
        if (other->summary || strcmp(other->family, set->family) != 0)
            continue;
        if (prefix_length(other->name) != n || strncmp(other->name, set->name, n) != 0)
            return g_strdup(set->name);
    }
    return g_strdup(set->name + n + 1);
}

/* "model M" or "models M1, M2": the models the family's points were
 * predicted with (a set's own, else `model_name`), in order of their
 * first set. */
static char *
family_models(const GPtrArray *sets, const char *family, const char *model_name)
{
    g_autoptr(GPtrArray) names = g_ptr_array_new();
    for (guint i = 0; i < sets->len; i++) {
        const TpsValidateSet *set = sets->pdata[i];
        if (set->summary || strcmp(set->family, family) != 0)
            continue;
        const char *name = set->model ? set->model : model_name;
        gboolean seen = FALSE;
        for (guint j = 0; j < names->len && !seen; j++)
            seen = strcmp(names->pdata[j], name) == 0;
        if (!seen)
            g_ptr_array_add(names, (gpointer)name);
    }
    GString *out = g_string_new(names->len > 1 ? "models " : "model ");
    for (guint j = 0; j < names->len; j++)
        g_string_append_printf(out, "%s%s", j ? ", " : "", (const char *)names->pdata[j]);
    return g_string_free(out, FALSE);
}

static gboolean
write_plot(const GPtrArray *sets, const char *family, const char *model_name, const char *path,
           GError **error)
{
    const TpsValidateSet *first = NULL;
    guint points = 0;
    for (guint i = 0; i < sets->len; i++) {
        const TpsValidateSet *set = sets->pdata[i];
        if (!set->summary && strcmp(set->family, family) == 0) {
            first = first ? first : set;
            points += set->points->len;
        }
    }
    g_return_val_if_fail(first != NULL, FALSE);
    g_autofree char *title = g_strdup_printf("Residuals: %s", family);
    g_autofree char *models = family_models(sets, family, model_name);
    g_autofree char *subtitle =
        g_strdup_printf("%u points; %s; error = predicted / measured - 1 (above 0: the "
                        "model is slower)",
                        points, models);
    g_autofree char *x_label =
        g_strdup_printf("%s%s", first->x_label, first->x_log2 ? " (log2)" : "");
    g_autoptr(TpsChart) chart = tps_chart_new(title, subtitle, x_label, "error, % of measured");
    tps_chart_set_x_log2(chart, first->x_log2);
    tps_chart_set_scatter(chart, TRUE);
    for (guint i = 0; i < sets->len; i++) {
        const TpsValidateSet *set = sets->pdata[i];
        if (set->summary || strcmp(set->family, family) != 0)
            continue;
        g_autofree char *label = tps_validation_report_series_label(sets, set);
        guint s = tps_chart_add_series(chart, label);
        for (guint k = 0; k < set->points->len; k++) {
            const TpsValidatePoint *p = &g_array_index(set->points, TpsValidatePoint, k);
            tps_chart_add_point(chart, s, p->x, tps_validate_error_pct(p));
        }
    }
    return tps_chart_write(chart, path, error);
}

gboolean
tps_validation_report_update(const GPtrArray *sets, const char *model_name, const char *doc,
                             const char *plot_dir, GError **error)
{
    g_return_val_if_fail(sets != NULL && model_name != NULL && doc != NULL && plot_dir != NULL,
                         FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);

    g_autofree char *text = NULL;
    g_autoptr(GError) local = NULL;
    if (!g_file_get_contents(doc, &text, NULL, &local)) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_IO, "%s", local->message);
        return FALSE;
    }
    const char *begin = strstr(text, BEGIN_MARK);
    const char *end = strstr(text, END_MARK);
    if (begin == NULL || end == NULL || end < begin || strstr(begin + 1, BEGIN_MARK) != NULL ||
        strstr(end + 1, END_MARK) != NULL) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "%s: needs one line starting '%s' and one '%s' after it", doc, BEGIN_MARK,
                    END_MARK);
        return FALSE;
    }
    const char *begin_eol = strchr(begin, '\n');
    if (begin_eol == NULL || begin_eol > end) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "%s: the begin marker must end its line",
                    doc);
        return FALSE;
    }

    if (g_mkdir_with_parents(plot_dir, 0755) != 0) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_IO, "%s: cannot create the folder", plot_dir);
        return FALSE;
    }
    g_autofree char *doc_dir = g_path_get_dirname(doc);
    GString *block = g_string_new(NULL);
    g_autofree char *table = tps_validation_report_table(sets);
    g_string_append_printf(block, "\nModel: `%s`.\n\n%s\n", model_name, table);
    g_autoptr(GPtrArray) names = families(sets);
    for (guint i = 0; i < names->len; i++) {
        const char *family = names->pdata[i];
        g_autofree char *file = g_strdup_printf("validation-%s.png", family);
        g_autofree char *path = g_build_filename(plot_dir, file, NULL);
        if (!write_plot(sets, family, model_name, path, error)) {
            g_string_free(block, TRUE);
            return FALSE;
        }
        /* The link is relative to the page's folder when the plots lie
         * under it (docs/img from docs/), else the path as given. */
        const char *link = path;
        gsize dl = strlen(doc_dir);
        if (strcmp(doc_dir, ".") != 0 && strncmp(path, doc_dir, dl) == 0 && path[dl] == '/')
            link = path + dl + 1;
        g_string_append_printf(block, "![residuals of %s](%s)\n\n", family, link);
    }

    GString *out = g_string_new_len(text, begin_eol + 1 - text);
    g_string_append(out, block->str);
    g_string_append(out, end);
    g_string_free(block, TRUE);
    gboolean ok = tps_write_atomic(doc, out->str, out->len, error);
    g_string_free(out, TRUE);
    return ok;
}
