/* cuBLASLt's kernel ids named (bench-algo.h). */
#include "calib/gpu/bench-algo.h"

typedef struct {
    int id;
    guint a, b; /* the enumerator's AxB */
} BenchId;

#include "calib/gpu/cublaslt-ids.inc"

static gboolean
lookup(const BenchId *table, gsize n, int id, guint *a, guint *b)
{
    for (gsize i = 0; i < n; i++)
        if (table[i].id == id) {
            *a = table[i].a;
            *b = table[i].b;
            return TRUE;
        }
    return FALSE;
}

gboolean
tps_bench_lt_tile(int id, guint *rows, guint *cols)
{
    g_return_val_if_fail(rows != NULL && cols != NULL, FALSE);
    return lookup(lt_tiles, G_N_ELEMENTS(lt_tiles), id, rows, cols);
}

gboolean
tps_bench_lt_cluster(int id, guint *x, guint *y)
{
    g_return_val_if_fail(x != NULL && y != NULL, FALSE);
    return lookup(lt_clusters, G_N_ELEMENTS(lt_clusters), id, x, y);
}

void
tps_bench_algo_point(const TpsBenchShape *sh, const TpsBenchGemmAlgo *raw, TpsGemmAlgoPoint *out)
{
    g_return_if_fail(sh != NULL && raw != NULL && out != NULL);
    *out = (TpsGemmAlgoPoint){.m = sh->m,
                              .n = sh->n,
                              .k = sh->k,
                              .dtype = sh->dtype,
                              .algo = raw->algo,
                              .tile_id = (guint)MAX(raw->tile_id, 0),
                              .split_k = (guint)MAX(raw->split_k, 1)};
    guint rows, cols, x, y;
    if (tps_bench_lt_tile(raw->tile_id, &rows, &cols)) {
        out->tile_m = cols;
        out->tile_n = rows;
    }
    if (tps_bench_lt_cluster(raw->cluster_id, &x, &y)) {
        out->cluster_m = y;
        out->cluster_n = x;
    }
}
