/* Context parallelism's ring attention (sched/cp-ring.h) and what it
 * touches around the layer: the chunks of each CP rank, each ring step's
 * causal block, the flash-attention cost of a block, the bytes of a K/V
 * block and where it goes on the topology, the ring's streams (the send
 * beside the compute), the buffers and activations it holds. Every
 * expected figure is worked out by hand in its comment. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "test-util.h"

#include "cost/kernel-cost.h"
#include "io/input/scenario-file.h"
#include "sched/builder.h"
#include "sched/cp-ring.h"
#include "sched/layer.h"
#include "sched/pipeline.h"
#include "sched/placement.h"

/* Megatron's load balancing: 2 cp chunks, rank i holds i and 2cp-1-i. */
static const struct {
    guint cp, rank, chunks[2];
} chunk_cases[] = {
    {1, 0, {0, 1}}, {2, 0, {0, 3}}, {2, 1, {1, 2}},  {4, 0, {0, 7}},
    {4, 1, {1, 6}}, {4, 3, {3, 4}}, {8, 5, {5, 10}},
};

START_TEST(test_chunks)
{
    guint got[2];
    tps_cp_chunks(chunk_cases[_i].cp, chunk_cases[_i].rank, got);
    ck_assert_uint_eq(got[0], chunk_cases[_i].chunks[0]);
    ck_assert_uint_eq(got[1], chunk_cases[_i].chunks[1]);
}
END_TEST

/* At step s rank i holds the K/V of rank (i - s) mod cp. Causal: a query
 * chunk after a key chunk sees it whole, the same chunk its triangle. */
static const struct {
    guint cp, rank, step;
    gboolean causal;
    guint q, kv;
    gboolean diagonal;
} block_cases[] = {
    /* Its own chunks {0, 7}: (0,0) and (7,7) triangles, (7,0) whole,
     * (0,7) masked: both query and key chunks, the causal kernel. */
    {4, 0, 0, TRUE, 2, 2, TRUE},
    /* Rank 0 with rank 3's K/V {3, 4}: only query chunk 7 sees them,
     * both: the second half of the queries against all keys. */
    {4, 0, 1, TRUE, 1, 2, FALSE},
    /* Rank 2 ({2, 5}) with rank 1's {1, 6}: (2,1) and (5,1) whole, chunk 6
     * masked for both: all queries against the first key chunk. */
    {4, 2, 1, TRUE, 2, 1, FALSE},
    /* Rank 1 ({1, 2}) of cp 2 with rank 0's {0, 3}: (1,0), (2,0). */
    {2, 1, 1, TRUE, 2, 1, FALSE},
    /* No mask: every pair, every step. */
    {4, 0, 0, FALSE, 2, 2, FALSE},
    {4, 0, 3, FALSE, 2, 2, FALSE},
};

START_TEST(test_blocks)
{
    TpsCpBlock blk;
    tps_cp_block(block_cases[_i].cp, block_cases[_i].rank, block_cases[_i].step,
                 block_cases[_i].causal, &blk);
    ck_assert_uint_eq(blk.q_chunks, block_cases[_i].q);
    ck_assert_uint_eq(blk.kv_chunks, block_cases[_i].kv);
    ck_assert_int_eq(blk.diagonal, block_cases[_i].diagonal);
}
END_TEST

/* Load balancing: every rank computes as many chunk pairs in all, a
 * diagonal one counting half. cp 4: 2cp x 2cp / 2 = 32 pair units over
 * 4 ranks, 8 each; 2 per step (step 0: one whole pair, two halves). */
START_TEST(test_balanced)
{
    for (guint rank = 0; rank < 4; rank++) {
        double units = 0.0;
        for (guint s = 0; s < 4; s++) {
            TpsCpBlock blk;
            tps_cp_block(4, rank, s, TRUE, &blk);
            units += blk.diagonal ? 2.0 : (double)blk.q_chunks * blk.kv_chunks;
        }
        ck_assert_double_eq_tol(units, 8.0, 1e-12);
    }
}
END_TEST

