/* Result output (see result-writer.h). The columns of a result, in all
 * three formats, come from the table of io/output/result-columns.h; what is
 * written here by hand is the frame around them: the JSON document's
 * header, the heading and the step notes of the aligned table, and the
 * per-GEMM breakdown. */
#include "io/output/result-writer.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#include "core/error.h"
#include "cost/collective.h"
#include "io/output/report-text.h"
#include "io/output/result-columns.h"

#include "version.h"

const char *const tps_format_names[] = {"table", "csv", "json", NULL};

/* Round for output so that the JSON stays readable and stable. */
static double
round_to(double v, double digits)
{
    double scale = pow(10.0, digits);
    return round(v * scale) / scale;
}

static const char *
coll_short(TpsCollKind kind)
{
    static const char *const names[] = {"AG", "RS", "AR", "-"};
    return names[MIN((guint)kind, (guint)TPS_COLL_COUNT)];
}

/* The figures of one GEMM of the breakdown, in every format: JSON member,
 * CSV header (CSV is flat, so its names say whose figure it is), table
 * header and unit. */
typedef struct {
    const char *json, *csv, *head, *unit;
    gsize offset;
} BreakdownFigure;

static const BreakdownFigure breakdown_figures[] = {
    {"time_ms", "gemm_span_ms", "time", "ms", G_STRUCT_OFFSET(TpsGemmBreakdown, time_ms)},
    {"gemm_ms", "gemm_busy_ms", "GEMM", "ms", G_STRUCT_OFFSET(TpsGemmBreakdown, gemm_ms)},
    {"comm_ms", "gemm_comm_busy_ms", "comm", "ms", G_STRUCT_OFFSET(TpsGemmBreakdown, comm_ms)},
    {"exposed_ms", "gemm_comm_exposed_ms", "exposed", "ms",
     G_STRUCT_OFFSET(TpsGemmBreakdown, exposed_ms)},
    {"overlap_efficiency", "gemm_overlap_efficiency", "overlap eff.", "",
     G_STRUCT_OFFSET(TpsGemmBreakdown, efficiency)},
};

static double
breakdown_figure(const TpsGemmBreakdown *g, guint i)
{
    return G_STRUCT_MEMBER(double, g, breakdown_figures[i].offset);
}

/* What the efficiency means, under a breakdown table that shows one of the
 * values that read oddly without it (--help says it too). */
static const char efficiency_note[] =
    "  overlap eff. = 1 - (time - GEMM alone) / (collective alone): the share of the blocking\n"
    "  collective's time hidden behind the GEMM. About 0: nothing hidden (a blocking\n"
    "  collective); below 0: longer than GEMM and collective back to back (waits, slower\n"
    "  chunks); above 1: GEMM and collective together took less than the unsplit GEMM alone\n"
    "  with its launch (the launch hidden behind earlier work): read it as fully hidden.\n";

/* Under the CP rows of a breakdown table. */
static const char cp_note[] =
    "  attn_fwd, attn_bwd: the attention core with its context-parallel exchange (GEMM: the\n"
    "  attention kernels; comm: the CP stream); overlap eff. = 1 - exposed / comm.\n";

/* The op table's efficiency is Flux's, against sp-blocking's time. */
static const char op_efficiency_note[] =
    "\noverlap eff. = 1 - (time - GEMM alone) / (sp-blocking's time - GEMM alone): the share\n"
    "of the blocking schedule's communication time hidden. 0: as slow as blocking (sp-blocking\n"
    "itself); below 0: slower than blocking; 1: as fast as the GEMM alone.\n";

static void
json_double_or_null(JsonBuilder *jb, const char *member, double v, double digits)
{
    json_builder_set_member_name(jb, member);
    if (isnan(v))
        json_builder_add_null_value(jb);
    else
        json_builder_add_double_value(jb, round_to(v, digits));
}

/* The breakdown's rows: each GEMM slot, then with context parallelism the
 * attention core forward and backward (its CP exchange as the collective:
 * "CP" in the table and CSV, "ContextParallel" in JSON). */
#define BREAKDOWN_ROWS (TPS_GEMM_SLOT_COUNT + 2)

static const TpsGemmBreakdown *
breakdown_row(const TpsResult *r, guint row, const char **name)
{
    static const char *const cp_rows[2] = {"attn_fwd", "attn_bwd"};
    const gboolean cp = row >= TPS_GEMM_SLOT_COUNT;
    const TpsGemmBreakdown *g = cp ? &r->cp_attention[row - TPS_GEMM_SLOT_COUNT] : &r->gemms[row];
    *name = cp ? cp_rows[row - TPS_GEMM_SLOT_COUNT] : tps_gemm_slot_names[row];
    return g->present ? g : NULL;
}

