/* NCCL ring collective model: the 8 x A100 all-reduce curve of the
 * calibration set, the ring formula, protocol choice, channel reduction.
 * The hardware is the a100-sxm4-80gb model written out here (this program
 * links only the cost layer); test-model-file checks the YAML matches. */
#include <check.h>

#include "test-util.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cost/collective.h"
#include "cost/nccl-env.h"
#include "cost/collective-nvls.h"
#include "cost/collective-nvls-tree.h"
#include "cost/kernel-cost.h"
#include "cost/nccl-tuning.h"

static void
a100_fixture(TpsHardware *hw)
{
    *hw = (TpsHardware){
        .sms = 108,
        .launch_us = 3.0,
        .gpus_per_node = 8,
        .nvlink_gbps = 300,
        .nvlink_efficiency = 0.80,
        .nics_per_node = 8,
        .nic_gbps = 24,
        .net_duplex_efficiency = 1.0,
        .network_latency_us = 2.7,
        .nccl_channels = 24,
        .nccl_threads = 512,
        .nccl_base_latency_us = {6.6, 14.0, 8.4},
        .nccl_hw_latency_us = {0.6, 1.9, 3.4},
        .nccl_net_latency_us = {2.7, 4.0, 14.0},
        .nccl_channel_gbps = {3.654, 20.0, 9.689},
        .nccl_proto_efficiency = {0.5, 0.9375, 1.0},
        .nccl_slot_bytes = {4096, 81920, 131072},
        .mem_nccl_buffer_kib = {512, 4800, 4096},
        .nccl_nvls_efficiency = 0.85,
    };
}

/* calib: a100_sxm4.nccl_all_reduce_busbw_8gpu, 1 MB to 8 GB. */
static const struct {
    double bytes, busbw;
} curve[] = {
    {1048576, 36.22},     {2097152, 53.54},     {4194304, 71.43},     {8388608, 89.99},
    {16777216, 109.22},   {33554432, 132.77},   {67108864, 166.63},   {134217728, 174.18},
    {268435456, 213.87},  {536870912, 221.58},  {1073741824, 228.10}, {2147483648, 230.22},
    {4294967296, 230.48}, {8589934592, 231.58},
};

START_TEST(test_all_reduce_curve)
{
    TpsHardware hw;
    TpsCollPlan plan;
    a100_fixture(&hw);
    tps_coll_plan(&hw, TPS_COLL_ALL_REDUCE, curve[_i].bytes, 8, &plan);
    /* What nccl-tests times: the kernel launch and the collective. */
    TpsTime t = tps_coll_time_ns(&hw, &plan) + tps_cost_launch_ns(&hw);
    double busbw = tps_coll_busbw_gbps(TPS_COLL_ALL_REDUCE, 8, curve[_i].bytes, t);
    printf("# all-reduce %.0f B: measured %.2f, model %.2f GB/s (%+.1f%%), %s, %u channels\n",
           curve[_i].bytes, curve[_i].busbw, busbw, (busbw / curve[_i].busbw - 1) * 100,
           tps_protocol_names[plan.protocol], plan.channels);
    fflush(stdout);
    ck_assert_double_eq_tol(busbw / curve[_i].busbw, 1.0, 0.15);
}
END_TEST

START_TEST(test_all_gather_ring_formula)
{
    /* 1 GiB all-gather on 8 ranks, Simple, 24 channels, by hand:
     *   step  = 2^30 / 8 = 134217728 B
     *   link  = 300 x 0.8 = 240 B/ns -> 559240.5 -> 559241 ns
     *   cap   = 24 x 9.689 = 232.536 B/ns -> 577191.6 -> 577192 ns
     *   lat   = 3400 + min(134217728 / 24, 131072) / min(9.689, 240 / 24)
     *         = 3400 + 13527.9 -> 16928 ns
     *   time  = 8400 + 7 x (16928 + 577192) = 4167240 ns */
    TpsHardware hw;
    TpsCollPlan plan;
    a100_fixture(&hw);
    tps_coll_plan(&hw, TPS_COLL_ALL_GATHER, 1073741824.0, 8, &plan);
    ck_assert_int_eq(plan.protocol, TPS_PROTO_SIMPLE);
    ck_assert_uint_eq(plan.steps, 7);
    ck_assert_uint_eq(plan.channels, 24);
    ck_assert_double_eq_tol(plan.step_bytes, 134217728.0, 1e-6);
    ck_assert_double_eq_tol(plan.wire_bytes, 134217728.0, 1e-6);
    ck_assert_double_eq_tol(plan.rate_cap_gbps, 232.536, 1e-9);
    ck_assert_int_eq(plan.base_ns, 8400);
    ck_assert_int_eq(plan.step_latency_ns, 16928);
    ck_assert_int_eq(tps_coll_time_ns(&hw, &plan), 4167240);
    ck_assert(!plan.crosses_nodes);
}
END_TEST

/* The pipeline fill of a Simple ring step inside an NVLink domain is the
 * first of NCCL's two slices of a channel's chunk (SlicePerChunk 2, a
 * slice at least 2 x (4 MiB / 8) / 32 = 32768 B), at most slot_bytes
 * 131072; across NVLink domains it stays the chunk. Forced Ring Simple,
 * 24 channels at 9.689 B/ns, hop 3400 ns (network 14000 ns); times in ns
 * rounded up as tps_time_from_ns does. */
static const struct {
    double bytes;
    guint ranks;
    TpsTime step_latency_ns;
} fill_cases[] = {
    /* 16 MiB on 8: chunk 2097152 / 24 = 87381.3, slice 43690.7 B:
     * 3400 + 43690.7 / 9.689 (4509.3) = 7909.3, 7910 ns rounded up (the chunk: 12419). */
    {16777216, 8, 7910},
    /* 4 MiB on 8: chunk 21845.3, below the 32768 B slice: the chunk,
     * 3400 + 21845.3 / 9.689 (2254.7) = 5655 (half of it: 4527). */
    {4194304, 8, 5655},
    /* 8 MiB on 8: chunk 43690.7, slice max(21845.3, 32768) = 32768:
     * 3400 + 3382.0 = 6782 (no floor: 5655; the chunk: 7909). */
    {8388608, 8, 6782},
    /* 1 GiB on 8: slice 2796202.7 capped at 131072: 3400 + 13527.9 = 16928. */
    {1073741824, 8, 16928},
    /* 16 MiB on 16 over two domains: link min(240, 8 x 24) = 192, share
     * min(9.689, 192 / 24) = 8; chunk 1048576 / 24 = 43690.7 whole:
     * 14000 + 5461.3, 19462 rounded up (the slice rule: 14000 + 4096 = 18096). */
    {16777216, 16, 19462},
};

START_TEST(test_simple_slice_fill)
{
    TpsHardware hw;
    TpsCollPlan plan;
    a100_fixture(&hw);
    hw.nccl_algo = (char *)"Ring";
    hw.nccl_proto = (char *)"Simple";
    tps_coll_plan(&hw, TPS_COLL_ALL_REDUCE, fill_cases[_i].bytes, fill_cases[_i].ranks, &plan);
    ck_assert_int_eq(plan.protocol, TPS_PROTO_SIMPLE);
    ck_assert_uint_eq(plan.channels, 24);
    ck_assert_int_eq(plan.step_latency_ns, fill_cases[_i].step_latency_ns);
}
END_TEST

START_TEST(test_reduce_scatter_equals_all_gather)
{
    TpsHardware hw;
    TpsCollPlan ag, rs, ar;
    a100_fixture(&hw);
    tps_coll_plan(&hw, TPS_COLL_ALL_GATHER, 50331648.0, 8, &ag);
    tps_coll_plan(&hw, TPS_COLL_REDUCE_SCATTER, 50331648.0, 8, &rs);
    tps_coll_plan(&hw, TPS_COLL_ALL_REDUCE, 50331648.0, 8, &ar);
    ck_assert_int_eq(tps_coll_time_ns(&hw, &ag), tps_coll_time_ns(&hw, &rs));
    ck_assert_uint_eq(ar.steps, 14);
    ck_assert_int_gt(tps_coll_time_ns(&hw, &ar), tps_coll_time_ns(&hw, &ag));
}
END_TEST

/* cap: channels x the channel rate, LL128's being Simple's 9.689 x its
 * payload fraction 0.9375 = 9.0834 (below its own 20): 24 x 9.0834 =
 * 218.00. With that, 32 MiB goes to Simple: per step (2.4 MB) LL128 loses
 * 0.7 us of rate and 0.7 us of slot fill, gains 1.5 us of hop latency, and
 * pays 5.6 us more base latency. */
static const struct {
    double bytes;
    TpsProtocol protocol;
    guint channels;
    double cap;
} choices[] = {
    /* LL: channels reduced while bytes < nc x 512 threads x 8 x 8 ranks. */
    {1024, TPS_PROTO_LL, 1, 3.654},
    {65536, TPS_PROTO_LL, 2, 7.308},
    {524288, TPS_PROTO_LL, 16, 58.464},
    {1048576, TPS_PROTO_LL, 24, 87.696},
    /* 8 MiB, per step per channel a chunk of 1 MiB / 24 = 43690.7 B:
     * Simple: fill of its first slice max(43690.7 / 2, 32768) = 32768 B at
     * 9.689 = 3382 ns, + 3400 hop + max(1048576 / 240, / 232.536) 4509 =
     * 11291 x 14 + 8400 = 166474 ns; LL128: fill min(43690.7, 81920) /
     * 9.0834 = 4810, + 1900 + 4810 = 11520 x 14 + 14000 = 175280 ns. */
    {8388608, TPS_PROTO_SIMPLE, 24, 232.536},
    {33554432, TPS_PROTO_SIMPLE, 24, 232.536},
    {1073741824, TPS_PROTO_SIMPLE, 24, 232.536},
    {8589934592, TPS_PROTO_SIMPLE, 24, 232.536},
};