static void
toy_gpu(TpsHardware *hw)
{
    memset(hw, 0, sizeof(*hw));
    hw->sms = 100;
    hw->peak_tflops[TPS_DTYPE_BF16] = 1000.0;
    hw->flash_fwd_efficiency = 0.5;
    hw->flash_bwd_efficiency = 0.5;
}

/* A toy GPU: 100 SMs of 1000 TFLOP/s in all, 10^4 FLOP/ns each, flash at
 * half of it (5000 FLOP/ns a CTA); one head of 128 channels, bf16. */
START_TEST(test_block_cost)
{
    TpsHardware hw;
    toy_gpu(&hw);
    TpsKernelCost c;
    /* Causal 1024 x 1024 forward: n = 8 query blocks; tiles 8 x 9 / 2 =
     * 36 of 4 x 128 x 128 x 128 = 8388608 FLOPs: 301989888 (0.5625 of the
     * full 536870912); a CTA on average 4.5 tiles: 37748736 FLOPs, 7549.7
     * ns. */
    tps_cost_flash_attention_block(&hw, TPS_DTYPE_BF16, 1, 1, 1, 1024, 1024, 128, TRUE, FALSE, &c);
    ck_assert_uint_eq(c.ctas, 8);
    ck_assert_double_eq_tol(c.flops, 301989888.0, 1e-3);
    ck_assert_int_eq(c.wave_ns, tps_time_from_ns(37748736.0 / 5000.0));
    /* Q: 512 of the queries against 1024 keys, no mask: 4 CTAs of
     * 4 x 128 x 1024 x 128 = 67108864 FLOPs (13421.8 ns); 4 x 512 x 1024 x
     * 128 = 268435456 in all; bytes (Q, O of 512, K, V of 1024) x 128 x 2 =
     * (1024 + 2048) x 256 = 786432. */
    tps_cost_flash_attention_block(&hw, TPS_DTYPE_BF16, 1, 1, 1, 512, 1024, 128, FALSE, FALSE, &c);
    ck_assert_uint_eq(c.ctas, 4);
    ck_assert_double_eq_tol(c.flops, 268435456.0, 1e-3);
    ck_assert_int_eq(c.wave_ns, tps_time_from_ns(67108864.0 / 5000.0));
    ck_assert_double_eq_tol(c.hbm_bytes, 786432.0, 1e-6);
    /* Its backward: a CTA per block of the 1024 keys (8), each over the
     * 512 queries: 10 x 128 x 512 x 128 = 83886080 FLOPs; bytes doubled. */
    tps_cost_flash_attention_block(&hw, TPS_DTYPE_BF16, 1, 1, 1, 512, 1024, 128, FALSE, TRUE, &c);
    ck_assert_uint_eq(c.ctas, 8);
    ck_assert_int_eq(c.wave_ns, tps_time_from_ns(83886080.0 / 5000.0));
    ck_assert_double_eq_tol(c.hbm_bytes, 1572864.0, 1e-6);
    /* The full square without a mask is the unsplit kernel's. */
    TpsKernelCost whole;
    tps_cost_flash_attention_block(&hw, TPS_DTYPE_BF16, 2, 4, 2, 2048, 2048, 128, FALSE, TRUE, &c);
    tps_cost_flash_attention_gqa(&hw, TPS_DTYPE_BF16, 2, 4, 2, 2048, 128, TRUE, &whole);
    ck_assert_uint_eq(c.ctas, whole.ctas);
    ck_assert_int_eq(c.wave_ns, whole.wave_ns);
    ck_assert_double_eq_tol(c.flops, whole.flops, 1e-3);
    ck_assert_double_eq_tol(c.hbm_bytes, whole.hbm_bytes, 1e-3);
}
END_TEST

