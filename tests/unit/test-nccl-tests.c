/* nccl-tests logs read as collective measurements (io/input/nccl-tests.h): the
 * sample log of tests/data/nccl-tests (rows of vTrain's all-reduce
 * measurements, printed as nccl-tests prints them), all-gather and
 * reduce-scatter told from their sizes, the per-iteration layout, located
 * errors, and tpsim calibrate --nccl-tests. */
#include <check.h>

#include "test-util.h"
#include <string.h>

#include "io/input/nccl-tests.h"

static char *
sample_path(void)
{
    return g_build_filename(g_getenv("TPSIM_SOURCE_DIR"), "tests", "data", "nccl-tests",
                            "all-reduce-a100-8gpu.log", NULL);
}

/* Two ranks, then the classic column header. */
#define RANKS2                                                                                    \
    "# nThread 1 nGpus 2 minBytes 8 maxBytes 64 step: 2(factor) warmup iters: 5 iters: 20\n"     \
    "# Using devices\n"                                                                           \
    "#  Rank  0 Group  0 Pid   1234 on      node1 device  0 [0x07] NVIDIA H100 80GB HBM3\n"      \
    "#  Rank  1 Group  0 Pid   1234 on      node1 device  1 [0x0f] NVIDIA H100 80GB HBM3\n"      \
    "#\n"
#define HEADER                                                                                    \
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     " \
    "time   algbw   busbw #wrong\n"                                                               \
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            " \
    "(us)  (GB/s)  (GB/s)       \n"

START_TEST(test_sample_log)
{
    g_autoptr(TpsMeasurements) m = tps_measurements_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *path = sample_path();
    guint added = 0;
    ck_assert_msg(tps_nccl_tests_load(path, m, &added, &error), "%s", error ? error->message : "");
    /* The 11 power-of-two sizes from 1 MiB to 1 GiB. */
    ck_assert_uint_eq(added, 11);
    ck_assert_uint_eq(m->collectives->len, 11);
    ck_assert_str_eq(m->gpu, "NVIDIA A100-SXM4-80GB");
    ck_assert_uint_eq(m->gpus, 8);
    for (guint i = 0; i < m->collectives->len; i++) {
        const TpsCollPoint *p = &g_array_index(m->collectives, TpsCollPoint, i);
        ck_assert_int_eq(p->kind, TPS_MEAS_ALL_REDUCE);
        ck_assert_uint_eq(p->ranks, 8);
        ck_assert(p->launch_included);
        ck_assert_double_eq(p->bytes, (double)(1048576u << i));
    }
    /* Out of place, not in place (92.15, 8196.40). */
    ck_assert_double_eq_tol(g_array_index(m->collectives, TpsCollPoint, 0).time_us, 92.79, 1e-9);
    ck_assert_double_eq_tol(g_array_index(m->collectives, TpsCollPoint, 10).time_us, 8193.0, 1e-9);
}
END_TEST

typedef struct {
    const char *text;
    TpsMeasColl kind;
    double bytes, us;
} KindCase;

static const KindCase kind_cases[] = {
    /* all_gather: count is per rank (64 B of float over 2 ranks: 8). */
    {RANKS2 HEADER "          64             8     float    none      -1     9.10    0.01    0.00"
                   "      0     9.00    0.01    0.00      0\n",
     TPS_MEAS_ALL_GATHER, 64, 9.10},
    /* reduce_scatter: the same counts with a reduction. */
    {RANKS2 HEADER "          64             8     float     sum      -1     9.30    0.01    0.00"
                   "      0     9.20    0.01    0.00      0\n",
     TPS_MEAS_REDUCE_SCATTER, 64, 9.30},
    /* all_reduce of bfloat16: count x 2 bytes; results not checked (N/A). */
    {RANKS2 HEADER "          64            32  bfloat16     sum      -1    10.50    0.01    0.01"
                   "    N/A    10.40    0.01    0.01    N/A\n",
     TPS_MEAS_ALL_REDUCE, 64, 10.50},
    /* -I 1: four per-iteration columns after each #wrong. */
    {RANKS2 "#       size         count      type   redop    root     time   algbw   busbw "
            "#wrong   i_min   i_max   i_p99   i_cv%     time   algbw   busbw #wrong   i_min   "
            "i_max   i_p99   i_cv%\n"
            "          64            16     float     sum      -1    11.00    0.01    0.01      0"
            "   10.00   12.00   12.00    1.00    11.50    0.01    0.01      0   10.00   12.00   "
            "12.00    1.00\n",
     TPS_MEAS_ALL_REDUCE, 64, 11.00},
    /* The test's name on the command line before the run. */
    {"$ ./build/all_gather_perf -b 64 -e 64 -g 2\n" RANKS2 HEADER
     "          64             8     float    none      -1     9.10    0.01    0.00"
     "      0     9.00    0.01    0.00      0\n",
     TPS_MEAS_ALL_GATHER, 64, 9.10},
};