START_TEST(test_protocol_and_channels)
{
    TpsHardware hw;
    TpsCollPlan plan;
    a100_fixture(&hw);
    tps_coll_plan(&hw, TPS_COLL_ALL_REDUCE, choices[_i].bytes, 8, &plan);
    ck_assert_str_eq(tps_protocol_names[plan.protocol], tps_protocol_names[choices[_i].protocol]);
    ck_assert_uint_eq(plan.channels, choices[_i].channels);
    ck_assert_double_eq_tol(plan.rate_cap_gbps, choices[_i].cap, 1e-9);
}
END_TEST

/* A channel's user-buffer streams in series with its link
 * (nccl.channel_mem_gbps), with the A100 model's 12.42 and 50.4 GB/s:
 * per channel 1 / (1/12.42 + u/50.4), u the user chunks per step, x 24
 * channels. By hand: 1/12.42 = 0.0805153; all-reduce of 2, 4, 8 ranks, u
 * = 4/2, 8/6, 16/14: + 0.0396825, 0.0264550, 0.0226757 -> 24 / 0.1201978
 * = 199.671, 24 / 0.1069703 = 224.362, 24 / 0.1031910 = 232.579 (vTrain's
 * 1 GiB plateaus: 197.28, 221.86, 229.35); all-gather of 2 ranks, u = 3/1:
 * + 0.0595238 -> 24 / 0.1400391 = 171.381. */
static const struct {
    TpsCollKind kind;
    guint ranks;
    double cap;
} by_ranks[] = {
    {TPS_COLL_ALL_REDUCE, 2, 199.671},
    {TPS_COLL_ALL_REDUCE, 4, 224.362},
    {TPS_COLL_ALL_REDUCE, 8, 232.579},
    {TPS_COLL_ALL_GATHER, 2, 171.381},
};

START_TEST(test_channel_mem_by_ranks)
{
    TpsHardware hw;
    TpsCollPlan plan;
    a100_fixture(&hw);
    hw.nccl_channel_gbps[TPS_PROTO_SIMPLE] = 12.42;
    hw.nccl_channel_mem_gbps = 50.4;
    tps_coll_plan(&hw, by_ranks[_i].kind, 1073741824.0, by_ranks[_i].ranks, &plan);
    ck_assert_int_eq(plan.protocol, TPS_PROTO_SIMPLE);
    ck_assert_uint_eq(plan.channels, 24);
    ck_assert_double_eq_tol(plan.rate_cap_gbps, by_ranks[_i].cap, 2e-3);
}
END_TEST

START_TEST(test_time_monotonic)
{
    TpsHardware hw;
    a100_fixture(&hw);
    TpsTime previous = 0;
    for (double bytes = 1024; bytes <= 8589934592.0; bytes *= 2) {
        TpsCollPlan plan;
        tps_coll_plan(&hw, TPS_COLL_ALL_REDUCE, bytes, 8, &plan);
        TpsTime t = tps_coll_time_ns(&hw, &plan);
        ck_assert_int_ge(t, previous);
        previous = t;
    }
}
END_TEST

START_TEST(test_crossing_nodes)
{
    /* 16 ranks on two DGX: the boundary hop has the node's 8 NICs (192 GB/s)
     * and the network per-hop latency. */
    TpsHardware hw;
    TpsCollPlan plan;
    a100_fixture(&hw);
    tps_coll_plan(&hw, TPS_COLL_ALL_REDUCE, 1073741824.0, 16, &plan);
    ck_assert(plan.crosses_nodes);
    ck_assert_uint_eq(plan.steps, 30);
    TpsTime t = tps_coll_time_ns(&hw, &plan);
    double busbw = tps_coll_busbw_gbps(TPS_COLL_ALL_REDUCE, 16, 1073741824.0, t);
    ck_assert_double_le(busbw, 8 * 24.0);
    ck_assert_double_ge(busbw, 0.8 * 8 * 24.0);
    /* Latency-bound sizes pay the network hop latency. */
    TpsCollPlan small_x, small_in;
    tps_coll_plan(&hw, TPS_COLL_ALL_GATHER, 4096, 16, &small_x);
    tps_coll_plan(&hw, TPS_COLL_ALL_GATHER, 4096, 8, &small_in);
    ck_assert_int_gt(small_x.step_latency_ns, small_in.step_latency_ns);
}
END_TEST

/* A ring across nodes keeps duplex_efficiency of each NIC's rate: two
 * nodes of one GPU, one 24 GB/s NIC each, 1 GiB all-reduced (2 steps of
 * 512 MiB, Simple): by hand, 2 x 512 MiB / (24 x d) GB/s plus 2 x (14 us
 * + a 128 KiB slot at (24 x d) / 24 channels) + 8.4 us, i.e. 45.0 ms at d
 * = 1 and 90.0 ms at d = 0.5: bus bandwidths of 23.84 and 11.93 GB/s. */
static const struct {
    double duplex, busbw;
} duplex_cases[] = {{1.0, 23.84}, {0.5, 11.93}};

START_TEST(test_duplex_across_nodes)
{
    TpsHardware hw;
    TpsCollPlan plan;
    a100_fixture(&hw);
    hw.gpus_per_node = 1;
    hw.nics_per_node = 1;
    hw.net_duplex_efficiency = duplex_cases[_i].duplex;
    tps_coll_plan(&hw, TPS_COLL_ALL_REDUCE, 1073741824.0, 2, &plan);
    ck_assert(plan.crosses_nodes);
    ck_assert_int_eq(plan.protocol, TPS_PROTO_SIMPLE);
    TpsTime t = tps_coll_time_ns(&hw, &plan);
    double busbw = tps_coll_busbw_gbps(TPS_COLL_ALL_REDUCE, 2, 1073741824.0, t);
    ck_assert_double_eq_tol(busbw, duplex_cases[_i].busbw, 0.01);
    /* The engine's NIC carries 24 GB/s each way: it gets the duplex share
     * as the steps' floor. */
    if (duplex_cases[_i].duplex < 1.0)
        ck_assert_double_le(plan.rate_cap_gbps, 24.0 * duplex_cases[_i].duplex + 1e-9);
}
END_TEST

START_TEST(test_single_rank_and_busbw)
{
    TpsHardware hw;
    TpsCollPlan plan;
    a100_fixture(&hw);
    tps_coll_plan(&hw, TPS_COLL_ALL_REDUCE, 1e6, 1, &plan);
    ck_assert_uint_eq(plan.steps, 0);
    ck_assert_int_eq(tps_coll_time_ns(&hw, &plan), 0);
    /* 1 GB in 10 ms on 8 ranks: algbw 100, busbw 175 (AR) and 87.5 (AG). */
    ck_assert_double_eq_tol(tps_coll_busbw_gbps(TPS_COLL_ALL_REDUCE, 8, 1e9, 10000000), 175.0,
                            1e-9);
    ck_assert_double_eq_tol(tps_coll_busbw_gbps(TPS_COLL_ALL_GATHER, 8, 1e9, 10000000), 87.5, 1e-9);
    ck_assert_str_eq(tps_coll_kind_names[TPS_COLL_REDUCE_SCATTER], "ReduceScatter");
}
END_TEST

/* User-buffer HBM bytes per step, 8 MiB over 8 ranks (1 MiB chunks): an
 * all-gather reads its chunk and writes 8 (9 chunks over 7 steps), a
 * reduce-scatter reads 8 and writes 1 (the same), an all-reduce both (16
 * chunks over 14 steps). */
static const struct {
    TpsCollKind kind;
    double chunks_per_step;
} user_hbm[] = {
    {TPS_COLL_ALL_GATHER, 9.0 / 7.0},
    {TPS_COLL_REDUCE_SCATTER, 9.0 / 7.0},
    {TPS_COLL_ALL_REDUCE, 16.0 / 14.0},
};

START_TEST(test_hbm_per_step)
{
    TpsHardware hw;
    TpsCollPlan plan;
    a100_fixture(&hw);
    tps_coll_plan(&hw, user_hbm[_i].kind, 8.0 * 1048576, 8, &plan);
    ck_assert_double_eq_tol(plan.hbm_step_bytes, user_hbm[_i].chunks_per_step * 1048576, 1e-6);
}
END_TEST

/* The sender's kernel of one send to a peer on the same node, with the
 * A100 model's p2p keys: 8 channels, 4 MiB Simple FIFOs, channel_mem_gbps
 * 50.4. By hand: a piece is max(64 KiB, bytes / 8) rounded up to 64 KiB;
 * up to 16 KiB, LL: 6.6 + 0.6 us + piece / 3.654 GB/s; a Simple piece
 * that fits its FIFO: 8.4 us + ceil(piece / 512 KiB) x 3.4 us + piece /
 * 50.4 GB/s; a larger one: 8.4 + 3.4 us + bytes / 240 GB/s (300 x 0.8).
 * p2p_channels 0 is the last formula for every size. */
static const struct {
    double bytes;
    guint channels;
    double ns;
} p2p_cases[] = {
    {2048, 8, 7200 + 2048 / 3.654},                  /* LL: 7760.5 */
    {100000, 8, 11800 + 65536 / 50.4},               /* 2 pieces of 64 KiB: 13100.3 */
    {1048576, 8, 11800 + 131072 / 50.4},             /* 8 x 128 KiB, 1 step: 14400.6 */
    {8388608, 8, 8400 + 2 * 3400 + 1048576 / 50.4},  /* 8 x 1 MiB, 2 steps: 36005.1 */
    {33554432, 8, 8400 + 8 * 3400 + 4194304 / 50.4}, /* 8 x 4 MiB = the FIFO: 118820.3 */
    {33554433, 8, 11800 + 33554433 / 240.0}, /* a piece of 4 MiB + 64 KiB: paced, 151610.1 */
    {1048576, 0, 11800 + 1048576 / 240.0},   /* no p2p channels: 16169.1 */
};

START_TEST(test_p2p_send)
{
    TpsHardware hw;
    a100_fixture(&hw);
    hw.nccl_channel_mem_gbps = 50.4;
    hw.mem_nccl_buffer_kib[TPS_PROTO_SIMPLE] = 4096;
    hw.nccl_p2p_channels = p2p_cases[_i].channels;
    TpsTime t = tps_p2p_send_ns(&hw, p2p_cases[_i].bytes);
    ck_assert_msg(fabs((double)t - p2p_cases[_i].ns) <= 1.0,
                  "%.0f B: %" G_GINT64_FORMAT " ns, expected %.1f", p2p_cases[_i].bytes, t,
                  p2p_cases[_i].ns);
}
END_TEST

