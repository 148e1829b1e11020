/* The folded layer and head (sched/builder.h, tps_builder_init_fold):
 * rank 0 simulated alone for a TP group of identical ranks must give the
 * times of the full build, task for task.
 *
 * The expected values are the full build's own: every rank of it is
 * simulated, each flow reaches its real neighbour and shares that
 * neighbour's links and HBM. The test checks first that the full build is
 * symmetric (every rank's k-th task starts and ends when rank 0's k-th
 * does: the premise of folding), then that the folded build's k-th task
 * starts and ends when the full build's rank-0 k-th task does, and that
 * the layer's markers end at the same nanosecond. */
#include <check.h>

#include "engine/engine.h"
#include "scenario-util.h"
#include "sched/builder.h"
#include "sched/layer.h"
#include "sched/strategy.h"
#include "test-util.h"

/* One task's times. */
typedef struct {
    TpsTime start, end;
} Times;

/* The layer two deep as the step's pieces build it (sched/simulate.c,
 * build_two_layers): forward l0, l1; backward l1, l0, each ended by a
 * marker into `m`. */
static void
build_two_layers(TpsBuilder *b, const TpsScenario *sc, TpsOpIds m[4])
{
    tps_layer_forward(b, 0);
    tps_builder_mark(b, "l0.fwd_end", &m[0]);
    tps_layer_forward(b, 1);
    tps_builder_mark(b, "l1.fwd_end", &m[1]);
    for (int i = 1; i >= 0; i--) {
        if (sc->recompute == TPS_RECOMPUTE_FULL)
            tps_layer_forward(b, (guint)i + TPS_LAYER_RECOMPUTE);
        tps_layer_backward(b, (guint)i);
        tps_builder_mark(b, i == 1 ? "l1.bwd_end" : "l0.bwd_end", i == 1 ? &m[2] : &m[3]);
    }
}

/* The embedding and head graph as the step's pieces build it
 * (sched/simulate.c, simulate_head), each piece ended by a marker. */
static void
build_head(TpsBuilder *b, const TpsScenario *sc, TpsOpIds m[4])
{
    tps_embedding_forward(b);
    tps_builder_mark(b, "embedding.end", &m[0]);
    tps_head_forward(b);
    tps_builder_mark(b, "head.end", &m[1]);
    tps_head_backward(b);
    tps_builder_mark(b, "head_bwd.end", &m[2]);
    tps_embedding_backward(b);
    tps_builder_mark(b, "embedding_bwd.end", &m[3]);
}

typedef void (*BuildFn)(TpsBuilder *b, const TpsScenario *sc, TpsOpIds m[4]);

/* Build (`build`) and run the graph of `sc` under `id`, folded or not; each
 * simulated rank's task times in the order added into `ranks[r]` (arrays
 * of Times the caller frees), the markers' latest ends into `marks`;
 * returns the ranks simulated. */
static guint
run_graph(BuildFn build, const TpsScenario *sc, TpsStrategyId id, gboolean fold,
          GArray *ranks[TPS_MAX_RANKS], TpsTime marks[4])
{
    TpsBuilder b;
    TpsOpIds m[4];
    g_autoptr(GError) error = NULL;
    if (fold)
        tps_builder_init_fold(&b, sc, id);
    else
        tps_builder_init(&b, sc, id);
    ck_assert(b.folded == fold);
    build(&b, sc, m);
    ck_assert_msg(tps_engine_run(b.engine, NULL, &error), "%s", error ? error->message : "");
    const guint sim = tps_builder_sim_ranks(&b);
    for (guint r = 0; r < sim; r++)
        ranks[r] = g_array_new(FALSE, FALSE, sizeof(Times));
    for (TpsTaskId t = 0; t < tps_engine_n_tasks(b.engine); t++) {
        const TpsSpan *sp = tps_engine_span(b.engine, t);
        const Times times = {sp->start, sp->end};
        g_array_append_val(ranks[sp->rank], times);
    }
    for (guint i = 0; i < 4; i++) {
        marks[i] = 0;
        for (guint r = 0; r < sim; r++)
            marks[i] = MAX(marks[i], tps_engine_span(b.engine, m[i].id[r])->end);
    }
    tps_builder_clear(&b);
    return sim;
}

/* Whether two ranks' task times are the same, task for task; the first
 * difference into `at`. */
static gboolean
same_times(const GArray *a, const GArray *b, guint *at)
{
    *at = 0;
    if (a->len != b->len)
        return FALSE;
    for (; *at < a->len; (*at)++) {
        const Times *x = &g_array_index(a, Times, *at), *y = &g_array_index(b, Times, *at);
        if (x->start != y->start || x->end != y->end)
            return FALSE;
    }
    return TRUE;
}

