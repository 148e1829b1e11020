/* The topology of a hardware model (topology.h). */
#include "cost/topology.h"

guint
tps_topo_domain_gpus(const TpsHardware *hw)
{
    g_return_val_if_fail(hw != NULL, 1);
    if (hw->nvlink_domain_gpus > 0)
        return hw->nvlink_domain_gpus;
    return hw->gpus_per_node > 0 ? hw->gpus_per_node : G_MAXUINT;
}

guint
tps_topo_domain(const TpsHardware *hw, guint rank)
{
    return rank / tps_topo_domain_gpus(hw);
}

guint
tps_topo_node(const TpsHardware *hw, guint rank)
{
    g_return_val_if_fail(hw != NULL, 0);
    return hw->gpus_per_node > 0 ? rank / hw->gpus_per_node : 0;
}

guint
tps_topo_leaf(const TpsHardware *hw, guint rank)
{
    g_return_val_if_fail(hw != NULL, 0);
    return hw->nodes_per_leaf > 0 ? tps_topo_node(hw, rank) / hw->nodes_per_leaf : 0;
}

double
tps_topo_nic_share_gbps(const TpsHardware *hw, guint gpus)
{
    g_return_val_if_fail(hw != NULL, 0.0);
    const guint gpn = hw->gpus_per_node > 0 ? hw->gpus_per_node : 1;
    /* (gpus x nics) / gpn first, in integers' exact doubles: a whole node
     * gives exactly nics x nic_gbps. */
    return hw->nic_gbps * ((double)gpus * hw->nics_per_node / gpn);
}

/* Count the distinct values of `keys` and the fewest members any value
 * has. Keys in ascending order (a grid group's members are listed
 * ascending, and domains and leaves follow ranks) are counted as runs. */
static guint
count_distinct(const guint *keys, guint n, guint *fewest)
{
    gboolean ascending = TRUE;
    for (guint i = 1; i < n && ascending; i++)
        ascending = keys[i - 1] <= keys[i];
    guint distinct = 0, least = G_MAXUINT;
    for (guint i = 0; i < n; i++) {
        gboolean first = TRUE;
        if (ascending)
            first = i == 0 || keys[i - 1] != keys[i];
        for (guint j = 0; !ascending && j < i && first; j++)
            first = keys[j] != keys[i];
        if (!first)
            continue;
        guint count = 0;
        for (guint j = i; j < n && (!ascending || keys[j] == keys[i]); j++)
            count += keys[j] == keys[i];
        distinct++;
        least = MIN(least, count);
    }
    if (fewest)
        *fewest = n > 0 ? least : 0;
    return distinct;
}

void
tps_topo_group_shape(const TpsHardware *hw, const guint *members, guint n, TpsGroupShape *shape)
{
    g_return_if_fail(hw != NULL && shape != NULL && (members != NULL || n == 0));
    *shape = (TpsGroupShape){.ranks = n};
    if (n == 0)
        return;
    guint *keys = g_new(guint, n);
    for (guint i = 0; i < n; i++)
        keys[i] = tps_topo_domain(hw, members[i]);
    shape->domains = count_distinct(keys, n, &shape->per_domain);
    for (guint i = 0; i < n; i++)
        keys[i] = tps_topo_leaf(hw, members[i]);
    shape->leaves = count_distinct(keys, n, NULL);
    g_free(keys);
    shape->crosses = shape->domains > 1;
    if (shape->crosses) {
        shape->nic_gbps = tps_topo_nic_share_gbps(hw, shape->per_domain);
        if (shape->leaves > 1 && hw->spine_oversubscription > 1.0)
            shape->nic_gbps /= hw->spine_oversubscription;
    }
}

void
tps_topo_contiguous_shape(const TpsHardware *hw, guint n, TpsGroupShape *shape)
{
    g_return_if_fail(hw != NULL && shape != NULL);
    guint *members = g_new(guint, MAX(n, 1u));
    for (guint i = 0; i < n; i++)
        members[i] = i;
    tps_topo_group_shape(hw, members, n, shape);
    g_free(members);
}
