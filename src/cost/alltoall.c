/* NCCL's all-to-all on the topology: see alltoall.h. */
#include "cost/alltoall.h"

TpsTime
tps_alltoall_ns(const TpsHardware *hw, double bytes, const TpsGroupShape *shape)
{
    g_return_val_if_fail(hw != NULL && shape != NULL, 0);
    const guint n = shape->ranks;
    if (n < 2 || !(bytes > 0.0))
        return 0;
    const guint near = shape->crosses ? MAX(shape->per_domain, 1u) : n;
    const double piece = bytes / n;
    const double nvlink = hw->nvlink_gbps * hw->nvlink_efficiency;
    double seconds_ns = nvlink > 0.0 ? piece * (near - 1) / nvlink : 0.0;
    if (near < n) {
        double nic = tps_topo_nic_share_gbps(hw, 1);
        if (shape->leaves > 1 && hw->spine_oversubscription > 1.0)
            nic /= hw->spine_oversubscription;
        seconds_ns = MAX(seconds_ns, nic > 0.0 ? piece * (n - near) / nic : 0.0);
    }
    return tps_alltoall_latency_ns(hw, shape) + tps_time_from_ns(seconds_ns);
}

TpsTime
tps_alltoall_latency_ns(const TpsHardware *hw, const TpsGroupShape *shape)
{
    g_return_val_if_fail(hw != NULL && shape != NULL, 0);
    const double latency_us =
        hw->nccl_base_latency_us[TPS_PROTO_SIMPLE] +
        (shape->crosses ? hw->network_latency_us : hw->nccl_hw_latency_us[TPS_PROTO_SIMPLE]);
    return tps_time_from_us(latency_us);
}

guint
tps_alltoall_channels(const TpsHardware *hw)
{
    return MAX(hw->nccl_p2p_channels, 1u);
}