START_TEST(test_kinds)
{
    const KindCase *c = &kind_cases[_i];
    g_autoptr(TpsMeasurements) m = tps_measurements_new();
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_nccl_tests_load_string("t.log", c->text, -1, m, NULL, &error), "case %d: %s",
                  _i, error ? error->message : "");
    ck_assert_uint_eq(m->collectives->len, 1);
    const TpsCollPoint *p = &g_array_index(m->collectives, TpsCollPoint, 0);
    ck_assert_int_eq(p->kind, c->kind);
    ck_assert_uint_eq(p->ranks, 2);
    ck_assert_double_eq(p->bytes, c->bytes);
    ck_assert_double_eq_tol(p->time_us, c->us, 1e-9);
    ck_assert_str_eq(m->gpu, "NVIDIA H100 80GB HBM3");
}
END_TEST

typedef struct {
    const char *text;
    const char *where;
    const char *says;
} ErrorCase;

#define ROW_AR                                                                                    \
    "          64            16     float     sum      -1    11.00    0.01    0.01      0"         \
    "    11.50    0.01    0.01      0\n"

static const ErrorCase error_cases[] = {
    {RANKS2 HEADER "         6x4            16     float     sum      -1    11.00    0.01    0.01"
                   "      0    11.50    0.01    0.01      0\n",
     "e.log:8:10: ", "size '6x4'"},
    {RANKS2 HEADER "          64            16     float     sum      -1    11.00\n",
     "e.log:8:62: ", "fields"},
    {RANKS2 HEADER "          64            16     quad      sum      -1    11.00    0.01    0.01"
                   "      0    11.50    0.01    0.01      0\n",
     "e.log:8:32: ", "unknown nccl-tests type"},
    {RANKS2 HEADER "          64            16     float     sum      -1    11.00    0.01    0.01"
                   "      3    11.50    0.01    0.01      0\n",
     "e.log:8:84: ", "wrong results"},
    {RANKS2 HEADER "          64            16     float     sum      -1     -2.0    0.01    0.01"
                   "      0    11.50    0.01    0.01      0\n",
     "e.log:8:58: ", "out-of-place time"},
    {HEADER ROW_AR, "e.log:3:1: ", "rank line"},
    {"all_gather_perf\n" RANKS2 HEADER ROW_AR, "e.log:9:11: ", "all_gather_perf"},
    {"./alltoall_perf -g 2\n" RANKS2 HEADER ROW_AR, "e.log:9:", "not a collective"},
    {RANKS2 ROW_AR, "e.log:6:11: ", "before the nccl-tests column header"},
    {"hello\n", "e.log:1:1: ", "not a nccl-tests log"},
    {RANKS2 "#       size         count      type   redop    root     time   algbw   busbw\n"
     ROW_AR,
     "e.log:6:1: ", "two #wrong"},
};

START_TEST(test_errors)
{
    const ErrorCase *c = &error_cases[_i];
    g_autoptr(TpsMeasurements) m = tps_measurements_new();
    g_autoptr(GError) error = NULL;
    ck_assert_msg(!tps_nccl_tests_load_string("e.log", c->text, -1, m, NULL, &error),
                  "case %d loaded", _i);
    ck_assert_msg(g_str_has_prefix(error->message, c->where), "case %d: %s", _i, error->message);
    ck_assert_msg(strstr(error->message, c->says) != NULL, "case %d: %s", _i, error->message);
}
END_TEST

START_TEST(test_cli)
{
    g_autofree char *log = sample_path();
    g_autofree char *dir = tps_test_tmpdir("nccl-tests");
    g_autofree char *out = g_build_filename(dir, "m.yaml", NULL);
    g_autofree char *err = NULL;
    /* 11 points of one rank count do not pin the 12 collective parameters:
     * the fit is refused unless forced; the points reached it either way. */
    const char *args[] = {"calibrate", "--base",  "a100-sxm4-80gb", "--nccl-tests",
                          log,         "--force", "-o",             out,
                          NULL};
    int status = tps_test_spawn("TPSIM_BIN", NULL, args, NULL, &err);
    ck_assert_msg(status == 0, "%s", err);
    g_autofree char *model = NULL;
    ck_assert(g_file_get_contents(out, &model, NULL, NULL));
    ck_assert_msg(strstr(model, "nccl-tests") != NULL && strstr(model, "11 collective") != NULL,
                  "%s", model);

    g_autofree char *bad = g_build_filename(dir, "bad.log", NULL);
    ck_assert(g_file_set_contents(bad, RANKS2 HEADER "  64 16 float sum -1 x 1 1 0 1 1 1 0\n", -1,
                                  NULL));
    g_autofree char *out2 = g_build_filename(dir, "m2.yaml", NULL);
    const char *bad_args[] = {"calibrate", "--base", "a100-sxm4-80gb", "--nccl-tests", bad,
                              "-o",        out2,     NULL};
    ck_assert_int_eq(tps_test_spawn("TPSIM_BIN", NULL, bad_args, NULL, &err), 1);
    g_autofree char *where = g_strdup_printf("%s:8:22: ", bad);
    ck_assert_msg(strstr(err, where) != NULL, "%s", err);
    ck_assert(!g_file_test(out2, G_FILE_TEST_EXISTS));
    tps_test_remove_dir(dir);
}
END_TEST

static Suite *
suite(void)
{
    Suite *s = suite_create("nccl-tests");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_sample_log);
    tcase_add_loop_test(tc, test_kinds, 0, G_N_ELEMENTS(kind_cases));
    tcase_add_loop_test(tc, test_errors, 0, G_N_ELEMENTS(error_cases));
    tcase_add_test(tc, test_cli);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return tps_test_run(suite());
}