/* ---- Channels follow the links ---- */

/* The fixture's 24 channels were counted at 300 GB/s of NVLink: by hand
 * round(24 x nvlink / 300), at most max_channels 64 and the 108 SMs (40
 * in the last row). */
static const struct {
    double nvlink, counted_at;
    guint sms, channels;
    TpsChannelCap cap;
} link_channels[] = {
    {150, 300, 108, 12, TPS_CHANNELS_LINK}, {300, 300, 108, 24, TPS_CHANNELS_LINK},
    {600, 300, 108, 48, TPS_CHANNELS_LINK}, {1200, 300, 108, 64, TPS_CHANNELS_MAX},
    {600, 0, 108, 24, TPS_CHANNELS_FIXED},  {600, 300, 40, 40, TPS_CHANNELS_SMS},
};

START_TEST(test_channels_follow_link)
{
    TpsHardware hw;
    a100_fixture(&hw);
    hw.nccl_max_channels = 64;
    hw.nvlink_gbps = link_channels[_i].nvlink;
    hw.nccl_channels_nvlink_gbps = link_channels[_i].counted_at;
    hw.sms = link_channels[_i].sms;
    TpsChannelCap cap;
    ck_assert_uint_eq(tps_coll_channels(&hw, &cap), link_channels[_i].channels);
    ck_assert_int_eq(cap, link_channels[_i].cap);
    TpsCollPlan plan;
    tps_coll_plan(&hw, TPS_COLL_ALL_REDUCE, 1073741824.0, 8, &plan);
    ck_assert_uint_eq(plan.channels, link_channels[_i].channels);
}
END_TEST

/* 1 GiB all-reduced on 8 GPUs (Ring Simple, 14 steps of 128 MiB, no
 * channel_mem term in the fixture), by hand: at 300 GB/s 24 channels x
 * 9.689 = 232.54 GB/s under the 240 GB/s link, a step 3.4 us + 131072 /
 * 9.689 = 13.528 us of fill + 134217728 / 232.54 = 577.19 us, in all
 * 8.4 us + 14 x 594.12 = 8326.1 us; at 600, 48 channels: 465.07 GB/s
 * under 480, step 3.4 + 13.528 + 288.59 = 305.52 us, 4285.7 us; at 1200,
 * 64 channels (the maximum): 620.10 under 960, 233.37 us a step, 3275.6
 * us. */
static const struct {
    double nvlink, us;
} link_times[] = {{300, 8326.1}, {600, 4285.7}, {1200, 3275.6}};

START_TEST(test_ring_time_follows_link)
{
    TpsHardware hw;
    a100_fixture(&hw);
    hw.nccl_max_channels = 64;
    hw.nccl_channels_nvlink_gbps = 300;
    hw.nvlink_gbps = link_times[_i].nvlink;
    TpsCollPlan plan;
    tps_coll_plan(&hw, TPS_COLL_ALL_REDUCE, 1073741824.0, 8, &plan);
    ck_assert_int_eq(plan.algo, TPS_ALGO_RING);
    ck_assert_int_eq(plan.protocol, TPS_PROTO_SIMPLE);
    double us = tps_coll_time_ns(&hw, &plan) / 1e3;
    ck_assert_double_eq_tol(us, link_times[_i].us, 0.001 * link_times[_i].us);
}
END_TEST

/* ---- Algorithms ---- */

/* 16 GPUs on two DGX (8 NICs of 24 GB/s a node: NCCL's graph bandwidth
 * 192 GB/s), all-reduce, NCCL's model by hand (us = latency + bytes /
 * (1e3 x algBw)): Ring LL 6.6 + 28 x 1.0 + 2 x 2.7 = 40.0 us at min(39,
 * 96) x 16/30 = 20.8 GB/s; Ring LL128 14 + 28 x 1.9 + 2 x 4.0 = 75.2 at
 * 176.6 x 16/30 = 94.2; Ring Simple 8.4 + 28 x 3.4 + 2 x 14 = 131.6 at
 * 102.4; Tree LL 6.8 + 2 (7 x 0.6 + 5.0) = 25.2 at 39 x 0.5 = 19.5; Tree
 * LL128 14 + 2 (7 x 1.25 + 8.5) = 48.5 at 165.6 x 0.5 = 82.8; Tree Simple
 * 8.4 + 2 (7 x 4.0 + 14) = 92.4 at 176.6 x 0.5 = 88.3. 1 MiB: Tree LL128
 * 61.2 us beats Ring LL128 86.3 and Tree LL 79.0; 1 GiB: Ring Simple
 * 10617 us beats Ring LL128 11473 and Tree Simple 12157. Simple only:
 * Tree Simple 104.3 against Ring Simple 141.8; ^Ring at 1 GiB: Tree
 * Simple. One node: Ring unless Tree is the list's only algorithm. A
 * ring's protocol is the fastest of this model's rings (LL at 1 MiB: the
 * fixture's LL ring, 2 x 7 steps of 65536 / 0.5 wire bytes at 87.7 GB/s,
 * ~ 2 x 7 x (0.6 + 1.5) + 6.6 = 36 us, against LL128's 14 + 14 x (1.9 +
 * 6.8) = 136 us of latency alone). */
static const struct {
    guint ranks;
    double bytes;
    const char *algo, *proto;
    TpsCollAlgo want_algo;
    TpsProtocol want_proto;
} algo_cases[] = {
    {16, 1048576, NULL, NULL, TPS_ALGO_TREE, TPS_PROTO_LL128},
    {16, 1073741824, NULL, NULL, TPS_ALGO_RING, TPS_PROTO_SIMPLE},
    {16, 1048576, "Ring", NULL, TPS_ALGO_RING, TPS_PROTO_LL},
    {16, 1048576, NULL, "simple", TPS_ALGO_TREE, TPS_PROTO_SIMPLE},
    {16, 1073741824, "^Ring", NULL, TPS_ALGO_TREE, TPS_PROTO_SIMPLE},
    {8, 1048576, NULL, NULL, TPS_ALGO_RING, TPS_PROTO_LL},
    {8, 1048576, "Tree", NULL, TPS_ALGO_TREE, TPS_PROTO_LL128},
};

START_TEST(test_algorithm_choice)
{
    TpsHardware hw;
    a100_fixture(&hw);
    hw.nccl_algo = (char *)algo_cases[_i].algo;
    hw.nccl_proto = (char *)algo_cases[_i].proto;
    TpsCollPlan plan;
    tps_coll_plan(&hw, TPS_COLL_ALL_REDUCE, algo_cases[_i].bytes, algo_cases[_i].ranks, &plan);
    ck_assert_int_eq(plan.algo, algo_cases[_i].want_algo);
    ck_assert_int_eq(plan.protocol, algo_cases[_i].want_proto);
}
END_TEST

/* NCCL's tables by version (NVIDIA/nccl src/graph/tuning.cc at the tags
 * v2.18.6-1, v2.19.3-1, v2.22.3-1, v2.23.4-1, v2.26.6-1, v2.27.7-1,
 * v2.28.9-1): the Tree's
 * Simple base latency and hwLat on NVLink and network, the ring's
 * all-reduce network steps (2 x nodes up to 2.22) and LL share (1/4 up
 * to 2.20). Versions outside 2.18-2.28 and non-versions: NULL. */
static const struct {
    const char *version;
    gboolean known;
    double base, nvlink, net;
    gboolean per_node, quarter, refined;
} versions[] = {
    {NULL, TRUE, 8.4, 4.0, 14.0, FALSE, FALSE, FALSE},
    {"2.18", TRUE, 0.0, 4.0, 14.0, TRUE, TRUE, TRUE},
    {"2.19", TRUE, 0.0, 28.0, 28.0, TRUE, TRUE, TRUE},
    {"2.19.3", TRUE, 0.0, 28.0, 28.0, TRUE, TRUE, TRUE},
    {"2.20.5-1", TRUE, 0.0, 28.0, 28.0, TRUE, TRUE, TRUE},
    {"2.22.3", TRUE, 0.0, 28.0, 28.0, TRUE, FALSE, TRUE},
    {"2.23", TRUE, 8.4, 4.0, 14.0, FALSE, FALSE, TRUE},
    {"2.26.6", TRUE, 8.4, 4.0, 14.0, FALSE, FALSE, TRUE},
    {"2.27", TRUE, 8.4, 4.0, 14.0, FALSE, FALSE, TRUE},
    {"2.28.9", TRUE, 8.4, 4.0, 14.0, FALSE, FALSE, TRUE},
    {"2.17.1", FALSE, 0, 0, 0, FALSE, FALSE, FALSE},
    {"2.29", FALSE, 0, 0, 0, FALSE, FALSE, FALSE},
    {"3.0", FALSE, 0, 0, 0, FALSE, FALSE, FALSE},
    {"2.", FALSE, 0, 0, 0, FALSE, FALSE, FALSE},
    {"2.19.", FALSE, 0, 0, 0, FALSE, FALSE, FALSE},
    {"2.19x", FALSE, 0, 0, 0, FALSE, FALSE, FALSE},
};

START_TEST(test_version_tables)
{
    const TpsNcclTuning *t = tps_nccl_tuning(versions[_i].version);
    if (!versions[_i].known) {
        ck_assert_ptr_null(t);
        return;
    }
    ck_assert_ptr_nonnull(t);
    ck_assert_double_eq(t->tree_base_us[TPS_PROTO_SIMPLE], versions[_i].base);
    ck_assert_double_eq(t->tree_nvlink_us[TPS_PROTO_SIMPLE], versions[_i].nvlink);
    ck_assert_double_eq(t->tree_net_us[TPS_PROTO_SIMPLE], versions[_i].net);
    ck_assert_int_eq(t->ring_net_steps_per_node, versions[_i].per_node);
    ck_assert_int_eq(t->ring_ll_quarter, versions[_i].quarter);
    ck_assert_int_eq(t->refined, versions[_i].refined);
}
END_TEST

