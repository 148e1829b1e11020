/* Tests of the CPU side of Kineto traces (io/trace/trace-cpu.h): a hand-built
 * trace whose samples are derived in the comments, the profiler screen,
 * and the smallest shared trace, read by hand (event_sync_trace). */
#include <check.h>

#include "test-util.h"
#include <glib.h>
#include <stdio.h>
#include <string.h>

#include "io/trace/trace-cpu.h"

static gboolean
add_text(TpsCpuProfile *profile, const char *json, const char *name)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GInputStream) in = g_memory_input_stream_new_from_data(json, -1, NULL);
    gboolean ok = tps_cpu_profile_add_stream(profile, in, name, &error);
    ck_assert_msg(ok, "%s", error ? error->message : "?");
    return ok;
}

#define OP(name, ts, dur)                                                                          \
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"" name "\",\"pid\":1,\"tid\":1,\"ts\":" #ts       \
    ",\"dur\":" #dur "},"
#define CALL(name, ts, dur, corr)                                                                  \
    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"" name "\",\"pid\":1,\"tid\":1,\"ts\":" #ts \
    ",\"dur\":" #dur ",\"args\":{\"correlation\":" #corr "}},"
#define GPU(cat, name, ts, dur, corr)                                                              \
    "{\"ph\":\"X\",\"cat\":\"" cat "\",\"name\":\"" name "\",\"pid\":0,\"tid\":7,\"ts\":" #ts      \
    ",\"dur\":" #dur ",\"args\":{\"correlation\":" #corr "}},"

/* One thread (us):
 *   add   [0, 10)    launch 1 [5, 7)       first op: no gap, no sample
 *   mm    [15, 40)   launch 2 [30, 36), a view inside  gemm: 25 + gap 5 = 30
 *   copy_ [45, 50)   memcpy 3 [46, 49)     memcpy: 5 + 5 = 10
 *   item  [52, 60)   memcpy 4, stream sync synced: no sample
 *   c10d  [70, 100)  launch 5 (NCCL)       after a sync: no sample
 *   mul   [104, 110) launch 6, launch 7    two launches: no sample
 *   div   [111, 113) launch 8              elementwise: 2 + 1 = 3
 * GPU (all on stream 7): 1 [20, 30), 2 [50, 60), 3 [70, 71), 4 [72, 73),
 * 5 [120, 200), 6 [200, 201), 7 [201, 202), 8 [300, 301).
 * Launch to start, only when the stream was idle at the call: 1: 20 - 5 =
 * 15; 2 (stream idle since 30): 50 - 30 = 20; 3, 4: none (2 and 3 still
 * queued at 46 and 53); 5 (idle since 73): 120 - 80 = 40; 6, 7, 8: none
 * (5, 6, 7 still running at 105, 107, 112). */
static const char trace_json[] = "{\"traceEvents\":[" OP("add", 0, 10)
    CALL("cudaLaunchKernel", 5, 2, 1) OP("mm", 15, 25) OP("aten::view", 16, 1) CALL(
        "cudaLaunchKernel", 30, 6, 2) OP("copy_", 45, 5) CALL("cudaMemcpyAsync", 46, 3, 3)
        OP("item", 52, 8) CALL("cudaMemcpyAsync", 53, 2, 4) CALL("cudaStreamSynchronize", 55, 4, 99)
            OP("c10d::allreduce_", 70, 30) CALL("cudaLaunchKernel", 80, 9, 5) OP("mul", 104, 6)
                CALL("cudaLaunchKernel", 105, 1, 6) CALL("cudaLaunchKernel", 107, 1, 7)
                    OP("div", 111, 2) CALL("cudaLaunchKernel", 112, 1, 8) CALL(
                        "cudaEventRecord", 120, 2, 100) CALL("cudaStreamWaitEvent", 123, 1, 101)
                        GPU("kernel", "vectorized_elementwise_kernel", 20, 10,
                            1) GPU("kernel", "ampere_sgemm_128x64_nn", 50, 10, 2)
                            GPU("gpu_memcpy", "Memcpy DtoD", 70, 1, 3) GPU("gpu_memcpy",
                                                                           "Memcpy DtoH", 72, 1, 4)
                                GPU("kernel",
                                    "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)", 120, 80,
                                    5) GPU("kernel", "vectorized_elementwise_kernel", 200, 1, 6)
                                    GPU("kernel", "vectorized_elementwise_kernel", 201, 1, 7)
                                        GPU("kernel", "vectorized_elementwise_kernel", 300, 1,
                                            8) "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,"
                                               "\"args\":{\"name\":\"python\"}}"
                                               "]}";

