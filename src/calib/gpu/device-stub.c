/* The CPU stub of tpsim-gpubench's device interface: built when CUDA,
 * cuBLAS or NCCL is missing (or -Dcuda=disabled). Opening always reports no
 * device; nothing else can be reached. */
#include <stdio.h>

#include "calib/gpu/bench-device.h"

static int
stub_open(int max_gpus, TpsBenchDeviceInfo *info, char *err, size_t err_len)
{
    (void)max_gpus;
    (void)info;
    snprintf(err, err_len,
             "no GPU: this tpsim-gpubench was built without CUDA, cuBLAS and "
             "NCCL (CPU stub; reconfigure with -Dcuda=enabled where they are)");
    return TPS_BENCH_NO_DEVICE;
}

static void
stub_close(void)
{
}

/* Only open and close: the driver never calls the rest after a failed open. */
const TpsBenchDevice tps_bench_device = {
    .name = "stub",
    .open = stub_open,
    .close = stub_close,
};