/* The full and the folded build of `sc` under `s` agree (`what`: which
 * graph, `build` builds it). */
static void
check_graph(const char *what, BuildFn build, const TpsScenario *sc, const TpsStrategy *s)
{
    GArray *full[TPS_MAX_RANKS], *folded[TPS_MAX_RANKS];
    TpsTime full_marks[4], fold_marks[4];
    const guint n = run_graph(build, sc, s->id, FALSE, full, full_marks);
    ck_assert_uint_eq(n, sc->tp);
    ck_assert_uint_eq(run_graph(build, sc, s->id, TRUE, folded, fold_marks), 1);
    guint at;
    /* The premise: the full build's ranks run alike. */
    for (guint r = 1; r < n; r++)
        ck_assert_msg(same_times(full[0], full[r], &at), "%s %s %s: rank %u differs at its task %u",
                      sc->name, s->name, what, r, at);
    ck_assert_msg(same_times(full[0], folded[0], &at), "%s %s %s: folded differs at task %u of %u",
                  sc->name, s->name, what, at, full[0]->len);
    for (guint i = 0; i < 4; i++)
        ck_assert_msg(full_marks[i] == fold_marks[i], "%s %s %s: marker %u ends at %ld, folded %ld",
                      sc->name, s->name, what, i, (long)full_marks[i], (long)fold_marks[i]);
    for (guint r = 0; r < n; r++)
        g_array_unref(full[r]);
    g_array_unref(folded[0]);
}

static void
check_preset(const TpsScenario *sc, const TpsStrategy *s)
{
    check_graph("layer", build_two_layers, sc, s);
    check_graph("head", build_head, sc, s);
}

/* Shipped scenarios whose TP group folds: dense layers on one NVLink
 * domain, NCCL ring collectives, copy-engine all-gathers (llama3-70b-ce),
 * userbuffers overlaps, full recompute, FP8, an NVL72 domain. */
static const char *const fold_scenarios[] = {
    "gpt-1t.yaml",
    "gpt3-175b-tp8.yaml",
    "default.yaml",
    "llama3-70b-ce.yaml",
    "custom-overlap.yaml",
    "gpt3-175b-pp8-full-recompute.yaml",
    "llama3-70b-b200-mxfp8.yaml",
    "llama3-70b-gb200-nvl72.yaml",
};

/* Every preset that applies to `sc` checked (the SP setting following
 * the preset, as tpsim bench does); returns how many. */
static guint
check_scenario(TpsScenario *sc)
{
    guint n, checked = 0;
    const TpsStrategy *table = tps_strategy_table(&n);
    for (guint i = 0; i < n; i++) {
        sc->sp = table[i].needs_sp;
        if (!table[i].implemented || !tps_strategy_applies(&table[i], sc, NULL))
            continue;
        check_preset(sc, &table[i]);
        checked++;
    }
    return checked;
}

START_TEST(test_fold_matches_full)
{
    g_auto(TpsScenario) sc = {0};
    tps_test_load_scenario(fold_scenarios[_i], &sc);
    ck_assert_msg(tps_builder_can_fold(&sc), "%s", fold_scenarios[_i]);
    ck_assert_uint_gt(check_scenario(&sc), 0);
}
END_TEST

/* And every other shipped scenario that folds (op scenarios aside: their
 * graph is not the layer's), so that none folds where its ranks differ. */
START_TEST(test_fold_every_shipped)
{
    g_autofree char *path = g_build_filename(g_getenv("TPSIM_SOURCE_DIR"), "scenarios", NULL);
    g_autoptr(GDir) dir = g_dir_open(path, 0, NULL);
    ck_assert_ptr_nonnull(dir);
    guint folded = 0;
    for (const char *name; (name = g_dir_read_name(dir)) != NULL;) {
        if (!g_str_has_suffix(name, ".yaml"))
            continue;
        g_auto(TpsScenario) sc = {0};
        tps_test_load_scenario(name, &sc);
        if (sc.is_op || !tps_builder_can_fold(&sc))
            continue;
        check_scenario(&sc);
        folded++;
    }
    /* 23 of the 37 shipped scenarios on 2026-12-02 (the others have CP,
     * MoE layers, a TP group over two domains or an op graph); at least
     * the eight above. */
    ck_assert_uint_ge(folded, G_N_ELEMENTS(fold_scenarios));
}
END_TEST

