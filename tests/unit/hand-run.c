#include "hand-run.h"

#include <check.h>

/* A run built by hand, shared by the tests that read runs: its exposed
 * communication is known without running any of tpsim's code.
 *
 * rank 0: comm kernel [0,100), GEMM [30,50), memory kernel [80,120),
 *         copy [150,200), flow [200,300) (inside a kernel: not counted),
 *         marker [300,400), attention [400,410) under comm [390,420);
 * rank 1: GEMM [0,500) (another GPU hides nothing of rank 0).
 * Rank 0's exposed communication: [0,30) [50,80) [150,200) [390,400)
 * [410,420): 30 + 30 + 50 + 10 + 10 = 130 ns. */
TpsRun *
tps_test_hand_run(void)
{
    TpsRun *run = tps_run_new("hand", 2, 8);
    TpsStreamId main0 = tps_run_add_stream(run, 0, 0, "main");
    TpsStreamId side0 = tps_run_add_stream(run, 0, 1, "nccl");
    TpsStreamId main1 = tps_run_add_stream(run, 1, 0, "main");
    static const struct {
        TpsTaskKind kind;
        guint rank;
        int stream; /* 0 main0, 1 side0, 2 main1, -1 none */
        TpsTime start, end;
    } spans[] = {
        {TPS_KIND_COMM, 0, 1, 0, 100},        {TPS_KIND_GEMM, 0, 0, 30, 50},
        {TPS_KIND_MEMORY, 0, 0, 80, 120},     {TPS_KIND_COPY, 0, 1, 150, 200},
        {TPS_KIND_FLOW, 0, -1, 200, 300},     {TPS_KIND_MARKER, 0, 0, 300, 400},
        {TPS_KIND_ATTENTION, 0, 0, 400, 410}, {TPS_KIND_COMM, 0, 1, 390, 420},
        {TPS_KIND_GEMM, 1, 2, 0, 500},
    };
    const TpsStreamId ids[] = {main0, side0, main1};
    for (guint i = 0; i < G_N_ELEMENTS(spans); i++) {
        TpsSpan sp = {.kind = spans[i].kind,
                      .name = "t",
                      .rank = spans[i].rank,
                      .stream = spans[i].stream < 0 ? TPS_STREAM_NONE : ids[spans[i].stream],
                      .parent = TPS_TASK_NONE,
                      .start = spans[i].start,
                      .end = spans[i].end};
        ck_assert_uint_eq(tps_run_add_span(run, &sp, spans[i].kind == TPS_KIND_FLOW ? 1 : 0), i);
    }
    run->fwd_end = run->bwd_end = 500;
    return run;
}
