/* A scenario's layout placed on its topology (placement.h). */
#include "sched/placement.h"

#include <string.h>

void
tps_scenario_grid(const TpsScenario *sc, TpsGrid *grid)
{
    g_return_if_fail(sc != NULL && grid != NULL);
    guint size[TPS_DIM_COUNT] = {
        [TPS_DIM_TP] = sc->tp, [TPS_DIM_CP] = MAX(sc->cp, 1u), [TPS_DIM_EP] = 1,
        [TPS_DIM_DP] = sc->dp, [TPS_DIM_PP] = sc->pp,
    };
    TpsDim order[TPS_DIM_COUNT];
    tps_scenario_order(sc, order);
    tps_grid_init(grid, size, order);
}

guint
tps_place_group(const TpsScenario *sc, guint dims, guint **members)
{
    g_return_val_if_fail(sc != NULL && members != NULL, 0);
    TpsGrid grid;
    tps_scenario_grid(sc, &grid);
    *members = g_new(guint, tps_grid_group_size(&grid, dims));
    return tps_grid_group(&grid, 0, dims, *members);
}

void
tps_place_expert_group_shape(const TpsScenario *sc, guint dims, TpsGroupShape *shape)
{
    g_return_if_fail(sc != NULL && shape != NULL);
    TpsGrid dense, expert;
    tps_scenario_grid(sc, &dense);
    tps_grid_init_expert(&expert, &dense, tps_scenario_etp(sc), MAX(sc->ep, 1u));
    g_autofree guint *members = g_new(guint, tps_grid_group_size(&expert, dims));
    const guint n = tps_grid_group(&expert, 0, dims, members);
    tps_topo_group_shape(&sc->hardware, members, n, shape);
}

/* What a group's shape depends on (every size of tps_scenario_grid() and
 * every topology key: a new one joins here); zeroed whole before it is
 * filled, so that keys compare as bytes. */
typedef struct {
    guint tp, cp, dp, pp, dims;
    TpsDim order[TPS_DIM_COUNT];
    guint gpus_per_node, domain_gpus, nics_per_node, nodes_per_leaf;
    double nic_gbps, spine_oversubscription;
} ShapeKey;

/* The last shapes asked for, per thread: the step frame asks for the DP
 * group's at every gradient bucket and the model-parallel group's at every
 * stage's optimizer, and a search evaluates layouts on several threads. */
#define SHAPE_CACHE 4
static _Thread_local struct {
    gboolean used;
    ShapeKey key;
    TpsGroupShape shape;
} shape_cache[SHAPE_CACHE];
static _Thread_local guint shape_cache_next;

static void
shape_key(const TpsScenario *sc, guint dims, ShapeKey *key)
{
    const TpsHardware *hw = &sc->hardware;
    memset(key, 0, sizeof(*key));
    key->tp = sc->tp;
    key->cp = sc->cp;
    key->dp = sc->dp;
    key->pp = sc->pp;
    key->dims = dims;
    tps_scenario_order(sc, key->order);
    key->gpus_per_node = hw->gpus_per_node;
    key->domain_gpus = tps_topo_domain_gpus(hw);
    key->nics_per_node = hw->nics_per_node;
    key->nodes_per_leaf = hw->nodes_per_leaf;
    key->nic_gbps = hw->nic_gbps;
    key->spine_oversubscription = hw->spine_oversubscription;
}

void
tps_place_group_shape(const TpsScenario *sc, guint dims, TpsGroupShape *shape)
{
    g_return_if_fail(sc != NULL && shape != NULL);
    ShapeKey key;
    shape_key(sc, dims, &key);
    for (guint i = 0; i < SHAPE_CACHE; i++)
        if (shape_cache[i].used && memcmp(&shape_cache[i].key, &key, sizeof(key)) == 0) {
            *shape = shape_cache[i].shape;
            return;
        }
    g_autofree guint *members = NULL;
    guint n = tps_place_group(sc, dims, &members);
    tps_topo_group_shape(&sc->hardware, members, n, shape);
    const guint slot = shape_cache_next++ % SHAPE_CACHE;
    shape_cache[slot].used = TRUE;
    shape_cache[slot].key = key;
    shape_cache[slot].shape = *shape;
}

