/* The recorded GEMM kernels by shape (gemm-kernels.h). */
#include "calib/gemm-kernels.h"

#include "core/error.h"

struct TpsGemmKernels {
    /* Copies of the points, each its own key: hashed and compared by m, n,
     * k and dtype. */
    GHashTable *by_shape;
};

static guint
shape_hash(gconstpointer p)
{
    const TpsGemmAlgoPoint *s = p;
    guint64 h = s->m * 1000003u ^ s->n * 10007u ^ s->k * 101u ^ (guint64)s->dtype;
    return (guint)(h ^ (h >> 32));
}

static gboolean
shape_equal(gconstpointer a, gconstpointer b)
{
    const TpsGemmAlgoPoint *x = a, *y = b;
    return x->m == y->m && x->n == y->n && x->k == y->k && x->dtype == y->dtype;
}

void
tps_gemm_kernels_free(TpsGemmKernels *kernels)
{
    if (kernels == NULL)
        return;
    g_hash_table_unref(kernels->by_shape);
    g_free(kernels);
}

/* Whether point i can join the table: a tile of the model, one kernel a
 * shape (the same kernel twice is the same record). */
static gboolean
check_point(const TpsGemmKernels *kernels, const TpsHardware *hw, const char *file, guint i,
            const TpsGemmAlgoPoint *p, GError **error)
{
    if (p->tile_m > 0 && !tps_cost_gemm_has_tile(hw, p->tile_m, p->tile_n)) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "%s: gemm_algos[%u]: the %" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT
                    "x%" G_GUINT64_FORMAT " kernel's tile %ux%u is not in %s's gemm.tiles (the "
                    "model has no efficiency for it; add it to the model file to fit one)",
                    file, i, p->m, p->n, p->k, p->tile_m, p->tile_n,
                    hw->name ? hw->name : "the model");
        return FALSE;
    }
    const TpsGemmAlgoPoint *seen = g_hash_table_lookup(kernels->by_shape, p);
    if (seen != NULL &&
        (seen->tile_m != p->tile_m || seen->tile_n != p->tile_n || seen->split_k != p->split_k)) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "%s: gemm_algos[%u]: a second kernel for %" G_GUINT64_FORMAT
                    "x%" G_GUINT64_FORMAT "x%" G_GUINT64_FORMAT " %s (%ux%u split %u, "
                    "where an earlier point has %ux%u split %u)",
                    file, i, p->m, p->n, p->k, tps_dtype_names[p->dtype], p->tile_m, p->tile_n,
                    p->split_k, seen->tile_m, seen->tile_n, seen->split_k);
        return FALSE;
    }
    return TRUE;
}

TpsGemmKernels *
tps_gemm_kernels_new(const GArray *algos, const TpsHardware *hw, const char *file, GError **error)
{
    g_return_val_if_fail(algos != NULL && hw != NULL && file != NULL, NULL);
    TpsGemmKernels *kernels = g_new0(TpsGemmKernels, 1);
    kernels->by_shape = g_hash_table_new_full(shape_hash, shape_equal, g_free, NULL);
    for (guint i = 0; i < algos->len; i++) {
        const TpsGemmAlgoPoint *p = &g_array_index(algos, TpsGemmAlgoPoint, i);
        if (!check_point(kernels, hw, file, i, p, error)) {
            tps_gemm_kernels_free(kernels);
            return NULL;
        }
        g_hash_table_add(kernels->by_shape, g_memdup2(p, sizeof(*p)));
    }
    return kernels;
}

/* The recorded kernel of a shape whose tile is known, or NULL. */
static const TpsGemmAlgoPoint *
lookup(const TpsGemmKernels *kernels, TpsDtype dtype, guint64 m, guint64 n, guint64 k)
{
    const TpsGemmAlgoPoint key = {.m = m, .n = n, .k = k, .dtype = dtype};
    const TpsGemmAlgoPoint *p = g_hash_table_lookup(kernels->by_shape, &key);
    return p != NULL && p->tile_m > 0 ? p : NULL;
}

gboolean
tps_gemm_kernels_apply(const TpsGemmKernels *kernels, TpsDtype dtype, guint64 m, guint64 n,
                       guint64 k, TpsGemmRun *run)
{
    g_return_val_if_fail(kernels != NULL && run != NULL, FALSE);
    const TpsGemmAlgoPoint *p = lookup(kernels, dtype, m, n, k);
    if (p == NULL)
        return FALSE;
    run->tile_m = p->tile_m;
    run->tile_n = p->tile_n;
    run->split_k = p->split_k;
    return TRUE;
}

guint
tps_gemm_kernels_attach(const TpsGemmKernels *kernels, GArray *gemm_points, guint device_sms)
{
    g_return_val_if_fail(kernels != NULL && gemm_points != NULL, 0);
    guint attached = 0;
    for (guint i = 0; i < gemm_points->len; i++) {
        TpsGemmPoint *p = &g_array_index(gemm_points, TpsGemmPoint, i);
        if (p->sms != 0 && p->sms < device_sms)
            continue;
        const TpsGemmAlgoPoint *kernel = lookup(kernels, p->dtype, p->m, p->n, p->k);
        if (kernel == NULL)
            continue;
        p->tile_m = kernel->tile_m;
        p->tile_n = kernel->tile_n;
        p->split_k = kernel->split_k;
        attached++;
    }
    return attached;
}
