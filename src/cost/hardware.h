/* A hardware model: one GPU, its node (NVLink through NVSwitch), the network
 * between nodes, and the cost-model parameters fitted for it. Read from
 * models/NAME.yaml by the io layer (io/input/model-file.c); each field below is
 * the YAML key path written beside it, and every value in the files carries
 * a comment naming its source. The hardware schema (cost/hardware-schema.c)
 * is the table of those keys, their types and ranges, which the loader, the
 * writer and calibration walk: a new field gets an entry there.
 *
 * Units: bandwidths in GB/s (= bytes/ns), latencies in microseconds, clocks
 * in MHz, throughput in TFLOP/s. Plain data, no pointers but `name`, `gpu_name`
 * and `band_basis` (owned; tps_hardware_clear() frees them).
 */
#pragma once

#include <glib.h>

/* The precision of the GEMMs. bf16 and fp16 are the element type of every
 * tensor; fp8 is Transformer Engine's FP8 training (fp8_autocast with its
 * default recipe, delayed scaling): the linear layers' GEMMs take FP8
 * operands and write bf16, everything else (activations, attention,
 * communication, gradients) stays bf16. */
typedef enum {
    TPS_DTYPE_BF16,
    TPS_DTYPE_FP16,
    TPS_DTYPE_FP8,
    TPS_DTYPE_COUNT
} TpsDtype;

/* "bf16", "fp16", "fp8"; NULL-terminated for tables. */
extern const char *const tps_dtype_names[];

/* Bytes of an activation, gradient or GEMM output element: 2 (bf16 under
 * fp8 too). */
static inline guint
tps_dtype_bytes(TpsDtype dtype)
{
    (void)dtype;
    return 2;
}

/* Bytes of a GEMM operand element: 1 for fp8 (E4M3 forward, E5M2
 * gradients: TE's default HYBRID format), else 2. */
static inline guint
tps_dtype_gemm_bytes(TpsDtype dtype)
{
    return dtype == TPS_DTYPE_FP8 ? 1 : 2;
}

/* The dtype of the work outside the linear layers' GEMMs (attention, the
 * output layer): bf16 under fp8, which Transformer Engine applies to its
 * linear layers only. */
static inline TpsDtype
tps_dtype_compute(TpsDtype dtype)
{
    return dtype == TPS_DTYPE_FP8 ? TPS_DTYPE_BF16 : dtype;
}

#define TPS_GEMM_MAX_TILES 8

typedef enum {
    TPS_PROTO_LL,
    TPS_PROTO_LL128,
    TPS_PROTO_SIMPLE,
    TPS_PROTO_COUNT
} TpsProtocol;

/* "LL", "LL128", "Simple"; NULL-terminated. */
extern const char *const tps_protocol_names[];

/* The classes of work whose validation residuals give a prediction's error
 * band (docs/validation.md, "Error bands"): the parts a simulated window is
 * cut into, each with the signed residual quantiles of its datasets. */
typedef enum {
    TPS_BAND_GEMM,         /* GEMMs of >= 512 tokens (vidur-gemm/all) */
    TPS_BAND_GEMM_SMALL,   /* GEMMs below 512 tokens (vidur-gemm/all/small) */
    TPS_BAND_MEMORY,       /* memory-bound kernels (vidur-add/...) */
    TPS_BAND_ATTENTION,    /* attention kernels: no dataset */
    TPS_BAND_COLLECTIVE,   /* collectives within a node (the 1xG sets, aicb-tp2) */
    TPS_BAND_HOST,         /* the GPU idle, waiting for its host: no dataset */
    TPS_BAND_INTERFERENCE, /* compute beside communication (interference/...) */
    TPS_BAND_COUNT
} TpsBandClass;

/* "gemm", "gemm_small", "memory", "attention", "collective", "host",
 * "interference" (the keys of the uncertainty section); NULL-terminated. */
extern const char *const tps_band_class_names[];

typedef struct {
    guint m, n;        /* gemm.tiles[i].m, .n: output tile shape */
    double efficiency; /* gemm.tiles[i].efficiency: fraction of the per-SM peak
                          reached in the main loop by one CTA of this tile */
} TpsGemmTile;

