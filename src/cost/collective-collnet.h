/* NCCL's CollNet all-reduce on an IB SHARP fabric (network.sharp 1): the
 * switches reduce what every NVLink domain sends them and send back the
 * result. CollNet Direct (each GPU a head on its own NIC, inside the
 * domain a reduce-scatter and all-gather over NVLink) and CollNet Chain (a
 * chain of the domain's GPUs ending at the NIC). Their offer, their time in
 * NCCL's own tuning model and their plans. */
#pragma once

#include <glib.h>

#include "cost/collective.h"

/* Whether NCCL has CollNet for the call: an all-reduce, network.sharp 1,
 * a group spanning two or more NVLink domains (NVIDIA/nccl
 * src/graph/tuning.cc: CollNet off without collNetSupport; Direct needs
 * NVSwitch, which every tpsim node has). */
gboolean tps_collnet_offered(const TpsHardware *hw, TpsCollKind kind, const TpsGroupShape *shape);

/* NCCL's model time (us) of a CollNet all-reduce (a: TPS_ALGO_COLLNET_DIRECT
 * or _CHAIN) of `bytes`; `net_graph` the network graph (GB/s) the ring's
 * model takes. -1 where not offered. */
double tps_collnet_model_us(const TpsHardware *hw, TpsCollAlgo a, double bytes,
                            const TpsGroupShape *shape, double net_graph);

/* The plan of a CollNet all-reduce (Direct or Chain) of `bytes`. */
void tps_collnet_plan(const TpsHardware *hw, TpsCollAlgo a, double bytes,
                      const TpsGroupShape *shape, TpsCollPlan *plan);
