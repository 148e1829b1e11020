/* tpsim-gpubench: CUDA/NCCL microbenchmarks for tpsim calibrate.
 *
 * Parses the options and builds the plan (bench-plan.c), opens the
 * device backend of this build (CUDA, or the CPU stub), runs the plan and
 * writes the measurements YAML. Exit status: 0 success, 1 a measurement
 * failed or the scenario is invalid, 2 usage error, 3 no GPU (one line on
 * stderr; the stub always ends here).
 */
#include <stdio.h>
#include <string.h>

#include "calib/gpu/bench-plan.h"
#include "core/error.h"
#include "core/output.h"

static int
fail(GError *error)
{
    fprintf(stderr, "tpsim-gpubench: %s\n", error->message);
    if (error->domain == TPS_ERROR && error->code == TPS_ERROR_USAGE)
        return 2;
    if (error->domain == TPS_ERROR && error->code == TPS_ERROR_NO_DEVICE)
        return 3;
    return 1;
}

int
main(int argc, char **argv)
{
    g_autoptr(GError) error = NULL;
    TpsBenchOptions o;
    tps_bench_options_init(&o);
    g_set_prgname("tpsim-gpubench");
    tps_output_announce(stderr); /* "wrote FILE", as tpsim's commands */
    if (!tps_bench_options_parse(&o, argc, argv, &error)) {
        tps_bench_options_clear(&o);
        return fail(error);
    }
    if (o.plan_only) {
        g_autofree char *plan = tps_bench_plan_describe(&o, o.max_gpus ? o.max_gpus : 8, 108);
        fputs(plan, stdout);
        tps_bench_options_clear(&o);
        return 0;
    }

    const TpsBenchDevice *dev = &tps_bench_device;
    TpsBenchDeviceInfo info;
    char err[512] = "";
    memset(&info, 0, sizeof(info));
    int status = dev->open((int)o.max_gpus, &info, err, sizeof(err));
    if (status != TPS_BENCH_OK) {
        g_set_error(&error, TPS_ERROR,
                    status == TPS_BENCH_NO_DEVICE ? TPS_ERROR_NO_DEVICE : TPS_ERROR_IO, "%s",
                    err[0] ? err : "cannot open the GPUs");
        tps_bench_options_clear(&o);
        return fail(error);
    }
    fprintf(stderr, "tpsim-gpubench: %d x %s (%d SMs), CUDA %s, NCCL %s\n", info.gpus, info.name,
            info.sms, info.cuda, info.nccl);

    g_autoptr(TpsMeasurements) meas = tps_measurements_new();
    gboolean ok = tps_bench_run(dev, &info, &o, meas, stderr, &error);
    dev->close();
    if (ok) {
        g_autofree char *text = tps_measurements_format(meas);
        if (o.output)
            ok = tps_write_atomic(o.output, text, strlen(text), &error);
        else
            ok = fputs(text, stdout) >= 0 && fflush(stdout) == 0;
        if (ok && o.output)
            fprintf(stderr, "tpsim-gpubench: %u points written to %s\n",
                    tps_measurements_count(meas), o.output);
        else if (!ok && error == NULL)
            g_set_error(&error, TPS_ERROR, TPS_ERROR_IO, "cannot write the measurements");
    }
    tps_bench_options_clear(&o);
    return ok ? 0 : fail(error);
}
