/* The columns of a result: one table of what each TpsResult shows, read by
 * every writer of results (the aligned table, CSV and JSON of
 * io/output/result-writer.c) and by sweep figures (their metrics,
 * render/plot-file.c). A column is one row here; no writer lists columns
 * of its own (docs/extending.md).
 *
 * Order: CSV and JSON show the rows that apply to a scenario in table
 * order. A JSON key with a dot ("layer.forward_ms") is a member of the
 * object named before it, and the rows of one object are consecutive.
 * The aligned table orders its columns by `table_pos` (1, 2, ... for each
 * kind of scenario), as it reads best there (the gain next to the time).
 *
 * The table is static and constant; nothing here allocates but the names
 * list of tps_result_metric_names().
 */
#pragma once

#include <glib.h>

#include "sched/scenario.h"
#include "sched/simulate.h"

/* The scenarios a column is for. */
typedef enum {
    TPS_COLUMN_MODEL = 1 << 0,
    TPS_COLUMN_OP = 1 << 1,
    TPS_COLUMN_BOTH = TPS_COLUMN_MODEL | TPS_COLUMN_OP,
} TpsColumnScope;

typedef enum {
    TPS_COLUMN_TEXT,  /* a name, from `text` */
    TPS_COLUMN_REAL,  /* a double, from `offset` or `get`; NaN is JSON null */
    TPS_COLUMN_COUNT, /* an unsigned integer member (guint or guint64) */
    TPS_COLUMN_FLAG,  /* a gboolean member (or `get` != 0): true/false in CSV and JSON,
                         yes/NO in the table; a `get` of NaN: an empty CSV cell, JSON null */
} TpsColumnType;

/* The machine-readable outputs a column is written to (`outputs`). */
enum {
    TPS_COLUMN_CSV = 1 << 0,
    TPS_COLUMN_JSON = 1 << 1,
};

/* How the aligned table shows a REAL (CSV and JSON show it as is). */
typedef enum {
    TPS_TABLE_AS_IS,
    TPS_TABLE_PERCENT,   /* x 100 */
    TPS_TABLE_THOUSANDS, /* / 1000 */
} TpsTableScale;

typedef struct {
    /* JSON key inside a result ("layer.forward_ms"); its last part is the
     * CSV header unless `csv` names it. Unique among the columns of one
     * kind of scenario. */
    const char *key;
    const char *csv; /* the CSV header when the key's last part is not clear
                        alone ("layer_forward_ms"); NULL: that last part */
    TpsColumnScope scope;
    TpsColumnType type;
    guint outputs; /* TPS_COLUMN_CSV | TPS_COLUMN_JSON, or 0 */
    guint digits;  /* decimals of a REAL in CSV and JSON */

    /* The value: a member of TpsResult (offset and size), else computed. */
    gsize offset, size;
    double (*get)(const TpsScenario *scenario, const TpsResult *result);
    const char *(*text)(const TpsScenario *scenario, const TpsResult *result);
    guint64 (*count)(const TpsScenario *scenario); /* a COUNT of the scenario */
    /* The value is the scenario's (its name, hardware, layout), not the
     * simulation's: a row of a point that was skipped shows it too. */
    gboolean of_scenario;
    /* Only for a scenario with context parallelism (cp > 1, or a sweep that
     * varies it): the outputs of the others read as before it. */
    gboolean cp_only;
    /* Only for a mixture-of-experts scenario (model.moe): the expert
     * layout; dense outputs read as before it. */
    gboolean moe_only;
    /* Only for a model that mixes dense and MoE layers. */
    gboolean mixed_only;
    /* Only for a ranked set of results, the strategies of one `tpsim run`
     * (tps_result_format()): the rows of batch files (sweeps, searches)
     * leave it out (docs/scenario-format.md, "tied"). */
    gboolean ranked_only;

    /* The aligned table: position (0: not shown), header, unit line. */
    guint table_pos;
    const char *head, *unit;
    guint table_digits;
    TpsTableScale table_scale;
    gboolean table_signed; /* a change: "+20.3", and "-" where there is none (NaN) */

    /* Sweep figures: the metric name of plot files (NULL: not one; one name
     * may have a column per kind of scenario) and the y-axis label. */
    const char *metric;
    const char *label;
} TpsResultColumn;

extern const TpsResultColumn tps_result_columns[];
extern const guint tps_result_n_columns;

gboolean tps_result_column_applies(const TpsResultColumn *column, const TpsScenario *scenario);

/* The value of a REAL, COUNT or FLAG column (0 or 1) as a double. */
double tps_result_column_number(const TpsResultColumn *column, const TpsScenario *scenario,
                                const TpsResult *result);
/* The value of a COUNT column. */
guint64 tps_result_column_count(const TpsResultColumn *column, const TpsScenario *scenario,
                                const TpsResult *result);
/* The CSV header of a column: its `csv`, else the last part of its key
 * (not a copy). */
const char *tps_result_column_csv_name(const TpsResultColumn *column);

/* The metric names of sweep figures, each once, in table order:
 * NULL-terminated, newly allocated (g_free; the strings are static). */
const char **tps_result_metric_names(void);
/* The column of metric `name` for the kind of `scenario`; NULL when the
 * metric is not for that kind (or not a metric). */
const TpsResultColumn *tps_result_metric_lookup(const char *name, const TpsScenario *scenario);