/* treeCorrectionFactor, index log2(bytes / 64): Simple 0.7 for 4-8 MiB
 * (index 16), 0.8 for 8-16 MiB (17), 0.7 for 16-64 MiB (18, 19), 0.8 for
 * 64-128 MiB (20), 0.9 for 128-512 MiB (21, 22), 1 from 512 MiB; LL 0.4 at
 * 256-512 KiB (12); under 64 bytes index 0. */
static const struct {
    TpsProtocol p;
    double bytes, factor;
} corrections[] = {
    {TPS_PROTO_SIMPLE, 8388607, 0.7},   {TPS_PROTO_SIMPLE, 8388608, 0.8},
    {TPS_PROTO_SIMPLE, 16777215, 0.8},  {TPS_PROTO_SIMPLE, 16777216, 0.7},
    {TPS_PROTO_SIMPLE, 67108864, 0.8},  {TPS_PROTO_SIMPLE, 134217728, 0.9},
    {TPS_PROTO_SIMPLE, 536870911, 0.9}, {TPS_PROTO_SIMPLE, 536870912, 1.0},
    {TPS_PROTO_LL, 262144, 0.4},        {TPS_PROTO_LL128, 1048576, 0.6},
    {TPS_PROTO_SIMPLE, 10, 0.9},
};

START_TEST(test_tree_correction)
{
    ck_assert_double_eq(tps_nccl_tree_correction(corrections[_i].p, corrections[_i].bytes),
                        corrections[_i].factor);
}
END_TEST

/* NCCL 2.19's choice on 2 x 8 GPUs with a network graph of 28 GB/s
 * (nccl.net_graph_gbps) and LL128 off across nodes, all-reduce, by hand:
 * Ring Simple latency 8.4 + (30 - 2 x 2) x max(3.4, 3 x 1.0) + 2 x 2 x
 * 14 = 152.8 us, x 1.4 (plateau) = 213.92, at 28 x 16/30 = 14.933 GB/s;
 * Tree graph min(2 x 28, 240) = 56, Simple bus 0.92 x 56 = 51.52 x f,
 * algorithm bandwidth 25.76 f, latency 0 + 2 (7 x 28 + 1 x 28) = 448 us
 * (LL rings and trees, 7 and 13.6 GB/s of bus, are far slower here).
 *   12 MiB (f 0.8, 20.608 GB/s): Tree 448 + 610.6 = 1058.6, Ring 213.92 +
 *     842.6 = 1056.5: Ring;
 *   13 MiB: Tree 448 + 661.5 = 1109.5, Ring 213.92 + 912.8 = 1126.8: Tree;
 *   16 MiB - 64 B (f 0.8): Tree 448 + 814.1 = 1262.1, Ring 1337.4: Tree;
 *   16 MiB (f 0.7, 18.032 GB/s): Tree 448 + 930.4 = 1378.4, Ring 213.92 +
 *     1123.5 = 1337.4: Ring.
 * Without nccl.version (the 2.23 constants unrefined) 16 MiB - 64 B is a
 * Ring: Ring 8.4 + 28 x 3.4 + 2 x 14 = 131.6 + 1123.5 = 1255.1 against
 * Tree 8.4 + 2 (7 x 4 + 14) = 92.4 + 16777152 / (1e3 x 0.92 x 28 / 2) =
 * 1394.9. With LL128 allowed across nodes, 2.19's Tree LL128 takes 12 MiB:
 * bus min(51.52 x 120/128 = 48.3, 3 x 20) x 0.9 (its LL128 correction at
 * 8-16 MiB) = 43.47, latency 14 + 2 (7 x 1.25 + 8.5) = 48.5: 48.5 +
 * 12582912 / 21735 = 627.4 us, against Ring LL128's 14 + 26 x 1.9 + 4 x
 * 4.0 = 79.4 + 12582912 / (1e3 x min(0.92 x 28, 3 x 20) x 16/30) = 995.2.
 * 2 x 1 GPUs (2.19 counts 2 x 2 network steps of a 2-step ring: latency
 * 8.4 + (2 - 4) x 3.4 + 4 x 14 = 57.6, x 1.4 = 80.64 us, at 28 GB/s): 16
 * MiB Ring 80.64 + 599.2 = 679.8 against Tree 2 x 28 = 56 + 16777216 /
 * (1e3 x 51.52 x 0.7 / 2) = 986.5; 1 MiB Ring 80.64 + 37.4 = 118.1
 * against Tree 56 + 81.4 = 137.4 (f 0.5) and Ring LL 6.6 - 2 x 1.0 + 4 x
 * 2.7 = 15.4 + 1048576 / (1e3 x min(39, 28/4)) = 165.2. nccl.proto
 * naming LL128 enables it across nodes whatever nccl.no_ll128_net says
 * (NCCL disables only LL128's default, 2; a list sets it 1): 12 MiB is
 * again 2.19's Tree LL128. */
static const struct {
    const char *version;
    guint no_ll128;
    const char *proto;
    guint ranks;
    double bytes;
    TpsCollAlgo want_algo;
    TpsProtocol want_proto;
} version_choices[] = {
    {"2.19", 1, NULL, 16, 12582912, TPS_ALGO_RING, TPS_PROTO_SIMPLE},
    {"2.19", 1, NULL, 16, 13631488, TPS_ALGO_TREE, TPS_PROTO_SIMPLE},
    {"2.19", 1, NULL, 16, 16777152, TPS_ALGO_TREE, TPS_PROTO_SIMPLE},
    {"2.19", 1, NULL, 16, 16777216, TPS_ALGO_RING, TPS_PROTO_SIMPLE},
    {NULL, 1, NULL, 16, 16777152, TPS_ALGO_RING, TPS_PROTO_SIMPLE},
    {"2.19", 0, NULL, 16, 12582912, TPS_ALGO_TREE, TPS_PROTO_LL128},
    {"2.19", 1, NULL, 2, 16777216, TPS_ALGO_RING, TPS_PROTO_SIMPLE},
    {"2.19", 1, NULL, 2, 1048576, TPS_ALGO_RING, TPS_PROTO_SIMPLE},
    {"2.19", 1, "LL128,Simple", 16, 12582912, TPS_ALGO_TREE, TPS_PROTO_LL128},
};

START_TEST(test_version_choice)
{
    TpsHardware hw;
    a100_fixture(&hw);
    hw.nccl_channels = 3;
    hw.nccl_net_graph_gbps = 28.0;
    hw.nccl_version = (char *)version_choices[_i].version;
    hw.nccl_no_ll128_net = version_choices[_i].no_ll128;
    hw.nccl_proto = (char *)version_choices[_i].proto;
    if (version_choices[_i].ranks == 2)
        hw.gpus_per_node = 1;
    TpsCollPlan plan;
    tps_coll_plan(&hw, TPS_COLL_ALL_REDUCE, version_choices[_i].bytes, version_choices[_i].ranks,
                  &plan);
    ck_assert_msg(plan.algo == version_choices[_i].want_algo &&
                      plan.protocol == version_choices[_i].want_proto,
                  "case %d: %s %s", _i, tps_coll_algo_names[plan.algo],
                  tps_protocol_names[plan.protocol]);
}
END_TEST

/* Tree across two DGX, 1 MiB LL128: two steps (reduce up, broadcast down)
 * of the whole buffer, 1048576 / 0.9375 = 1118481 wire bytes each, on
 * NVLink (240 GB/s; the NICs carry half a step each way: 2 x 192 x 1),
 * after the Tree LL128 base latency of 14 us; each step pays 7 NVLink hops
 * of 1.25 us and 1 network hop of 8.5 us besides the pipeline fill. */
START_TEST(test_tree_plan)
{
    TpsHardware hw;
    a100_fixture(&hw);
    TpsCollPlan plan;
    tps_coll_plan(&hw, TPS_COLL_ALL_REDUCE, 1048576, 16, &plan);
    ck_assert_int_eq(plan.algo, TPS_ALGO_TREE);
    ck_assert_uint_eq(plan.steps, 2);
    ck_assert_double_eq_tol(plan.step_bytes, 1048576, 1e-6);
    ck_assert_double_eq_tol(plan.wire_bytes, 1118481.07, 0.01);
    ck_assert_double_eq_tol(plan.link_gbps, 240.0, 1e-9);
    ck_assert_int_eq(plan.base_ns, 14000);
    ck_assert_int_ge(plan.step_latency_ns, 7 * 1250 + 8500);
    ck_assert(plan.crosses_nodes);
}
END_TEST

/* NVLS on one 8-GPU NVSwitch domain (nccl.nvls 1, 16 CTAs). NCCL's model
 * at 1 GiB: NVLS bus bandwidth 240 x 0.85 x 15/16 x 2 = 382.5, x 8/14 =
 * 218.6 GB/s after 25 us: 4937 us, against Ring Simple 56 us + 1 GiB /
 * 137.1 = 7885 us; at 64 KiB Ring LL (15 us + 65536 / 50.1 = 16.3 us)
 * beats NVLS's 25.3 us. The NVLS plan, by hand: two steps of 512 MiB
 * payload, 1 GiB x (1 + 1/8) / 2 = 603979776 wire bytes, 16 x 9.689 =
 * 155.02 GB/s of CTAs (slower than 240 GB/s x 603979776 / 536870912):
 * 2 x 536870912 / 155.024 + 25 us = 6951.3 us, on 16 SMs, no per-step
 * latency. All-gather stays on the ring (NVLS: 191.25 x 7/8 = 167.3 GB/s
 * after 25 us, Ring Simple 274.3 GB/s after 32.2 us). */
