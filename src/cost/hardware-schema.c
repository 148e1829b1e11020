/* The hardware schema table and access to TpsHardware by dotted path. */
#include "cost/hardware-schema.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/names.h"
#include "core/time.h"

/* Map element keys. The peak map's keys are the dtypes every GPU has (fp8,
 * which an A100 lacks, is a key of its own that may be 0); the protocols
 * are lower case in files, unlike tps_protocol_names (NCCL's spelling). */
static const char *const peak_keys[] = {"bf16", "fp16", NULL};
static const char *const proto_keys[] = {"ll", "ll128", "simple", NULL};

static const TpsHardwareList tiles_list = {
    "tiles",
    offsetof(TpsHardware, n_tiles),
    TPS_GEMM_MAX_TILES,
    sizeof(TpsGemmTile),
};

/* Entry builders: the macros give the brace-less start of an entry so that
 * an entry can add `.fit = ...` after it. Every key is required: a model
 * file states every value with its source, and a silent default would hide
 * a forgotten one. */
#define SCALAR(sec, k, t, memb, lo, hi, u, d)                                                      \
    .section = sec, .key = k, .type = t, .shape = TPS_HW_SCALAR,                                   \
    .offset = offsetof(TpsHardware, memb), .min = lo, .max = hi, .required = TRUE, .unit = u,      \
    .doc = d
/* An optional key: `def` when a file leaves it out (a string: NULL), so
 * that older models keep the mechanism it switches off. */
#define OPTIONAL(sec, k, t, memb, lo, hi, u, def, d)                                               \
    .section = sec, .key = k, .type = t, .shape = TPS_HW_SCALAR,                                   \
    .offset = offsetof(TpsHardware, memb), .min = lo, .max = hi, .required = FALSE,                \
    .default_value = def, .unit = u, .doc = d
#define MAP(sec, k, keys, memb, lo, hi, u, d)                                                      \
    .section = sec, .key = k, .type = TPS_HW_DOUBLE, .shape = TPS_HW_MAP,                          \
    .offset = offsetof(TpsHardware, memb), .elements = keys, .min = lo, .max = hi,                 \
    .required = TRUE, .unit = u, .doc = d
#define TILE(m, t, memb, lo, hi, u, d)                                                             \
    .section = "gemm", .key = "tiles", .member = m, .type = t, .shape = TPS_HW_LIST,               \
    .offset = offsetof(TpsHardware, tiles) + offsetof(TpsGemmTile, memb), .list = &tiles_list,     \
    .min = lo, .max = hi, .required = TRUE, .unit = u, .doc = d
#define FIT(name, lo, hi) .fit = name, .fit_min = lo, .fit_max = hi

