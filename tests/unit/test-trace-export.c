/* trace-export: the Chrome trace event format as Perfetto reads it:
 * required keys, names for every process and thread, complete events of
 * one thread that never overlap, and flow events paired and bound to a
 * slice at both ends. */
#include <check.h>

#include "test-util.h"
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <stdlib.h>
#include <string.h>

#include "hand-run.h"
#include "io/input/scenario-file.h"
#include "render/trace-export.h"
#include "sched/simulate.h"
#include "sched/strategy.h"

static TpsRun *
simulate(const char *scenario, const char *strategy, guint *ranks)
{
    TpsScenario sc;
    g_autoptr(GError) error = NULL;
    g_autofree char *path =
        g_build_filename(g_getenv("TPSIM_SOURCE_DIR"), "scenarios", scenario, NULL);
    ck_assert_msg(tps_scenario_file_load(path, &sc, &error), "%s", error ? error->message : "");
    TpsResult res;
    TpsRun *rec = NULL;
    ck_assert_msg(tps_simulate_record(&sc, tps_strategy_lookup(strategy), &res, &rec, &error), "%s",
                  error ? error->message : "");
    *ranks = sc.tp;
    tps_scenario_clear(&sc);
    return rec;
}

typedef struct {
    double ts, end;
} Slice;

static gint
slice_cmp(gconstpointer pa, gconstpointer pb)
{
    const Slice *a = pa, *b = pb;
    return a->ts < b->ts ? -1 : a->ts > b->ts ? 1 : 0;
}

static char *
thread_key(JsonObject *ev)
{
    return g_strdup_printf(
        "%" G_GINT64_FORMAT "/%" G_GINT64_FORMAT, json_object_get_int_member(ev, "pid"),
        json_object_has_member(ev, "tid") ? json_object_get_int_member(ev, "tid") : -1);
}

/* Whether some slice of `slices` (sorted) holds time t. */
static gboolean
inside(GArray *slices, double t)
{
    for (guint i = 0; i < slices->len; i++) {
        const Slice *s = &g_array_index(slices, Slice, i);
        if (s->ts > t + 1e-9)
            break;
        if (t <= s->end + 1e-9)
            return TRUE;
    }
    return FALSE;
}

