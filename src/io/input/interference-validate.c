#include "io/input/interference-validate.h"

#include "io/input/model-file.h"
#include "sched/validate-interference.h"

static gboolean
evaluate(const TpsValidateContext *ctx, const TpsValidateDataset *row, gconstpointer data,
         GPtrArray *sets, GError **error)
{
    TpsHardware a100 = {0}, h100 = {0};
    g_autoptr(GArray) entries = g_array_new(FALSE, FALSE, sizeof(TpsInterferenceEntry));
    gboolean ok = tps_model_file_resolve("a100-sxm4-80gb", NULL, &a100, error) &&
                  tps_model_file_resolve("h100-sxm", NULL, &h100, error) &&
                  tps_validate_interference(&a100, &h100, entries, error);
    for (guint i = 0; ok && i < entries->len; i++) {
        const TpsInterferenceEntry *e = &g_array_index(entries, TpsInterferenceEntry, i);
        g_autofree char *name = g_strdup_printf("%s/%s", row->name, e->name);
        TpsValidateSet *set = tps_validate_set_new(name, row->family, "point", FALSE);
        /* The quantities are not all times: the points keep their values in
         * the entry's unit; only their ratio (the error) is read. */
        for (guint p = 0; p < e->points; p++)
            tps_validate_set_add(set, p + 1, e->measured[p], e->predicted[p]);
        g_ptr_array_add(sets, set);
    }
    tps_hardware_clear(&a100);
    tps_hardware_clear(&h100);
    return ok;
}

static const TpsValidateDataset rows[] = {
    {"interference", "interference", "overlap-interference.yaml", NULL, evaluate, NULL, NULL},
};

const TpsValidateDataset *
tps_interference_validate_datasets(guint *n_rows)
{
    *n_rows = G_N_ELEMENTS(rows);
    return rows;
}