static void
json_breakdown(JsonBuilder *jb, const TpsResult *r)
{
    json_builder_set_member_name(jb, "gemms");
    json_builder_begin_array(jb);
    for (guint row = 0; row < BREAKDOWN_ROWS; row++) {
        const char *row_name;
        const TpsGemmBreakdown *g = breakdown_row(r, row, &row_name);
        if (g == NULL)
            continue;
        json_builder_begin_object(jb);
        json_builder_set_member_name(jb, "gemm");
        json_builder_add_string_value(jb, row_name);
        json_builder_set_member_name(jb, "collective");
        if (row >= TPS_GEMM_SLOT_COUNT)
            json_builder_add_string_value(jb, "ContextParallel");
        else if (g->collective == TPS_COLL_COUNT)
            json_builder_add_null_value(jb);
        else
            json_builder_add_string_value(jb, tps_coll_kind_names[g->collective]);
        json_builder_set_member_name(jb, "method");
        json_builder_add_string_value(jb, g->schedule);
        for (guint f = 0; f < G_N_ELEMENTS(breakdown_figures); f++)
            json_double_or_null(jb, breakdown_figures[f].json, breakdown_figure(g, f), 6);
        if (g->note[0]) {
            json_builder_set_member_name(jb, "note");
            json_builder_add_string_value(jb, g->note);
        }
        json_builder_end_object(jb);
    }
    json_builder_end_array(jb);
}

/* A mixture of experts' routed part of the measured layer (with
 * --breakdown). */
static void
json_moe_breakdown(JsonBuilder *jb, const TpsResult *r)
{
    const TpsMoeBreakdown *m = &r->moe;
    if (!m->present)
        return;
    json_builder_set_member_name(jb, "moe");
    json_builder_begin_object(jb);
    json_double_or_null(jb, "dispatch_ms", m->dispatch_ms, 6);
    json_double_or_null(jb, "dispatch_exposed_ms", m->dispatch_exposed_ms, 6);
    json_double_or_null(jb, "experts_ms", m->experts_ms, 6);
    json_double_or_null(jb, "combine_ms", m->combine_ms, 6);
    json_double_or_null(jb, "combine_exposed_ms", m->combine_exposed_ms, 6);
    if (m->pair_ms > 0.0)
        json_double_or_null(jb, "overlapped_pair_ms", m->pair_ms, 6);
    json_builder_end_object(jb);
}

/* The members of one result: its columns, a dotted key ("layer.forward_ms")
 * inside the object it names, opened at its first row and closed after its
 * last (the rows of one object are consecutive in the table). */
/* Whether a row shows `col`: a skipped row only the scenario's values, its
 * strategy, when it has one, and why it was skipped. */
static gboolean
row_shows(const TpsResultColumn *col, const TpsResult *r, gboolean skipped)
{
    if (!skipped || col->of_scenario)
        return TRUE;
    if (col->text == NULL || col->type != TPS_COLUMN_TEXT)
        return FALSE;
    return (r->strategy != NULL && strcmp(col->key, "strategy") == 0) ||
           strcmp(col->key, "skipped") == 0;
}

/* Whether a writer shows `col` for `sc`: a column of its output that
 * applies, and a ranked_only one only for a ranked set (`ranked`). */
static gboolean
writes(const TpsResultColumn *col, guint output, const TpsScenario *sc, gboolean ranked)
{
    return (col->outputs & output) && tps_result_column_applies(col, sc) &&
           (ranked || !col->ranked_only);
}

