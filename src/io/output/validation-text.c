/* Validation figures as a table and as JSON: see validation-text.h. */
#include "io/output/validation-text.h"

#include <math.h>
#include <string.h>

#include "io/output/report-text.h"

char *
tps_validation_to_table(const GPtrArray *sets, const TpsHardware *hw)
{
    g_return_val_if_fail(sets != NULL, NULL);
    int width = (int)strlen("dataset");
    for (guint i = 0; i < sets->len; i++)
        width = MAX(width, (int)strlen(((const TpsValidateSet *)sets->pdata[i])->name));
    GString *out = g_string_new(NULL);
    g_string_append_printf(out, "%-*s  %7s  %8s  %8s  %8s  %8s\n", width, "dataset", "points",
                           "median", "p90", "max", "bias");
    g_string_append_printf(out, "%-*s  %7s  %8s  %8s  %8s  %8s\n", width, "", "", "|err| %",
                           "|err| %", "|err| %", "%");
    for (guint i = 0; i < sets->len; i++) {
        const TpsValidateSet *set = sets->pdata[i];
        TpsValidateStats st;
        tps_validate_set_stats(set, &st);
        g_string_append_printf(out, "%-*s  %7u  ", width, set->name, st.points);
        tps_report_cell(out, st.median_abs_pct, 8, 1);
        g_string_append(out, "  ");
        tps_report_cell(out, st.p90_abs_pct, 8, 1);
        g_string_append(out, "  ");
        tps_report_cell(out, st.max_abs_pct, 8, 1);
        g_string_append(out, "  ");
        tps_report_cell(out, st.bias_pct, 8, 1);
        g_string_append_c(out, '\n');
    }
    if (hw != NULL) {
        TpsValidateBand bands[TPS_BAND_COUNT];
        tps_validate_bands(sets, bands);
        g_string_append_printf(out, "\n%-*s  %7s  %8s  %8s  %8s  %8s\n", width, "error band",
                               "points", "p10", "p90", "model", "model");
        g_string_append_printf(out, "%-*s  %7s  %8s  %8s  %8s  %8s\n", width, "", "", "err %",
                               "err %", "p10 %", "p90 %");
        for (guint c = 0; c < TPS_BAND_COUNT; c++) {
            g_string_append_printf(out, "%-*s  %7u  ", width, tps_band_class_names[c],
                                   bands[c].points);
            tps_report_cell(out, bands[c].p10_pct, 8, 1);
            g_string_append(out, "  ");
            tps_report_cell(out, bands[c].p90_pct, 8, 1);
            g_string_append(out, "  ");
            tps_report_cell(out, hw->band_p10_pct[c], 8, 1);
            g_string_append(out, "  ");
            tps_report_cell(out, hw->band_p90_pct[c], 8, 1);
            g_string_append_c(out, '\n');
        }
    }
    return g_string_free(out, FALSE);
}

char *
tps_validation_to_json(const GPtrArray *sets, const TpsHardware *hw)
{
    g_return_val_if_fail(sets != NULL, NULL);
    GString *out = g_string_new("{\"datasets\": [\n");
    for (guint i = 0; i < sets->len; i++) {
        const TpsValidateSet *set = sets->pdata[i];
        TpsValidateStats st;
        tps_validate_set_stats(set, &st);
        g_string_append(out, "  {\"name\": ");
        tps_report_json_string(out, set->name);
        g_string_append_printf(out, ", \"points\": %u, \"median_abs_pct\": ", st.points);
        tps_report_json_number(out, st.median_abs_pct, 2);
        g_string_append(out, ", \"p90_abs_pct\": ");
        tps_report_json_number(out, st.p90_abs_pct, 2);
        g_string_append(out, ", \"max_abs_pct\": ");
        tps_report_json_number(out, st.max_abs_pct, 2);
        g_string_append(out, ", \"bias_pct\": ");
        tps_report_json_number(out, st.bias_pct, 2);
        g_string_append(out, i + 1 < sets->len ? "},\n" : "}\n");
    }
    if (hw != NULL) {
        TpsValidateBand bands[TPS_BAND_COUNT];
        tps_validate_bands(sets, bands);
        g_string_append(out, "], \"uncertainty\": [\n");
        for (guint c = 0; c < TPS_BAND_COUNT; c++) {
            g_string_append_printf(out, "  {\"class\": \"%s\", \"points\": %u, \"p10_pct\": ",
                                   tps_band_class_names[c], bands[c].points);
            tps_report_json_number(out, bands[c].p10_pct, 2);
            g_string_append(out, ", \"p90_pct\": ");
            tps_report_json_number(out, bands[c].p90_pct, 2);
            g_string_append(out, ", \"model\": ");
            tps_report_json_string(out, hw->name);
            g_string_append(out, ", \"model_p10_pct\": ");
            tps_report_json_number(out, hw->band_p10_pct[c], 2);
            g_string_append(out, ", \"model_p90_pct\": ");
            tps_report_json_number(out, hw->band_p90_pct[c], 2);
            g_string_append(out, c + 1 < TPS_BAND_COUNT ? "},\n" : "}\n");
        }
    }
    g_string_append(out, "]}\n");
    return g_string_free(out, FALSE);
}

char *
tps_validation_points_csv(const GPtrArray *sets)
{
    g_return_val_if_fail(sets != NULL, NULL);
    GString *out = g_string_new("dataset,x,measured_us,predicted_us,error_pct\n");
    for (guint i = 0; i < sets->len; i++) {
        const TpsValidateSet *set = sets->pdata[i];
        if (set->summary)
            continue;
        for (guint k = 0; k < set->points->len; k++) {
            const TpsValidatePoint *pt = &g_array_index(set->points, TpsValidatePoint, k);
            g_string_append_printf(out, "%s,%.17g,%.17g,%.17g,%.17g\n", set->name, pt->x,
                                   pt->measured, pt->predicted, tps_validate_error_pct(pt));
        }
    }
    return g_string_free(out, FALSE);
}