static const struct {
    TpsCpuClass klass;
    guint n;
    double median;
} hand_cases[] = {
    {TPS_CPU_GEMM, 1, 30.0},
    {TPS_CPU_MEMCPY, 1, 10.0},
    {TPS_CPU_ELEMENTWISE, 1, 3.0},
    {TPS_CPU_NCCL, 0, 0.0},
    /* Calls 2, 6, 3, 2, 9, 1, 1, 1: sorted 1 1 1 2 2 3 6 9, rank round(3.5) = 4. */
    {TPS_CPU_LAUNCH, 8, 2.0},
    {TPS_CPU_EVENT_RECORD, 1, 2.0},
    {TPS_CPU_STREAM_WAIT, 1, 1.0},
    {TPS_CPU_GRAPH_LAUNCH, 0, 0.0},
    /* 15 20 40: the middle one. */
    {TPS_CPU_LAUNCH_TO_START, 3, 20.0},
};

START_TEST(test_hand_trace)
{
    g_autoptr(TpsCpuProfile) profile = tps_cpu_profile_new();
    add_text(profile, trace_json, "hand.json");
    ck_assert_uint_eq(tps_cpu_profile_n_traces(profile), 1);
    ck_assert(tps_cpu_profile_trace_used(profile, 0));
    ck_assert_double_eq_tol(tps_cpu_profile_trace_view_us(profile, 0), 1.0, 1e-9);
    TpsCpuStats st;
    tps_cpu_profile_stats(profile, hand_cases[_i].klass, 0, &st);
    ck_assert_msg(st.n == hand_cases[_i].n, "%s: n %u", tps_cpu_class_name(hand_cases[_i].klass),
                  st.n);
    ck_assert_double_eq_tol(st.median, hand_cases[_i].median, 1e-9);
    /* Pooled over the one used trace: the same. */
    TpsCpuStats pooled;
    tps_cpu_profile_stats(profile, hand_cases[_i].klass, -1, &pooled);
    ck_assert_uint_eq(pooled.n, st.n);
    ck_assert_double_eq_tol(pooled.median, st.median, 1e-9);
}
END_TEST

/* A trace whose views take 5 us is measured but left out of the pool. */
START_TEST(test_profiler_screen)
{
    static const char slow[] = "{\"traceEvents\":[" OP("a", 0, 10) CALL(
        "cudaLaunchKernel", 1, 2, 1) OP("b", 20, 10) OP("aten::view", 21, 5)
        CALL("cudaLaunchKernel", 25, 2, 2) GPU("kernel", "ampere_sgemm_128x64_nn", 40, 10, 2) GPU(
            "kernel", "ampere_sgemm_128x64_nn", 50, 10,
            1) "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"args\":{\"name\":\"python\"}}"
               "]}";
    g_autoptr(TpsCpuProfile) profile = tps_cpu_profile_new();
    add_text(profile, trace_json, "hand.json");
    add_text(profile, slow, "slow.json");
    ck_assert(!tps_cpu_profile_trace_used(profile, 1));
    ck_assert_double_eq_tol(tps_cpu_profile_trace_view_us(profile, 1), 5.0, 1e-9);
    TpsCpuStats own, pooled;
    /* Its own gemm sample: 10 + gap 10 = 20. */
    tps_cpu_profile_stats(profile, TPS_CPU_GEMM, 1, &own);
    ck_assert_uint_eq(own.n, 1);
    ck_assert_double_eq_tol(own.median, 20.0, 1e-9);
    tps_cpu_profile_stats(profile, TPS_CPU_GEMM, -1, &pooled);
    ck_assert_uint_eq(pooled.n, 1);
    ck_assert_double_eq_tol(pooled.median, 30.0, 1e-9);
    g_autofree char *table = tps_cpu_profile_to_table(profile);
    ck_assert_ptr_nonnull(strstr(table, "slow.json"));
    ck_assert_ptr_nonnull(strstr(table, "not used"));
}
END_TEST