static void
json_members(JsonBuilder *jb, const TpsScenario *sc, const TpsResult *r, const char *skipped_reason,
             gboolean ranked)
{
    const gboolean skipped = skipped_reason != NULL;
    const char *group = NULL; /* the key of the object open, up to its dot */
    gsize group_len = 0;
    for (guint c = 0; c < tps_result_n_columns; c++) {
        const TpsResultColumn *col = &tps_result_columns[c];
        if (!writes(col, TPS_COLUMN_JSON, sc, ranked) || !row_shows(col, r, skipped))
            continue;
        const char *dot = strchr(col->key, '.');
        gsize len = dot != NULL ? (gsize)(dot - col->key) : 0;
        if (group != NULL && (len != group_len || strncmp(col->key, group, len) != 0)) {
            json_builder_end_object(jb);
            group = NULL;
        }
        if (dot != NULL && group == NULL) {
            g_autofree char *name = g_strndup(col->key, len);
            json_builder_set_member_name(jb, name);
            json_builder_begin_object(jb);
            group = col->key;
            group_len = len;
        }
        const char *member = dot != NULL ? strrchr(col->key, '.') + 1 : col->key;
        switch (col->type) {
        case TPS_COLUMN_TEXT:
            json_builder_set_member_name(jb, member);
            json_builder_add_string_value(jb, col->text(sc, r));
            break;
        case TPS_COLUMN_REAL:
            json_double_or_null(jb, member, tps_result_column_number(col, sc, r), col->digits);
            break;
        case TPS_COLUMN_COUNT:
            json_builder_set_member_name(jb, member);
            json_builder_add_int_value(jb, (gint64)tps_result_column_count(col, sc, r));
            break;
        case TPS_COLUMN_FLAG: {
            const double v = tps_result_column_number(col, sc, r);
            json_builder_set_member_name(jb, member);
            if (isnan(v))
                json_builder_add_null_value(jb);
            else
                json_builder_add_boolean_value(jb, v != 0);
            break;
        }
        }
    }
    if (group != NULL)
        json_builder_end_object(jb);
    if (skipped) {
        /* Not simulated: why, and no figures. */
        json_builder_set_member_name(jb, "skipped");
        json_builder_add_string_value(jb, skipped_reason);
    }
}

void
tps_result_json_members(JsonBuilder *jb, const TpsScenario *sc, const TpsResult *r,
                        const char *skipped_reason)
{
    json_members(jb, sc, r, skipped_reason, FALSE);
}

static char *
format_json(const TpsScenario *sc, const TpsResult *results, guint n, gboolean breakdown)
{
    g_autoptr(JsonBuilder) jb = json_builder_new();
    json_builder_begin_object(jb);
    json_builder_set_member_name(jb, "tool");
    json_builder_add_string_value(jb, "tpsim");
    json_builder_set_member_name(jb, "version");
    json_builder_add_string_value(jb, TPS_VERSION);
    json_builder_set_member_name(jb, "scenario");
    json_builder_add_string_value(jb, sc->name);
    json_builder_set_member_name(jb, "hardware");
    json_builder_add_string_value(jb, sc->hardware.name);
    json_builder_set_member_name(jb, "hardware_file");
    json_builder_add_string_value(jb, sc->hardware_file ? sc->hardware_file : "");
    json_builder_set_member_name(jb, "hardware_sha256");
    json_builder_add_string_value(jb, sc->hardware_sha256 ? sc->hardware_sha256 : "");
    json_builder_set_member_name(jb, "seed");
    json_builder_add_int_value(jb, (gint64)sc->seed);
    json_builder_set_member_name(jb, "results");
    json_builder_begin_array(jb);
    for (guint i = 0; i < n; i++) {
        const TpsResult *r = &results[i];
        json_builder_begin_object(jb);
        const gboolean skipped = r->skipped[0] != '\0';
        json_members(jb, sc, r, skipped ? r->skipped : NULL, TRUE);
        if (!skipped && breakdown) {
            json_breakdown(jb, r);
            json_moe_breakdown(jb, r);
        }
        json_builder_end_object(jb);
    }
    json_builder_end_array(jb);
    json_builder_end_object(jb);

    g_autoptr(JsonNode) root = json_builder_get_root(jb);
    return tps_report_json_text(root);
}

/* `text` as one CSV field: quoted (RFC 4180) when it holds a comma, a
 * quote or a line break, as a reason may. */
static void
csv_text(GString *s, const char *text)
{
    if (strpbrk(text, ",\"\r\n") == NULL) {
        g_string_append(s, text);
        return;
    }
    g_string_append_c(s, '"');
    for (const char *p = text; *p; p++) {
        if (*p == '"')
            g_string_append_c(s, '"');
        g_string_append_c(s, *p);
    }
    g_string_append_c(s, '"');
}

static void
csv_header(const TpsScenario *sc, GString *s, gboolean ranked)
{
    const char *sep = "";
    for (guint c = 0; c < tps_result_n_columns; c++) {
        const TpsResultColumn *col = &tps_result_columns[c];
        if (!writes(col, TPS_COLUMN_CSV, sc, ranked))
            continue;
        g_string_append_printf(s, "%s%s", sep, tps_result_column_csv_name(col));
        sep = ",";
    }
}

void
tps_result_csv_header(const TpsScenario *sc, GString *s)
{
    csv_header(sc, s, FALSE);
}

