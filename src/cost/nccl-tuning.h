/* NCCL's tuning constants by NCCL version (NVIDIA/nccl src/graph/tuning.cc,
 * ncclTopoTuneModel and ncclTopoGetAlgoTime, 2.18 to 2.28): the numbers
 * NCCL's own model chooses an algorithm with, which changed between
 * releases. Properties of the NCCL code, not of the hardware. */
#ifndef TPS_COST_NCCL_TUNING_H
#define TPS_COST_NCCL_TUNING_H

#include <glib.h>

#include "cost/hardware.h"

/* The form of NCCL's NVLS model inside one NVLink domain by release
 * (ncclTopoTuneModel, Simple only), on the NVLS graph's nChannels x
 * bwIntra, G (the graph's bwInter, which no network bounds in one domain,
 * is raised by the search towards twice bwIntra and does not bind). */
typedef enum {
    /* 2.18-2.22: G x 5/6 for every kind it is offered for. */
    TPS_NVLS_MODEL_RATIO,
    /* 2.23-2.26: the 5/6 for an all-reduce only; an all-gather or a
     * reduce-scatter takes G. */
    TPS_NVLS_MODEL_RATIO_AR,
    /* 2.27: all-reduce G x 5/6; all-gather and reduce-scatter
     * G x (ppn - 1) / ppn. */
    TPS_NVLS_MODEL_PPN,
    /* 2.28: per channel G x nvlsEfficiency x (c - 1) / c (c: the NVLS
     * channels), x 2 and x n / (2 (n - 1)) for an all-reduce, x (ppn - 1)
     * / ppn for an all-gather or a reduce-scatter. */
    TPS_NVLS_MODEL_EFFICIENCY,
} TpsNvlsModel;

typedef struct {
    const char *versions;  /* the releases the table holds, e.g. "2.19-2.20" */
    guint first, last;     /* their minor numbers (2.<first> to 2.<last>) */
    /* Tree: baseLat, hwLat[NVLINK] and hwLat[NET] (LL, LL128, Simple). */
    double tree_base_us[TPS_PROTO_COUNT];
    double tree_nvlink_us[TPS_PROTO_COUNT];
    double tree_net_us[TPS_PROTO_COUNT];
    /* A ring all-reduce's network steps: 2 x nodes (TRUE, up to 2.22) or
     * 2 x (nodes - 1) (2.23 and later); AG/RS nodes - 1 in all. */
    gboolean ring_net_steps_per_node;
    /* A ring's LL bus bandwidth share of its graph: 1/4 for an all-reduce
     * or across nodes, 1/3 otherwise (up to 2.20); 1/2 (2.21 and later). */
    gboolean ring_ll_quarter;
    /* With one GPU per node a ring's network hop takes the Tree's network
     * latency (2.23 and later). */
    gboolean ring_ppn1_tree_net;
    /* The refinements of ncclTopoGetAlgoTime and of the graph search that
     * the table is taken with: the Tree's size-indexed correction
     * (treeCorrectionFactor), the ring's plateau latency (x 1.4, a Simple
     * all-reduce across nodes, compute capability 8.0 and later) and, on
     * two nodes, the Tree graph's bandwidth raised to twice the ring's
     * (src/graph/search.cc, second pass). FALSE only for the default
     * table (nccl.version not given), tpsim's model before these were
     * taken, which keeps shipped scenarios as they were. */
    gboolean refined;
    /* NVLS_TREE (all-reduce across NVLink domains, Simple):
     * baseLat, hwLat[NVLINK] and hwLat[NET], and the form of its
     * bandwidth and latency (cost/collective-nvls-tree.c): 2.18's
     * (nvls_tree_2_18 TRUE) or the one 2.19 to 2.27 share. */
    double nvls_tree_us[3];
    gboolean nvls_tree_2_18;
    /* NVLS in one NVLink domain: its Simple latency (baseLat +
     * hwLat[NVLINK]), whether the model has it for all-gather and
     * reduce-scatter (from 2.19; 2.18 all-reduce only) and its form. */
    double nvls_us;
    gboolean nvls_ag_rs;
    TpsNvlsModel nvls_model;
} TpsNcclTuning;

/* The table of nccl.version `version` ("2.MINOR" or "2.MINOR.PATCH", an
 * optional "-BUILD" after it); NULL: the default (the 2.23-2.28 Tree and
 * ring constants, refined FALSE, and 2.28's NVLS). NULL for a version not
 * held (below 2.18, above 2.28, or not a version). */
const TpsNcclTuning *tps_nccl_tuning(const char *version);

/* The minor number of nccl.version ("2.23.4-1": 23); 0 for NULL (the
 * default constants) and for what is not a version. */
guint tps_nccl_minor(const char *version);

/* The versions held, for messages: "2.18 to 2.28". */
const char *tps_nccl_tuning_range(void);

/* NCCL's Tree bandwidth correction for a call of `bytes` (treeCorrectionFactor
 * [p][log2(bytes / 64)], 1 from 512 MiB; the same table in 2.12-2.28). */
double tps_nccl_tree_correction(TpsProtocol p, double bytes);

/* The depth of NCCL's double binary tree over `nodes` nodes (domains): the
 * hops a reduction climbs, floor(log2(nodes)); 0 for one. */
guint tps_nccl_tree_depth(guint nodes);

#endif