/* Check the whole trace; returns the number of flow pairs. */
static guint
check_trace(const char *text, guint runs, guint ranks)
{
    g_autoptr(JsonParser) parser = json_parser_new();
    g_autoptr(GError) error = NULL;
    ck_assert_msg(json_parser_load_from_data(parser, text, -1, &error), "%s",
                  error ? error->message : "");
    JsonObject *root = json_node_get_object(json_parser_get_root(parser));
    ck_assert(json_object_has_member(root, "traceEvents"));
    ck_assert_str_eq(
        json_object_get_string_member(json_object_get_object_member(root, "otherData"), "tool"),
        "tpsim");
    JsonArray *events = json_object_get_array_member(root, "traceEvents");
    guint n = json_array_get_length(events);
    ck_assert_uint_gt(n, 10);

    g_autoptr(GHashTable) slices =
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, (GDestroyNotify)g_array_unref);
    g_autoptr(GHashTable) thread_names =
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_autoptr(GHashTable) process_names = g_hash_table_new(g_direct_hash, g_direct_equal);
    g_autoptr(GHashTable) flows = g_hash_table_new(g_int64_hash, g_int64_equal);
    g_autoptr(GPtrArray) flow_events = g_ptr_array_new();
    guint complete = 0;
    for (guint i = 0; i < n; i++) {
        JsonObject *ev = json_array_get_object_element(events, i);
        ck_assert(json_object_has_member(ev, "name"));
        ck_assert(json_object_has_member(ev, "ph"));
        ck_assert(json_object_has_member(ev, "pid"));
        const char *ph = json_object_get_string_member(ev, "ph");
        if (strcmp(ph, "M") == 0) {
            const char *what = json_object_get_string_member(ev, "name");
            JsonObject *args = json_object_get_object_member(ev, "args");
            ck_assert_ptr_nonnull(args);
            if (strcmp(what, "thread_name") == 0) {
                ck_assert(json_object_has_member(ev, "tid"));
                ck_assert(strlen(json_object_get_string_member(args, "name")) > 0);
                g_hash_table_add(thread_names, thread_key(ev));
            } else if (strcmp(what, "process_name") == 0) {
                g_hash_table_add(process_names,
                                 GINT_TO_POINTER(json_object_get_int_member(ev, "pid")));
            }
            continue;
        }
        ck_assert(json_object_has_member(ev, "ts"));
        ck_assert(json_object_has_member(ev, "tid"));
        if (strcmp(ph, "X") == 0) {
            complete++;
            ck_assert(json_object_has_member(ev, "dur"));
            double ts = json_object_get_double_member(ev, "ts");
            double dur = json_object_get_double_member(ev, "dur");
            ck_assert(ts >= 0 && dur >= 0);
            JsonObject *args = json_object_get_object_member(ev, "args");
            ck_assert_ptr_nonnull(args);
            if (strcmp(json_object_get_string_member(ev, "cat"), "exposed") != 0) {
                ck_assert(json_object_has_member(args, "bytes"));
                ck_assert(json_object_has_member(args, "flops"));
                ck_assert(json_object_has_member(args, "sms"));
            }
            char *key = thread_key(ev);
            GArray *a = g_hash_table_lookup(slices, key);
            if (a == NULL) {
                a = g_array_new(FALSE, FALSE, sizeof(Slice));
                g_hash_table_insert(slices, key, a);
            } else {
                g_free(key);
            }
            Slice s = {ts, ts + dur};
            g_array_append_val(a, s);
        } else if (strcmp(ph, "s") == 0 || strcmp(ph, "f") == 0) {
            ck_assert(json_object_has_member(ev, "id"));
            if (strcmp(ph, "f") == 0)
                ck_assert_str_eq(json_object_get_string_member(ev, "bp"), "e");
            g_ptr_array_add(flow_events, ev);
        } else {
            ck_abort_msg("unexpected phase %s", ph);
        }
    }
    ck_assert_uint_gt(complete, 0);
    ck_assert_uint_eq(g_hash_table_size(process_names), runs * ranks);

    /* Every thread with slices is named; its slices never overlap. */
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, slices);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        ck_assert_msg(g_hash_table_contains(thread_names, k), "thread %s has no name",
                      (const char *)k);
        GArray *a = v;
        g_array_sort(a, slice_cmp);
        for (guint i = 1; i < a->len; i++)
            ck_assert_msg(g_array_index(a, Slice, i - 1).end <=
                              g_array_index(a, Slice, i).ts + 1e-9,
                          "thread %s: slices overlap at %.3f us", (const char *)k,
                          g_array_index(a, Slice, i).ts);
    }

    /* Flow events: one "s" and one "f" per id, the "f" no earlier, each
     * bound to a slice of its thread. */
    g_autofree gint64 *ids = g_new0(gint64, flow_events->len);
    g_autofree int *count = g_new0(int, flow_events->len);
    g_autofree double *s_ts = g_new0(double, flow_events->len);
    for (guint i = 0; i < flow_events->len; i++) {
        JsonObject *ev = g_ptr_array_index(flow_events, i);
        gint64 id = json_object_get_int_member(ev, "id");
        gboolean start = strcmp(json_object_get_string_member(ev, "ph"), "s") == 0;
        double ts = json_object_get_double_member(ev, "ts");
        g_autofree char *key = thread_key(ev);
        GArray *a = g_hash_table_lookup(slices, key);
        ck_assert_msg(a && inside(a, ts), "flow %" G_GINT64_FORMAT " not on a slice", id);
        gpointer slot = g_hash_table_lookup(flows, &id);
        guint idx;
        if (slot == NULL) {
            idx = g_hash_table_size(flows);
            ids[idx] = id;
            g_hash_table_insert(flows, &ids[idx], GUINT_TO_POINTER(idx + 1));
        } else {
            idx = GPOINTER_TO_UINT(slot) - 1;
        }
        count[idx] += start ? 1 : 100;
        if (start)
            s_ts[idx] = ts;
        else
            ck_assert(count[idx] == 101 && ts >= s_ts[idx] - 1e-9); /* "s" comes first */
    }
    guint pairs = g_hash_table_size(flows);
    for (guint i = 0; i < pairs; i++)
        ck_assert_int_eq(count[i], 101);
    return pairs;
}

typedef struct {
    const char *scenario, *strategy;
} TraceCase;

static const TraceCase trace_cases[] = {
    {"op-ag-gemm.yaml", "sp-blocking"}, {"op-ag-gemm.yaml", "ring-ag"},
    {"op-gemm-rs.yaml", "ring-rs"},     {"op-gemm-rs.yaml", "pipeline-rs"},
    {"gpt3-175b-tp8.yaml", "megatron"}, {"gpt3-175b-tp8.yaml", "te-a100"},
};

START_TEST(test_trace_valid)
{
    const TraceCase *c = &trace_cases[_i];
    guint ranks;
    TpsRun *rec = simulate(c->scenario, c->strategy, &ranks);
    g_autofree char *text = tps_trace_export(&rec, 1, c->scenario);
    guint pairs = check_trace(text, 1, ranks);
    /* Every strategy here has cross-rank or cross-stream dependencies. */
    ck_assert_uint_gt(pairs, 0);
    tps_run_free(rec);
}
END_TEST