static void
csv_row(const TpsScenario *sc, const TpsResult *r, const char *skipped_reason, GString *s,
        gboolean ranked)
{
    const gboolean skipped = skipped_reason != NULL;
    const char *sep = "";
    for (guint c = 0; c < tps_result_n_columns; c++) {
        const TpsResultColumn *col = &tps_result_columns[c];
        if (!writes(col, TPS_COLUMN_CSV, sc, ranked))
            continue;
        g_string_append(s, sep);
        sep = ",";
        if (!row_shows(col, r, skipped))
            continue;
        if (strcmp(col->key, "skipped") == 0) {
            csv_text(s, skipped ? skipped_reason : "");
            continue;
        }
        switch (col->type) {
        case TPS_COLUMN_TEXT:
            csv_text(s, col->text(sc, r));
            break;
        case TPS_COLUMN_REAL: {
            /* Locale-independent, with the JSON's decimals; an empty cell
             * where JSON has null (no reference strategy). */
            char format[16], buf[G_ASCII_DTOSTR_BUF_SIZE];
            const double v = tps_result_column_number(col, sc, r);
            g_snprintf(format, sizeof format, "%%.%uf", col->digits);
            if (!isnan(v))
                g_string_append(s, g_ascii_formatd(buf, sizeof buf, format, v));
            break;
        }
        case TPS_COLUMN_COUNT:
            g_string_append_printf(s, "%" G_GUINT64_FORMAT, tps_result_column_count(col, sc, r));
            break;
        case TPS_COLUMN_FLAG: {
            const double v = tps_result_column_number(col, sc, r);
            if (!isnan(v)) /* NaN: an empty cell */
                g_string_append(s, v != 0 ? "true" : "false");
            break;
        }
        }
    }
}

void
tps_result_csv_row(const TpsScenario *sc, const TpsResult *r, const char *skipped_reason,
                   GString *s)
{
    csv_row(sc, r, skipped_reason, s, FALSE);
}

/* With --breakdown and model.moe, three more lines after a result's GEMM
 * lines: its MoE layer's dispatch, expert GEMMs and combine (JSON `moe`),
 * collective "ExpertParallel", method the dispatcher; the dispatch and
 * combine as communication (busy, exposed, the share hidden), the experts
 * as GEMM busy time; the other cells empty. */
static void
csv_moe_rows(const TpsScenario *sc, const TpsResult *r, GString *s)
{
    const TpsMoeBreakdown *m = &r->moe;
    if (!m->present)
        return;
    G_STATIC_ASSERT(G_N_ELEMENTS(breakdown_figures) == 5);
    static const char *const names[3] = {"moe_dispatch", "moe_experts", "moe_combine"};
    const double busy[3] = {m->dispatch_ms, NAN, m->combine_ms};
    const double exposed[3] = {m->dispatch_exposed_ms, NAN, m->combine_exposed_ms};
    for (guint i = 0; i < 3; i++) {
        csv_row(sc, r, NULL, s, TRUE);
        g_string_append_printf(s, ",%s,ExpertParallel,%s", names[i],
                               tps_moe_dispatcher_names[sc->moe.dispatcher]);
        /* gemm_span_ms, gemm_busy_ms, gemm_comm_busy_ms, gemm_comm_exposed_ms,
         * gemm_overlap_efficiency. */
        const double v[5] = {NAN, i == 1 ? m->experts_ms : NAN, busy[i], exposed[i],
                             busy[i] > 0.0 ? 1.0 - exposed[i] / busy[i] : NAN};
        for (guint f = 0; f < 5; f++) {
            char buf[G_ASCII_DTOSTR_BUF_SIZE];
            g_string_append_c(s, ',');
            if (!isnan(v[f]))
                g_string_append(s, g_ascii_formatd(buf, sizeof buf, "%.6f", v[f]));
        }
        g_string_append_c(s, '\n');
    }
}

/* One line per result; with `breakdown`, one line per GEMM of each result
 * instead, its result's columns repeated in front of the GEMM's (one flat
 * table, as CSV has no nesting). */