/* Llama-3-8B-like shapes at 32K, TP `tp`, CP `cp` on DGX H100 nodes. */
static void
load_cp(TpsScenario *sc, guint tp, guint cp, gboolean causal)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *text = g_strdup_printf(
        "name: cp\nhardware: h100-sxm\n"
        "model: {hidden: 4096, heads: 32, kv_heads: 8, ffn_hidden: 14336, mlp: swiglu, "
        "norm: rmsnorm, position_embedding: rope, bias: false, layers: 32, seq_len: 32768, "
        "causal: %s}\n"
        "training: {micro_batch: 1, global_batch: 8}\n"
        "parallel: {tp: %u, sp: true, cp: %u}\n",
        causal ? "true" : "false", tp, cp);
    ck_assert_msg(tps_scenario_file_load_string("cp", text, -1, sc, &error), "%s",
                  error ? error->message : "");
}

/* One K/V block: K and V of two chunks, 2 x 2 x 8192 tokens (32768 / 4)
 * x 2 K/V heads (8 / tp 4) x 128 x 2 bytes = 16777216. */
START_TEST(test_kv_bytes)
{
    const TpsCpAttn a = {.batch = 1,
                         .heads = 8,
                         .kv_heads = 2,
                         .head_dim = 128,
                         .chunk = 8192,
                         .elt = 2.0,
                         .prefix = "l0."};
    ck_assert_double_eq_tol(tps_cp_kv_bytes(&a), 16777216.0, 1e-6);
}
END_TEST

/* Where the ring goes: TP4 CP2 on one DGX H100 node: CP rank 1 is GPUs
 * 4-7 of node 0 (NVLink). TP8 CP2: GPUs 8-15, node 1: over the NICs, the
 * eight of node 1 a pool of 8 x 48 GB/s held by the first peer. */
START_TEST(test_ring_placement)
{
    g_auto(TpsScenario) near = {0};
    load_cp(&near, 4, 2, TRUE);
    ck_assert_uint_eq(tps_place_layer_ranks(&near), 8);
    TpsPlace place[TPS_MAX_RANKS];
    tps_place_layer(&near, place);
    for (guint r = 0; r < 8; r++)
        ck_assert_uint_eq(place[r].domain, 0);
    const guint members[4] = {0, 1, 2, 3};
    guint peers[4];
    tps_place_cp_peers(&near, members, 4, peers);
    for (guint r = 0; r < 4; r++)
        ck_assert_uint_eq(peers[r], 4 + r);

    g_auto(TpsScenario) far = {0};
    load_cp(&far, 8, 2, TRUE);
    tps_place_layer(&far, place);
    for (guint r = 0; r < 16; r++) {
        ck_assert_uint_eq(place[r].domain, r / 8);
        ck_assert_uint_eq(place[r].pool, r / 8 * 8);
        ck_assert_double_eq_tol(place[r].pool_gbps, 8 * 48.0, 1e-9);
    }
    /* CP 4 of TP 4 (4 GPUs a CP rank, 2 a node): the wrap hop from CP rank
     * 3 (GPUs 12-15, node 1) back to 0 leaves the node. */
    g_auto(TpsScenario) wrap = {0};
    load_cp(&wrap, 4, 4, TRUE);
    tps_place_cp_peers(&wrap, members, 4, peers);
    for (guint r = 0; r < 4; r++)
        ck_assert_uint_eq(peers[r], 12 + r);
}
END_TEST

/* Rank 0's spans named `name` (forward layer 0). */
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

/* The ring in the layer graph, TP4 CP4 (two nodes' worth; the slice's
 * neighbour on node 1): forward, 3 sends of a K/V block (2 x 2 x 4096 x 2
 * x 128 x 2 = 8388608 bytes) on the CP stream, each beside an attention
 * block on the compute stream (moved onto the compute stream, no block
 * would run beside it); backward, K/V, then K/V with dK/dV twice, then
 * dK/dV alone: 1, 2, 2, 1 blocks. */
