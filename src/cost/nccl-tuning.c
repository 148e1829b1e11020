/* NCCL's tuning constants by version (cost/nccl-tuning.h). Every number is
 * NVIDIA/nccl src/graph/tuning.cc at the release named (git tags
 * v2.18.1-1 ... v2.28.9-1): baseLat[TREE], hwLat[NVLINK][TREE],
 * hwLat[NET][TREE], the ring's nInterSteps and LL refinement,
 * treeCorrectionFactor, and NVLS's and NVLS_TREE's latencies and forms. */
#include "cost/nccl-tuning.h"

#include <stdlib.h>

static const TpsNcclTuning tables[] = {
    /* 2.18: tree Simple base 0, hwLat 4 (NVLink) and 14 (network);
     * NVLS_TREE base 23, hwLat 0 and 19, its own form; NVLS base 23,
     * hwLat 0, all-reduce only, x 5/6. */
    {"2.18", 18, 18, {6.8, 14.0, 0.0}, {0.6, 1.25, 4.0}, {5.0, 8.5, 14.0}, TRUE, TRUE, FALSE, TRUE,
     {23.0, 0.0, 19.0}, TRUE, 23.0, FALSE, TPS_NVLS_MODEL_RATIO},
    /* 2.19-2.20: tree Simple hwLat 28 on NVLink and network, base 0;
     * NVLS_TREE hwLat 23 and 14; NVLS hwLat 23, no base, also for
     * all-gather and reduce-scatter, x 5/6 for all three. */
    {"2.19-2.20", 19, 20, {6.8, 14.0, 0.0}, {0.6, 1.25, 28.0}, {5.0, 8.5, 28.0}, TRUE, TRUE,
     FALSE, TRUE, {0.0, 23.0, 14.0}, FALSE, 23.0, TRUE, TPS_NVLS_MODEL_RATIO},
    /* 2.21-2.22: as 2.19, the ring's LL share 1/2; NVLS_TREE and NVLS
     * hwLat 25 on NVLink. */
    {"2.21-2.22", 21, 22, {6.8, 14.0, 0.0}, {0.6, 1.25, 28.0}, {5.0, 8.5, 28.0}, TRUE, FALSE,
     FALSE, TRUE, {0.0, 25.0, 14.0}, FALSE, 25.0, TRUE, TPS_NVLS_MODEL_RATIO},
    /* 2.23-2.26: tree Simple base 8.4, hwLat 4 and 14; ring network
     * steps 2 (nodes - 1); one GPU per node takes the Tree's network
     * latency; NVLS's 5/6 for an all-reduce only. (2.28's NVLS_TREE form,
     * per channel with the GPU's nvlsEfficiency and perChMaxNVLSTreeBws
     * and hwLat[NET] 20.9, is not taken: it needs the GPU's compute
     * capability.) */
    {"2.23-2.26", 23, 26, {6.8, 14.0, 8.4}, {0.6, 1.25, 4.0}, {5.0, 8.5, 14.0}, FALSE, FALSE, TRUE,
     TRUE, {0.0, 25.0, 14.0}, FALSE, 25.0, TRUE, TPS_NVLS_MODEL_RATIO_AR},
    /* 2.27: as 2.23; NVLS all-gather and reduce-scatter x (ppn - 1) / ppn. */
    {"2.27", 27, 27, {6.8, 14.0, 8.4}, {0.6, 1.25, 4.0}, {5.0, 8.5, 14.0}, FALSE, FALSE, TRUE,
     TRUE, {0.0, 25.0, 14.0}, FALSE, 25.0, TRUE, TPS_NVLS_MODEL_PPN},
    /* 2.28: as 2.23; NVLS per channel with nvlsEfficiency. */
    {"2.28", 28, 28, {6.8, 14.0, 8.4}, {0.6, 1.25, 4.0}, {5.0, 8.5, 14.0}, FALSE, FALSE, TRUE,
     TRUE, {0.0, 25.0, 14.0}, FALSE, 25.0, TRUE, TPS_NVLS_MODEL_EFFICIENCY},
};

/* nccl.version not given: the 2.23-2.28 constants without the refinements
 * (tpsim's model before nccl.version), NVLS in 2.28's form. */
static const TpsNcclTuning default_table = {
    "2.23-2.28", 23, 28, {6.8, 14.0, 8.4}, {0.6, 1.25, 4.0}, {5.0, 8.5, 14.0}, FALSE, FALSE, TRUE,
    FALSE, {0.0, 25.0, 14.0}, FALSE, 25.0, TRUE, TPS_NVLS_MODEL_EFFICIENCY};

/* "2.MINOR", "2.MINOR.PATCH", either with "-BUILD": the minor number, or
 * 0 when `s` is not such a version. */
static guint
parse_minor(const char *s)
{
    if (s[0] != '2' || s[1] != '.' || !g_ascii_isdigit(s[2]))
        return 0;
    char *end;
    guint64 minor = g_ascii_strtoull(s + 2, &end, 10);
    if (*end == '.') {
        if (!g_ascii_isdigit(end[1]))
            return 0;
        g_ascii_strtoull(end + 1, &end, 10);
    }
    if (*end == '-') {
        if (!g_ascii_isdigit(end[1]))
            return 0;
        g_ascii_strtoull(end + 1, &end, 10);
    }
    return *end == '\0' && minor > 0 && minor < 1000 ? (guint)minor : 0;
}

guint
tps_nccl_minor(const char *version)
{
    return version != NULL ? parse_minor(version) : 0;
}

const TpsNcclTuning *
tps_nccl_tuning(const char *version)
{
    if (version == NULL)
        return &default_table;
    const guint minor = parse_minor(version);
    for (gsize i = 0; i < G_N_ELEMENTS(tables); i++)
        if (minor >= tables[i].first && minor <= tables[i].last)
            return &tables[i];
    return NULL;
}

const char *
tps_nccl_tuning_range(void)
{
    return "2.18 to 2.28";
}

/* floor(log2(n)), 0 for 0 and 1 (NCCL's log2i). */
static guint
floor_log2(guint64 n)
{
    guint l = 0;
    while (n >>= 1)
        l++;
    return l;
}

/* treeCorrectionFactor[protocol][log2(bytes >> 6)], powers of two from
 * 64 B to 256 MB (index 22: 256-512 MiB; 1 above); "Trees are not perfectly
 * sticking to the model for medium sizes" (tuning.cc). */
static const double tree_correction[TPS_PROTO_COUNT][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0,
     1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0,
     1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
};

double
tps_nccl_tree_correction(TpsProtocol p, double bytes)
{
    g_return_val_if_fail(p < TPS_PROTO_COUNT, 1.0);
    /* log2i(nBytes >> 6): the floor of log2 of the 64-byte units; a call
     * under 64 bytes has log2i(0) = 0 in NCCL (tuning.cc: logSize >= 0). */
    const guint log = floor_log2(bytes > 0.0 ? (guint64)bytes >> 6 : 0);
    return log < 23 ? tree_correction[p][log] : 1.0;
}

guint
tps_nccl_tree_depth(guint nodes)
{
    return floor_log2(nodes);
}
