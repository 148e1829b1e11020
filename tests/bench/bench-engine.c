/* Engine benchmark: a synthetic TP step graph of at least a million tasks
 * (8 ranks; compute, communication and copy streams; GEMM-like kernels on
 * SMs, memory kernels, SM-based communication containers whose ring flows
 * cross ranks and nodes, copy-engine transfers, cross-stream event waits),
 * replayed once. Prints figures; never fails on time.
 *
 * Usage: bench-engine [MIN-TASKS [reference]]
 *   MIN-TASKS  graph size (default 1000000)
 *   reference  re-solve whole components on every change (no local updates)
 */
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "core/alloc.h"
#include "engine/engine.h"

#define RANKS 8

/* CPU seconds of this process: steadier than wall time on a shared box. */
static double
cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long
minor_faults(void)
{
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_minflt;
}

typedef struct {
    TpsStreamId compute, comm, copy;
    TpsTaskId last_flow; /* last ring flow sent by this rank */
} RankStreams;

/* One layer: on every rank a GEMM, a memory kernel, a communication
 * container with two ring flows (the second step waits for the first step
 * arriving from the previous rank), a copy-engine transfer and a join
 * marker; the next layer's compute waits for the communication. */
static void
add_layer(TpsEngine *engine, RankStreams *rs, GRand *rand)
{
    TpsTaskId flows[RANKS][2];
    for (guint r = 0; r < RANKS; r++) {
        /* Compute-bound, as real GEMMs: alone on all SMs they use 20-60%
         * of the HBM bandwidth. */
        guint ctas = g_rand_int_range(rand, 64, 432);
        TpsTime wave_ns = g_rand_int_range(rand, 4000, 9000);
        double solo_ns = (double)((ctas + 107) / 108 * wave_ns);
        TpsTaskSpec gemm = {
            .kind = TPS_KIND_GEMM,
            .name = "gemm",
            .rank = r,
            .stream = rs[r].compute,
            .parent = TPS_TASK_NONE,
            .launch = TRUE,
            .ctas = ctas,
            .wave_ns = wave_ns,
            .fixed_ns = 1500,
            .hbm_bytes = g_rand_double_range(rand, 0.2, 0.6) * 1555.0 * solo_ns,
            .flops = 1e11,
        };
        tps_engine_add(engine, &gemm);
        TpsTaskSpec mem = {
            .kind = TPS_KIND_MEMORY,
            .name = "layernorm",
            .rank = r,
            .stream = rs[r].compute,
            .parent = TPS_TASK_NONE,
            .launch = TRUE,
            .ctas = 216,
            .wave_ns = 200,
            .fixed_ns = 800,
            .hbm_bytes = g_rand_double_range(rand, 1e6, 3e7),
        };
        TpsTaskId m = tps_engine_add(engine, &mem);

        tps_engine_stream_wait(engine, rs[r].comm, m);
        TpsTaskSpec comm = {
            .kind = TPS_KIND_COMM,
            .name = "allgather",
            .rank = r,
            .stream = rs[r].comm,
            .parent = TPS_TASK_NONE,
            .launch = TRUE,
            .container = TRUE,
            .ctas = 16,
            .fixed_ns = 2000,
        };
        TpsTaskId c = tps_engine_add(engine, &comm);
        double bytes = g_rand_double_range(rand, 1e6, 8e6);
        for (guint k = 0; k < 2; k++) {
            TpsTaskSpec flow = {
                .kind = TPS_KIND_FLOW,
                .name = "ring-step",
                .rank = r,
                .stream = TPS_STREAM_NONE,
                .parent = c,
                .fixed_ns = 700,
                .dst_rank = (r + 1) % RANKS,
                .link_bytes = bytes,
                .floor_ns = 1000,
            };
            flows[r][k] = tps_engine_add(engine, &flow);
            if (k > 0)
                tps_engine_after(engine, flows[r][k], flows[r][k - 1]);
        }
        TpsTaskSpec copy = {
            .kind = TPS_KIND_COPY,
            .name = "p2p-copy",
            .rank = r,
            .stream = rs[r].copy,
            .parent = TPS_TASK_NONE,
            .launch = TRUE,
            .copy_engine = TRUE,
            .dst_rank = (r + RANKS / 2) % RANKS,
            .link_bytes = g_rand_double_range(rand, 1e5, 2e6),
        };
        tps_engine_add(engine, &copy);
        TpsTaskSpec join = {
            .kind = TPS_KIND_MARKER,
            .name = "join",
            .rank = r,
            .stream = rs[r].compute,
            .parent = TPS_TASK_NONE,
        };
        TpsTaskId j = tps_engine_add(engine, &join);
        tps_engine_after(engine, j, c);
    }
    /* Ring: step 2 forwards what step 1 of the previous rank delivered. */
    for (guint r = 0; r < RANKS; r++)
        tps_engine_after(engine, flows[r][1], flows[(r + RANKS - 1) % RANKS][0]);
}