/* Two strategies in one trace: separate processes; the file written. */
START_TEST(test_trace_two_runs_file)
{
    guint ranks;
    TpsRun *recs[2];
    recs[0] = simulate("op-ag-gemm.yaml", "sp-blocking", &ranks);
    recs[1] = simulate("op-ag-gemm.yaml", "ring-ag", &ranks);
    g_autoptr(GError) error = NULL;
    g_autofree char *dir = g_dir_make_tmp("tpsim-trace-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "t.json", NULL);
    ck_assert_msg(tps_trace_export_write(recs, 2, "op-ag-gemm", path, &error), "%s",
                  error ? error->message : "");
    g_autofree char *text = NULL;
    ck_assert(g_file_get_contents(path, &text, NULL, NULL));
    check_trace(text, 2, ranks);
    ck_assert_ptr_nonnull(strstr(text, "\"ring-ag GPU7\""));
    ck_assert_ptr_nonnull(strstr(text, "\"thread_name\""));
    ck_assert_ptr_nonnull(strstr(text, "NVLink → GPU1"));
    /* Sub-microsecond precision: three decimals. */
    ck_assert(
        g_regex_match_simple("\"ts\":[0-9]+\\.[0-9]{3},\"dur\":[0-9]+\\.[0-9]{3},", text, 0, 0));
    g_unlink(path);
    g_rmdir(dir);
    /* A folder that does not exist: an error, nothing written. */
    g_autofree char *bad = g_build_filename(dir, "t.json", NULL);
    ck_assert(!tps_trace_export_write(recs, 2, "x", bad, &error));
    ck_assert(!g_file_test(bad, G_FILE_TEST_EXISTS));
    tps_run_free(recs[0]);
    tps_run_free(recs[1]);
}
END_TEST

/* The exposed band of the export is the run's exposed communication:
 * on the hand-built run, exactly its five intervals. */
START_TEST(test_exposed_events)
{
    g_autoptr(TpsRun) run = tps_test_hand_run();
    TpsRun *runs[] = {run};
    g_autofree char *text = tps_trace_export(runs, 1, "hand");
    g_autoptr(JsonParser) parser = json_parser_new();
    ck_assert(json_parser_load_from_data(parser, text, -1, NULL));
    JsonArray *events = json_object_get_array_member(
        json_node_get_object(json_parser_get_root(parser)), "traceEvents");
    static const double want[][2] = {
        {0.0, 0.03}, {0.05, 0.03}, {0.15, 0.05}, {0.39, 0.01}, {0.41, 0.01}};
    guint found = 0;
    for (guint i = 0; i < json_array_get_length(events); i++) {
        JsonObject *ev = json_array_get_object_element(events, i);
        if (!json_object_has_member(ev, "cat") ||
            strcmp(json_object_get_string_member(ev, "cat"), "exposed") != 0)
            continue;
        ck_assert_uint_lt(found, G_N_ELEMENTS(want));
        ck_assert_double_eq_tol(json_object_get_double_member(ev, "ts"), want[found][0], 1e-9);
        ck_assert_double_eq_tol(json_object_get_double_member(ev, "dur"), want[found][1], 1e-9);
        found++;
    }
    ck_assert_uint_eq(found, G_N_ELEMENTS(want));
}
END_TEST

/* The run's edges are the graph the exporter draws from. */
START_TEST(test_engine_edges)
{
    guint ranks;
    TpsRun *rec = simulate("op-ag-gemm.yaml", "ring-ag", &ranks);
    guint n = rec->edges->len, cross_rank = 0;
    ck_assert_uint_gt(n, 0);
    for (guint i = 0; i < n; i++) {
        const TpsRunEdge *edge = &g_array_index(rec->edges, TpsRunEdge, i);
        const TpsEdgeKind kind = edge->kind;
        const TpsSpan *pa = tps_run_span(rec, edge->pred), *pb = tps_run_span(rec, edge->succ);
        if (kind == TPS_EDGE_END || kind == TPS_EDGE_STREAM)
            ck_assert(pa->end <= pb->start);
        if (kind == TPS_EDGE_START || kind == TPS_EDGE_PARENT || kind == TPS_EDGE_HWQ)
            ck_assert(pa->start <= pb->start);
        if (kind == TPS_EDGE_HOLD)
            ck_assert(pa->end <= pb->end);
        cross_rank += pa->rank != pb->rank;
    }
    ck_assert_uint_gt(cross_rank, 0); /* receives wait on the neighbour's push */
    guint copies = 0;
    for (TpsTaskId t = 0; t < tps_run_n_spans(rec); t++) {
        const TpsSpan *sp = tps_run_span(rec, t);
        if (sp->kind == TPS_KIND_COPY) {
            ck_assert_uint_eq(tps_run_dst_rank(rec, t), (sp->rank + 1) % ranks);
            copies++;
        }
    }
    /* The op runs twice (the first puts the host ahead, as in a loop). */
    ck_assert_uint_eq(copies, 2 * ranks * (ranks - 1));
    tps_run_free(rec);
}
END_TEST

int
main(void)
{
    Suite *s = suite_create("trace-export");
    TCase *tc = tcase_create("format");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_trace_valid, 0, G_N_ELEMENTS(trace_cases));
    tcase_add_test(tc, test_trace_two_runs_file);
    tcase_add_test(tc, test_engine_edges);
    tcase_add_test(tc, test_exposed_events);
    suite_add_tcase(s, tc);
    return tps_test_run(s);
}
