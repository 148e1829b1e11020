/* The rank grid (grid.h): Megatron-Core's mixed-radix rank order. */
#include "cost/grid.h"

#include <string.h>

const char *const tps_dim_names[] = {"tp", "cp", "ep", "dp", "pp", NULL};

static int
dim_by_name(const char *name, gsize len)
{
    for (int d = 0; d < TPS_DIM_COUNT; d++)
        if (strlen(tps_dim_names[d]) == len && strncmp(tps_dim_names[d], name, len) == 0)
            return d;
    return -1;
}

gboolean
tps_grid_parse_order(const char *text, TpsDim order[TPS_DIM_COUNT], char **problem)
{
    g_return_val_if_fail(text != NULL && order != NULL, FALSE);
    gboolean seen[TPS_DIM_COUNT] = {FALSE};
    guint n = 0;
    const char *p = text;
    for (;;) {
        const char *dash = strchr(p, '-');
        gsize len = dash ? (gsize)(dash - p) : strlen(p);
        int d = dim_by_name(p, len);
        if (d < 0) {
            if (problem)
                *problem = g_strdup_printf("'%.*s' is not a parallel dimension (tp, cp, ep, "
                                           "dp, pp, joined by '-', e.g. '%s')",
                                           (int)len, p, TPS_GRID_DEFAULT_ORDER);
            return FALSE;
        }
        if (seen[d]) {
            if (problem)
                *problem = g_strdup_printf("'%s' appears twice in the order", tps_dim_names[d]);
            return FALSE;
        }
        seen[d] = TRUE;
        order[n++] = (TpsDim)d;
        if (!dash)
            break;
        p = dash + 1;
    }
    /* As Megatron: a dimension left out has size 1 and goes last. */
    for (int d = 0; d < TPS_DIM_COUNT; d++)
        if (!seen[d])
            order[n++] = (TpsDim)d;
    return TRUE;
}

char *
tps_grid_order_text(const TpsDim order[TPS_DIM_COUNT])
{
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < TPS_DIM_COUNT; i++)
        g_string_append_printf(s, "%s%s", i ? "-" : "", tps_dim_names[order[i]]);
    return g_string_free(s, FALSE);
}

void
tps_grid_init(TpsGrid *grid, const guint size[TPS_DIM_COUNT], const TpsDim order[TPS_DIM_COUNT])
{
    g_return_if_fail(grid != NULL && size != NULL && order != NULL);
    memset(grid, 0, sizeof(*grid));
    guint stride = 1;
    for (guint i = 0; i < TPS_DIM_COUNT; i++) {
        TpsDim d = order[i];
        grid->order[i] = d;
        grid->size[d] = MAX(size[d], 1u);
        grid->stride[d] = stride;
        stride *= grid->size[d];
    }
    grid->world = stride;
}

void
tps_grid_init_expert(TpsGrid *expert, const TpsGrid *dense, guint etp, guint ep)
{
    g_return_if_fail(expert != NULL && dense != NULL && etp >= 1 && ep >= 1);
    const guint pp = dense->size[TPS_DIM_PP];
    g_return_if_fail(dense->world % ((guint64)etp * ep * pp) == 0);
    guint size[TPS_DIM_COUNT] = {
        [TPS_DIM_TP] = etp, [TPS_DIM_CP] = 1,
        [TPS_DIM_EP] = ep,  [TPS_DIM_DP] = dense->world / (etp * ep * pp),
        [TPS_DIM_PP] = pp,
    };
    tps_grid_init(expert, size, dense->order);
}

guint
tps_grid_coord(const TpsGrid *grid, guint rank, TpsDim dim)
{
    g_return_val_if_fail(grid != NULL && dim < TPS_DIM_COUNT, 0);
    return rank / grid->stride[dim] % grid->size[dim];
}

guint
tps_grid_rank(const TpsGrid *grid, const guint coord[TPS_DIM_COUNT])
{
    g_return_val_if_fail(grid != NULL && coord != NULL, 0);
    guint rank = 0;
    for (guint d = 0; d < TPS_DIM_COUNT; d++)
        rank += coord[d] % grid->size[d] * grid->stride[d];
    return rank;
}

guint
tps_grid_group_size(const TpsGrid *grid, guint dims)
{
    g_return_val_if_fail(grid != NULL, 0);
    guint n = 1;
    for (guint d = 0; d < TPS_DIM_COUNT; d++)
        if (dims & TPS_DIM_BIT(d))
            n *= grid->size[d];
    return n;
}

guint
tps_grid_group(const TpsGrid *grid, guint rank, guint dims, guint *members)
{
    g_return_val_if_fail(grid != NULL && members != NULL, 0);
    /* The group's first member: rank with the group's coordinates at 0. */
    guint base = rank % grid->world;
    for (guint d = 0; d < TPS_DIM_COUNT; d++)
        if (dims & TPS_DIM_BIT(d))
            base -= tps_grid_coord(grid, rank, (TpsDim)d) * grid->stride[d];
    /* Member i: i decomposed over the group's dimensions in the order's
     * sequence, the first fastest. */
    const guint n = tps_grid_group_size(grid, dims);
    for (guint i = 0; i < n; i++) {
        guint rest = i, r = base;
        for (guint k = 0; k < TPS_DIM_COUNT; k++) {
            TpsDim d = grid->order[k];
            if (!(dims & TPS_DIM_BIT(d)))
                continue;
            r += rest % grid->size[d] * grid->stride[d];
            rest /= grid->size[d];
        }
        members[i] = r;
    }
    return n;
}
