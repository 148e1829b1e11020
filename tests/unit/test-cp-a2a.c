/* Context parallelism by all-to-all (sched/cp-a2a.c: cp_comm a2a, DeepSpeed
 * Ulysses, and a2a+p2p, hierarchical): where each rank's all-to-all peers
 * sit on the topology, the stand-in ranks of the layer's machine, the
 * bytes of each all-to-all, the order TE issues them in, the attention
 * between them, the buffers they hold, and the layouts refused. Every
 * expected figure is worked out by hand in its comment. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "test-util.h"

#include "io/input/scenario-file.h"
#include "sched/builder.h"
#include "sched/cp-ring.h"
#include "sched/layer.h"
#include "sched/pipeline.h"
#include "sched/placement.h"
#include "sched/simulate.h"
#include "sched/strategy.h"

/* Llama 3 8B's attention at 32K tokens on H100s (8 GPUs a node), heads
 * and K/V heads as given, causal. */
static gboolean
load(TpsScenario *sc, guint tp, guint cp, const char *comm, guint a2a, guint kv_heads,
     GError **error)
{
    g_autofree char *extra = a2a ? g_strdup_printf(", cp_a2a: %u", a2a) : g_strdup("");
    g_autofree char *text = g_strdup_printf(
        "name: a2a\nhardware: h100-sxm\n"
        "model: {hidden: 4096, heads: 32, kv_heads: %u, ffn_hidden: 14336, mlp: swiglu, "
        "norm: rmsnorm, position_embedding: rope, bias: false, layers: 32, seq_len: 32768, "
        "causal: true}\n"
        "training: {micro_batch: 1, global_batch: 8}\n"
        "parallel: {tp: %u, sp: true, cp: %u, cp_comm: %s%s}\n",
        kv_heads, tp, cp, comm, extra);
    return tps_scenario_file_load_string("a2a", text, -1, sc, error);
}

static void
load_ok(TpsScenario *sc, guint tp, guint cp, const char *comm, guint a2a, guint kv_heads)
{
    g_autoptr(GError) error = NULL;
    ck_assert_msg(load(sc, tp, cp, comm, a2a, kv_heads, &error), "%s", error ? error->message : "");
}

/* The a2a group of global rank 0 and the machine's stand-in sets. CP
 * ranks are tp GPUs apart (order tp-cp-dp-pp), 8 GPUs a node:
 * - TP4 CP2 a2a: CP rank 1 is GPUs 4-7, node 0: 1 peer near, none far;
 *   no ring set, near set at 4: 8 ranks.
 * - TP2 CP8 a2a (no GQA, 32 K/V heads / 16): CP ranks 1-3 are GPUs 2, 4,
 *   6 (node 0), 4-7 GPUs 8-14 (node 1): 3 near, 4 far; near set at 2, far
 *   at 4: 6 ranks; member 0's first near peer GPU 2, first far GPU 8.
 * - TP1 CP16 a2a+p2p, cp_a2a 8: a2a peers CP 1-7, GPUs 1-7, all near; the
 *   ring partner is CP rank 16 - 8 = 8, GPU 8 (node 1): ring set at 1,
 *   near at 2: 3 ranks.
 * - TP8 CP2 p2p: the ring set alone, 16 ranks (as before a2a). */
static const struct {
    guint tp, cp;
    const char *comm;
    guint a2a, kv_heads;
    guint near_count, far_count, near, far;
    guint ring_set, near_set, far_set, ranks;
} placement_cases[] = {
    {4, 2, "a2a", 0, 8, 1, 0, 4, 0, 0, 4, 0, 8},
    {2, 8, "a2a", 0, 32, 3, 4, 2, 8, 0, 2, 4, 6},
    {1, 16, "a2a+p2p", 8, 8, 7, 0, 1, 0, 1, 2, 0, 3},
    {8, 2, "p2p", 0, 8, 0, 0, 0, 0, 8, 0, 0, 16},
};