static const TpsHardwareField fields[] = {
    {SCALAR(NULL, "name", TPS_HW_STRING, name, 0, 0, "",
            "the model's name; a built-in model's must match its file name")},

    {SCALAR("gpu", "name", TPS_HW_STRING, gpu_name, 0, 0, "",
            "the GPU's name, e.g. \"NVIDIA A100-SXM4-80GB\"")},
    {SCALAR("gpu", "sms", TPS_HW_UINT, sms, 1, 1024, "", "streaming multiprocessors")},
    {SCALAR("gpu", "clock_mhz", TPS_HW_DOUBLE, clock_mhz, 100, 10000, "MHz", "boost clock")},
    {SCALAR("gpu", "memory_gib", TPS_HW_DOUBLE, memory_gib, 1, 4096, "GiB", "device memory")},
    {MAP("gpu", "peak_tflops", peak_keys, peak_tflops, 1, 100000, "TFLOP/s",
         "dense tensor-core peak per dtype")},
    {SCALAR("gpu", "peak_tflops_fp8", TPS_HW_DOUBLE, peak_tflops[TPS_DTYPE_FP8], 0, 100000,
            "TFLOP/s", "dense FP8 tensor-core peak (0: no FP8 tensor cores; dtype fp8 refused)")},
    {SCALAR("gpu", "peak_tflops_mxfp8", TPS_HW_DOUBLE, peak_tflops_mxfp8, 0, 100000, "TFLOP/s",
            "dense MXFP8 (block-scaled FP8) tensor-core peak (0: no MXFP8 tensor cores; "
            "model.fp8_recipe mxfp8 refused)")},
    {SCALAR("gpu", "hbm_gbps", TPS_HW_DOUBLE, hbm_gbps, 10, 100000, "GB/s",
            "HBM bandwidth (specification)")},
    {SCALAR("gpu", "hbm_efficiency", TPS_HW_DOUBLE, hbm_efficiency, 0.05, 1, "",
            "achievable fraction of hbm_gbps")},
    {SCALAR("gpu", "sm_mem_gbps", TPS_HW_DOUBLE, sm_mem_gbps, 1, 10000, "GB/s",
            "load/store bandwidth one SM can drive")},
    {SCALAR("gpu", "l2_mib", TPS_HW_DOUBLE, l2_mib, 0, 65536, "MiB",
            "L2 cache: a GEMM output that fits is stored at L2, not HBM, bandwidth")},
    {SCALAR("gpu", "launch_us", TPS_HW_DOUBLE, launch_us, 0, 1000, "us",
            "launch overhead of one kernel alone (analytic references)"),
     FIT("launch", 0.01, 1000.0)},
    {SCALAR("gpu", "copy_engines", TPS_HW_UINT, copy_engines, 0, 64, "",
            "copy engines usable for concurrent P2P copies")},
    {SCALAR("gpu", "l2_shared_mib", TPS_HW_DOUBLE, l2_shared_mib, 0, 4096, "MiB",
            "L2 capacity holding data that every SM reads (GEMM operand panels)")},

    {TILE("m", TPS_HW_UINT, m, 8, 1024, "", "output tile rows")},
    {TILE("n", TPS_HW_UINT, n, 8, 1024, "", "output tile columns")},
    {TILE("efficiency", TPS_HW_DOUBLE, efficiency, 0.05, 1, "",
          "fraction of the per-SM peak reached in the main loop by one CTA of this tile"),
     FIT("gemm", 0.05, 1.0)},
    {SCALAR("gemm", "k_overhead", TPS_HW_DOUBLE, k_overhead, 0, 100000, "k",
            "per-tile prologue/epilogue in units of k (efficiency k / (k + k_overhead))"),
     FIT("gemm", 0.5, 1e5)},
    {SCALAR("gemm", "latency_us", TPS_HW_DOUBLE, gemm_latency_us, 0, 1000, "us",
            "per kernel: launch to first CTA, pipeline fill and last write"),
     FIT("gemm", 0.05, 100.0)},
    {SCALAR("gemm", "store_exposed", TPS_HW_DOUBLE, gemm_store_exposed, 0, 1, "",
            "share of a wave's tile stores not hidden under the main loop")},
    {SCALAR("gemm", "split_k_max", TPS_HW_UINT, split_k_max, 1, 256, "",
            "most slices k is split into when the output tiles leave SMs idle (1: never)")},
    {SCALAR("gemm", "split_k_min_k", TPS_HW_UINT, split_k_min_k, 1, 1048576, "k",
            "smallest k slice a split CTA works on")},
    {OPTIONAL("gemm", "split_k_in_kernel", TPS_HW_UINT, split_k_in_kernel, 0, 1, "", 0,
              "1: a split GEMM's kernel reduces its k slices itself; 0: a second kernel does "
              "(default)")},
    {OPTIONAL("gemm", "cluster", TPS_HW_UINT, gemm_cluster, 1, 16, "", 1,
              "CTAs of a thread-block cluster sharing one operand panel by TMA multicast "
              "(default 1: none)")},
    {OPTIONAL("gemm", "power_sms", TPS_HW_DOUBLE, gemm_power_sms, 0, 4096, "SMs", 0,
              "SMs whose GEMM main loops the board's power limit lets run at the clock the tile "
              "efficiencies hold at (default 0: no limit)")},
    {OPTIONAL("gemm", "power_exponent", TPS_HW_DOUBLE, gemm_power_exponent, 0, 4, "", 0,
              "with more active SMs than power_sms the clock is (power_sms / active)^exponent "
              "of the tiles' clock")},
    {OPTIONAL("gemm", "power_zero_operand", TPS_HW_DOUBLE, gemm_power_zero, 0.05, 1, "", 1,
              "an SM's GEMM main-loop power with an all-zero A operand, as a fraction of that on "
              "data: such a GEMM counts its active SMs times this against power_sms (default 1)")},
    {OPTIONAL("gemm", "power_sustained", TPS_HW_DOUBLE, gemm_sustained, 0.3, 1, "", 1,
              "the clock the board's average-power limit holds under sustained load (training's "
              "back-to-back kernels), as a fraction of the clock the tile efficiencies hold at "
              "(default 1)")},
    {OPTIONAL("gemm", "power_tau_ms", TPS_HW_DOUBLE, gemm_power_tau_ms, 0, 10000, "ms", 0,
              "time constant in which a GPU that starts running load after idling falls from the "
              "tile efficiencies' clock to power_sustained (default 0: at once); only a "
              "measurement that declares its load history sees it")},

    {SCALAR("attention", "flash_fwd_efficiency", TPS_HW_DOUBLE, flash_fwd_efficiency, 0.01, 1, "",
            "flash attention forward: fraction of peak tensor FLOP/s")},
    {SCALAR("attention", "flash_bwd_efficiency", TPS_HW_DOUBLE, flash_bwd_efficiency, 0.01, 1, "",
            "flash attention backward: fraction of peak tensor FLOP/s")},

    {SCALAR("node", "gpus", TPS_HW_UINT, gpus_per_node, 1, 1024, "", "GPUs per node")},
    {SCALAR("node", "nvlink_domain_gpus", TPS_HW_UINT, nvlink_domain_gpus, 1, 100000, "",
            "GPUs on one NVLink fabric (a multiple of node.gpus: the node, or a rack of trays)")},
    {SCALAR("node", "nvlink_gbps", TPS_HW_DOUBLE, nvlink_gbps, 1, 100000, "GB/s",
            "NVLink per GPU and direction (specification)")},
    {SCALAR("node", "nvlink_efficiency", TPS_HW_DOUBLE, nvlink_efficiency, 0.05, 1, "",
            "payload fraction reached by copies over NVLink"),
     FIT("collectives", 0.05, 1.0)},
    {SCALAR("node", "copy_engine_gbps", TPS_HW_DOUBLE, copy_engine_gbps, 1, 100000, "GB/s",
            "one copy engine's P2P rate"),
     FIT("copy", 1.0, 1e5)},

    {SCALAR("network", "nics_per_node", TPS_HW_UINT, nics_per_node, 1, 1024, "",
            "network interfaces per node")},
    {SCALAR("network", "nodes_per_leaf", TPS_HW_UINT, nodes_per_leaf, 0, 1000000, "",
            "nodes whose NICs meet in one leaf group; traffic between groups crosses the spine "
            "(0: one group)")},
    {SCALAR("network", "spine_oversubscription", TPS_HW_DOUBLE, spine_oversubscription, 1, 1000, "",
            "a leaf group's downlink over uplink bandwidth (1: non-blocking)")},
    {SCALAR("network", "nic_gbps", TPS_HW_DOUBLE, nic_gbps, 0.1, 100000, "GB/s",
            "effective per NIC and direction")},
    {SCALAR("network", "latency_us", TPS_HW_DOUBLE, network_latency_us, 0, 1000, "us",
            "one network hop")},
    {SCALAR("network", "duplex_efficiency", TPS_HW_DOUBLE, net_duplex_efficiency, 0.05, 1, "",
            "share of nic_gbps each direction keeps while a NIC sends and receives at once")},
    {OPTIONAL("network", "sharp", TPS_HW_UINT, net_sharp, 0, 1, "", 0,
              "1: the switches reduce for NCCL's CollNet (IB SHARP with NCCL's SHARP network "
              "plugin, NCCL_COLLNET_ENABLE=1; default 0)")},

    {SCALAR("nccl", "channels", TPS_HW_UINT, nccl_channels, 1, 256, "",
            "CTAs (SMs) per collective at full size")},
    {SCALAR("nccl", "threads", TPS_HW_UINT, nccl_threads, 32, 1024, "",
            "threads per channel (Simple)")},
    {MAP("nccl", "base_latency_us", proto_keys, nccl_base_latency_us, 0, 1000, "us",
         "base latency per protocol"),
     FIT("collectives", 0.01, 1000.0)},
    {MAP("nccl", "hw_latency_us", proto_keys, nccl_hw_latency_us, 0, 1000, "us",
         "latency per hop on NVLink, per protocol"),
     FIT("collectives", 0.01, 1000.0)},
    {MAP("nccl", "net_latency_us", proto_keys, nccl_net_latency_us, 0, 1000, "us",
         "latency per hop on the network, per protocol"),
     FIT("collectives", 0.01, 1000.0)},
    {MAP("nccl", "channel_gbps", proto_keys, nccl_channel_gbps, 0.01, 10000, "GB/s",
         "rate of one channel, per protocol"),
     FIT("collectives", 0.05, 2000.0)},
    {MAP("nccl", "proto_efficiency", proto_keys, nccl_proto_efficiency, 0.05, 1, "",
         "payload fraction of the wire bytes, per protocol")},
    {MAP("nccl", "slot_bytes", proto_keys, nccl_slot_bytes, 0, 1 << 30, "bytes",
         "payload a channel receives before forwarding it (pipeline granularity)"),
     FIT("collectives", 64.0, 64.0 * 1024 * 1024)},
    {SCALAR("nccl", "channel_mem_gbps", TPS_HW_DOUBLE, nccl_channel_mem_gbps, 0.01, 100000, "GB/s",
            "rate of one channel's user-buffer reads and writes, in series with its link")},
    {SCALAR(
        "nccl", "p2p_channels", TPS_HW_UINT, nccl_p2p_channels, 0, 256, "",
        "channels a send to a peer on the same node is split over (0: one hop at the link rate)")},
    {OPTIONAL("nccl", "algo", TPS_HW_STRING, nccl_algo, 0, 0, "", 0,
              "algorithms NCCL may choose, as NCCL_ALGO: Ring, Tree, NVLS, NVLSTree, "
              "CollNetDirect, CollNetChain, comma-separated, "
              "'^' first to exclude them (default: all)")},
    {OPTIONAL("nccl", "proto", TPS_HW_STRING, nccl_proto, 0, 0, "", 0,
              "protocols NCCL may choose, as NCCL_PROTO: LL, LL128, Simple, comma-separated, "
              "'^' first to exclude them (default: all)")},
    {OPTIONAL("nccl", "version", TPS_HW_STRING, nccl_version, 0, 0, "", 0,
              "the NCCL release whose tuning constants choose the algorithm, 2.18 to 2.28 "
              "(\"2.19\" or \"2.19.3\"; default: the 2.23-2.28 constants without the Tree "
              "correction, the ring plateau and the two-node Tree graph)")},
    {OPTIONAL("nccl", "no_ll128_net", TPS_HW_UINT, nccl_no_ll128_net, 0, 1, "", 0,
              "1: NCCL leaves LL128 off across nodes (the NIC not on the GPU's PCIe switch; "
              "default 0)")},
    {OPTIONAL("nccl", "net_graph_gbps", TPS_HW_DOUBLE, nccl_net_graph_gbps, 0, 100000, "GB/s", 0,
              "NCCL's graph bandwidth across nodes (nChannels x bwInter) its tuning model "
              "takes (default 0: the group's NICs)")},
    {OPTIONAL("nccl", "nvls", TPS_HW_UINT, nccl_nvls, 0, 1, "", 0,
              "1: the NVSwitches reduce and multicast (NVLink SHARP, NCCL's NVLS; default 0)")},
    {OPTIONAL("nccl", "nvls_channels", TPS_HW_UINT, nccl_nvls_channels, 1, 256, "", 16,
              "CTAs of an NVLS collective (default 16, NVLS_NCHANNELS_SM90)")},
    {OPTIONAL("nccl", "nvls_efficiency", TPS_HW_DOUBLE, nccl_nvls_efficiency, 0.05, 1, "", 0.85,
              "the NVLS efficiency of NCCL 2.28's tuning model for the GPU (nvlsEfficiency; "
              "default 0.85, Hopper's; Blackwell 0.74)")},
    {OPTIONAL("nccl", "max_channels", TPS_HW_UINT, nccl_max_channels, 0, 1024, "", 64,
              "NCCL's channel maximum (default 64, NCCL's MAXCHANNELS; 0: none)")},
    {OPTIONAL("nccl", "channels_nvlink_gbps", TPS_HW_DOUBLE, nccl_channels_nvlink_gbps, 0, 100000,
              "GB/s", -1,
              "node.nvlink_gbps at which nccl.channels was counted (default: the file's "
              "node.nvlink_gbps; 0: channels do not follow the link)")},
    {OPTIONAL("nccl", "ce_collectives", TPS_HW_UINT, nccl_ce_collectives, 0, 1, "", 0,
              "1: all-gathers inside one NVLink domain by copy engines, no SMs (NCCL 2.28+ "
              "NCCL_CTA_POLICY_ZERO with buffers in symmetric windows; default 0)")},
    {OPTIONAL("nccl", "ce_op_latency_us", TPS_HW_DOUBLE, nccl_ce_op_latency_us, 0, 1000, "us", 2,
              "GPU time of one flag copy of a copy-engine collective's synchronisation "
              "(default 2, assumption)")},

    {SCALAR("memory", "context_mib", TPS_HW_DOUBLE, mem_context_mib, 0, 65536, "MiB",
            "CUDA context of a process: local-memory reservation, printf FIFO, malloc heap")},
    {MAP("memory", "nccl_buffer_kib", proto_keys, mem_nccl_buffer_kib, 0, 1 << 20, "KiB",
         "FIFO of one NCCL connection per channel, per protocol")},
    {SCALAR("memory", "nccl_p2p_channels", TPS_HW_UINT, mem_nccl_p2p_channels, 0, 256, "",
            "NCCL channels per send/recv peer (pipeline transfers)")},
    {OPTIONAL("memory", "nccl_nvls_chunk_kib", TPS_HW_DOUBLE, mem_nccl_nvls_chunk_kib, 1, 1 << 20,
              "KiB", 128,
              "NVLS step size (NCCL_NVLS_CHUNKSIZE, default 128): an NVLS communicator holds "
              "nvls_channels x 2 x 8 steps of it per member")},
    {SCALAR("memory", "alloc_small_segment_mib", TPS_HW_DOUBLE, mem_alloc_small_segment_mib, 0.0001,
            65536, "MiB", "caching-allocator segment shared by requests up to half of it")},
    {SCALAR("memory", "alloc_segment_mib", TPS_HW_DOUBLE, mem_alloc_segment_mib, 0.0001, 65536,
            "MiB", "caching-allocator segment shared by larger requests up to half of it")},
    {SCALAR("memory", "alloc_round_mib", TPS_HW_DOUBLE, mem_alloc_round_mib, 0.0001, 65536, "MiB",
            "caching-allocator rounding of requests of half a segment or more")},
    /* Fitted by `tpsim trace host` over Kineto traces, not by calibrate. */
    {SCALAR("host", "gemm_us", TPS_HW_DOUBLE, host_gemm_us, 0, 100000, "us",
            "host time of one framework GEMM op (launch included)")},
    {SCALAR("host", "elementwise_us", TPS_HW_DOUBLE, host_elementwise_us, 0, 100000, "us",
            "host time of one framework elementwise or memory-bound op")},
    {SCALAR("host", "nccl_us", TPS_HW_DOUBLE, host_nccl_us, 0, 100000, "us",
            "host time of one framework NCCL collective call")},
    {SCALAR("host", "memcpy_us", TPS_HW_DOUBLE, host_memcpy_us, 0, 100000, "us",
            "host time of one framework copy op (and of an .item() read after its wait)")},
    {SCALAR("host", "launch_us", TPS_HW_DOUBLE, host_launch_us, 0, 100000, "us",
            "host time of one launch call from inside a library op")},
    {SCALAR("host", "event_record_us", TPS_HW_DOUBLE, host_event_record_us, 0, 100000, "us",
            "host time of one cudaEventRecord")},
    {SCALAR("host", "stream_wait_us", TPS_HW_DOUBLE, host_stream_wait_us, 0, 100000, "us",
            "host time of one cudaStreamWaitEvent")},
    {SCALAR("host", "graph_launch_us", TPS_HW_DOUBLE, host_graph_launch_us, 0, 100000, "us",
            "host time of one cudaGraphLaunch")},
    {SCALAR("host", "nccl_call_us", TPS_HW_DOUBLE, host_nccl_call_us, 0, 100000, "us",
            "host time of one eager collective call up to its kernel's start, no profiler")},

    {SCALAR("uncertainty", "basis", TPS_HW_STRING, band_basis, 0, 0, "",
            "what the error bands rest on: the validation of this model, or why not")},
    /* A residual of -100% would be an infinitely slow measurement. */
    {MAP("uncertainty", "p10_pct", tps_band_class_names, band_p10_pct, -99, 1000, "%",
         "10th percentile of the signed validation residuals of each class of work")},
    {MAP("uncertainty", "p90_pct", tps_band_class_names, band_p90_pct, -99, 1000, "%",
         "90th percentile of the signed validation residuals of each class of work")},
};

