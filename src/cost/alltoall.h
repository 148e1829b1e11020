/* NCCL's all-to-all over a group placed on the topology (cost/topology.h):
 * every member sends bytes / n to each of the others at once (NCCL runs it
 * as one group of send/recv pairs, ncclGroupStart ... ncclGroupEnd), so a
 * member's traffic splits into what goes to the members of its own NVLink
 * domain, over its NVLink port, and what leaves the domain, over its share
 * of the node's NICs; the two proceed side by side and the slower one sets
 * the time:
 *
 *   t = latency + max(bytes (near - 1) / n / nvlink, bytes (n - near) / n / nic)
 *
 * near being the fewest members of one domain (the member with the most
 * traffic leaving its domain is the last to finish), nvlink
 * node.nvlink_gbps x node.nvlink_efficiency, nic the NIC share of one GPU
 * (tps_topo_nic_share_gbps(hw, 1)) over the spine's oversubscription when
 * the group spans leaf groups, and the latency NCCL's Simple base latency
 * plus its NVLink hop latency, or the network's when the group leaves the
 * domain. Not modelled: the protocol choice (every peer's piece is taken
 * as large enough for Simple). The layer's engine runs the all-to-all as
 * flows on the topology instead (sched/builder.h tps_builder_ep_a2a),
 * which share links with other traffic and, alone, take this time.
 */
#pragma once

#include <glib.h>

#include "core/time.h"
#include "cost/hardware.h"
#include "cost/topology.h"

/* The time of one all-to-all of `bytes` per member (what each member
 * sends in all, its own piece included) over the group of `shape`; 0 for
 * a group of one. No launch cost. */
TpsTime tps_alltoall_ns(const TpsHardware *hw, double bytes, const TpsGroupShape *shape);

/* Its latency: NCCL's Simple base latency plus its NVLink hop latency,
 * or the network's when the group leaves the NVLink domain. */
TpsTime tps_alltoall_latency_ns(const TpsHardware *hw, const TpsGroupShape *shape);

/* The channels (CTAs) NCCL's send/recv kernel holds: nccl.p2p_channels,
 * at least 1. */
guint tps_alltoall_channels(const TpsHardware *hw);