/* The smallest shared trace, read by hand: three matmuls, each launching
 * a memset and a GEMM (two launches: no framework sample). Launch calls
 * 18, 31, 10, 14, 10, 14 us: median (rank round(2.5) = 3 of 10 10 14 14 18
 * 31) 14. Event records 15, 1, 6, 1: p25 1, median 6, p75 6. One stream
 * wait of 3. Launch to start on an idle stream: memset 24, GEMM 30 (its
 * memset ended 2 us before the call), memset 15, GEMM none (its memset
 * ended 1 us after the call), memset 14, GEMM 15 (memset ended at the
 * call): median of 14 15 15 24 30 is 15. */
START_TEST(test_eventsync_trace)
{
    const char *shared = tps_test_shared_dir();
    g_autofree char *path = shared
                                ? g_build_filename(shared, "traces", "hta-eventsync-a100-3streams",
                                                   "event_sync_trace.json.gz", NULL)
                                : NULL;
    if (path == NULL || !g_file_test(path, G_FILE_TEST_EXISTS))
        tps_test_skip("no shared traces ($TPSIM_SHARED_DIR/traces)");
    g_autoptr(TpsCpuProfile) profile = tps_cpu_profile_new();
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_cpu_profile_add_file(profile, path, &error), "%s",
                  error ? error->message : "?");
    ck_assert(tps_cpu_profile_trace_used(profile, 0));
    TpsCpuStats st;
    tps_cpu_profile_stats(profile, TPS_CPU_GEMM, 0, &st);
    ck_assert_uint_eq(st.n, 0);
    tps_cpu_profile_stats(profile, TPS_CPU_LAUNCH, 0, &st);
    ck_assert_uint_eq(st.n, 6);
    ck_assert_double_eq_tol(st.median, 14.0, 1e-9);
    tps_cpu_profile_stats(profile, TPS_CPU_EVENT_RECORD, 0, &st);
    ck_assert_uint_eq(st.n, 4);
    ck_assert_double_eq_tol(st.p25, 1.0, 1e-9);
    ck_assert_double_eq_tol(st.median, 6.0, 1e-9);
    ck_assert_double_eq_tol(st.p75, 6.0, 1e-9);
    tps_cpu_profile_stats(profile, TPS_CPU_STREAM_WAIT, 0, &st);
    ck_assert_uint_eq(st.n, 1);
    ck_assert_double_eq_tol(st.median, 3.0, 1e-9);
    tps_cpu_profile_stats(profile, TPS_CPU_LAUNCH_TO_START, 0, &st);
    ck_assert_uint_eq(st.n, 5);
    ck_assert_double_eq_tol(st.median, 15.0, 1e-9);
}
END_TEST

START_TEST(test_not_a_trace)
{
    g_autoptr(TpsCpuProfile) profile = tps_cpu_profile_new();
    g_autoptr(GError) error = NULL;
    g_autoptr(GInputStream) in = g_memory_input_stream_new_from_data("{\"x\": 1}", -1, NULL);
    ck_assert(!tps_cpu_profile_add_stream(profile, in, "x.json", &error));
    ck_assert_ptr_nonnull(strstr(error->message, "x.json: not a Kineto trace"));
    ck_assert_uint_eq(tps_cpu_profile_n_traces(profile), 0);
}
END_TEST

static Suite *
trace_cpu_suite(void)
{
    Suite *s = suite_create("trace-cpu");
    TCase *tc = tcase_create("hand");
    tcase_add_loop_test(tc, test_hand_trace, 0, G_N_ELEMENTS(hand_cases));
    tcase_add_test(tc, test_profiler_screen);
    tcase_add_test(tc, test_not_a_trace);
    suite_add_tcase(s, tc);
    tc = tcase_create("shared");
    tcase_add_test(tc, test_eventsync_trace);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return tps_test_run(trace_cpu_suite());
}