#undef SCALAR
#undef MAP
#undef TILE
#undef FIT

const TpsHardwareField *
tps_hardware_schema(guint *n_fields)
{
    g_return_val_if_fail(n_fields != NULL, NULL);
    *n_fields = G_N_ELEMENTS(fields);
    return fields;
}

guint
tps_hardware_schema_key_end(guint first)
{
    g_return_val_if_fail(first < G_N_ELEMENTS(fields), first + 1);
    guint end = first + 1;
    while (end < G_N_ELEMENTS(fields) && fields[first].shape == TPS_HW_LIST &&
           fields[end].list == fields[first].list)
        end++;
    return end;
}

static guint
count_names(const char *const *names)
{
    guint n = 0;
    while (names[n] != NULL)
        n++;
    return n;
}

static gsize
type_size(TpsHardwareType type)
{
    switch (type) {
    case TPS_HW_DOUBLE:
        return sizeof(double);
    case TPS_HW_UINT:
        return sizeof(guint);
    case TPS_HW_TIME:
        return sizeof(TpsTime);
    case TPS_HW_STRING:
        return sizeof(char *);
    case TPS_HW_BOOL:
        return sizeof(gboolean);
    case TPS_HW_ENUM:
        return sizeof(int);
    }
    g_assert_not_reached();
    return 0;
}

