/* The topology (cost/topology.h) and collectives planned over a group's
 * shape. The hardware is written out here: a DGX A100 (8 GPUs, 8 NICs of
 * 24 GB/s, NVLink 300 x 0.8 = 240 GB/s payload), a GB200 NVL72-like rack
 * (trays of 4 GPUs with 4 NICs, 72 GPUs on one NVLink domain) and a node
 * whose 8 GPUs share 4 NICs. Expected figures are worked out by hand. */
#include <check.h>

#include "test-util.h"

#include "cost/collective.h"
#include "cost/topology.h"

static TpsHardware
dgx_a100(void)
{
    return (TpsHardware){
        .gpus_per_node = 8,
        .nvlink_domain_gpus = 8,
        .nvlink_gbps = 300,
        .nvlink_efficiency = 0.8,
        .nics_per_node = 8,
        .nic_gbps = 24,
        .net_duplex_efficiency = 1.0,
        .nodes_per_leaf = 20,
        .spine_oversubscription = 1.0,
        .nccl_channels = 24,
        .nccl_threads = 512,
        .nccl_base_latency_us = {6.6, 14.0, 8.4},
        .nccl_hw_latency_us = {0.6, 1.25, 4.0},
        .nccl_net_latency_us = {5.0, 8.6, 14.0},
        .nccl_channel_gbps = {4.0, 20.0, 20.0},
        .nccl_proto_efficiency = {0.5, 0.9375, 1.0},
        .nccl_slot_bytes = {4096, 65536, 131072},
    };
}

static TpsHardware
nvl72(void)
{
    TpsHardware hw = dgx_a100();
    hw.gpus_per_node = 4;
    hw.nvlink_domain_gpus = 72;
    hw.nvlink_gbps = 900;
    hw.nics_per_node = 4;
    hw.nic_gbps = 48;
    return hw;
}

static TpsHardware
shared_nics(void)
{
    TpsHardware hw = dgx_a100();
    hw.nics_per_node = 4;
    return hw;
}

static const struct {
    const char *what;
    TpsHardware (*hw)(void);
    guint n, first, stride; /* members first + i x stride */
    guint domains, per_domain, leaves;
    double nic_gbps;
} shapes[] = {
    /* TP8 in one DGX: NVLink only. */
    {"tp8 dgx", dgx_a100, 8, 0, 1, 1, 8, 1, 0.0},
    /* TP16 over two DGX nodes: 8 members a node, their 8 NICs: 192. */
    {"tp16 dgx", dgx_a100, 16, 0, 1, 2, 8, 1, 192.0},
    /* TP16 inside an NVL72 rack (4 trays of 4): one NVLink domain. */
    {"tp16 nvl72", nvl72, 16, 0, 1, 1, 16, 1, 0.0},
    /* DP of TP8 over 4 nodes: one member a node, its own NIC: 24. */
    {"dp4 of tp8", dgx_a100, 4, 0, 8, 4, 1, 1, 24.0},
    /* DP of TP2, dp 8: ranks 0, 2, ..., 14: 4 a node, 4 NICs: 96. */
    {"dp8 of tp2", dgx_a100, 8, 0, 2, 2, 4, 1, 96.0},
    /* DP of TP8 with 8 GPUs sharing 4 NICs: half a NIC each: 12. */
    {"dp4 shared nics", shared_nics, 4, 0, 8, 4, 1, 1, 12.0},
    /* 25 nodes, one GPU each: 20 nodes a leaf group, 2 groups. */
    {"dp25 two leaves", dgx_a100, 25, 3, 8, 25, 1, 2, 24.0},
    /* DP across NVL72 racks: ranks 0 and 72, one a rack: a tray NIC 48. */
    {"dp2 nvl72", nvl72, 2, 0, 72, 2, 1, 1, 48.0},
};

START_TEST(test_group_shape)
{
    const TpsHardware hw = shapes[_i].hw();
    guint members[64];
    for (guint i = 0; i < shapes[_i].n; i++)
        members[i] = shapes[_i].first + i * shapes[_i].stride;
    TpsGroupShape shape;
    tps_topo_group_shape(&hw, members, shapes[_i].n, &shape);
    ck_assert_msg(shape.ranks == shapes[_i].n, "%s", shapes[_i].what);
    ck_assert_msg(shape.domains == shapes[_i].domains, "%s: domains %u", shapes[_i].what,
                  shape.domains);
    ck_assert_msg(shape.per_domain == shapes[_i].per_domain, "%s: per domain %u", shapes[_i].what,
                  shape.per_domain);
    ck_assert_msg(shape.leaves == shapes[_i].leaves, "%s: leaves %u", shapes[_i].what,
                  shape.leaves);
    ck_assert_msg(shape.crosses == (shapes[_i].domains > 1), "%s", shapes[_i].what);
    ck_assert_msg(fabs(shape.nic_gbps - shapes[_i].nic_gbps) < 1e-9, "%s: nic %g", shapes[_i].what,
                  shape.nic_gbps);
}
END_TEST