/* `n` ranks of the machine from index `at` standing for the global ranks
 * `members`: each one's NVLink domain, and per domain the pool of its
 * members' NICs, held by the first of them. */
static void
place_ranks(const TpsHardware *hw, const guint *members, guint n, guint at, TpsPlace *place)
{
    for (guint i = 0; i < n; i++) {
        const guint domain = tps_topo_domain(hw, members[i]);
        guint first = i, count = 0;
        for (guint j = 0; j < n; j++) {
            if (tps_topo_domain(hw, members[j]) != domain)
                continue;
            first = MIN(first, j);
            count++;
        }
        place[at + i] = (TpsPlace){
            .domain = domain,
            .pool = at + first,
            .pool_gbps = tps_topo_nic_share_gbps(hw, count),
        };
    }
}

guint
tps_cp_a2a_size(const TpsScenario *sc)
{
    g_return_val_if_fail(sc != NULL, 0);
    if (sc->cp <= 1)
        return 0;
    if (sc->cp_comm == TPS_CP_A2A)
        return sc->cp;
    return sc->cp_comm == TPS_CP_A2A_P2P ? sc->cp_a2a : 0;
}

/* The all-to-all peers of global rank `member` (of CP rank 0): the other
 * members of its a2a group (CP ranks 0 .. a2a - 1, consecutive as
 * Megatron's hierarchical groups take them), counted by whether they share
 * its NVLink domain; the first of each kind into near / far (the member
 * itself when there is none). */
static void
a2a_peers(const TpsScenario *sc, const TpsGrid *grid, guint member, TpsCpA2aPeers *out)
{
    const guint a2a = tps_cp_a2a_size(sc);
    const guint domain = tps_topo_domain(&sc->hardware, member);
    guint coord[TPS_DIM_COUNT];
    for (guint d = 0; d < TPS_DIM_COUNT; d++)
        coord[d] = tps_grid_coord(grid, member, (TpsDim)d);
    *out = (TpsCpA2aPeers){.near = member, .far = member};
    for (guint c = 1; c < a2a; c++) {
        coord[TPS_DIM_CP] = c;
        const guint peer = tps_grid_rank(grid, coord);
        if (tps_topo_domain(&sc->hardware, peer) == domain) {
            out->near = out->near_count++ ? out->near : peer;
        } else {
            out->far = out->far_count++ ? out->far : peer;
        }
    }
}

void
tps_place_cp_sets(const TpsScenario *sc, TpsCpSets *sets)
{
    g_return_if_fail(sc != NULL && sets != NULL);
    *sets = (TpsCpSets){0};
    guint next = sc->tp;
    if (sc->cp > 1 && sc->cp_comm != TPS_CP_A2A) {
        sets->ring = next;
        next += sc->tp;
    }
    if (tps_cp_a2a_size(sc) > 1) {
        TpsGrid grid;
        tps_scenario_grid(sc, &grid);
        g_autofree guint *members = NULL;
        const guint n = tps_place_group(sc, TPS_DIM_BIT(TPS_DIM_TP), &members);
        for (guint i = 0; i < n && i < TPS_CP_MAX_SLICE; i++)
            a2a_peers(sc, &grid, members[i], &sets->peers[i]);
        gboolean near = FALSE, far = FALSE;
        for (guint i = 0; i < n && i < TPS_CP_MAX_SLICE; i++) {
            near |= sets->peers[i].near_count > 0;
            far |= sets->peers[i].far_count > 0;
        }
        if (near) {
            sets->near = next;
            next += sc->tp;
        }
        if (far) {
            sets->far = next;
            next += sc->tp;
        }
    }
    sets->ranks = next;
}

/* Whether the layer's machine has EP stand-ins: an MoE model's
 * all-to-all over an EP group of more than one rank. */
static gboolean
has_ep_a2a(const TpsScenario *sc)
{
    return tps_scenario_is_moe(sc) && sc->ep > 1 &&
           (sc->moe.dispatcher == TPS_MOE_ALLTOALL || sc->moe.dispatcher == TPS_MOE_FLEX);
}