START_TEST(test_a2a_placement)
{
    const __typeof__(placement_cases[0]) *c = &placement_cases[_i];
    g_auto(TpsScenario) sc = {0};
    load_ok(&sc, c->tp, c->cp, c->comm, c->a2a, c->kv_heads);
    TpsCpSets sets;
    tps_place_cp_sets(&sc, &sets);
    ck_assert_uint_eq(sets.ring, c->ring_set);
    ck_assert_uint_eq(sets.near, c->near_set);
    ck_assert_uint_eq(sets.far, c->far_set);
    ck_assert_uint_eq(sets.ranks, c->ranks);
    ck_assert_uint_eq(tps_place_layer_ranks(&sc), c->ranks);
    if (strcmp(c->comm, "p2p") != 0) {
        ck_assert_uint_eq(sets.peers[0].near_count, c->near_count);
        ck_assert_uint_eq(sets.peers[0].far_count, c->far_count);
        ck_assert_uint_eq(sets.peers[0].near, c->near);
        if (c->far_count)
            ck_assert_uint_eq(sets.peers[0].far, c->far);
    }
    /* The stand-ins sit where the peers they stand for do. */
    TpsPlace place[TPS_MAX_RANKS];
    tps_place_layer(&sc, place);
    if (c->near_set)
        ck_assert_uint_eq(place[c->near_set].domain, 0);
    if (c->far_set)
        ck_assert_uint_eq(place[c->far_set].domain, 1);
    if (c->ring_set && c->cp == 16)
        ck_assert_uint_eq(place[c->ring_set].domain, 1); /* GPU 8 */
}
END_TEST

/* Rank 0's spans named `name`. */
static GPtrArray *
spans_named(const TpsBuilder *b, const char *name)
{
    GPtrArray *out = g_ptr_array_new();
    for (TpsTaskId id = 0; id < tps_engine_n_tasks(b->engine); id++) {
        const TpsSpan *sp = tps_engine_span(b->engine, id);
        if (sp->rank == 0 && strcmp(sp->name, name) == 0)
            g_ptr_array_add(out, (gpointer)sp);
    }
    return out;
}

static const TpsSpan *
one_span(const TpsBuilder *b, const char *name)
{
    g_autoptr(GPtrArray) all = spans_named(b, name);
    ck_assert_msg(all->len == 1, "%u spans named %s", all->len, name);
    return g_ptr_array_index(all, 0);
}

/* TP4 CP2 a2a, one node. A rank's tokens: 32768 / 2 = 16384; its heads
 * 32 / 4 = 8, K/V heads 8 / 4 = 2, of 128, bf16. Q (and O, dO, dQ): 16384
 * x 8 x 128 x 2 = 33554432 bytes, of which the half for CP rank 1 goes:
 * 16777216; K (V, dK, dV): 16384 x 2 x 128 x 2 = 8388608, half 4194304.
 * Over NVLink only (no .net flow). The all-to-alls run on the CP stream one
 * after the other, the reorder of Q's on TE's cp_stream beside K's
 * all-to-all (TE issues it after K's all-to-all: with one hardware queue
 * it starts when that does). Attention after V's reorder: one causal
 * kernel over the 32768 tokens and 8 / 2 = 4 heads: 256 query tiles of
 * 128, 256 x 257 / 2 = 32896 tiles of 4 x 128^3 = 8388608 FLOPs a head:
 * 32896 x 8388608 x 4 = 1103806595072 FLOPs. */
START_TEST(test_a2a_graph)
{
    g_auto(TpsScenario) sc = {0};
    load_ok(&sc, 4, 2, "a2a", 0, 8);
    TpsBuilder b;
    TpsRunStats stats;
    tps_builder_init(&b, &sc, TPS_STRATEGY_MEGATRON);
    tps_layer_forward(&b, 0);
    tps_layer_backward(&b, 0);
    ck_assert(tps_engine_run(b.engine, &stats, NULL));
    static const struct {
        const char *name;
        double bytes;
    } sent[] = {{"l0.cp_a2a_q", 16777216.0},    {"l0.cp_a2a_k", 4194304.0},
                {"l0.cp_a2a_v", 4194304.0},     {"l0.cp_a2a_out", 16777216.0},
                {"l0.cp_a2a_dout", 16777216.0}, {"l0.cp_a2a_dq", 16777216.0},
                {"l0.cp_a2a_dk", 4194304.0},    {"l0.cp_a2a_dv", 4194304.0}};
    for (guint i = 0; i < G_N_ELEMENTS(sent); i++) {
        const TpsSpan *k = one_span(&b, sent[i].name);
        ck_assert_double_eq_tol(k->bytes, sent[i].bytes, 1e-6);
        ck_assert_uint_eq(k->stream, b.cp[0]);
        g_autofree char *nvl = g_strdup_printf("%s.nvlink", sent[i].name);
        g_autofree char *net = g_strdup_printf("%s.net", sent[i].name);
        ck_assert_double_eq_tol(one_span(&b, nvl)->bytes, sent[i].bytes, 1e-6);
        g_autoptr(GPtrArray) none = spans_named(&b, net);
        ck_assert_uint_eq(none->len, 0);
    }
    const TpsSpan *q = one_span(&b, "l0.cp_a2a_q"), *k = one_span(&b, "l0.cp_a2a_k");
    const TpsSpan *v = one_span(&b, "l0.cp_a2a_v"), *out = one_span(&b, "l0.cp_a2a_out");
    ck_assert_int_ge(k->start, q->end);
    ck_assert_int_ge(v->start, k->end);
    g_autoptr(GPtrArray) reorders = spans_named(&b, "l0.cp_a2a_reorder");
    ck_assert_uint_eq(reorders->len, 3 + 1 + 1 + 3);
    const TpsSpan *q_post = g_ptr_array_index(reorders, 0);
    ck_assert_uint_eq(q_post->stream, b.cp_attn[0]);
    ck_assert_int_ge(q_post->start, q->end);
    ck_assert_msg(q_post->start < k->end, "Q's reorder runs after K's all-to-all");
    const TpsSpan *attn = one_span(&b, "l0.attn_fwd");
    const TpsSpan *v_post = g_ptr_array_index(reorders, 2);
    ck_assert_int_ge(attn->start, v_post->end);
    ck_assert_int_ge(out->start, attn->end);
    ck_assert_double_eq_tol(attn->flops, 1103806595072.0, 1.0);
    tps_builder_clear(&b);
}
END_TEST