START_TEST(test_nvls)
{
    TpsHardware hw;
    a100_fixture(&hw);
    hw.nccl_nvls = 1;
    hw.nccl_nvls_channels = 16;
    TpsCollPlan plan;
    tps_coll_plan(&hw, TPS_COLL_ALL_REDUCE, 1073741824.0, 8, &plan);
    ck_assert_int_eq(plan.algo, TPS_ALGO_NVLS);
    ck_assert_uint_eq(plan.channels, 16);
    ck_assert_uint_eq(plan.steps, 2);
    ck_assert_double_eq_tol(plan.wire_bytes, 603979776.0, 1.0);
    ck_assert_double_eq_tol(tps_coll_time_ns(&hw, &plan) / 1e3, 6951.3, 0.5);
    tps_coll_plan(&hw, TPS_COLL_ALL_REDUCE, 65536.0, 8, &plan);
    ck_assert_int_eq(plan.algo, TPS_ALGO_RING);
    ck_assert_int_eq(plan.protocol, TPS_PROTO_LL);
    tps_coll_plan(&hw, TPS_COLL_ALL_GATHER, 1073741824.0, 8, &plan);
    ck_assert_int_eq(plan.algo, TPS_ALGO_RING);
    hw.nccl_nvls = 0;
    tps_coll_plan(&hw, TPS_COLL_ALL_REDUCE, 1073741824.0, 8, &plan);
    ck_assert_int_eq(plan.algo, TPS_ALGO_RING);
    /* Across NVLink domains no NVLS (NVLS_TREE there: test_nvls_tree). */
    hw.nccl_nvls = 1;
    tps_coll_plan(&hw, TPS_COLL_ALL_REDUCE, 1073741824.0, 16, &plan);
    ck_assert_int_ne(plan.algo, TPS_ALGO_NVLS);
}
END_TEST

/* NVLS only where the domain holds more than two of the group's GPUs
 * (NCCL 2.18-2.28 ncclNvlsInit: gpuCount <= 2, no NVLS). 1 GiB all-reduce,
 * NCCL's model, by hand: 2 ranks, NVLS would be 25 + 1073741.8 / (382.5 x
 * 2/2) = 2832 us against Ring Simple 8.4 + 2 x 3.4 + 1073741.8 / 240 =
 * 4489 us, but NVLS is not offered: Ring; 3 ranks NVLS 25 + 1073741.8 /
 * (382.5 x 3/4) = 3768 us against Ring 8.4 + 4 x 3.4 + 1073741.8 / 180 =
 * 5987: NVLS; 8 ranks NVLS (test_nvls). */
static const struct {
    guint ranks;
    TpsCollAlgo want;
} nvls_ranks[] = {
    {2, TPS_ALGO_RING},
    {3, TPS_ALGO_NVLS},
    {8, TPS_ALGO_NVLS},
};

START_TEST(test_nvls_local_ranks)
{
    TpsHardware hw;
    a100_fixture(&hw);
    hw.nccl_nvls = 1;
    hw.nccl_nvls_channels = 16;
    TpsCollPlan plan;
    tps_coll_plan(&hw, TPS_COLL_ALL_REDUCE, 1073741824.0, nvls_ranks[_i].ranks, &plan);
    ck_assert_int_eq(plan.algo, nvls_ranks[_i].want);
}
END_TEST

/* NCCL_ALGO / NCCL_PROTO lists: bits of Ring 1, Tree 2, NVLS 4, NVLSTree 8,
 * CollNetDirect 16, CollNetChain 32. */
static const struct {
    const char *value;
    gboolean ok;
    guint mask;
    int bad;
} lists[] = {
    {NULL, TRUE, 63, -1},
    {"Ring,tree", TRUE, 3, -1},
    {"^nvls", TRUE, 59, -1},
    {"NVLS", TRUE, 4, -1},
    {"Foo", FALSE, 0, 0},
    {"Ring,Foo", FALSE, 0, 5},
    {"^Ring,Tree,NVLS,NVLSTree,CollNetDirect,CollNetChain", FALSE, 0, -1},
    {"nvlstree", TRUE, 8, -1},
    {"^Ring,Tree,NVLS", TRUE, 56, -1},
    {"CollNetDirect,collnetchain", TRUE, 48, -1},
};

START_TEST(test_parse_list)
{
    guint mask = 99;
    int bad = 99;
    gboolean ok = tps_coll_parse_list(lists[_i].value, tps_coll_algo_names, &mask, &bad);
    ck_assert_int_eq(ok, lists[_i].ok);
    if (ok)
        ck_assert_uint_eq(mask, lists[_i].mask);
    else
        ck_assert_int_eq(bad, lists[_i].bad);
}
END_TEST

/* nccl.algo by function (NCCL 2.24's parseList): the masks of AllGather,
 * ReduceScatter and AllReduce (Ring 1, Tree 2, NVLS 4, NVLSTree 8,
 * CollNetDirect 16, CollNetChain 32; all 63) and the kinds a list set
 * (AllGather 1, ReduceScatter 2, AllReduce 4). A list without a function
 * sets all three; each later one sets its function anew; Broadcast and
 * Reduce are NCCL's but tpsim's kinds none. Offsets of what is wrong:
 * "Tree;" is 5 characters, "AllGather:" 10, "Ring;AllReduce:Ring," 20. */
static const struct {
    const char *value;
    gboolean ok;
    guint ag, rs, ar, covered;
    gboolean prefixed;
    int bad;
    TpsNcclListsError error;
} func_lists[] = {
    {NULL, TRUE, 63, 63, 63, 0, FALSE, -1, TPS_NCCL_LISTS_OK},
    {"Tree", TRUE, 2, 2, 2, 7, FALSE, -1, TPS_NCCL_LISTS_OK},
    {"AllReduce:Tree;AllGather:Ring", TRUE, 1, 63, 2, 5, TRUE, -1, TPS_NCCL_LISTS_OK},
    {"^Tree;allreduce:tree", TRUE, 61, 61, 2, 7, TRUE, -1, TPS_NCCL_LISTS_OK},
    {"Ring;", TRUE, 1, 1, 1, 7, FALSE, -1, TPS_NCCL_LISTS_OK},
    {"Broadcast:Ring", TRUE, 63, 63, 63, 0, TRUE, -1, TPS_NCCL_LISTS_OK},
    {"AllReduce:Tree;AllReduce:NVLS", TRUE, 63, 63, 4, 4, TRUE, -1, TPS_NCCL_LISTS_OK},
    {"Tree;Ring", FALSE, 0, 0, 0, 0, FALSE, 5, TPS_NCCL_LISTS_NO_FUNCTION},
    {"Foo:Ring", FALSE, 0, 0, 0, 0, FALSE, 0, TPS_NCCL_LISTS_UNKNOWN_FUNCTION},
    {"AllGather:Foo", FALSE, 0, 0, 0, 0, FALSE, 10, TPS_NCCL_LISTS_UNKNOWN_NAME},
    {"Ring;AllReduce:Ring,Foo", FALSE, 0, 0, 0, 0, FALSE, 20, TPS_NCCL_LISTS_UNKNOWN_NAME},
    {"AllReduce:^Ring,Tree,NVLS,NVLSTree,CollNetDirect,CollNetChain", FALSE, 0, 0, 0, 0, FALSE, -1,
     TPS_NCCL_LISTS_NOTHING},
};

START_TEST(test_parse_function_lists)
{
    TpsNcclLists l;
    int bad = 99;
    gboolean ok = tps_nccl_parse_lists(func_lists[_i].value, tps_coll_algo_names, &l, &bad);
    ck_assert_int_eq(ok, func_lists[_i].ok);
    ck_assert_int_eq(bad, func_lists[_i].bad);
    if (!ok) {
        ck_assert_int_eq(l.error, func_lists[_i].error);
        return;
    }
    ck_assert_uint_eq(l.mask[TPS_COLL_ALL_GATHER], func_lists[_i].ag);
    ck_assert_uint_eq(l.mask[TPS_COLL_REDUCE_SCATTER], func_lists[_i].rs);
    ck_assert_uint_eq(l.mask[TPS_COLL_ALL_REDUCE], func_lists[_i].ar);
    ck_assert_uint_eq(l.covered, func_lists[_i].covered);
    ck_assert_int_eq(l.prefixed, func_lists[_i].prefixed);
}
END_TEST

/* Calls nccl.algo leaves nothing for: Tree alone for an all-gather of 8
 * A100s in one node (NCCL has the Tree for all-reduce only). Every
 * release's plan is the ring; NCCL 2.19 to 2.23 run it (the backup
 * ring), 2.18, 2.24 and later and the default constants fail the call,
 * noted for the run, from the memo's plan too (the second call). An
 * all-reduce with Tree alone has it (inside a node only when forced), and
 * the all-gather with "AllReduce:Tree;AllGather:Ring" has the ring. */
static const struct {
    const char *version, *algo;
    TpsCollKind kind;
    gboolean refused;
} refusals[] = {
    {NULL, "Tree", TPS_COLL_ALL_GATHER, TRUE},
    {"2.18", "Tree", TPS_COLL_ALL_GATHER, TRUE},
    {"2.19", "Tree", TPS_COLL_ALL_GATHER, FALSE},
    {"2.23.4", "Tree", TPS_COLL_ALL_GATHER, FALSE},
    {"2.24", "Tree", TPS_COLL_ALL_GATHER, TRUE},
    {"2.28", "Tree", TPS_COLL_ALL_GATHER, TRUE},
    {NULL, "Tree", TPS_COLL_ALL_REDUCE, FALSE},
    {NULL, "AllReduce:Tree;AllGather:Ring", TPS_COLL_ALL_GATHER, FALSE},
    {NULL, "NVLS", TPS_COLL_REDUCE_SCATTER, TRUE}, /* no NVLink SHARP on A100 */
};

