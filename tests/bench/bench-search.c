/* Benchmark of `tpsim search` (figures only, never a failure): GPT-3 175B
 * on 1024 A100s, every layout and preset, on 2 threads: wall and CPU time,
 * layouts per second, peak RSS; and shard 0/16 of the same search, whose
 * layouts are a 16th of the whole but of the same kinds (every tp, pp,
 * micro-batch...: the same layer and pipeline simulations), so that the
 * two peaks differ only by what grows with the number of layouts. The
 * real command is run, as a user runs it, in a fresh process each time
 * (issue 11, item 7: target >= 2,000 layouts/s on 2 threads, peak memory
 * flat in the layouts). Run with `meson test -C build --benchmark search`. */
#include <glib.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* Rows of the runner's CSV: lines but its column line. */
static guint
rows_of(const char *path)
{
    g_autofree char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return 0;
    guint n = 0;
    for (const char *c = text; *c; c++)
        n += *c == '\n';
    return n >= 1 ? n - 1 : 0;
}

static gboolean
search(const char *bin, const char *source, const char *gpus, const char *shard,
       const char *dir, guint *rows, double *peak_mb)
{
    g_autofree char *scenario = g_build_filename(source, "scenarios", "gpt3-175b-tp8.yaml", NULL);
    g_autofree char *csv = g_build_filename(dir, "search.csv", NULL);
    g_unlink(csv);
    const char *argv[] = {bin,   "search",   scenario, "--gpus",  gpus, "--jobs", "2",
                          "--top", "1",        "--output", csv,     shard ? "--shard" : NULL,
                          shard, NULL};
    const double t0 = (double)g_get_monotonic_time() / 1e6;
    fflush(stdout); /* else the child's freopen() writes what is buffered again */
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stdout))
            _exit(127);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
        fprintf(stderr, "tpsim search --gpus %s failed\n", gpus);
        return FALSE;
    }
    const double wall = (double)g_get_monotonic_time() / 1e6 - t0;
    const double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
                       ru.ru_stime.tv_usec / 1e6;
    const guint n = rows_of(csv);
    /* CPU time over two threads is the wall time of an idle 2-core
     * machine; on a shared one the wall time is longer. */
    printf("GPT-3 175B, %s A100s%s%s: %u layouts simulated, wall %.2f s, CPU %.2f s: "
           "%.0f layouts/s on 2 threads (CPU time / 2), %.0f layouts/s of wall time; "
           "peak RSS %.1f MB\n",
           gpus, shard ? ", shard " : "", shard ? shard : "", n, wall, cpu, n / (cpu / 2.0),
           n / wall, ru.ru_maxrss / 1024.0);
    *rows = n;
    *peak_mb = ru.ru_maxrss / 1024.0;
    g_unlink(csv);
    g_autofree char *sidecar = g_strconcat(csv, ".batch", NULL);
    g_unlink(sidecar);
    return TRUE;
}

int
main(void)
{
    const char *bin = g_getenv("TPSIM_BIN");
    const char *source = g_getenv("TPSIM_SOURCE_DIR") ? g_getenv("TPSIM_SOURCE_DIR") : ".";
    if (bin == NULL) {
        fprintf(stderr, "TPSIM_BIN is not set\n");
        return EXIT_FAILURE;
    }
    g_autofree char *dir = g_dir_make_tmp("tpsim-bench-search-XXXXXX", NULL);
    guint n_whole = 0, n_shard = 0;
    double mb_whole = 0, mb_shard = 0;
    gboolean ok = dir != NULL && search(bin, source, "1024", NULL, dir, &n_whole, &mb_whole) &&
                  search(bin, source, "1024", "0/16", dir, &n_shard, &mb_shard);
    if (ok && n_shard > 0)
        printf("peak memory against layouts: %u layouts %.1f MB, %u layouts %.1f MB: "
               "%.1fx the layouts, %.2fx the memory\n",
               n_shard, mb_shard, n_whole, mb_whole, (double)n_whole / n_shard,
               mb_whole / mb_shard);
    if (dir)
        g_rmdir(dir);
    return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