/* The first EP peer of each slice member inside its NVLink domain
 * (`near`) or outside it into `peers` (the member itself where none). */
static void
ep_peers(const TpsScenario *sc, const guint *members, guint n, gboolean near, guint *peers)
{
    TpsGrid dense, expert;
    tps_scenario_grid(sc, &dense);
    tps_grid_init_expert(&expert, &dense, tps_scenario_etp(sc), MAX(sc->ep, 1u));
    g_autofree guint *group = g_new(guint, tps_grid_group_size(&expert, TPS_DIM_BIT(TPS_DIM_EP)));
    for (guint i = 0; i < n; i++) {
        const guint size = tps_grid_group(&expert, members[i], TPS_DIM_BIT(TPS_DIM_EP), group);
        const guint domain = tps_topo_domain(&sc->hardware, members[i]);
        peers[i] = members[i];
        for (guint j = 0; j < size && peers[i] == members[i]; j++)
            if (group[j] != members[i] &&
                (tps_topo_domain(&sc->hardware, group[j]) == domain) == near)
                peers[i] = group[j];
    }
}

void
tps_place_ep_sets(const TpsScenario *sc, TpsEpSets *sets)
{
    g_return_if_fail(sc != NULL && sets != NULL);
    *sets = (TpsEpSets){0};
    guint next = sc->tp;
    if (has_ep_a2a(sc)) {
        if (sc->cp > 1) {
            TpsCpSets cp;
            tps_place_cp_sets(sc, &cp);
            next = cp.ranks;
        }
        TpsGroupShape shape;
        tps_place_expert_group_shape(sc, TPS_DIM_BIT(TPS_DIM_EP), &shape);
        const guint near = shape.crosses ? MAX(shape.per_domain, 1u) : shape.ranks;
        sets->near_count = near - 1;
        sets->far_count = shape.ranks - near;
        if (sets->near_count > 0) {
            sets->near = next;
            next += sc->tp;
        }
        if (sets->far_count > 0) {
            sets->far = next;
            next += sc->tp;
        }
    }
    sets->ranks = next;
}

/* The EP stand-ins of `sets` placed after the slice's `n` members. */
static void
place_ep(const TpsScenario *sc, const TpsEpSets *sets, const guint *members, guint n,
         TpsPlace *place)
{
    g_autofree guint *peers = g_new(guint, n);
    if (sets->near) {
        ep_peers(sc, members, n, TRUE, peers);
        place_ranks(&sc->hardware, peers, n, sets->near, place);
    }
    if (sets->far) {
        ep_peers(sc, members, n, FALSE, peers);
        place_ranks(&sc->hardware, peers, n, sets->far, place);
        TpsGroupShape shape;
        tps_place_expert_group_shape(sc, TPS_DIM_BIT(TPS_DIM_EP), &shape);
        if (shape.leaves > 1 && sc->hardware.spine_oversubscription > 1.0)
            for (guint i = 0; i < n; i++)
                place[sets->far + i].pool_gbps /= sc->hardware.spine_oversubscription;
    }
}

/* The CP stand-ins after the slice. */
static void
place_cp(const TpsScenario *sc, const guint *members, guint n, TpsPlace *place)
{
    TpsCpSets sets;
    tps_place_cp_sets(sc, &sets);
    g_autofree guint *peers = g_new(guint, n);
    if (sets.ring) {
        tps_place_cp_peers(sc, members, n, peers);
        place_ranks(&sc->hardware, peers, n, sets.ring, place);
    }
    if (sets.near) {
        for (guint i = 0; i < n; i++)
            peers[i] = sets.peers[i].near;
        place_ranks(&sc->hardware, peers, n, sets.near, place);
    }
    if (sets.far) {
        for (guint i = 0; i < n; i++)
            peers[i] = sets.peers[i].far;
        place_ranks(&sc->hardware, peers, n, sets.far, place);
    }
}