START_TEST(test_forced_refusal)
{
    TpsHardware hw;
    a100_fixture(&hw);
    hw.nccl_version = (char *)refusals[_i].version;
    hw.nccl_algo = (char *)refusals[_i].algo;
    hw.nccl_algo_at = (char *)"m.yaml:3:9";
    ck_assert(tps_nccl_take_refusal(&hw, NULL) || TRUE); /* a note of an earlier test */
    for (guint call = 0; call < 2; call++) {
        TpsCollPlan plan;
        tps_coll_plan(&hw, refusals[_i].kind, 1048576.0, 8, &plan);
        ck_assert_int_eq(plan.algo, refusals[_i].kind == TPS_COLL_ALL_REDUCE ? TPS_ALGO_TREE
                                                                             : TPS_ALGO_RING);
        g_autoptr(GError) error = NULL;
        ck_assert_int_eq(tps_nccl_take_refusal(&hw, &error), !refusals[_i].refused);
        if (refusals[_i].refused) {
            g_autofree char *want = g_strdup_printf(
                "m.yaml:3:9: nccl.algo '%s' leaves NCCL no algorithm for the %s of 8 ranks in "
                "one NVLink domain",
                refusals[_i].algo, tps_coll_kind_names[refusals[_i].kind]);
            ck_assert_msg(g_str_has_prefix(error->message, want), "%s", error->message);
        }
    }
}
END_TEST

/* The memo of plans is keyed by the hardware's values, not its address:
 * one model changed in place between calls (as a what-if's copy may reuse
 * a freed model's memory) gets the plan of its new values. 1 GiB
 * all-gather on 8 ranks, Simple, 24 channels, by hand from
 * test_all_gather_ring_formula (step 134217728 B, cap 232.536 B/ns:
 * 577192 ns, fill 131072 / 9.689 = 13527.9 ns; base 8400 ns):
 *   as fixture             7 x (3400 + 13528 + 577192) + 8400 = 4167240
 *   hw_latency.simple 5.4  7 x (5400 + 13528 + 577192) + 8400 = 4181240
 *   nvlink_gbps 150: link 120 B/ns, 134217728 / 120 = 1118481.07 ->
 *     1118482 ns a step (times round up); share min(9.689, 120 / 24 = 5):
 *     fill 131072 / 5 = 26214.4, latency 3400 + 26214.4 -> 29615;
 *                          7 x (29615 + 1118482) + 8400 = 8045079
 *   back to the fixture    4167240 (the first plan again) */
static const struct {
    double hw_latency_simple, nvlink_gbps;
    TpsTime want_ns;
} memo_cases[] = {
    {3.4, 300, 4167240},
    {5.4, 300, 4181240},
    {3.4, 150, 8045079},
    {3.4, 300, 4167240},
};

START_TEST(test_memo_follows_values)
{
    TpsHardware hw;
    a100_fixture(&hw);
    for (guint i = 0; i < G_N_ELEMENTS(memo_cases); i++) {
        hw.nccl_hw_latency_us[TPS_PROTO_SIMPLE] = memo_cases[i].hw_latency_simple;
        hw.nvlink_gbps = memo_cases[i].nvlink_gbps;
        TpsCollPlan plan;
        /* Twice: the second call is the memo's. */
        for (guint twice = 0; twice < 2; twice++) {
            tps_coll_plan(&hw, TPS_COLL_ALL_GATHER, 1073741824.0, 8, &plan);
            ck_assert_int_eq(tps_coll_time_ns(&hw, &plan), memo_cases[i].want_ns);
        }
    }
}
END_TEST

/* 2 x 8 H100 (models/h100-sxm.yaml's NVLink, NICs, NCCL channels and NVLS
 * values on the A100 fixture's protocols): NVLink 450 x 0.8 = 360 GB/s,
 * the domain's 8 NICs 8 x 48 = 384 GB/s, 16 NVLS CTAs of 13.76 GB/s.
 * NCCL's model (default table) for an all-reduce of x bytes over 16 ranks:
 *   NVLS_TREE  53 us (25 + 2 x 1 x 14) at min(360, 384) x 5/6 = 300 GB/s;
 *   Tree LL    25.2 us (6.8 + 2 (7 x 0.6 + 5.0)) at min(384 x 0.92 / 3.8,
 *              39) x 0.5 = 19.5 GB/s;
 *   Tree LL128 48.5 us (14 + 2 (7 x 1.25 + 8.5)) at 384 x 0.92 x 120/128
 *              x 0.5 = 165.6 GB/s;
 *   Ring Simple 131.6 us (8.4 + 28 x 3.4 + 2 x 14) at 384 x 16/30 = 204.8.
 * Tree LL128 overtakes Tree LL at 23.3 / (1/19.5e3 - 1/165.6e3) = 513 KB,
 * NVLS_TREE overtakes Tree LL128 at 4.5 / (1/165.6e3 - 1/300e3) = 1.66 MB,
 * and Ring never wins (at 256 MiB: NVLS_TREE 947.8 us, Ring Simple 1442.3).
 * Where Ring is chosen its protocol is tpsim's ring model's fastest
 * (plan_group), not checked here (TPS_PROTO_COUNT).
 * On 4 x 8 the network graph halves for NVLS_TREE (192 x 5/6 = 160 GB/s
 * after 81 us) and Tree LL128 (165.6 after 65.5 us) beats it at every
 * size; at 1 GiB Ring Simple (282.8 + 1073741824 / 198.19e3 = 5700 us)
 * beats Tree Simple (120.4 + 1073741824 / 176.64e3 = 6199 us). */
static void
h100_fixture(TpsHardware *hw)
{
    a100_fixture(hw);
    hw->sms = 132;
    hw->nvlink_gbps = 450;
    hw->nic_gbps = 48;
    hw->nccl_channels = 32;
    hw->nccl_channel_gbps[TPS_PROTO_LL] = 4.406;
    hw->nccl_channel_gbps[TPS_PROTO_LL128] = 36.7;
    hw->nccl_channel_gbps[TPS_PROTO_SIMPLE] = 13.76;
    hw->nccl_nvls = 1;
    hw->nccl_nvls_channels = 16;
}

static const struct {
    guint ranks;
    double bytes;
    guint nvls;
    const char *algo;
    TpsCollAlgo want_algo;
    TpsProtocol want_proto;
} nvls_tree_choices[] = {
    {16, 262144, 1, NULL, TPS_ALGO_TREE, TPS_PROTO_LL},         /* < 513 KB */
    {16, 1048576, 1, NULL, TPS_ALGO_TREE, TPS_PROTO_LL128},     /* 513 KB - 1.66 MB */
    {16, 2097152, 1, NULL, TPS_ALGO_NVLS_TREE, TPS_PROTO_SIMPLE},
    {16, 268435456, 1, NULL, TPS_ALGO_NVLS_TREE, TPS_PROTO_SIMPLE},
    {16, 268435456, 0, NULL, TPS_ALGO_RING, TPS_PROTO_COUNT},  /* no NVLS: no NVLS_TREE */
    {16, 268435456, 1, "^NVLSTree", TPS_ALGO_RING, TPS_PROTO_COUNT},
    {16, 65536, 1, "nvlstree", TPS_ALGO_NVLS_TREE, TPS_PROTO_SIMPLE}, /* forced */
    {32, 4194304, 1, NULL, TPS_ALGO_TREE, TPS_PROTO_LL128},
    {32, 1073741824, 1, NULL, TPS_ALGO_RING, TPS_PROTO_COUNT},
    {32, 1073741824, 1, "NVLSTree", TPS_ALGO_NVLS_TREE, TPS_PROTO_SIMPLE},
    {8, 268435456, 1, "NVLS,NVLSTree", TPS_ALGO_NVLS, TPS_PROTO_SIMPLE}, /* one domain */
};

START_TEST(test_nvls_tree_choice)
{
    TpsHardware hw;
    h100_fixture(&hw);
    hw.nccl_nvls = nvls_tree_choices[_i].nvls;
    hw.nccl_algo = (char *)nvls_tree_choices[_i].algo;
    TpsCollPlan plan;
    tps_coll_plan(&hw, TPS_COLL_ALL_REDUCE, nvls_tree_choices[_i].bytes, nvls_tree_choices[_i].ranks,
                  &plan);
    ck_assert_msg(plan.algo == nvls_tree_choices[_i].want_algo &&
                      (nvls_tree_choices[_i].want_proto == TPS_PROTO_COUNT ||
                       plan.protocol == nvls_tree_choices[_i].want_proto),
                  "case %d: %s %s", _i, tps_coll_algo_names[plan.algo],
                  tps_protocol_names[plan.protocol]);
}
END_TEST

/* NCCL's NVLS_TREE model by release on the H100 fixture (NVLink 450 x
 * 0.8 = 360 GB/s, a network graph of 384 given), 1 MiB all-reduce:
 *   2 x 8, 2.23 and the default: 25 + 2 x 1 x 14 = 53 us at min(360, 384)
 *     x 5/6 = 300 GB/s: 53 + 1048576 / 300e3 = 56.495 us;
 *   2 x 8, 2.19: hwLat[NVLINK] 23: 54.495 us;
 *   2 x 8, 2.18: 23 + 2 (2 - 1) 19 = 61 us at 360 (bwIntra on two nodes)
 *     x 0.70 x 2 / (2 x 1) = 252 GB/s: 61 + 4.161 = 65.161 us;
 *   4 x 8, 2.18: 23 + 2 x 3 x 19 = 137 us at 384 x 0.70 x 4 / 6 = 179.2:
 *     137 + 5.851 = 142.851 us;
 *   4 x 8, 2.23: 25 + 2 x 2 x 14 = 81 us at min(360, 192) x 5/6 = 160:
 *     81 + 6.554 = 87.554 us. */
static const struct {
    const char *version;
    guint ranks;
    double want_us;
} nvls_tree_models[] = {
    {NULL, 16, 56.495},   {"2.23", 16, 56.495}, {"2.19", 16, 54.495},
    {"2.18", 16, 65.161}, {"2.18", 32, 142.851}, {"2.23", 32, 87.554},
};

START_TEST(test_nvls_tree_model_version)
{
    TpsHardware hw;
    h100_fixture(&hw);
    TpsGroupShape shape;
    tps_topo_contiguous_shape(&hw, nvls_tree_models[_i].ranks, &shape);
    const TpsNcclTuning *t = tps_nccl_tuning(nvls_tree_models[_i].version);
    ck_assert_double_eq_tol(tps_nvls_tree_model_us(&hw, t, 1048576.0, &shape, 384.0),
                            nvls_tree_models[_i].want_us, 1e-3);
}
END_TEST