static char *
format_csv(const TpsScenario *sc, const TpsResult *results, guint n, gboolean breakdown)
{
    GString *s = g_string_new(NULL);
    csv_header(sc, s, TRUE);
    if (breakdown) {
        g_string_append(s, ",gemm,gemm_collective,gemm_method");
        for (guint f = 0; f < G_N_ELEMENTS(breakdown_figures); f++)
            g_string_append_printf(s, ",%s", breakdown_figures[f].csv);
    }
    g_string_append_c(s, '\n');
    for (guint i = 0; i < n; i++) {
        const TpsResult *r = &results[i];
        if (!breakdown || r->skipped[0]) {
            csv_row(sc, r, r->skipped[0] ? r->skipped : NULL, s, TRUE);
            if (breakdown) /* a skipped strategy has no GEMMs: empty cells */
                for (guint f = 0; f < 3 + G_N_ELEMENTS(breakdown_figures); f++)
                    g_string_append_c(s, ',');
            g_string_append_c(s, '\n');
            continue;
        }
        for (guint row = 0; row < BREAKDOWN_ROWS; row++) {
            const char *row_name;
            const TpsGemmBreakdown *g = breakdown_row(r, row, &row_name);
            if (g == NULL)
                continue;
            csv_row(sc, r, r->skipped[0] ? r->skipped : NULL, s, TRUE);
            g_string_append_printf(s, ",%s,%s,%s", row_name,
                                   row >= TPS_GEMM_SLOT_COUNT ? "ContextParallel"
                                   : g->collective == TPS_COLL_COUNT
                                       ? ""
                                       : tps_coll_kind_names[g->collective],
                                   g->schedule);
            for (guint f = 0; f < G_N_ELEMENTS(breakdown_figures); f++) {
                char buf[G_ASCII_DTOSTR_BUF_SIZE];
                const double v = breakdown_figure(g, f);
                g_string_append_c(s, ',');
                if (!isnan(v))
                    g_string_append(s, g_ascii_formatd(buf, sizeof buf, "%.6f", v));
            }
            g_string_append_c(s, '\n');
        }
        csv_moe_rows(sc, r, s);
    }
    return g_string_free(s, FALSE);
}

/* One cell of the aligned table. */
static char *
table_cell(const TpsResultColumn *col, const TpsScenario *sc, const TpsResult *r)
{
    switch (col->type) {
    case TPS_COLUMN_TEXT:
        return g_strdup(col->text(sc, r));
    case TPS_COLUMN_COUNT:
        return g_strdup_printf("%" G_GUINT64_FORMAT, tps_result_column_count(col, sc, r));
    case TPS_COLUMN_FLAG:
        return g_strdup(tps_result_column_number(col, sc, r) != 0 ? "yes" : "NO");
    case TPS_COLUMN_REAL:
        break;
    }
    double v = tps_result_column_number(col, sc, r);
    switch (col->table_scale) {
    case TPS_TABLE_PERCENT:
        v = 100.0 * v;
        break;
    case TPS_TABLE_THOUSANDS:
        v = v / 1e3;
        break;
    case TPS_TABLE_AS_IS:
        break;
    }
    if (isnan(v)) /* no reference strategy in the run */
        return g_strdup("-");
    if (col->table_signed)
        return g_strdup_printf("%+.*f", (int)col->table_digits, v);
    return g_strdup_printf("%.*f", (int)col->table_digits, v);
}

/* The columns of the aligned table for `sc`, in table_pos order. */
static GPtrArray *
table_columns(const TpsScenario *sc)
{
    GPtrArray *cols = g_ptr_array_new();
    for (guint pos = 1;; pos++) {
        const TpsResultColumn *found = NULL;
        for (guint c = 0; c < tps_result_n_columns && found == NULL; c++)
            if (tps_result_columns[c].table_pos == pos &&
                tps_result_column_applies(&tps_result_columns[c], sc))
                found = &tps_result_columns[c];
        if (found == NULL)
            return cols;
        g_ptr_array_add(cols, (gpointer)found);
    }
}

/* Rows of cells (`cols` per row, first row the header, second the units)
 * appended to `s` as an aligned table: first column left, others right. */
static void
append_aligned(GString *s, GPtrArray *cells, guint cols)
{
    guint rows = cells->len / cols;
    g_autofree gsize *width = g_new0(gsize, cols);
    for (guint r = 0; r < rows; r++)
        for (guint c = 0; c < cols; c++)
            width[c] = MAX(width[c], strlen(g_ptr_array_index(cells, r * cols + c)));
    for (guint r = 0; r < rows; r++) {
        for (guint c = 0; c < cols; c++)
            g_string_append_printf(s, c == 0 ? "%-*s" : "  %*s", (int)width[c],
                                   (const char *)g_ptr_array_index(cells, r * cols + c));
        while (s->len > 0 && s->str[s->len - 1] == ' ')
            g_string_truncate(s, s->len - 1);
        g_string_append_c(s, '\n');
    }
}