/* TP1 CP16 a2a+p2p, cp_a2a 8: the all-to-all inside node 0, the ring of
 * 2 across. A rank's tokens 32768 / 16 = 2048, 32 heads, 8 K/V heads: Q
 * 2048 x 32 x 128 x 2 = 16777216 bytes, an eighth to each of 7 peers:
 * 7 x 2097152 = 14680064 over NVLink; K 2048 x 8 x 128 x 2 = 4194304,
 * 7 x 524288 = 3670016. The ring then runs on 32 / 8 = 4 heads and 1 K/V
 * head over chunks of 32768 / (2 x 2) = 8192: one K/V block forward, 2 x
 * 8192 x 2 x 128 x 2 = 8388608 bytes, over the NICs to GPU 8 (one GPU's
 * NIC, 48 GB/s: 8388608 / 48 = 174763 ns at least). Its two ring steps:
 * two attention blocks. */
START_TEST(test_hybrid_graph)
{
    g_auto(TpsScenario) sc = {0};
    load_ok(&sc, 1, 16, "a2a+p2p", 8, 8);
    TpsBuilder b;
    TpsRunStats stats;
    tps_builder_init(&b, &sc, TPS_STRATEGY_MEGATRON);
    tps_layer_forward(&b, 0);
    tps_layer_backward(&b, 0);
    ck_assert(tps_engine_run(b.engine, &stats, NULL));
    ck_assert_double_eq_tol(one_span(&b, "l0.cp_a2a_q")->bytes, 14680064.0, 1e-6);
    ck_assert_double_eq_tol(one_span(&b, "l0.cp_a2a_k")->bytes, 3670016.0, 1e-6);
    const TpsSpan *send = one_span(&b, "l0.cp_kv");
    ck_assert_double_eq_tol(send->bytes, 8388608.0, 1e-6);
    const TpsSpan *flow = one_span(&b, "l0.cp_kv.flow");
    ck_assert_int_ge(flow->end - flow->start, 174763);
    ck_assert_int_lt(flow->end - flow->start, 174763 + 20000);
    g_autoptr(GPtrArray) blocks = spans_named(&b, "l0.attn_fwd");
    ck_assert_uint_eq(blocks->len, 2);
    /* The ring's first block after V's all-to-all, the output's after the
     * last block. */
    const TpsSpan *first = g_ptr_array_index(blocks, 0), *last = g_ptr_array_index(blocks, 1);
    ck_assert_int_ge(first->start, one_span(&b, "l0.cp_a2a_v")->end);
    ck_assert_int_ge(one_span(&b, "l0.cp_a2a_out")->start, last->end);
    tps_builder_clear(&b);
}
END_TEST

/* Buffers, TP4 CP2 a2a: chunk 8192 tokens, a Q row 8 x 128 x 2 = 2048
 * bytes, a K/V row 2 x 2 x 128 x 2 = 1024: the received Q, K, V of 2 x
 * 8192 tokens: 16384 x 3072 = 50331648. TP1 CP16 a2a+p2p 8: chunk 1024, Q
 * row 32 x 256 = 8192, K/V row 2 x 8 x 256 = 4096: received 2048 x 12288
 * = 25165824; the ring of 2 on chunks of 8192, rows of 1024 and 512:
 * forward 1 x 2 x 8192 x 512 + 3 x 8192 x 1024 = 33554432, backward 4 x 2
 * x 8192 x 512 = 33554432: 25165824 + 33554432 = 58720256. */