START_TEST(test_ring_graph)
{
    g_auto(TpsScenario) sc = {0};
    load_cp(&sc, 4, 4, TRUE);
    TpsBuilder b;
    TpsRunStats stats;
    tps_builder_init(&b, &sc, TPS_STRATEGY_MEGATRON);
    tps_layer_forward(&b, 0);
    tps_layer_backward(&b, 0);
    ck_assert(tps_engine_run(b.engine, &stats, NULL));
    const double kv = 8388608.0;

    g_autoptr(GPtrArray) sends = spans_named(&b, "l0.cp_kv");
    g_autoptr(GPtrArray) blocks = spans_named(&b, "l0.attn_fwd");
    ck_assert_uint_eq(sends->len, 3);
    ck_assert_uint_eq(blocks->len, 4);
    for (guint i = 0; i < sends->len; i++) {
        const TpsSpan *send = g_ptr_array_index(sends, i);
        ck_assert_double_eq_tol(send->bytes, kv, 1e-6);
        ck_assert_uint_eq(send->stream, b.cp[0]);
        ck_assert_uint_ne(send->stream, b.main[0]);
        /* It travels while a block computes (the ring runs ahead of the
         * compute when the link is the faster: send i + 1 only waits for
         * send i, whose block it forwards). */
        gboolean beside = FALSE;
        for (guint j = 0; j <= i; j++) {
            const TpsSpan *blk = g_ptr_array_index(blocks, j);
            beside |= send->start < blk->end && blk->start < send->end;
        }
        ck_assert_msg(beside,
                      "send %u [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                      ") runs beside no attention block",
                      i, send->start, send->end);
        /* And the next block waits for it. */
        const TpsSpan *next = g_ptr_array_index(blocks, i + 1);
        ck_assert_int_ge(next->start, send->end);
    }
    g_autoptr(GPtrArray) flows = spans_named(&b, "l0.cp_kv.flow");
    ck_assert_uint_eq(flows->len, 3);
    /* Over the NICs (the neighbour is on node 1): the 4 GPUs' flows share
     * their NIC share, 4 x 8 / 8 NICs of 48 GB/s = 192 GB/s, 48 each:
     * 8388608 / 48 = 174763 ns, plus latencies (NCCL's and the network's,
     * a few microseconds; over NVLink it would take some 20 us). */
    const TpsSpan *flow = g_ptr_array_index(flows, 0);
    ck_assert_int_ge(flow->end - flow->start, 174763);
    ck_assert_int_lt(flow->end - flow->start, 174763 + 20000);

    g_autoptr(GPtrArray) back = spans_named(&b, "l0.cp_kv_dkv");
    ck_assert_uint_eq(back->len, 4);
    const double want[4] = {kv, 2 * kv, 2 * kv, kv};
    for (guint i = 0; i < 4; i++)
        ck_assert_double_eq_tol(((const TpsSpan *)g_ptr_array_index(back, i))->bytes, want[i],
                                1e-6);
    tps_builder_clear(&b);
}
END_TEST

static void
load_gather(TpsScenario *sc)
{
    g_autoptr(GError) error = NULL;
    const char *text =
        "name: ag\nhardware: h100-sxm\n"
        "model: {hidden: 4096, heads: 32, kv_heads: 8, ffn_hidden: 14336, mlp: swiglu, "
        "norm: rmsnorm, position_embedding: rope, bias: false, layers: 32, seq_len: 32768, "
        "causal: true}\n"
        "training: {micro_batch: 1, global_batch: 8}\n"
        "parallel: {tp: 4, sp: true, cp: 4, cp_comm: allgather}\n";
    ck_assert_msg(tps_scenario_file_load_string("ag", text, -1, sc, &error), "%s",
                  error ? error->message : "");
}

/* cp_comm allgather, TP4 CP4 (chunks of 4096 tokens): forward, one NCCL
 * kernel of 3 ring steps, one after the other, of one K/V block (8388608
 * bytes each, 25165824 in all) before any attention (the compute stream
 * waits: nothing hides them); then CP rank 0's two chunks, 0 against itself
 * (the causal triangle: n = 32 query tiles, 32 x 33 / 2 = 528 tiles of 4 x
 * 128^2 x 128 = 8388608 FLOPs, a head; 8 heads: 528 x 8388608 x 8 =
 * 35433480192) and 7 against the 8 chunks up to its end (m = 256 key tiles:
 * 32 x 224 + 528 = 7696 tiles, x 8388608 x 8 = 516469817344). Backward, the
 * gather again and the dK/dV reduce-scatter, 3 steps each. */