guint
tps_hardware_field_count(const TpsHardwareField *field, const TpsHardware *hw)
{
    g_return_val_if_fail(field != NULL && hw != NULL, 0);
    switch (field->shape) {
    case TPS_HW_SCALAR:
        return 1;
    case TPS_HW_MAP:
        return count_names(field->elements);
    case TPS_HW_LIST:
        return MIN(*(const guint *)(const void *)((const char *)hw + field->list->count_offset),
                   field->list->max_items);
    }
    g_assert_not_reached();
    return 0;
}

gsize
tps_hardware_field_offset(const TpsHardwareField *field, guint index)
{
    g_return_val_if_fail(field != NULL, 0);
    switch (field->shape) {
    case TPS_HW_SCALAR:
        return field->offset;
    case TPS_HW_MAP:
        return field->offset + index * type_size(field->type);
    case TPS_HW_LIST:
        return field->offset + index * field->list->stride;
    }
    g_assert_not_reached();
    return 0;
}

char *
tps_hardware_field_path(const TpsHardwareField *field, guint index)
{
    g_return_val_if_fail(field != NULL, NULL);
    if (field->section == NULL)
        return g_strdup(field->key);
    switch (field->shape) {
    case TPS_HW_SCALAR:
        return g_strdup_printf("%s.%s", field->section, field->key);
    case TPS_HW_MAP:
        return g_strdup_printf("%s.%s.%s", field->section, field->key, field->elements[index]);
    case TPS_HW_LIST:
        return g_strdup_printf("%s.%s.%u.%s", field->section, field->key, index, field->member);
    }
    g_assert_not_reached();
    return NULL;
}