int
main(int argc, char **argv)
{
    guint64 min_tasks = argc > 1 ? g_ascii_strtoull(argv[1], NULL, 10) : 1000000;
    TpsMachine machine = {
        .ranks = RANKS,
        .gpus_per_node = 4, /* two nodes: half the ring crosses the NIC */
        .sms = 108,
        .hbm_gbps = 1555.0,
        .nvlink_gbps = 300.0,
        .nic_gbps = 25.0,
        .copy_engines = 2,
        .launch_ns = 2500,
    };

    gint64 t0 = g_get_monotonic_time();
    g_autoptr(TpsEngine) engine = tps_engine_new(&machine);
    if (argc > 2 && g_str_equal(argv[2], "reference"))
        tps_engine_set_incremental(engine, FALSE);
    RankStreams rs[RANKS];
    for (guint r = 0; r < RANKS; r++) {
        rs[r].compute = tps_engine_add_stream(engine, r, 0, "compute");
        rs[r].comm = tps_engine_add_stream(engine, r, 1, "comm");
        rs[r].copy = tps_engine_add_stream(engine, r, 0, "copy");
    }
    GRand *rand = g_rand_new_with_seed(1);
    while (tps_engine_n_tasks(engine) < min_tasks)
        add_layer(engine, rs, rand);
    g_rand_free(rand);

    gint64 t1 = g_get_monotonic_time();
    double c1 = cpu_seconds();
    long f1 = minor_faults();
    TpsRunStats stats;
    g_autoptr(GError) error = NULL;
    gboolean ok = tps_engine_run(engine, &stats, &error);
    gint64 t2 = g_get_monotonic_time();
    double run_cpu = cpu_seconds() - c1;
    long run_faults = minor_faults() - f1;
    if (!ok) {
        fprintf(stderr, "bench-engine: %s\n", error->message);
        return 1;
    }

    double build_s = (double)(t1 - t0) * 1e-6, run_s = (double)(t2 - t1) * 1e-6;
    printf("tasks:          %u\n", tps_engine_n_tasks(engine));
    printf("events:         %" G_GUINT64_FORMAT "\n", stats.events);
    printf("rate re-solves: %" G_GUINT64_FORMAT " full, %" G_GUINT64_FORMAT " local\n",
           stats.rate_updates, stats.local_updates);
    printf("makespan:       %.3f ms simulated\n", tps_time_to_ms(stats.makespan));
    printf("build wall:     %.3f s\n", build_s);
    printf("run wall:       %.3f s\n", run_s);
    printf("run CPU:        %.3f s\n", run_cpu);
    printf("events/s:       %.3g (wall), %.3g (CPU)\n", (double)stats.events / run_s,
           (double)stats.events / run_cpu);
    printf("tasks/s:        %.3g\n", (double)tps_engine_n_tasks(engine) / run_s);
    printf("run page faults: %ld\n", run_faults);
    printf("peak RSS:       %.1f MiB\n", tps_alloc_peak_rss_mib());
    return 0;
}