START_TEST(test_a2a_memory)
{
    g_auto(TpsScenario) a2a = {0};
    load_ok(&a2a, 4, 2, "a2a", 0, 8);
    ck_assert_double_eq_tol(tps_cp_buffer_bytes(&a2a), 50331648.0, 1e-6);
    g_auto(TpsScenario) hybrid = {0};
    load_ok(&hybrid, 1, 16, "a2a+p2p", 8, 8);
    ck_assert_double_eq_tol(tps_cp_buffer_bytes(&hybrid), 58720256.0, 1e-6);
}
END_TEST

/* Refused at the location of model.heads (line 3): K/V heads 8 over TP8
 * x a2a 2 (the first Llama 3 70B layout one would try: 8 / 16 is no whole
 * head), under a2a and under a2a+p2p. */
static const struct {
    guint tp, cp;
    const char *comm;
    guint a2a, kv_heads;
    const char *where, *what;
} refusal_cases[] = {
    {8, 2, "a2a", 0, 8, "a2a:3:", "divisible by parallel.tp * the a2a size (16)"},
    {8, 4, "a2a+p2p", 2, 8, "a2a:3:", "divisible by parallel.tp * the a2a size (16)"},
};

START_TEST(test_a2a_refusals)
{
    const __typeof__(refusal_cases[0]) *c = &refusal_cases[_i];
    g_auto(TpsScenario) sc = {0};
    g_autoptr(GError) error = NULL;
    ck_assert(!load(&sc, c->tp, c->cp, c->comm, c->a2a, c->kv_heads, &error));
    ck_assert_msg(g_str_has_prefix(error->message, c->where), "%s", error->message);
    ck_assert_msg(strstr(error->message, c->what) != NULL, "%s", error->message);
}
END_TEST

/* --breakdown's CP rows: the attention core forward and backward of the
 * measured layer, under each exchange. Their CP stream's busy and exposed
 * times are the layer's CP figures split by direction (so they sum to
 * them); their compute is the attention kernels; the schedule names the
 * exchange. Without context parallelism there are none. */
START_TEST(test_breakdown_rows)
{
    static const char *const comms[] = {"p2p", "allgather", "a2a"};
    const TpsStrategy *megatron = tps_strategy_lookup("megatron");
    for (guint i = 0; i < G_N_ELEMENTS(comms); i++) {
        g_auto(TpsScenario) sc = {0};
        load_ok(&sc, 4, 2, comms[i], 0, 8);
        TpsResult r;
        g_autoptr(GError) error = NULL;
        ck_assert_msg(tps_simulate(&sc, megatron, &r, &error), "%s", error ? error->message : "");
        const TpsGemmBreakdown *f = &r.cp_attention[0], *b = &r.cp_attention[1];
        ck_assert(f->present && b->present);
        ck_assert_str_eq(f->schedule, comms[i]);
        ck_assert_double_eq_tol(f->comm_ms + b->comm_ms, r.cp_comm_ms, 1e-6);
        ck_assert_double_eq_tol(f->exposed_ms + b->exposed_ms, r.cp_exposed_ms, 1e-6);
        ck_assert(f->comm_ms > 0 && b->comm_ms > 0);
        ck_assert(f->gemm_ms > 0 && f->gemm_ms <= f->time_ms && b->gemm_ms <= b->time_ms);
        ck_assert_double_eq_tol(f->efficiency, 1.0 - f->exposed_ms / f->comm_ms, 1e-3);
    }
    g_auto(TpsScenario) none = {0};
    load_ok(&none, 4, 1, "p2p", 0, 8);
    TpsResult r;
    ck_assert(tps_simulate(&none, megatron, &r, NULL));
    ck_assert(!r.cp_attention[0].present && !r.cp_attention[1].present);
}
END_TEST

static Suite *
suite(void)
{
    Suite *s = suite_create("cp-a2a");
    TCase *tc = tcase_create("core");
    tcase_add_loop_test(tc, test_a2a_placement, 0, G_N_ELEMENTS(placement_cases));
    tcase_add_test(tc, test_a2a_graph);
    tcase_add_test(tc, test_hybrid_graph);
    tcase_add_test(tc, test_a2a_memory);
    tcase_add_test(tc, test_breakdown_rows);
    tcase_add_loop_test(tc, test_a2a_refusals, 0, G_N_ELEMENTS(refusal_cases));
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return tps_test_run(suite());
}