/* NCCL's NVLS model by release on the H100 fixture in one domain (NVLink
 * 450 x 0.8 = 360 GB/s, the graph G; 16 NVLS channels), 1 MiB, by hand
 * (1048576 / 1e3 = 1048.576 B/ns-us):
 *   2.18: all-reduce 23 (baseLat) + 1048.576 / (360 x 5/6 = 300) =
 *     26.495 us; all-gather and reduce-scatter not modelled (-1);
 *   2.19, 2.20: hwLat 23, the 5/6 for all three kinds: 26.495 us;
 *   2.21, 2.22: hwLat 25: 28.495 us for all three;
 *   2.23 to 2.26: all-reduce 28.495; all-gather and reduce-scatter
 *     without the 5/6: 25 + 1048.576 / 360 = 27.913 us;
 *   2.27: all-gather 25 + 1048.576 / (360 x 7/8 = 315) = 28.329 us, on 4
 *     ranks 25 + 1048.576 / (360 x 3/4 = 270) = 28.884; all-reduce 28.495;
 *   2.28 and the default, nvlsEfficiency 0.85: per channel 360 x 0.85 x
 *     15/16 = 286.875; all-reduce x 2 x 8/14 = 327.857: 28.198 us;
 *     all-gather x 7/8 = 251.016: 29.177 us;
 *   0.74 (Blackwell): 360 x 0.74 x 15/16 = 249.75; all-reduce x 2 x 8/14
 *     = 285.429: 28.674 us; all-gather x 7/8 = 218.531: 29.798 us. */
static const struct {
    const char *version;
    TpsCollKind kind;
    guint ranks;
    double efficiency, want_us;
} nvls_models[] = {
    {"2.18", TPS_COLL_ALL_REDUCE, 8, 0.85, 26.495},
    {"2.18", TPS_COLL_ALL_GATHER, 8, 0.85, -1.0},
    {"2.18", TPS_COLL_REDUCE_SCATTER, 8, 0.85, -1.0},
    {"2.19", TPS_COLL_ALL_REDUCE, 8, 0.85, 26.495},
    {"2.19", TPS_COLL_ALL_GATHER, 8, 0.85, 26.495},
    {"2.19.3", TPS_COLL_REDUCE_SCATTER, 8, 0.85, 26.495},
    {"2.20.5", TPS_COLL_ALL_GATHER, 8, 0.85, 26.495},
    {"2.21", TPS_COLL_ALL_REDUCE, 8, 0.85, 28.495},
    {"2.22", TPS_COLL_REDUCE_SCATTER, 8, 0.85, 28.495},
    {"2.23", TPS_COLL_ALL_REDUCE, 8, 0.85, 28.495},
    {"2.23", TPS_COLL_ALL_GATHER, 8, 0.85, 27.913},
    {"2.26.6", TPS_COLL_REDUCE_SCATTER, 8, 0.85, 27.913},
    {"2.27", TPS_COLL_ALL_REDUCE, 8, 0.85, 28.495},
    {"2.27", TPS_COLL_ALL_GATHER, 8, 0.85, 28.329},
    {"2.27.7", TPS_COLL_REDUCE_SCATTER, 4, 0.85, 28.884},
    {"2.28", TPS_COLL_ALL_REDUCE, 8, 0.85, 28.198},
    {"2.28", TPS_COLL_ALL_GATHER, 8, 0.85, 29.177},
    {NULL, TPS_COLL_ALL_REDUCE, 8, 0.85, 28.198},
    {"2.28.9", TPS_COLL_ALL_REDUCE, 8, 0.74, 28.674},
    {NULL, TPS_COLL_ALL_GATHER, 8, 0.74, 29.798},
    {"2.27", TPS_COLL_ALL_REDUCE, 8, 0.74, 28.495}, /* no efficiency before 2.28 */
};

START_TEST(test_nvls_model_version)
{
    TpsHardware hw;
    h100_fixture(&hw);
    hw.nccl_nvls_efficiency = nvls_models[_i].efficiency;
    TpsGroupShape shape;
    tps_topo_contiguous_shape(&hw, nvls_models[_i].ranks, &shape);
    const TpsNcclTuning *t = tps_nccl_tuning(nvls_models[_i].version);
    ck_assert_ptr_nonnull(t);
    const double us = tps_nvls_model_us(&hw, t, nvls_models[_i].kind, 1048576.0, &shape);
    ck_assert_msg(fabs(us - nvls_models[_i].want_us) < 1e-3, "case %d: %.4f us, want %.4f", _i, us,
                  nvls_models[_i].want_us);
}
END_TEST

/* nccl.nvls_efficiency moves the choice, through the memo of plans too:
 * 1 GiB all-reduce on 8 H100, NCCL's model: NVLS at 0.85 (25 us +
 * 1073741.824 / 327.857 = 3300 us) against Ring Simple's 360 x 8/14 =
 * 205.7 GB/s (at least 5219 us); at 0.05, 360 x 0.05 x 15/16 x 2 x 8/14 =
 * 19.3 GB/s (55700 us): the ring. The same model changed in place. */
START_TEST(test_nvls_efficiency_choice)
{
    TpsHardware hw;
    h100_fixture(&hw);
    TpsCollPlan plan;
    hw.nccl_nvls_efficiency = 0.85;
    tps_coll_plan(&hw, TPS_COLL_ALL_REDUCE, 1073741824.0, 8, &plan);
    ck_assert_int_eq(plan.algo, TPS_ALGO_NVLS);
    hw.nccl_nvls_efficiency = 0.05;
    tps_coll_plan(&hw, TPS_COLL_ALL_REDUCE, 1073741824.0, 8, &plan);
    ck_assert_int_eq(plan.algo, TPS_ALGO_RING);
}
END_TEST

/* NVLS forced (nccl.algo NVLS) for 1 MiB on 8 H100 in one domain: 2.18
 * has no NVLS all-gather or reduce-scatter in its model, so the lists
 * leave the call nothing and 2.18 fails it (the plan the ring); 2.19 has
 * all three, and the all-reduce is NVLS in both. */
static const struct {
    const char *version;
    TpsCollKind kind;
    TpsCollAlgo want;
    gboolean refused;
} nvls_forced[] = {
    {"2.18", TPS_COLL_ALL_GATHER, TPS_ALGO_RING, TRUE},
    {"2.18", TPS_COLL_REDUCE_SCATTER, TPS_ALGO_RING, TRUE},
    {"2.18", TPS_COLL_ALL_REDUCE, TPS_ALGO_NVLS, FALSE},
    {"2.19", TPS_COLL_ALL_GATHER, TPS_ALGO_NVLS, FALSE},
    {"2.19", TPS_COLL_REDUCE_SCATTER, TPS_ALGO_NVLS, FALSE},
};

START_TEST(test_nvls_forced_version)
{
    TpsHardware hw;
    h100_fixture(&hw);
    hw.nccl_version = (char *)nvls_forced[_i].version;
    hw.nccl_algo = (char *)"NVLS";
    hw.nccl_algo_at = (char *)"m.yaml:3:9";
    ck_assert(tps_nccl_take_refusal(&hw, NULL) || TRUE); /* a note of an earlier test */
    TpsCollPlan plan;
    tps_coll_plan(&hw, nvls_forced[_i].kind, 1048576.0, 8, &plan);
    ck_assert_int_eq(plan.algo, nvls_forced[_i].want);
    ck_assert_int_eq(tps_nccl_take_refusal(&hw, NULL), !nvls_forced[_i].refused);
}
END_TEST

/* The NVLS_TREE plan on 2 x 8 H100, by hand: two steps (reduce up,
 * broadcast down) of bytes / 2 CTA payload at 16 x 13.76 = 220.16 GB/s;
 * NVLink wire bytes (1 + 1/8) / 2 per step at 360 GB/s, the network's
 * half buffer per step at 384 GB/s being faster (link min(360, 384 x
 * 1.125 = 432) = 360); 25 us once, 14 us per step (one network hop).
 *   4 MiB:   2 x (14 + 2097152 / 220.16 = 9.5256) + 25 = 72.05 us
 *   256 MiB: 2 x (14 + 134217728 / 220.16 = 609.6375) + 25 = 1272.28 us
 * Only all-reduce: an all-gather across the domains stays on the ring. */
static const struct {
    double bytes, want_us;
} nvls_tree_times[] = {
    {4194304, 72.05},
    {268435456, 1272.28},
};

START_TEST(test_nvls_tree_plan)
{
    TpsHardware hw;
    h100_fixture(&hw);
    hw.nccl_algo = "NVLSTree";
    TpsCollPlan plan;
    tps_coll_plan(&hw, TPS_COLL_ALL_REDUCE, nvls_tree_times[_i].bytes, 16, &plan);
    ck_assert_int_eq(plan.algo, TPS_ALGO_NVLS_TREE);
    ck_assert_uint_eq(plan.steps, 2);
    ck_assert_uint_eq(plan.channels, 16);
    ck_assert_double_eq_tol(plan.link_gbps, 360.0, 1e-9);
    ck_assert_double_eq_tol(plan.wire_bytes, nvls_tree_times[_i].bytes * 1.125 / 2.0, 1e-6);
    ck_assert_double_eq_tol(tps_coll_time_ns(&hw, &plan) / 1e3, nvls_tree_times[_i].want_us, 0.01);
    tps_coll_plan(&hw, TPS_COLL_ALL_GATHER, nvls_tree_times[_i].bytes, 16, &plan);
    ck_assert_int_eq(plan.algo, TPS_ALGO_RING);
}
END_TEST

/* Slow NICs make the network the stage that paces a step: 4 NICs of 12
 * GB/s per domain (48 GB/s), 256 MiB: the link becomes 48 x 1.125 =
 * 54 GB/s for the 150994944 NVLink wire bytes, i.e. 134217728 / 48 =
 * 2796.2 us a step: 2 x (14 + 2796.20267) + 25 = 5645.41 us. */
