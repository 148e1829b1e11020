/* DeepEP's dispatch and combine on the topology: see alltoall-flex.h. */
#include "cost/alltoall-flex.h"

#include "cost/alltoall.h"

double
tps_flex_miss(guint experts, guint top_k, guint parts)
{
    g_return_val_if_fail(parts >= 1 && experts >= top_k, 1.0);
    const double E = experts, set = (double)experts / parts;
    double q = 1.0;
    for (guint i = 0; i < top_k; i++)
        q *= MAX(E - set - i, 0.0) / (E - i);
    return q;
}

void
tps_flex_plan(double tokens, double token_bytes, guint experts, guint top_k,
              const TpsGroupShape *shape, TpsFlexPlan *plan)
{
    g_return_if_fail(shape != NULL && plan != NULL);
    const guint G = MAX(shape->ranks, 1u);
    const guint P = shape->crosses ? MAX(shape->per_domain, 1u) : G;
    const guint N = MAX(G / P, 1u);
    const double hit_domain = 1.0 - tps_flex_miss(experts, top_k, N);
    const double hit_member = 1.0 - tps_flex_miss(experts, top_k, G);
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