static void
table_breakdown(GString *s, const TpsScenario *sc, const TpsResult *r)
{
    static const char *const head[] = {"GEMM", "collective", "method"};
    const guint cols = G_N_ELEMENTS(head) + G_N_ELEMENTS(breakdown_figures);
    g_autoptr(GPtrArray) cells = g_ptr_array_new_with_free_func(g_free);
    for (guint c = 0; c < G_N_ELEMENTS(head); c++)
        g_ptr_array_add(cells, g_strdup(head[c]));
    for (guint f = 0; f < G_N_ELEMENTS(breakdown_figures); f++)
        g_ptr_array_add(cells, g_strdup(breakdown_figures[f].head));
    for (guint c = 0; c < G_N_ELEMENTS(head); c++)
        g_ptr_array_add(cells, g_strdup(""));
    for (guint f = 0; f < G_N_ELEMENTS(breakdown_figures); f++)
        g_ptr_array_add(cells, g_strdup(breakdown_figures[f].unit));
    gboolean odd = FALSE; /* an efficiency that needs the note */
    gboolean cp = FALSE;  /* CP rows, whose efficiency is the hidden share */
    for (guint row = 0; row < BREAKDOWN_ROWS; row++) {
        const char *row_name;
        const TpsGemmBreakdown *g = breakdown_row(r, row, &row_name);
        if (g == NULL)
            continue;
        const gboolean cp_row = row >= TPS_GEMM_SLOT_COUNT;
        g_ptr_array_add(cells, g_strdup(row_name));
        g_ptr_array_add(cells, g_strdup(cp_row ? "CP" : coll_short(g->collective)));
        g_ptr_array_add(cells, g_strdup(g->schedule));
        for (guint f = 0; f + 1 < G_N_ELEMENTS(breakdown_figures); f++)
            g_ptr_array_add(cells, g_strdup_printf("%.3f", breakdown_figure(g, f)));
        g_ptr_array_add(cells, isnan(g->efficiency) ? g_strdup("-")
                                                    : g_strdup_printf("%.2f", g->efficiency));
        /* Near 0 (a blocking collective, which still shows a few
         * hundredths: the launch in the reference), below 0 and above
         * 1.00 as shown are the values that read oddly. */
        odd |= !cp_row && !isnan(g->efficiency) && (g->efficiency < 0.05 || g->efficiency >= 1.005);
        cp |= cp_row;
    }
    g_string_append_printf(s, "\n%s: per GEMM of %s\n", r->strategy->name,
                           sc->is_op ? "the op" : "one layer (forward and backward)");
    append_aligned(s, cells, cols);
    for (guint slot = 0; slot < TPS_GEMM_SLOT_COUNT; slot++)
        if (r->gemms[slot].present && r->gemms[slot].note[0])
            g_string_append_printf(s, "  %s: %s\n", tps_gemm_slot_names[slot], r->gemms[slot].note);
    if (odd)
        g_string_append(s, efficiency_note);
    if (cp)
        g_string_append(s, cp_note);
    if (r->moe.present)
        g_string_append_printf(
            s,
            "%s: the MoE layer's routed part (forward and backward): dispatch %.3f ms (%.3f "
            "exposed), expert GEMMs %.3f ms, combine %.3f ms (%.3f exposed)\n",
            r->strategy->name, r->moe.dispatch_ms, r->moe.dispatch_exposed_ms, r->moe.experts_ms,
            r->moe.combine_ms, r->moe.combine_exposed_ms);
    if (r->moe.pair_ms > 0.0)
        g_string_append_printf(s,
                               "%s: with overlap_ep_comm these are of one layer's forward of a "
                               "micro-batch beside its backward of the one before, run as one "
                               "(%.3f ms, the a2a on its own stream)\n",
                               r->strategy->name, r->moe.pair_ms);
}

/* Which peak MFU and HFU are of: the dense BF16 one, also under fp8,
 * whose GEMMs run at the FP8 peak (named beside it). */
static void
append_mfu_note(GString *s, const TpsScenario *sc)
{
    g_string_append_printf(s,
                           "MFU, HFU: model FLOPs (HFU: with recompute) per second per GPU over "
                           "%.0f TFLOP/s, the dense BF16 peak of %s (as Megatron-LM and the "
                           "Llama 3 paper report MFU)",
                           tps_mfu_peak_tflops(&sc->hardware), sc->hardware.name);
    if (sc->dtype == TPS_DTYPE_FP8)
        g_string_append_printf(s, ", also for this fp8 run, whose GEMMs peak at %.0f",
                               sc->hardware.peak_tflops[TPS_DTYPE_FP8]);
    g_string_append_c(s, '\n');
}

/* What the step and memory figures rest on (the same for every strategy
 * but the times): the layout, the pipeline, and what fills the busiest GPU. */