START_TEST(test_nvls_tree_network_bound)
{
    TpsHardware hw;
    h100_fixture(&hw);
    hw.nic_gbps = 6;
    hw.nccl_algo = "NVLSTree";
    TpsCollPlan plan;
    tps_coll_plan(&hw, TPS_COLL_ALL_REDUCE, 268435456, 16, &plan);
    ck_assert_int_eq(plan.algo, TPS_ALGO_NVLS_TREE);
    ck_assert_double_eq_tol(plan.link_gbps, 54.0, 1e-9);
    ck_assert_double_eq_tol(tps_coll_time_ns(&hw, &plan) / 1e3, 5645.41, 0.01);
}
END_TEST

/* CollNet on 2 x 8 H100 with network.sharp 1 (h100_fixture). NCCL's model:
 * graph min(2 x 384, 360) = 360 GB/s;
 *   Direct  8 heads (8 NICs), r = 1, x 0.85 (nccl.nvls 1: Hopper):
 *           306 x 0.5 = 153 GB/s after 2 (3.7 + 7 x 0.4) + 31 = 44 us;
 *   Chain   180 GB/s after 2 x 7 x 2.8 + 30 = 69.2 us.
 * Against test_nvls_tree_choice's: Direct overtakes Tree LL at 18.8 /
 * (1/19.5e3 - 1/153e3) = 420 KB, NVLS_TREE overtakes Direct at 9 /
 * (1/153e3 - 1/300e3) = 2.81 MB. Without NVLS (nvls 0: no x 0.85, no
 * NVLS_TREE): Direct 180 GB/s after 44 us beats Chain everywhere, Tree LL
 * above 18.8 / (1/19.5e3 - 1/180e3) = 411 KB, and loses to Ring Simple
 * above 87.6 / (1/180e3 - 1/204.8e3) = 130 MB. One NIC per node (graph
 * min(96, 360) = 96): Direct r = 8, f = 8 - 3.5 = 4.5, 96 / 4.5 x 0.85 x
 * 0.5 = 9.07 GB/s; Chain 48 GB/s after 69.2 us beats NVLS_TREE (min(360,
 * 48) x 5/6 = 40 after 53) above 16.2 / (1/40e3 - 1/48e3) = 3.89 MB.
 * network.sharp 0: never CollNet, even when nccl.algo names it alone
 * (then the ring, as NCCL falls back when CollNet is not supported). */
static const struct {
    guint ranks, sharp, nvls, nics;
    double bytes;
    const char *algo;
    TpsCollAlgo want;
} collnet_choices[] = {
    {16, 1, 1, 8, 262144, NULL, TPS_ALGO_TREE},
    {16, 1, 1, 8, 1048576, NULL, TPS_ALGO_COLLNET_DIRECT},
    {16, 1, 1, 8, 3145728, NULL, TPS_ALGO_NVLS_TREE}, /* 63.49 us; Direct 64.56 */
    {16, 1, 1, 8, 4194304, NULL, TPS_ALGO_NVLS_TREE},
    {16, 1, 0, 8, 262144, NULL, TPS_ALGO_TREE},
    {16, 1, 0, 8, 4194304, NULL, TPS_ALGO_COLLNET_DIRECT},
    {16, 1, 0, 8, 1073741824, NULL, TPS_ALGO_RING},
    {16, 1, 1, 1, 67108864, NULL, TPS_ALGO_COLLNET_CHAIN},
    {16, 1, 1, 8, 4194304, "CollNetChain", TPS_ALGO_COLLNET_CHAIN},
    {16, 1, 1, 8, 1048576, "^CollNetDirect,CollNetChain", TPS_ALGO_TREE},
    {16, 0, 1, 8, 1048576, NULL, TPS_ALGO_TREE},
    {16, 0, 1, 8, 4194304, "CollNetDirect", TPS_ALGO_RING},
    {8, 1, 0, 8, 4194304, NULL, TPS_ALGO_RING}, /* one domain: no CollNet */
};

START_TEST(test_collnet_choice)
{
    TpsHardware hw;
    h100_fixture(&hw);
    hw.net_sharp = collnet_choices[_i].sharp;
    hw.nccl_nvls = collnet_choices[_i].nvls;
    hw.nics_per_node = collnet_choices[_i].nics;
    hw.nccl_algo = (char *)collnet_choices[_i].algo;
    TpsCollPlan plan;
    tps_coll_plan(&hw, TPS_COLL_ALL_REDUCE, collnet_choices[_i].bytes, collnet_choices[_i].ranks,
                  &plan);
    ck_assert_msg(plan.algo == collnet_choices[_i].want, "case %d: %s", _i,
                  tps_coll_algo_names[plan.algo]);
}
END_TEST

/* The CollNet plans at 4 MiB on 2 x 8 H100 (sharp 1, forced), by hand:
 * two steps; the network's half buffer a step, 2097152 / 384 = 5461.3 ns;
 *   Direct: NVLink 4194304 x 7/8 = 3670016 B a step at 360 GB/s =
 *     10194.5 ns (CTAs 32 x 13.76 = 440.32 GB/s: 8334.9 ns), 31 us once,
 *     3.7 + 7 x 0.4 = 6.5 us a step: 31 + 2 x (6.5 + 10.1945) = 64.39 us;
 *   Chain: NVLink 4194304 B a step, 11650.8 ns (CTAs 9525.6), 30 us once,
 *     7 x 2.8 = 19.6 us a step: 30 + 2 x (19.6 + 11.6508) = 92.50 us. */
static const struct {
    const char *algo;
    TpsCollAlgo want;
    double want_us;
} collnet_times[] = {
    {"CollNetDirect", TPS_ALGO_COLLNET_DIRECT, 64.39},
    {"CollNetChain", TPS_ALGO_COLLNET_CHAIN, 92.50},
};

START_TEST(test_collnet_plan)
{
    TpsHardware hw;
    h100_fixture(&hw);
    hw.net_sharp = 1;
    hw.nccl_algo = (char *)collnet_times[_i].algo;
    TpsCollPlan plan;
    tps_coll_plan(&hw, TPS_COLL_ALL_REDUCE, 4194304, 16, &plan);
    ck_assert_int_eq(plan.algo, collnet_times[_i].want);
    ck_assert_uint_eq(plan.steps, 2);
    ck_assert_double_eq_tol(tps_coll_time_ns(&hw, &plan) / 1e3, collnet_times[_i].want_us, 0.01);
}
END_TEST

static Suite *
collective_suite(void)
{
    Suite *s = suite_create("collective");
    TCase *tc;

    tc = tcase_create("calibration");
    tcase_add_loop_test(tc, test_all_reduce_curve, 0, G_N_ELEMENTS(curve));
    suite_add_tcase(s, tc);

    tc = tcase_create("ring");
    tcase_add_test(tc, test_all_gather_ring_formula);
    tcase_add_loop_test(tc, test_simple_slice_fill, 0, G_N_ELEMENTS(fill_cases));
    tcase_add_test(tc, test_reduce_scatter_equals_all_gather);
    tcase_add_test(tc, test_time_monotonic);
    tcase_add_test(tc, test_crossing_nodes);
    tcase_add_loop_test(tc, test_duplex_across_nodes, 0, G_N_ELEMENTS(duplex_cases));
    tcase_add_test(tc, test_single_rank_and_busbw);
    tcase_add_test(tc, test_memo_follows_values);
    tcase_add_loop_test(tc, test_hbm_per_step, 0, G_N_ELEMENTS(user_hbm));
    suite_add_tcase(s, tc);

    tc = tcase_create("p2p");
    tcase_add_loop_test(tc, test_p2p_send, 0, G_N_ELEMENTS(p2p_cases));
    suite_add_tcase(s, tc);

    tc = tcase_create("algorithms");
    tcase_add_loop_test(tc, test_channels_follow_link, 0, G_N_ELEMENTS(link_channels));
    tcase_add_loop_test(tc, test_ring_time_follows_link, 0, G_N_ELEMENTS(link_times));
    tcase_add_loop_test(tc, test_algorithm_choice, 0, G_N_ELEMENTS(algo_cases));
    tcase_add_test(tc, test_tree_plan);
    tcase_add_loop_test(tc, test_version_tables, 0, G_N_ELEMENTS(versions));
    tcase_add_loop_test(tc, test_tree_correction, 0, G_N_ELEMENTS(corrections));
    tcase_add_loop_test(tc, test_version_choice, 0, G_N_ELEMENTS(version_choices));
    tcase_add_test(tc, test_nvls);
    tcase_add_loop_test(tc, test_nvls_tree_model_version, 0, G_N_ELEMENTS(nvls_tree_models));
    tcase_add_loop_test(tc, test_nvls_model_version, 0, G_N_ELEMENTS(nvls_models));
    tcase_add_loop_test(tc, test_nvls_forced_version, 0, G_N_ELEMENTS(nvls_forced));
    tcase_add_test(tc, test_nvls_efficiency_choice);
    tcase_add_loop_test(tc, test_nvls_tree_choice, 0, G_N_ELEMENTS(nvls_tree_choices));
    tcase_add_loop_test(tc, test_nvls_tree_plan, 0, G_N_ELEMENTS(nvls_tree_times));
    tcase_add_test(tc, test_nvls_tree_network_bound);
    tcase_add_loop_test(tc, test_collnet_choice, 0, G_N_ELEMENTS(collnet_choices));
    tcase_add_loop_test(tc, test_collnet_plan, 0, G_N_ELEMENTS(collnet_times));
    tcase_add_loop_test(tc, test_nvls_local_ranks, 0, G_N_ELEMENTS(nvls_ranks));
    tcase_add_loop_test(tc, test_parse_list, 0, G_N_ELEMENTS(lists));
    tcase_add_loop_test(tc, test_parse_function_lists, 0, G_N_ELEMENTS(func_lists));
    tcase_add_loop_test(tc, test_forced_refusal, 0, G_N_ELEMENTS(refusals));
    suite_add_tcase(s, tc);

    tc = tcase_create("tuner");
    tcase_add_loop_test(tc, test_protocol_and_channels, 0, G_N_ELEMENTS(choices));
    tcase_add_loop_test(tc, test_channel_mem_by_ranks, 0, G_N_ELEMENTS(by_ranks));
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return tps_test_run(collective_suite());
}