START_TEST(test_fold_predicate)
{
    /* Context parallelism (stand-ins of the CP peers) and expert layers
     * (of the EP peers) simulate ranks that are not the TP group's. */
    static const char *const not_folded[] = {"llama3-8b-32k-cp2.yaml", "mixtral-8x7b-tp2-ep8.yaml",
                                             "llama3-8b-128k-a2a-p2p.yaml"};
    for (guint i = 0; i < G_N_ELEMENTS(not_folded); i++) {
        g_auto(TpsScenario) sc = {0};
        tps_test_load_scenario(not_folded[i], &sc);
        ck_assert_msg(!tps_builder_can_fold(&sc), "%s", not_folded[i]);
        TpsBuilder b;
        tps_builder_init_fold(&b, &sc, TPS_STRATEGY_MEGATRON);
        ck_assert(!b.folded);
        tps_builder_clear(&b);
    }
    /* A TP group over two 8-GPU nodes: half its ring steps cross the
     * network, which only the members at a node's edge send on. */
    g_auto(TpsScenario) sc = {0};
    tps_test_load_scenario("gpt3-175b-tp8.yaml", &sc);
    ck_assert(tps_builder_can_fold(&sc));
    sc.tp = 16;
    ck_assert(!tps_builder_can_fold(&sc));
}
END_TEST

/* A memory-bound kernel (1e6 bytes through HBM, nothing else bounding
 * it) beside a flow of 3e5 bytes to the neighbour, on each rank of a pair
 * (full) or on one rank standing for both (folded, its flow to itself).
 * HBM 1000 B/ns, NVLink 300 B/ns a direction.
 *
 * By hand, on the full pair: rank r's HBM carries its kernel, its flow's
 * read and the write of its neighbour's flow into it. Progressive filling
 * at level x (kernel rate x / 1e6, flow rate x / 3e5): HBM 3x <= 1000
 * (x 333), NVLink x <= 300 binds first: each flow moves 300 B/ns and
 * ends at 3e5 / 300 = 1000 ns. The kernel then gets the HBM left,
 * 1000 - 2 x 300 = 400 B/ns, so 4e5 bytes by 1000 ns, the other 6e5 alone
 * at 1000 B/ns: it ends at 1600 ns. The folded flow's write into "its
 * peer" must count apart from its read: merged into one use of 6e5 bytes
 * it would halve the flow's NVLink share of the filling (HBM 2x <= 1000
 * binds at x 500: flow 250 B/ns, ending at 1200 ns). */
static void
hbm_pair(gboolean folded, TpsTime *flow_end, TpsTime *kernel_end)
{
    const TpsMachine machine = {
        .ranks = folded ? 1 : 2,
        .gpus_per_node = 2,
        .sms = 100,
        .hbm_gbps = 1000.0,
        .nvlink_gbps = 300.0,
        .nic_gbps = 100.0,
        .folded = folded,
    };
    g_autoptr(TpsEngine) engine = tps_engine_new(&machine);
    TpsTaskId flow[2], kernel[2];
    for (guint r = 0; r < machine.ranks; r++) {
        TpsStreamId s = tps_engine_add_stream(engine, r, 0, "main");
        TpsTaskSpec k = {.kind = TPS_KIND_MEMORY,
                         .name = "k",
                         .rank = r,
                         .stream = s,
                         .parent = TPS_TASK_NONE,
                         .hbm_bytes = 1e6};
        kernel[r] = tps_engine_add(engine, &k);
        TpsTaskSpec f = {.kind = TPS_KIND_FLOW,
                         .name = "f",
                         .rank = r,
                         .stream = TPS_STREAM_NONE,
                         .parent = TPS_TASK_NONE,
                         .dst_rank = (r + 1) % machine.ranks,
                         .link_bytes = 3e5};
        flow[r] = tps_engine_add(engine, &f);
    }
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_engine_run(engine, NULL, &error), "%s", error ? error->message : "");
    for (guint r = 0; r < machine.ranks; r++) {
        ck_assert_int_eq(tps_engine_span(engine, flow[r])->end,
                         tps_engine_span(engine, flow[0])->end);
        ck_assert_int_eq(tps_engine_span(engine, kernel[r])->end,
                         tps_engine_span(engine, kernel[0])->end);
    }
    *flow_end = tps_engine_span(engine, flow[0])->end;
    *kernel_end = tps_engine_span(engine, kernel[0])->end;
}

START_TEST(test_fold_receiver_hbm)
{
    for (int folded = 0; folded <= 1; folded++) {
        TpsTime flow, kernel;
        hbm_pair(folded, &flow, &kernel);
        ck_assert_msg(flow == 1000 && kernel == 1600, "folded %d: flow %ld, kernel %ld", folded,
                      (long)flow, (long)kernel);
    }
}
END_TEST

static Suite *
fold_suite(void)
{
    Suite *s = suite_create("fold");
    TCase *tc = tcase_create("fold");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, test_fold_matches_full, 0, G_N_ELEMENTS(fold_scenarios));
    tcase_add_test(tc, test_fold_every_shipped);
    tcase_add_test(tc, test_fold_predicate);
    tcase_add_test(tc, test_fold_receiver_hbm);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return tps_test_run(fold_suite());
}