START_TEST(test_where)
{
    const TpsHardware a = dgx_a100(), b = nvl72();
    /* Rank 77 on DGX nodes: GPU 5 of node 9, its domain; leaf group 0
     * (nodes 0-19); rank 165 = node 20: leaf group 1. */
    ck_assert_uint_eq(tps_topo_node(&a, 77), 9);
    ck_assert_uint_eq(tps_topo_domain(&a, 77), 9);
    ck_assert_uint_eq(tps_topo_leaf(&a, 77), 0);
    ck_assert_uint_eq(tps_topo_leaf(&a, 165), 1);
    /* On NVL72: tray 19, rack 1. */
    ck_assert_uint_eq(tps_topo_node(&b, 77), 19);
    ck_assert_uint_eq(tps_topo_domain(&b, 77), 1);
    /* Members in any order: {8, 0, 9, 1} are two a node on two nodes. */
    const guint mixed[] = {8, 0, 9, 1};
    TpsGroupShape shape;
    tps_topo_group_shape(&a, mixed, 4, &shape);
    ck_assert_uint_eq(shape.domains, 2);
    ck_assert_uint_eq(shape.per_domain, 2);
    ck_assert_double_eq_tol(shape.nic_gbps, 48.0, 1e-9);
    /* A model built in code without a domain size: the node. */
    TpsHardware c = a;
    c.nvlink_domain_gpus = 0;
    ck_assert_uint_eq(tps_topo_domain_gpus(&c), 8);
}
END_TEST

START_TEST(test_spine)
{
    /* Oversubscribed 3:1, a group spanning two leaf groups keeps a third
     * of its NIC share; one inside a leaf group all of it. */
    TpsHardware hw = dgx_a100();
    hw.nodes_per_leaf = 2;
    hw.spine_oversubscription = 3.0;
    const guint across[] = {0, 8, 16, 24}, inside[] = {0, 8};
    TpsGroupShape shape;
    tps_topo_group_shape(&hw, across, 4, &shape);
    ck_assert_uint_eq(shape.leaves, 2);
    ck_assert_double_eq_tol(shape.nic_gbps, 8.0, 1e-12);
    tps_topo_group_shape(&hw, inside, 2, &shape);
    ck_assert_uint_eq(shape.leaves, 1);
    ck_assert_double_eq_tol(shape.nic_gbps, 24.0, 1e-12);
}
END_TEST

START_TEST(test_collective_link)
{
    /* The ring's slowest hop: NVLink's 240 inside a domain, the NIC share
     * across (192 for TP16 over two DGX; 24 for a DP ring of one GPU a
     * node); TP16 in an NVL72 rack stays on NVLink (900 x 0.8 = 720). */
    const TpsHardware a = dgx_a100(), b = nvl72();
    TpsGroupShape shape;
    TpsCollPlan plan;
    tps_topo_contiguous_shape(&a, 8, &shape);
    tps_coll_plan_group(&a, TPS_COLL_ALL_GATHER, 1 << 30, &shape, &plan);
    ck_assert_double_eq_tol(plan.link_gbps, 240.0, 1e-9);
    ck_assert(!plan.crosses_nodes);
    tps_topo_contiguous_shape(&a, 16, &shape);
    tps_coll_plan_group(&a, TPS_COLL_ALL_GATHER, 1 << 30, &shape, &plan);
    ck_assert_double_eq_tol(plan.link_gbps, 192.0, 1e-9);
    ck_assert(plan.crosses_nodes);
    const guint dp[] = {0, 8, 16, 24};
    tps_topo_group_shape(&a, dp, 4, &shape);
    tps_coll_plan_group(&a, TPS_COLL_ALL_REDUCE, 1 << 30, &shape, &plan);
    ck_assert_double_eq_tol(plan.link_gbps, 24.0, 1e-9);
    tps_topo_contiguous_shape(&b, 16, &shape);
    tps_coll_plan_group(&b, TPS_COLL_ALL_GATHER, 1 << 30, &shape, &plan);
    ck_assert_double_eq_tol(plan.link_gbps, 720.0, 1e-9);
    ck_assert(!plan.crosses_nodes);
    /* The old entry point is the contiguous group's plan. */
    TpsCollPlan old;
    tps_coll_plan(&a, TPS_COLL_ALL_GATHER, 1 << 30, 16, &old);
    tps_topo_contiguous_shape(&a, 16, &shape);
    tps_coll_plan_group(&a, TPS_COLL_ALL_GATHER, 1 << 30, &shape, &plan);
    ck_assert_int_eq(tps_coll_time_ns(&a, &old), tps_coll_time_ns(&a, &plan));
}
END_TEST

static Suite *
topology_suite(void)
{
    Suite *s = suite_create("topology");
    TCase *tc = tcase_create("shape");
    tcase_add_loop_test(tc, test_group_shape, 0, G_N_ELEMENTS(shapes));
    tcase_add_test(tc, test_where);
    tcase_add_test(tc, test_spine);
    tcase_add_test(tc, test_collective_link);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return tps_test_run(topology_suite());
}