double
tps_hardware_field_get(const TpsHardwareField *field, const TpsHardware *hw, guint index)
{
    g_return_val_if_fail(field != NULL && hw != NULL, 0.0);
    const void *p = (const char *)hw + tps_hardware_field_offset(field, index);
    switch (field->type) {
    case TPS_HW_DOUBLE:
        return *(const double *)p;
    case TPS_HW_UINT:
        return *(const guint *)p;
    case TPS_HW_TIME:
        return tps_time_to_us(*(const TpsTime *)p);
    case TPS_HW_BOOL:
        return *(const gboolean *)p ? 1.0 : 0.0;
    case TPS_HW_ENUM:
        return *(const int *)p;
    case TPS_HW_STRING:
        break;
    }
    g_return_val_if_reached(0.0);
}

void
tps_hardware_field_set(const TpsHardwareField *field, TpsHardware *hw, guint index, double value)
{
    g_return_if_fail(field != NULL && hw != NULL);
    void *p = (char *)hw + tps_hardware_field_offset(field, index);
    switch (field->type) {
    case TPS_HW_DOUBLE:
        *(double *)p = value;
        return;
    case TPS_HW_UINT:
        *(guint *)p = (guint)value;
        return;
    case TPS_HW_TIME:
        /* Nearest, not up as tps_time_from_us(): 2.007 us is 2007 ns,
         * although 2.007 * 1e3 is 2007.0000000000002 in binary. */
        *(TpsTime *)p = (TpsTime)llround(value * 1e3);
        return;
    case TPS_HW_BOOL:
        *(gboolean *)p = value != 0.0;
        return;
    case TPS_HW_ENUM:
        *(int *)p = (int)value;
        return;
    case TPS_HW_STRING:
        break;
    }
    g_return_if_reached();
}