START_TEST(test_allgather_graph)
{
    g_auto(TpsScenario) sc = {0};
    load_gather(&sc);
    TpsBuilder b;
    TpsRunStats stats;
    tps_builder_init(&b, &sc, TPS_STRATEGY_MEGATRON);
    tps_layer_forward(&b, 0);
    tps_layer_backward(&b, 0);
    ck_assert(tps_engine_run(b.engine, &stats, NULL));
    g_autoptr(GPtrArray) gather = spans_named(&b, "l0.cp_kv_ag");
    g_autoptr(GPtrArray) blocks = spans_named(&b, "l0.attn_fwd");
    g_autoptr(GPtrArray) steps = spans_named(&b, "l0.cp_kv_ag.step");
    g_autoptr(GPtrArray) rs = spans_named(&b, "l0.cp_dkv_rs.step");
    ck_assert_uint_eq(gather->len, 2);
    ck_assert_uint_eq(steps->len, 6);
    ck_assert_uint_eq(rs->len, 3);
    ck_assert_uint_eq(blocks->len, 2);
    const TpsSpan *last = g_ptr_array_index(gather, 0);
    ck_assert_double_eq_tol(last->bytes, 25165824.0, 1e-6);
    for (guint i = 0; i < 3; i++) {
        const TpsSpan *step = g_ptr_array_index(steps, i);
        ck_assert_double_eq_tol(step->bytes, 8388608.0, 1e-6);
        /* One after the other. */
        if (i > 0)
            ck_assert_int_ge(step->start, ((const TpsSpan *)g_ptr_array_index(steps, i - 1))->end);
    }
    const double flops[2] = {35433480192.0, 516469817344.0};
    for (guint j = 0; j < 2; j++) {
        const TpsSpan *blk = g_ptr_array_index(blocks, j);
        ck_assert_int_ge(blk->start, last->end);
        ck_assert_double_eq_tol(blk->flops, flops[j], 1.0);
    }
    tps_builder_clear(&b);
}
END_TEST

/* Memory. Activations per layer scale with a CP rank's tokens: cp 2 keeps
 * half of cp 1's. The ring's buffers, TP4 CP4, chunk 4096 tokens, a Q row
 * 8 heads x 128 x 2 = 2048 bytes, a K/V row 2 x 2 x 128 x 2 = 1024:
 * forward 3 x 2 x 4096 x 1024 (25165824) + 5 x 4096 x 2048 (41943040) =
 * 67108864; backward 2 x 2 x (2 x 4096 x 1024) = 33554432: the larger. */
START_TEST(test_memory)
{
    g_auto(TpsScenario) one = {0};
    g_auto(TpsScenario) two = {0};
    load_cp(&one, 4, 1, TRUE);
    load_cp(&two, 4, 2, TRUE);
    ck_assert_double_eq_tol(tps_layer_activation_bytes(&two),
                            tps_layer_activation_bytes(&one) / 2.0, 1e-6);
    ck_assert_double_eq(tps_cp_buffer_bytes(&one), 0.0);
    g_auto(TpsScenario) four = {0};
    load_cp(&four, 4, 4, TRUE);
    ck_assert_double_eq_tol(tps_cp_buffer_bytes(&four), 67108864.0, 1e-6);
}
END_TEST

static Suite *
suite(void)
{
    Suite *s = suite_create("cp-ring");
    TCase *tc = tcase_create("core");
    tcase_add_loop_test(tc, test_chunks, 0, G_N_ELEMENTS(chunk_cases));
    tcase_add_loop_test(tc, test_blocks, 0, G_N_ELEMENTS(block_cases));
    tcase_add_test(tc, test_balanced);
    tcase_add_test(tc, test_block_cost);
    tcase_add_test(tc, test_kv_bytes);
    tcase_add_test(tc, test_ring_placement);
    tcase_add_test(tc, test_ring_graph);
    tcase_add_test(tc, test_allgather_graph);
    tcase_add_test(tc, test_memory);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return tps_test_run(suite());
}
