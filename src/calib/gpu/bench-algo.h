/* tpsim-gpubench's `algos` section, CPU side: cuBLASLt's ids of the kernel
 * its heuristic picks for a GEMM (TpsBenchGemmAlgo) named as a
 * TpsGemmAlgoPoint in this project's row-major m x n.
 *
 * The backend asks cuBLASLt for the column-major C^T[n,m] = B^T A^T that
 * cublasGemmEx runs (device-cuda.cu, gemm_launch): the library's tile
 * "AxB" is A along its rows, our n, and B along its columns, our m; a
 * cluster "XxYx1" likewise X along n and Y along m.
 */
#pragma once

#include "calib/gpu/bench-device.h"
#include "calib/gpu/bench-plan.h"
#include "calib/measurements.h"

/* The point of `raw` for shape `sh`: a tile id the table does not hold
 * (or CUBLASLT_MATMUL_TILE_UNDEFINED) gives tile 0 x 0 with the id kept;
 * cluster 0 x 0 for auto or an id not in the table. */
void tps_bench_algo_point(const TpsBenchShape *sh, const TpsBenchGemmAlgo *raw,
                          TpsGemmAlgoPoint *out);

/* The library's m x n of tile id `id` and x x y of cluster id `id` (the
 * enumerators' names in cublasLt.h); FALSE for an id not in the tables. */
gboolean tps_bench_lt_tile(int id, guint *rows, guint *cols);
gboolean tps_bench_lt_cluster(int id, guint *x, guint *y);
