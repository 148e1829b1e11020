/* The topology of a hardware model: where each GPU of a job sits, and what
 * a group of GPUs has between its members.
 *
 * The hierarchy (docs/scenario-format.md, "Topology"):
 *   GPU      -- numbered node by node: global rank r is GPU r % node.gpus
 *               of node r / node.gpus, as a launcher places ranks;
 *   node     -- node.gpus GPUs and network.nics_per_node NICs; GPU l of a
 *               node sends through NIC l x nics / gpus (its own NIC on its
 *               rail when there is one per GPU, else one shared);
 *   NVLink domain -- node.nvlink_domain_gpus consecutive GPUs on one
 *               NVLink fabric through NVSwitch (the node on DGX/HGX, the
 *               rack of 18 trays of 4 on GB200 NVL72): flows inside it go
 *               over NVLink at node.nvlink_gbps per GPU and direction;
 *   leaf group -- network.nodes_per_leaf nodes whose NICs meet in the same
 *               leaf switches (a scalable unit; one leaf per rail); traffic
 *               between groups crosses the spine, whose uplinks carry
 *               1 / network.spine_oversubscription of what the group's NICs
 *               can send.
 */
#pragma once

#include <glib.h>

#include "cost/hardware.h"

/* GPUs of one NVLink domain (node.nvlink_domain_gpus; a model built in
 * code that leaves it 0: the node; no node size either: unbounded). */
guint tps_topo_domain_gpus(const TpsHardware *hw);

/* The NVLink domain, node and leaf group of global rank `rank`. */
guint tps_topo_domain(const TpsHardware *hw, guint rank);
guint tps_topo_node(const TpsHardware *hw, guint rank);
guint tps_topo_leaf(const TpsHardware *hw, guint rank);

/* What a group of GPUs has: how its members spread over the hierarchy and
 * the network bandwidth of the members of one domain. */
typedef struct {
    guint ranks;      /* members */
    guint domains;    /* NVLink domains they span (1: all on NVLink) */
    guint per_domain; /* fewest members in one of those domains */
    guint leaves;     /* leaf groups they span (> 1: traffic crosses the spine) */
    double nic_gbps;  /* per direction: the NIC share of the `per_domain` members of a
                         domain (their NICs, each shared with the node's other GPUs
                         as nics / gpus), over the spine's oversubscription when
                         the group spans leaf groups; 0 when domains == 1 */
    gboolean crosses; /* domains > 1: some of its traffic leaves NVLink */
} TpsGroupShape;

/* The shape of the group of `n` members (global ranks). */
void tps_topo_group_shape(const TpsHardware *hw, const guint *members, guint n,
                          TpsGroupShape *shape);

/* The shape of `n` consecutive GPUs from rank 0 (a group by itself on the
 * machine, as the calibration set's collectives ran). */
void tps_topo_contiguous_shape(const TpsHardware *hw, guint n, TpsGroupShape *shape);

/* The NIC share, per direction, of `gpus` GPUs of one node (nics / gpus
 * of the node's NIC bandwidth each). */
double tps_topo_nic_share_gbps(const TpsHardware *hw, guint gpus);