/* Parses a list index: decimal digits only ("2", not "+2" or "02x"). */
static gboolean
parse_index(const char *s, guint *out)
{
    if (!g_ascii_isdigit(*s))
        return FALSE;
    char *end;
    guint64 v = g_ascii_strtoull(s, &end, 10);
    if (*end != '\0' || v > G_MAXUINT)
        return FALSE;
    *out = (guint)v;
    return TRUE;
}

static gboolean
same(const char *a, const char *b)
{
    return a != NULL && b != NULL && strcmp(a, b) == 0;
}

const TpsHardwareField *
tps_hardware_schema_find(const char *path, guint *index)
{
    g_return_val_if_fail(path != NULL, NULL);
    g_auto(GStrv) parts = g_strsplit(path, ".", -1);
    guint n = g_strv_length(parts);
    guint i = 0;

    for (guint f = 0; f < G_N_ELEMENTS(fields); f++) {
        const TpsHardwareField *e = &fields[f];
        if (e->section == NULL) {
            if (n != 1 || !same(parts[0], e->key))
                continue;
        } else if (n < 2 || !same(parts[0], e->section) || !same(parts[1], e->key)) {
            continue;
        }
        switch (e->shape) {
        case TPS_HW_SCALAR:
            if (n != (e->section ? 2u : 1u))
                continue;
            i = 0;
            break;
        case TPS_HW_MAP:
            if (n != 3)
                continue;
            for (i = 0; e->elements[i] != NULL && !same(e->elements[i], parts[2]); i++)
                ;
            if (e->elements[i] == NULL)
                continue;
            break;
        case TPS_HW_LIST:
            if (n != 4 || !same(parts[3], e->member) || !parse_index(parts[2], &i) ||
                i >= e->list->max_items)
                continue;
            break;
        }
        if (index != NULL)
            *index = i;
        return e;
    }
    return NULL;
}

