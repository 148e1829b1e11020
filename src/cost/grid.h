/* The rank grid: which GPUs form each parallel group, in Megatron-Core's
 * rank order.
 *
 * Megatron-Core numbers the ranks of a job as a mixed-radix number whose
 * digits are the coordinates of the parallel dimensions, the first one of
 * its order fastest (`RankGenerator` in megatron/core/parallel_state.py,
 * order "tp-cp-ep-dp-pp" by default):
 *
 *   rank = tp_rank + tp * (cp_rank + cp * (ep_rank + ep * (dp_rank + dp * pp_rank)))
 *
 * A group over a set of dimensions is the ranks whose other coordinates are
 * equal; its members are listed with the group's own dimensions in the
 * order's sequence, the first fastest (generate_masked_orthogonal_rank_groups
 * there). Megatron builds two such grids over the same GPUs: the dense one
 * (tp, cp, dp, pp; its ep is 1) and the expert one, in which tp is the
 * expert tensor parallel size, ep the expert parallel size, dp the expert
 * data parallel size and cp 1. Both are this type with other sizes
 * (tps_grid_init_expert()).
 *
 * Plain data; no allocation.
 */
#pragma once

#include <glib.h>

typedef enum {
    TPS_DIM_TP,
    TPS_DIM_CP,
    TPS_DIM_EP,
    TPS_DIM_DP,
    TPS_DIM_PP,
    TPS_DIM_COUNT
} TpsDim;

/* "tp", "cp", "ep", "dp", "pp"; NULL-terminated. */
extern const char *const tps_dim_names[];

/* A set of dimensions: bit (1 << dim) for each. */
#define TPS_DIM_BIT(d) (1u << (d))

/* Megatron-Core's default order (initialize_model_parallel's `order`). */
#define TPS_GRID_DEFAULT_ORDER "tp-cp-ep-dp-pp"

typedef struct {
    TpsDim order[TPS_DIM_COUNT]; /* the dimensions, fastest first */
    guint size[TPS_DIM_COUNT];   /* by dimension */
    guint stride[TPS_DIM_COUNT]; /* by dimension: rank distance of one step */
    guint world;                 /* product of the sizes */
} TpsGrid;

/* Parse an order ("tp-cp-ep-dp-pp", any permutation; dimensions left out
 * are appended in the default sequence, as Megatron appends those of size
 * 1). FALSE with `problem` set (g_free it) when a token is not a dimension
 * or is repeated. */
gboolean tps_grid_parse_order(const char *text, TpsDim order[TPS_DIM_COUNT], char **problem);

/* The order as text, every dimension named ("tp-cp-ep-dp-pp"); g_free it. */
char *tps_grid_order_text(const TpsDim order[TPS_DIM_COUNT]);

/* A grid of these sizes (by dimension, each >= 1) in this order. */
void tps_grid_init(TpsGrid *grid, const guint size[TPS_DIM_COUNT],
                   const TpsDim order[TPS_DIM_COUNT]);

/* The expert grid beside a dense one: the same order and pp, tensor
 * parallel size `etp`, expert parallel size `ep`, cp 1, and dp the rest
 * of the world (dense world / (etp x ep x pp), which must divide). */
void tps_grid_init_expert(TpsGrid *expert, const TpsGrid *dense, guint etp, guint ep);

/* The coordinate of `rank` along `dim`. */
guint tps_grid_coord(const TpsGrid *grid, guint rank, TpsDim dim);

/* The rank at these coordinates (by dimension). */
guint tps_grid_rank(const TpsGrid *grid, const guint coord[TPS_DIM_COUNT]);

/* The number of ranks of a group over the dimensions of `dims`. */
guint tps_grid_group_size(const TpsGrid *grid, guint dims);

/* The members of `rank`'s group over the dimensions of `dims` into
 * `members` (tps_grid_group_size() of them), in Megatron's order; returns
 * their number. */
guint tps_grid_group(const TpsGrid *grid, guint rank, guint dims, guint *members);