static void
append_step_notes(GString *s, const TpsScenario *sc, const TpsResult *r)
{
    const char *parts[4] = {"weights and gradients", "optimizer states", "activations",
                            "overheads"};
    double gib[4] = {r->memory_weights_gib, r->memory_optimizer_gib, r->memory_activations_gib,
                     r->memory_overheads_gib};
    guint top = 0;
    for (guint i = 1; i < 4; i++)
        if (gib[i] > gib[top])
            top = i;
    TpsDim order[TPS_DIM_COUNT];
    tps_scenario_order(sc, order);
    g_autofree char *order_text = tps_grid_order_text(order);
    const gboolean other_order = strcmp(order_text, TPS_GRID_DEFAULT_ORDER) != 0;
    /* Context parallelism only where there is some (cp 1 reads as before). */
    g_autofree char *cp_text =
        sc->cp > 1 ? g_strdup_printf(" cp=%u (%s)", sc->cp, tps_cp_comm_names[sc->cp_comm])
                   : g_strdup("");
    /* The expert layout only for a mixture of experts. */
    g_autofree char *ep_text =
        tps_scenario_is_moe(sc)
            ? g_strdup_printf(" ep=%u etp=%u (%u experts, top %u, %s)", MAX(sc->ep, 1u),
                              tps_scenario_etp(sc), sc->moe.experts, sc->moe.top_k,
                              tps_moe_dispatcher_names[sc->moe.dispatcher])
            : g_strdup("");
    /* A model that mixes dense and MoE layers: how many are MoE, and a
     * dense layer's times beside the MoE layer's of the table. */
    if (tps_scenario_mixes_layers(sc)) {
        char *mixed = g_strdup_printf("%s [%" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
                                      " layers MoE; a dense layer %.3f ms fwd, %.3f ms bwd]",
                                      ep_text, tps_scenario_moe_layers(sc), sc->layers,
                                      r->dense_forward_ms, r->dense_backward_ms);
        g_free(ep_text);
        ep_text = mixed;
    }
    g_string_append_printf(
        s,
        "\nlayout: tp=%u%s%s pp=%u vpp=%u dp=%u (%u GPUs%s%s), %" G_GUINT64_FORMAT
        " micro-batches of %" G_GUINT64_FORMAT " per replica; %s's pipeline "
        "bubble %.1f%% of stage 0, DP reduction exposed %.3f ms\n",
        sc->tp, cp_text, ep_text, sc->pp, sc->vpp, sc->dp,
        sc->tp * sc->pp * sc->dp * MAX(sc->cp, 1u), other_order ? ", rank order " : "",
        other_order ? order_text : "", r->micro_batches, sc->micro_batch, r->strategy->name,
        100.0 * r->bubble_fraction, r->dp_exposed_ms);
    g_string_append_printf(s,
                           "memory: %.1f GiB per GPU on stage %u (weights and gradients %.1f, "
                           "optimizer states %.1f, activations %.1f, overheads %.1f): %s "
                           "dominate; %s %.1f GiB of the %.1f CUDA can allocate\n",
                           r->memory_gib, r->memory_stage, gib[0], gib[1], gib[2], gib[3],
                           parts[top], r->fits_memory ? "headroom" : "does NOT fit, over by",
                           fabs(r->memory_headroom_gib), sc->hardware.memory_gib);
    append_mfu_note(s, sc);
    /* Where NCCL's channels stop following the NVLink bandwidth, a what-if
     * on it moves NCCL's rings and trees no further: say which cap holds. */
    TpsChannelCap cap;
    guint channels = tps_coll_channels(&sc->hardware, &cap);
    if (cap == TPS_CHANNELS_MAX || cap == TPS_CHANNELS_SMS)
        g_string_append_printf(s, "nccl: %u channels at %.0f GB/s of NVLink: %s\n", channels,
                               sc->hardware.nvlink_gbps, tps_coll_channel_cap_text(cap));
    if (sc->cp > 1)
        g_string_append_printf(s,
                               "context parallelism: %s over %u ranks, its exchange %.3f ms per "
                               "layer of which %.3f ms exposed (%s; not in the TP columns)\n",
                               tps_cp_comm_names[sc->cp_comm], sc->cp, r->cp_comm_ms,
                               r->cp_exposed_ms, r->strategy->name);
}

/* The strategies tied with the fastest (results[first]): the band of
 * their difference, from the classes of work in which they differ,
 * holds 0, so the ranking does not say which is faster. */