typedef struct {
    char *name; /* name (must match the file name for built-in models) */

    /* gpu: */
    char *gpu_name;                      /* gpu.name, e.g. "NVIDIA A100-SXM4-80GB" */
    guint sms;                           /* gpu.sms */
    double clock_mhz;                    /* gpu.clock_mhz (boost) */
    double memory_gib;                   /* gpu.memory_gib */
    double peak_tflops[TPS_DTYPE_COUNT]; /* gpu.peak_tflops.bf16, gpu.peak_tflops.fp16 (dense),
                                            gpu.peak_tflops_fp8 (0: no FP8 tensor cores) */
    double peak_tflops_mxfp8;            /* gpu.peak_tflops_mxfp8: dense MXFP8 (FP8 with one E8M0
                                            scale per 32 elements, Blackwell's block-scaled tensor
                                            cores) peak (0: none) */
    double hbm_gbps;                     /* gpu.hbm_gbps: specification */
    double hbm_efficiency;               /* gpu.hbm_efficiency: achievable fraction of hbm_gbps */
    double sm_mem_gbps;   /* gpu.sm_mem_gbps: load/store bandwidth one SM can drive */
    double l2_mib;        /* gpu.l2_mib: L2 cache (writes land there first) */
    double launch_us;     /* gpu.launch_us: launch overhead of one kernel alone (the
                             launch term of analytic references; the engine charges
                             the host section per op) */
    guint copy_engines;   /* gpu.copy_engines: usable for concurrent P2P copies */
    double l2_shared_mib; /* gpu.l2_shared_mib: L2 capacity that holds data every SM
                             reads (a GEMM wave's operand panels) */

    /* gemm: */
    TpsGemmTile tiles[TPS_GEMM_MAX_TILES]; /* gemm.tiles: candidate tile configurations */
    guint n_tiles;
    double k_overhead;          /* gemm.k_overhead: per-tile prologue/epilogue, in units
                                   of k (main-loop efficiency k / (k + k_overhead)) */
    double gemm_latency_us;     /* gemm.latency_us: per kernel, before its CTAs do work
                                   (launch to first CTA, pipeline fill, last write) */
    double gemm_store_exposed;  /* gemm.store_exposed: share of a wave's tile stores that its
                                   main loop does not hide (1: stored after it, Ampere) */
    guint split_k_max;          /* gemm.split_k_max: most slices k is split into (1: never) */
    guint split_k_min_k;        /* gemm.split_k_min_k: smallest k slice of a split CTA */
    guint split_k_in_kernel;    /* gemm.split_k_in_kernel: 1: the GEMM kernel reduces its k
                                   slices itself (Hopper's cuBLAS); 0: a second kernel does */
    guint gemm_cluster;         /* gemm.cluster: CTAs of a thread-block cluster that share an
                                   operand panel by TMA multicast (1, or 0 in code: none) */
    double gemm_power_sms;      /* gemm.power_sms: SMs whose main loops the power limit lets
                                   run at the tiles' clock (0: no limit) */
    double gemm_power_exponent; /* gemm.power_exponent: the clock falls as
                                   (power_sms / active SMs)^exponent above them */
    double gemm_power_zero;     /* gemm.power_zero_operand: an SM's main-loop power on an
                                   all-zero A operand, as a fraction of that on data (1: the
                                   same) */
    double gemm_sustained;      /* gemm.power_sustained: the clock the average-power limit
                                   holds under sustained load, of the tiles' clock (1) */
    double gemm_power_tau_ms;   /* gemm.power_tau_ms: time constant in which the clock falls
                                   from the tiles' clock to power_sustained once the GPU runs
                                   load after idling (0: at once) */

    /* attention: */
    double flash_fwd_efficiency; /* attention.flash_fwd_efficiency: of peak tensor FLOP/s */
    double flash_bwd_efficiency; /* attention.flash_bwd_efficiency */

    /* node: */
    guint gpus_per_node;      /* node.gpus */
    guint nvlink_domain_gpus; /* node.nvlink_domain_gpus: GPUs on one NVLink fabric, a
                                 multiple of node.gpus (the node on DGX/HGX, the rack of
                                 trays on GB200 NVL72); 0 in a model built in code: the node */
    double nvlink_gbps;       /* node.nvlink_gbps: per GPU and direction (specification) */
    double nvlink_efficiency; /* node.nvlink_efficiency: payload fraction reached by
                                 copies over NVLink (protocol overhead) */
    double copy_engine_gbps;  /* node.copy_engine_gbps: one copy engine's P2P rate */

    /* network: */
    guint nics_per_node;           /* network.nics_per_node (GPU l of a node uses NIC
                                      l x nics / gpus: one per GPU on its rail, or shared) */
    guint nodes_per_leaf;          /* network.nodes_per_leaf: nodes whose NICs meet in one
                                      leaf group (a scalable unit of the fabric); traffic
                                      between groups crosses the spine (0: one group) */
    double spine_oversubscription; /* network.spine_oversubscription: a leaf group's
                                      downlink over uplink bandwidth (1: non-blocking) */
    double nic_gbps;              /* network.nic_gbps: effective per NIC and direction */
    double network_latency_us;    /* network.latency_us */
    double net_duplex_efficiency; /* network.duplex_efficiency: the share of nic_gbps each
                                     direction keeps while a NIC sends and receives at once
                                     (rings across nodes); 1 for a full-duplex path */
    guint net_sharp;              /* network.sharp: 1 if the fabric's switches reduce (IB
                                     SHARP) for NCCL's CollNet */

    /* nccl: */
    guint nccl_channels; /* nccl.channels: CTAs (SMs) per collective at full size */
    guint nccl_threads;  /* nccl.threads: threads per channel (Simple) */
    double nccl_base_latency_us[TPS_PROTO_COUNT]; /* nccl.base_latency_us.{ll,ll128,simple} */
    double nccl_hw_latency_us[TPS_PROTO_COUNT];  /* nccl.hw_latency_us.{ll,ll128,simple} (NVLink) */
    double nccl_net_latency_us[TPS_PROTO_COUNT]; /* nccl.net_latency_us.{ll,ll128,simple} (IB) */
    double
        nccl_channel_gbps[TPS_PROTO_COUNT]; /* nccl.channel_gbps.{ll,ll128,simple}: per channel */
    double nccl_proto_efficiency[TPS_PROTO_COUNT]; /* nccl.proto_efficiency.{ll,ll128,simple}:
                                                      payload fraction of the wire bytes */
    double nccl_slot_bytes[TPS_PROTO_COUNT];       /* nccl.slot_bytes.{ll,ll128,simple}: payload a
                                                      channel must receive before it can forward it
                                                      to the next rank (pipeline granularity) */
    double
        nccl_channel_mem_gbps; /* nccl.channel_mem_gbps: rate at which one channel's CTA reads
                                  and writes the user buffers, in series with its link transfer */
    /* nccl.p2p_channels: channels a send to a peer on the same node is split
     * over; 0: one hop at the link rate */
    guint nccl_p2p_channels;
    /* nccl.algo, nccl.proto: the algorithms and protocols NCCL may choose,
     * written as NCCL_ALGO and NCCL_PROTO are ("Ring,Tree", "^NVLS",
     * "AllReduce:Tree;AllGather:Ring", case-insensitive; cost/nccl-env.h);
     * NULL: all. Where each was written ("file:line:column"), for the
     * errors of the calls they leave nothing for; NULL: set in code. */
    char *nccl_algo;
    char *nccl_proto;
    char *nccl_algo_at;
    char *nccl_proto_at;
    /* nccl.version: the NCCL release whose tuning constants choose the
     * algorithm ("2.19", "2.19.3"; cost/nccl-tuning.h); NULL: the 2.23-2.28
     * constants without the refinements taken with a version. */
    char *nccl_version;
    /* nccl.no_ll128_net: 1 if NCCL leaves LL128 off on graphs that cross
     * nodes (it enables it only with the NIC on the GPU's PCIe switch,
     * typeInter <= PATH_PXB, src/graph/tuning.cc) */
    guint nccl_no_ll128_net;
    /* nccl.net_graph_gbps: NCCL's graph bandwidth across nodes (nChannels x
     * bwInter, what its topology search believes a node's network gives
     * the group) that its tuning model takes; 0: the group's NICs
     * (nic_gbps x their count), as the costing does */
    double nccl_net_graph_gbps;
    guint nccl_nvls;          /* nccl.nvls: 1 if the NVSwitches reduce and multicast (NVLS) */
    guint nccl_nvls_channels; /* nccl.nvls_channels: CTAs of an NVLS collective */
    /* nccl.nvls_efficiency: the NVLS bandwidth efficiency NCCL's 2.28
     * model takes for the GPU's compute capability (nvlsEfficiency) */
    double nccl_nvls_efficiency;
    guint nccl_max_channels;  /* nccl.max_channels: NCCL's channel maximum (0: none) */
    double nccl_channels_nvlink_gbps; /* nccl.channels_nvlink_gbps: the node.nvlink_gbps at
                                         which nccl.channels was counted (0: channels fixed) */
    /* nccl.ce_collectives: 1 if NCCL runs an all-gather inside one NVLink
     * domain by copy engines (NCCL_CTA_POLICY_ZERO with symmetric windows:
     * cost/collective-ce.h); nccl.ce_op_latency_us: the GPU time of one
     * stream operation of its synchronisation (a 4-byte copy-engine flag
     * copy) */
    guint nccl_ce_collectives;
    double nccl_ce_op_latency_us;

    /* memory: what a training process holds besides weights, gradients,
     * optimizer states and activations (docs/cost-model.md, "Memory"). */
    double mem_context_mib; /* memory.context_mib: CUDA context of the process */
    double mem_nccl_buffer_kib[TPS_PROTO_COUNT]; /* memory.nccl_buffer_kib.{ll,ll128,simple}:
                                                      one connection's FIFO per channel */
    guint mem_nccl_p2p_channels;        /* memory.nccl_p2p_channels: channels per send/recv peer */
    double mem_nccl_nvls_chunk_kib;     /* memory.nccl_nvls_chunk_kib: NVLS step size */
    double mem_alloc_small_segment_mib; /* memory.alloc_small_segment_mib: caching-allocator
                                           segment shared by requests up to half of it */
    double mem_alloc_segment_mib; /* memory.alloc_segment_mib: caching-allocator segment shared
                                     by larger requests up to half of it */
    double mem_alloc_round_mib;   /* memory.alloc_round_mib: rounding of larger requests */
    /* host: the framework's CPU time on a rank's issuing thread, per op class
     * (docs/cost-model.md, "Host"). A framework op is one call the training
     * script makes (Python, dispatch, allocation, the launch itself); a
     * launch is one runtime call from C++ inside a library op. */
    double host_gemm_us;         /* host.gemm_us: one framework GEMM op */
    double host_elementwise_us;  /* host.elementwise_us: one framework elementwise or
                                    memory-bound op */
    double host_nccl_us;         /* host.nccl_us: one framework NCCL collective call */
    double host_memcpy_us;       /* host.memcpy_us: one framework copy op (also the read of an
                                    .item() after its wait) */
    double host_launch_us;       /* host.launch_us: one cudaLaunchKernel or cudaMemcpyAsync
                                    call from inside a library op */
    double host_event_record_us; /* host.event_record_us: one cudaEventRecord */
    double host_stream_wait_us;  /* host.stream_wait_us: one cudaStreamWaitEvent */
    double host_graph_launch_us; /* host.graph_launch_us: one cudaGraphLaunch */
    double host_nccl_call_us;    /* host.nccl_call_us: one eager torch.distributed collective
                                    call without profiler, from a CUDA event recorded before
                                    it to its NCCL kernel's start (validation of per-call
                                    timers; the engine charges host.nccl_us) */
    /* uncertainty: signed residual quantiles, in percent of 100 (predicted /
     * measured - 1), of the validation datasets of each class of work
     * (`tpsim validate` computes them; docs/validation.md, "Error bands"). */
    char *band_basis; /* uncertainty.basis: what the figures rest on (the results' note) */
    double band_p10_pct[TPS_BAND_COUNT]; /* uncertainty.p10_pct.CLASS: 10th percentile */
    double band_p90_pct[TPS_BAND_COUNT]; /* uncertainty.p90_pct.CLASS: 90th percentile */
} TpsHardware;

void tps_hardware_clear(TpsHardware *hw);
/* Deep copy into `dst` (which is overwritten, not cleared). */
void tps_hardware_copy(TpsHardware *dst, const TpsHardware *src);

/* Zero the host section: a host that issues everything at once. For
 * microbenchmarks timed on the GPU in a loop whose host runs ahead (its
 * issue is hidden behind the previous iteration), and for tests of
 * GPU-side sums. */
void tps_hardware_ideal_host(TpsHardware *hw);
