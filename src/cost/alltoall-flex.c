/* DeepEP's dispatch and combine on the topology: see alltoall-flex.h. */
#include "cost/alltoall-flex.h"

#include "cost/alltoall.h"

/* k distinct draws from a pool of `pool` experts all miss `set` of them. */
static double
miss_pool(double pool, double set, guint k)
{
    double q = 1.0;
    for (guint i = 0; i < k; i++)
        q *= MAX(pool - set - i, 0.0) / (pool - i);
    return q;
}

/* C(n, r) as a double. */
static double
choose(guint n, guint r)
{
    if (r > n)
        return 0.0;
    double c = 1.0;
    for (guint i = 0; i < r; i++)
        c = c * (n - i) / (i + 1);
    return c;
}

double
tps_flex_miss(guint experts, guint top_k, guint groups, guint group_topk, guint parts)
{
    groups = MAX(groups, 1u);
    group_topk = MAX(group_topk, 1u);
    g_return_val_if_fail(
        parts >= 1 && group_topk <= groups && (parts % groups == 0 || groups % parts == 0), 1.0);
    const double E = experts, set = E / parts, group = E / groups;
    const double pool = group_topk * group;
    g_return_val_if_fail(pool >= top_k, 1.0);
    const double chosen = (double)group_topk / groups;
    if (parts >= groups) /* the part inside one group: missed unless it is chosen */
        return (1.0 - chosen) + chosen * miss_pool(pool, set, top_k);
    /* m groups a part, j of them chosen (hypergeometric). */
    const guint m = groups / parts;
    double q = 0.0;
    for (guint j = 0; j <= MIN(m, group_topk); j++)
        q += choose(m, j) * choose(groups - m, group_topk - j) / choose(groups, group_topk) *
             miss_pool(pool, j * group, top_k);
    return q;
}

void
tps_flex_plan(double tokens, double token_bytes, guint experts, guint top_k, guint groups,
              guint group_topk, const TpsGroupShape *shape, TpsFlexPlan *plan)
{
    tps_flex_plan_etp(tokens, token_bytes, experts, top_k, groups, group_topk, shape, 1, plan);
}

void
tps_flex_plan_etp(double tokens, double token_bytes, guint experts, guint top_k, guint groups,
                  guint group_topk, const TpsGroupShape *shape, guint etp, TpsFlexPlan *plan)
{
    g_return_if_fail(shape != NULL && plan != NULL && etp >= 1);
    const guint G = MAX(shape->ranks, 1u);
    const guint P = shape->crosses ? MAX(shape->per_domain, 1u) : G;
    const guint N = MAX(G / P, 1u);
    g_return_if_fail(G % etp == 0 && P % etp == 0);
    /* A domain holds P / etp whole EP ranks: E / N experts, as without
     * ETP; a member the E / (G / etp) of its EP rank, shared by its etp
     * ETP ranks, each of which the token reaches. */
    const double hit_domain = 1.0 - tps_flex_miss(experts, top_k, groups, group_topk, N);
    const double hit_member = 1.0 - tps_flex_miss(experts, top_k, groups, group_topk, G / etp);
    *plan = (TpsFlexPlan){
        .domains = N * hit_domain,
        .members = G * hit_member,
        .sms = TPS_FLEX_SMS,
    };
    plan->nic_bytes = tokens * (N - 1) * hit_domain * token_bytes;
    plan->nvlink_bytes = tokens * plan->members * (P - 1) / P * token_bytes;
}

TpsTime
tps_flex_ns(const TpsHardware *hw, const TpsFlexPlan *plan, const TpsGroupShape *shape)
{
    g_return_val_if_fail(hw != NULL && plan != NULL && shape != NULL, 0);
    if (shape->ranks < 2)
        return 0;
    const double nvlink = hw->nvlink_gbps * hw->nvlink_efficiency;
    double seconds_ns = nvlink > 0.0 ? plan->nvlink_bytes / nvlink : 0.0;
    if (plan->nic_bytes > 0.0) {
        double nic = tps_topo_nic_share_gbps(hw, 1);
        if (shape->leaves > 1 && hw->spine_oversubscription > 1.0)
            nic /= hw->spine_oversubscription;
        seconds_ns = MAX(seconds_ns, nic > 0.0 ? plan->nic_bytes / nic : 0.0);
    }
    return tps_alltoall_latency_ns(hw, shape) + tps_time_from_ns(seconds_ns);
}