static void
append_ties(GString *s, const TpsScenario *sc, const TpsResult *results, guint n, guint first)
{
    guint tied = 0;
    for (guint i = first + 1; i < n; i++) {
        if (results[i].skipped[0] || !tps_result_tied(sc, &results[i], &results[first]))
            continue;
        if (tied++ == 0)
            g_string_append_printf(s, "tied with %s (the band of their difference holds 0): ",
                                   results[first].strategy->name);
        else
            g_string_append(s, ", ");
        g_string_append(s, results[i].strategy->name);
    }
    if (tied > 0)
        g_string_append_c(s, '\n');
}

/* An aligned table: a header row, a units row, one row per strategy. */
static char *
format_table(const TpsScenario *sc, const TpsResult *results, guint n, gboolean breakdown)
{
    g_autoptr(GPtrArray) columns = table_columns(sc);
    guint cols = columns->len;
    g_autoptr(GPtrArray) all = g_ptr_array_new_with_free_func(g_free);
    for (guint c = 0; c < cols; c++)
        g_ptr_array_add(all, g_strdup(((const TpsResultColumn *)columns->pdata[c])->head));
    for (guint c = 0; c < cols; c++)
        g_ptr_array_add(all, g_strdup(((const TpsResultColumn *)columns->pdata[c])->unit));
    guint first = n; /* the first simulated result */
    for (guint i = 0; i < n; i++) {
        if (results[i].skipped[0])
            continue;
        first = MIN(first, i);
        for (guint c = 0; c < cols; c++)
            g_ptr_array_add(all, table_cell(columns->pdata[c], sc, &results[i]));
    }

    GString *s = g_string_new(NULL);
    g_string_append_printf(s, "scenario %s on %s", sc->name, sc->hardware.name);
    if (sc->is_op)
        g_string_append_printf(
            s,
            ": %s m=%" G_GUINT64_FORMAT " n=%" G_GUINT64_FORMAT " k=%" G_GUINT64_FORMAT " tp=%u\n",
            sc->op_kind == TPS_OP_AG_GEMM ? "ag_gemm" : "gemm_rs", sc->m, sc->n, sc->k, sc->tp);
    else
        g_string_append_printf(s,
                               ": %" G_GUINT64_FORMAT " layers, hidden %" G_GUINT64_FORMAT
                               ", seq %" G_GUINT64_FORMAT ", tp=%u sp=%s\n",
                               sc->layers, sc->hidden, sc->seq_len, sc->tp, sc->sp ? "on" : "off");
    append_aligned(s, all, cols);
    /* The skipped strategies under the others, the reason in full. */
    gsize name_width = strlen(((const TpsResultColumn *)columns->pdata[0])->head);
    for (guint i = 0; i < n; i++)
        name_width = MAX(name_width, strlen(results[i].strategy->name));
    for (guint i = 0; i < n; i++)
        if (results[i].skipped[0])
            g_string_append_printf(s, "%-*s  skipped: %s\n", (int)name_width,
                                   results[i].strategy->name, results[i].skipped);
    if (!sc->is_op && first < n)
        append_step_notes(s, sc, &results[first]);
    if (first < n && sc->hardware.band_basis != NULL)
        g_string_append_printf(s,
                               "%s +-: the larger side of the p10-p90 band of the validation "
                               "residuals of its classes of work (docs/validation.md); %s\n",
                               sc->is_op ? "time" : "step", sc->hardware.band_basis);
    if (first < n)
        append_ties(s, sc, results, n, first);
    if (sc->is_op) {
        gboolean odd = FALSE; /* as under a breakdown: near 0, below 0, above 1 */
        for (guint i = 0; i < n; i++)
            odd |= !results[i].skipped[0] && (results[i].op_overlap_efficiency < 0.05 ||
                                              results[i].op_overlap_efficiency >= 1.0005);
        if (odd)
            g_string_append(s, op_efficiency_note);
    }
    if (breakdown)
        for (guint i = 0; i < n; i++)
            if (!results[i].skipped[0])
                table_breakdown(s, sc, &results[i]);
    return g_string_free(s, FALSE);
}

char *
tps_result_format(const TpsScenario *scenario, const TpsResult *results, guint n, TpsFormat format,
                  gboolean breakdown)
{
    /* The strategies of a run are a ranked set: each says whether it is
     * tied with the fastest (the `tied` column). */
    g_autofree TpsResult *marked = g_memdup2(results, sizeof(TpsResult) * n);
    tps_results_mark_ties(scenario, marked, n);
    switch (format) {
    case TPS_FORMAT_JSON:
        return format_json(scenario, marked, n, breakdown);
    case TPS_FORMAT_CSV:
        return format_csv(scenario, marked, n, breakdown);
    case TPS_FORMAT_TABLE:
    default:
        return format_table(scenario, results, n, breakdown);
    }
}