/* The entry of `path` as get/set need it: a number, within the list items
 * in use. */
static const TpsHardwareField *
find_number(const TpsHardware *hw, const char *path, guint *index, GError **error)
{
    const TpsHardwareField *f = tps_hardware_schema_find(path, index);
    if (f == NULL) {
        /* Suggest among the paths of scalars and map elements: a list
         * item's path is most often wrong in its index, which a suggestion
         * of another index would not help with. */
        g_autoptr(GPtrArray) paths = g_ptr_array_new_with_free_func(g_free);
        for (guint i = 0; i < G_N_ELEMENTS(fields); i++)
            if (fields[i].shape != TPS_HW_LIST)
                for (guint j = 0; j < tps_hardware_field_count(&fields[i], hw); j++)
                    g_ptr_array_add(paths, tps_hardware_field_path(&fields[i], j));
        g_ptr_array_add(paths, NULL);
        const char *close = tps_names_closest(path, (const char *const *)paths->pdata);
        if (close != NULL)
            g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                        "unknown hardware field '%s'; did you mean '%s'?", path, close);
        else
            g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "unknown hardware field '%s'", path);
        return NULL;
    }
    if (f->type == TPS_HW_STRING) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "hardware field '%s' is not a number", path);
        return NULL;
    }
    if (f->shape == TPS_HW_LIST && *index >= tps_hardware_field_count(f, hw)) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "hardware field '%s': the model has %u %s",
                    path, tps_hardware_field_count(f, hw), f->list->item);
        return NULL;
    }
    return f;
}