void
tps_place_layer(const TpsScenario *sc, TpsPlace *place)
{
    g_return_if_fail(sc != NULL && place != NULL);
    g_autofree guint *members = NULL;
    const guint n = tps_place_group(sc, TPS_DIM_BIT(TPS_DIM_TP), &members);
    place_ranks(&sc->hardware, members, n, 0, place);
    if (sc->cp > 1)
        place_cp(sc, members, n, place);
    if (has_ep_a2a(sc)) {
        TpsEpSets sets;
        tps_place_ep_sets(sc, &sets);
        place_ep(sc, &sets, members, n, place);
    }
}

guint
tps_place_layer_ranks(const TpsScenario *sc)
{
    g_return_val_if_fail(sc != NULL, 0);
    if (has_ep_a2a(sc)) {
        TpsEpSets sets;
        tps_place_ep_sets(sc, &sets);
        return sets.ranks;
    }
    if (sc->cp <= 1)
        return sc->tp;
    if (tps_cp_a2a_size(sc) <= 1)
        return 2 * sc->tp;
    TpsCpSets sets;
    tps_place_cp_sets(sc, &sets);
    return sets.ranks;
}

void
tps_place_cp_peers(const TpsScenario *sc, const guint *members, guint n, guint *peers)
{
    g_return_if_fail(sc != NULL && members != NULL && peers != NULL);
    TpsGrid grid;
    tps_scenario_grid(sc, &grid);
    /* The ring's hop from CP rank cp - 1 back to CP rank 0: CP ranks are
     * placed in increasing rank order, so this hop leaves the NVLink
     * domain (or the leaf group) whenever any hop of the ring does. */
    const guint cp = grid.size[TPS_DIM_CP];
    /* a2a+p2p: the ring runs over the CP ranks a2a apart. */
    const guint stride = sc->cp_comm == TPS_CP_A2A_P2P ? MAX(sc->cp_a2a, 1u) : 1u;
    for (guint i = 0; i < n; i++) {
        guint coord[TPS_DIM_COUNT];
        for (guint d = 0; d < TPS_DIM_COUNT; d++)
            coord[d] = tps_grid_coord(&grid, members[i], (TpsDim)d);
        coord[TPS_DIM_CP] = (coord[TPS_DIM_CP] + cp - stride % cp) % cp;
        peers[i] = tps_grid_rank(&grid, coord);
    }
}

void
tps_place_stages(const TpsScenario *sc, TpsPlace *place)
{
    g_return_if_fail(sc != NULL && place != NULL);
    const TpsHardware *hw = &sc->hardware;
    g_autofree guint *stages = NULL;
    const guint n = tps_place_group(sc, TPS_DIM_BIT(TPS_DIM_PP), &stages);
    for (guint s = 0; s < n; s++) {
        place[s] = (TpsPlace){
            .domain = tps_topo_domain(hw, stages[s]),
            .pool = s,
            .pool_gbps = tps_topo_nic_share_gbps(hw, sc->tp),
        };
        /* A stage that sends to a neighbour (s + 1 forward, s - 1 back,
         * around for the interleaved schedule's wrap) in another leaf
         * group has, under every replica's stage sending at once, its
         * share of the spine's uplinks: all its sends are held to it (the
         * one to a neighbour in its own leaf group too, which errs slow). */
        const guint leaf = tps_topo_leaf(hw, stages[s]);
        const guint next = stages[(s + 1) % n], prev = stages[(s + n - 1) % n];
        if (hw->spine_oversubscription > 1.0 &&
            (tps_topo_leaf(hw, next) != leaf || tps_topo_leaf(hw, prev) != leaf))
            place[s].pool_gbps /= hw->spine_oversubscription;
    }
}

gboolean
tps_place_tp_crosses(const TpsScenario *sc, guint *domain_gpus)
{
    g_return_val_if_fail(sc != NULL, FALSE);
    if (domain_gpus)
        *domain_gpus = tps_topo_domain_gpus(&sc->hardware);
    TpsGroupShape shape;
    tps_place_group_shape(sc, TPS_DIM_BIT(TPS_DIM_TP), &shape);
    return shape.crosses;
}
