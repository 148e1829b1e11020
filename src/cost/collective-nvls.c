/* NCCL's NVLS model in one NVLink domain (cost/collective-nvls.h).
 *
 * NVIDIA/nccl src/graph/tuning.cc ncclTopoTuneModel, Simple only, one
 * node (the forms are cost/nccl-tuning.h's TpsNvlsModel):
 *   2.18 (v2.18.6-1): all-reduce only (all-gather and reduce-scatter
 *     take the ring alone); busBw = nChannels x bwIntra (nNodes <= 2),
 *     algorithm bandwidth x 5/6; latency baseLat 23 + hwLat[NVLINK] 0;
 *   2.19-2.22 (v2.19.3-1, v2.20.5-1, v2.22.3-1): all-reduce, all-gather
 *     and reduce-scatter; busBw = nChannels x min(bwIntra, bwInter), x 5/6
 *     for all three; latency hwLat[NVLINK] 23 (2.19, 2.20), 25 (2.21 on),
 *     no base;
 *   2.23-2.26 (v2.23.4-1, v2.26.6-1): the 5/6 for an all-reduce only
 *     ("Convert bus BW to algorithm BW" skips all but the ring for
 *     all-gather and reduce-scatter);
 *   2.27 (v2.27.7-1): all-gather and reduce-scatter per channel
 *     min(bwIntra x (ppn - 1) / ppn, bwInter x 0.9);
 *   2.28 (v2.28.9-1): per channel bwIntra x nvlsEfficiency x (nChannels
 *     - 1) / nChannels, x 2 for an all-reduce ("pipelines two
 *     operations") and x (ppn - 1) / ppn otherwise, bounded by bwInter;
 *     an all-reduce's algorithm bandwidth x nRanks / nsteps.
 * nChannels x bwIntra is NVLink x efficiency, the graph the ring's model
 * takes in one domain (cost/collective.c). bwInter: in one domain no
 * network bounds the NVLS graph, and the search's second pass raises its
 * bwInter while below twice bwIntra (src/graph/search.cc, "graph->pattern
 * == NCCL_TOPO_PATTERN_NVLS", 2.19 and later); tpsim takes it as not
 * binding (an assumption: the ceiling of the search's speed table is not
 * modelled), so the min() terms and 2.27's bwInter x 0.9 fall away.
 * nvlsEfficiency is the GPU's, nccl.nvls_efficiency (Hopper 0.85,
 * Blackwell 0.74). */
#include "cost/collective-nvls.h"

#define NVLS_RATIO (5.0 / 6.0)

/* The algorithm bandwidth (GB/s) of the forms before 2.28, on the
 * domain's graph `graph` (nChannels x bwIntra). */
static double
ratio_gbps(const TpsNcclTuning *t, TpsCollKind kind, double graph, guint ppn)
{
    if (kind == TPS_COLL_ALL_REDUCE || t->nvls_model == TPS_NVLS_MODEL_RATIO)
        return graph * NVLS_RATIO;
    if (t->nvls_model == TPS_NVLS_MODEL_PPN)
        return graph * (ppn - 1) / ppn;
    return graph;
}

/* 2.28's algorithm bandwidth (GB/s): per channel with the GPU's NVLS
 * efficiency. */
static double
efficiency_gbps(const TpsHardware *hw, TpsCollKind kind, double graph, guint n, guint ppn)
{
    const double nvc = hw->nccl_nvls_channels;
    const double intra = graph * hw->nccl_nvls_efficiency * (nvc - 1) / nvc;
    if (kind != TPS_COLL_ALL_REDUCE)
        return intra * (ppn - 1) / ppn;
    const guint nsteps = 2 * (n - 1);
    return 2.0 * intra * ((double)n / nsteps);
}

double
tps_nvls_model_us(const TpsHardware *hw, const TpsNcclTuning *t, TpsCollKind kind, double bytes,
                  const TpsGroupShape *shape)
{
    g_return_val_if_fail(hw != NULL && t != NULL && shape != NULL, -1.0);
    if (kind != TPS_COLL_ALL_REDUCE && !t->nvls_ag_rs)
        return -1.0;
    const guint n = shape->ranks, ppn = n / MAX(shape->domains, 1u);
    const double graph = hw->nvlink_gbps * hw->nvlink_efficiency;
    const double bw = t->nvls_model == TPS_NVLS_MODEL_EFFICIENCY
                          ? efficiency_gbps(hw, kind, graph, n, ppn)
                          : ratio_gbps(t, kind, graph, ppn);
    return t->nvls_us + bytes / (1e3 * bw);
}