gboolean
tps_hardware_schema_get(const TpsHardware *hw, const char *path, double *value, GError **error)
{
    g_return_val_if_fail(hw != NULL && path != NULL && value != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    guint index;
    const TpsHardwareField *f = find_number(hw, path, &index, error);
    if (f == NULL)
        return FALSE;
    *value = tps_hardware_field_get(f, hw, index);
    return TRUE;
}

gboolean
tps_hardware_schema_set(TpsHardware *hw, const char *path, double value, GError **error)
{
    g_return_val_if_fail(hw != NULL && path != NULL, FALSE);
    g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
    guint index;
    const TpsHardwareField *f = find_number(hw, path, &index, error);
    if (f == NULL)
        return FALSE;

    /* Each test is written so that NaN fails it. */
    switch (f->type) {
    case TPS_HW_BOOL:
        if (value == 0.0 || value == 1.0)
            break;
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "%s must be 0 or 1, not %g", path, value);
        return FALSE;
    case TPS_HW_ENUM:
        if (value >= 0 && value < count_names(f->names) && value == floor(value))
            break;
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "%s must be an index below %u, not %g", path,
                    count_names(f->names), value);
        return FALSE;
    case TPS_HW_UINT:
        if (value >= f->min && value <= f->max && value == floor(value))
            break;
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "%s must be a whole number between %g and %g, not %g", path, f->min, f->max,
                    value);
        return FALSE;
    case TPS_HW_DOUBLE:
    case TPS_HW_TIME:
    case TPS_HW_STRING:
        if (value >= f->min && value <= f->max)
            break;
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "%s must be a number between %g and %g, not %g", path, f->min, f->max, value);
        return FALSE;
    }
    tps_hardware_field_set(f, hw, index, value);
    return TRUE;
}
