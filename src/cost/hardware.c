/* Hardware model: name tables and lifetime helpers of TpsHardware. */
#include "cost/hardware.h"

#include <string.h>

const char *const tps_dtype_names[] = {"bf16", "fp16", "fp8", NULL};
const char *const tps_band_class_names[] = {"gemm",       "gemm_small", "memory",       "attention",
                                            "collective", "host",       "interference", NULL};

const char *const tps_protocol_names[] = {"LL", "LL128", "Simple", NULL};

void
tps_hardware_clear(TpsHardware *hw)
{
    if (hw == NULL)
        return;
    g_clear_pointer(&hw->name, g_free);
    g_clear_pointer(&hw->gpu_name, g_free);
    g_clear_pointer(&hw->band_basis, g_free);
    g_clear_pointer(&hw->nccl_algo, g_free);
    g_clear_pointer(&hw->nccl_proto, g_free);
    g_clear_pointer(&hw->nccl_algo_at, g_free);
    g_clear_pointer(&hw->nccl_proto_at, g_free);
    g_clear_pointer(&hw->nccl_version, g_free);
    memset(hw, 0, sizeof(*hw));
}

void
tps_hardware_copy(TpsHardware *dst, const TpsHardware *src)
{
    g_return_if_fail(dst != NULL && src != NULL);
    if (dst == src)
        return;
    memcpy(dst, src, sizeof(*dst));
    dst->name = g_strdup(src->name);
    dst->gpu_name = g_strdup(src->gpu_name);
    dst->band_basis = g_strdup(src->band_basis);
    dst->nccl_algo = g_strdup(src->nccl_algo);
    dst->nccl_proto = g_strdup(src->nccl_proto);
    dst->nccl_algo_at = g_strdup(src->nccl_algo_at);
    dst->nccl_proto_at = g_strdup(src->nccl_proto_at);
    dst->nccl_version = g_strdup(src->nccl_version);
}

void
tps_hardware_ideal_host(TpsHardware *hw)
{
    hw->host_gemm_us = hw->host_elementwise_us = hw->host_nccl_us = hw->host_memcpy_us = 0.0;
    hw->host_launch_us = hw->host_event_record_us = hw->host_stream_wait_us = 0.0;
    hw->host_graph_launch_us = hw->host_nccl_call_us = 0.0;
}
