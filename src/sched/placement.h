/* A scenario's parallel layout placed on its hardware's topology: the rank
 * grid of the layout (cost/grid.h, in the scenario's parallel.order), the
 * shape of each group on the topology (cost/topology.h), and the ranks the
 * engine simulates with where each of them sits.
 *
 * What is simulated rests on the symmetry of data and pipeline
 * parallelism: every replica runs the same schedule at the same time, so
 * one replica's ranks stand for all (exact while replicas share no links;
 * where they do, e.g. a NIC shared by GPUs of several replicas, each gets
 * its share of it, tps_topo_nic_share_gbps()). The layer is replayed over
 * the slice its collectives need, today rank 0's TP group; the training
 * step over one rank per pipeline stage, each standing for its stage's TP
 * group (its NVLink and NICs are the group's).
 */
#pragma once

#include <glib.h>

#include "cost/grid.h"
#include "cost/topology.h"
#include "engine/engine.h"
#include "sched/scenario.h"

/* The scenario's dense rank grid: tp, cp, ep 1, dp, pp in its order. */
void tps_scenario_grid(const TpsScenario *sc, TpsGrid *grid);

/* The members of global rank 0's group over `dims` (TPS_DIM_BIT()s) into
 * `members` (g_free it); returns their number. */
guint tps_place_group(const TpsScenario *sc, guint dims, guint **members);

/* The shape on the topology of rank 0's group over `dims`. */
void tps_place_group_shape(const TpsScenario *sc, guint dims, TpsGroupShape *shape);

/* The shape on the topology of rank 0's group over `dims` of the expert
 * grid (cost/grid.h tps_grid_init_expert(): etp, ep, the expert data
 * parallel rest, pp, in the scenario's order): the EP group of the
 * all-to-all (TPS_DIM_EP), the ETP group (TPS_DIM_TP), the allgather
 * dispatcher's ETP x EP group. */
void tps_place_expert_group_shape(const TpsScenario *sc, guint dims, TpsGroupShape *shape);

/* The placement of the layer's slice (rank 0's TP group; sc->tp entries
 * into `place`): each member's NVLink domain, and for each domain the pool
 * of its members' NICs, held by the first of them. With context
 * parallelism (cp > 1) tp more entries follow: the TP group of the CP rank
 * the slice exchanges K/V blocks with (tps_place_cp_peers()), placed the
 * same way. They run nothing: every CP rank runs the same ring at the same
 * time, so a transfer from the slice to them loads the links (the sender's
 * NVLink port or NIC pool, and the receiver's) that each CP rank's send
 * and receive load. */
void tps_place_layer(const TpsScenario *sc, TpsPlace *place);

/* The ranks of the layer's machine: tp, and tp more per set of stand-ins
 * (TpsCpSets with cp > 1, TpsEpSets). */
guint tps_place_layer_ranks(const TpsScenario *sc);

/* The size of the all-to-all group of context parallelism: cp under
 * cp_comm a2a, cp_a2a under a2a+p2p, 0 otherwise. */
guint tps_cp_a2a_size(const TpsScenario *sc);

#define TPS_CP_MAX_SLICE 64

/* A slice member's all-to-all peers: how many of its a2a group's other
 * members share its NVLink domain and how many do not, and the first of
 * each (standing for all of its kind; the member itself if none). */
typedef struct {
    guint near_count, far_count;
    guint near, far; /* global ranks */
} TpsCpA2aPeers;

/* The stand-in ranks of the layer's machine with context parallelism,
 * each set tp ranks from its first index (0: no such set): `ring` the TP
 * group of the ring neighbour (p2p, allgather, a2a+p2p), `near` and `far`
 * the TP groups standing for the all-to-all peers inside and outside the
 * NVLink domain (a2a, a2a+p2p; a set only when some member has such a
 * peer). Every CP rank sends as much as it receives at the same time, so
 * a transfer from the slice to a stand-in loads the sender's NVLink port
 * or NIC pool, and the receiver's, as each peer's transfer does. */
typedef struct {
    guint ring, near, far;
    guint ranks;                           /* of the machine */
    TpsCpA2aPeers peers[TPS_CP_MAX_SLICE]; /* per slice member (a2a only) */
} TpsCpSets;

void tps_place_cp_sets(const TpsScenario *sc, TpsCpSets *sets);

/* The stand-in ranks of the layer's machine for the expert-parallel
 * all-to-all (model.moe with parallel.ep > 1 and the alltoall or flex
 * dispatcher), each set tp ranks from its first index (0: no such set),
 * after the CP sets: `near` the TP group standing for the EP peers inside
 * the NVLink domain, `far` for those outside it. Each slice member's
 * all-to-all sends `near_count` pieces to its near stand-in and
 * `far_count` to its far one: those of the EP group's member with the
 * most traffic leaving its domain (the fewest members in one domain, the
 * one the all-to-all waits for: cost/alltoall.h), near_count =
 * per_domain - 1 and far_count = ep - per_domain (ep - 1 and 0 inside one
 * domain). Every EP rank sends as much as it receives at the same time,
 * so a transfer to a stand-in loads the sender's NVLink port or NIC pool,
 * and the receiver's, as each peer's does. The far stand-ins' NIC pools
 * take the spine's oversubscription where the group spans leaf groups. */
typedef struct {
    guint near, far;
    guint near_count, far_count;
    guint ranks; /* of the machine */
} TpsEpSets;

void tps_place_ep_sets(const TpsScenario *sc, TpsEpSets *sets);

/* The ring neighbour of each of the `n` global ranks `members` (of CP rank
 * 0): the rank with the same coordinates but CP rank cp - 1, the hop of the
 * ring that crosses the most (CP ranks increase with the global rank, so
 * it leaves the NVLink domain whenever any hop does), into `peers`. */
void tps_place_cp_peers(const TpsScenario *sc, const guint *members, guint n, guint *peers);

/* The placement of the step's stages (sc->pp entries into `place`): stage
 * s is global rank 0's pipeline group member s, standing for its TP group;
 * its NVLink domain is that rank's, and its NIC pool its own, with the NIC
 * share of its TP group. */
void tps_place_stages(const TpsScenario *sc, TpsPlace *place);

/* Whether the TP group leaves one NVLink domain (and its domain size, for
 * messages, into `domain_gpus` when not NULL). */
gboolean tps_place_tp_crosses(const TpsScenario *sc, guint *domain_gpus);
