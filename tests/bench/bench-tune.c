/* Benchmark of `tpsim tune` (figures only, never a failure): the
 * userbuffers search of GPT-3 175B at TP 8 and Llama 3 70B on A100 and
 * H100 (--model), on 2 threads, each in a fresh process as a user runs
 * it: wall and CPU time per layout and the configurations simulated
 * (issue 25: goal under 2 s per layout on 2 cores). Llama 3 70B is an FP8
 * scenario, which an A100 cannot run: tpsim refuses it there (reported,
 * not timed). Run with `meson test -C build --benchmark tune`. */
#include <glib.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* One tune; its report on stdout into `out_path`. Returns the exit status
 * (-1: not run). */
static int
tune(const char *bin, const char *scenario, const char *model, const char *out_path, double *wall,
     double *cpu)
{
    const char *argv[] = {bin,     "tune", scenario,  "--jobs", "2",
                          "--top", "1",    "--model", model,    NULL};
    const double t0 = (double)g_get_monotonic_time() / 1e6;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen(out_path, "w", stdout) || !freopen("/dev/null", "w", stderr))
            _exit(127);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status))
        return -1;
    *wall = (double)g_get_monotonic_time() / 1e6 - t0;
    *cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
    return WEXITSTATUS(status);
}

/* "N configurations simulated" of the report. */
static guint
simulated(const char *path)
{
    g_autofree char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return 0;
    const char *at = strstr(text, " configurations simulated");
    if (at == NULL)
        return 0;
    while (at > text && g_ascii_isdigit(at[-1]))
        at--;
    return (guint)g_ascii_strtoull(at, NULL, 10);
}

int
main(void)
{
    const char *bin = g_getenv("TPSIM_BIN"), *source = g_getenv("TPSIM_SOURCE_DIR");
    if (bin == NULL || source == NULL) {
        fprintf(stderr, "bench-tune: set TPSIM_BIN and TPSIM_SOURCE_DIR\n");
        return 77;
    }
    static const char *const scenarios[] = {"gpt3-175b-tp8.yaml", "llama3-70b.yaml"};
    static const char *const models[] = {"a100-sxm4-80gb", "h100-sxm"};
    g_autofree char *out = g_build_filename(g_get_tmp_dir(), "bench-tune.txt", NULL);
    printf("%-20s %-16s %8s %8s %12s\n", "scenario", "model", "wall s", "cpu s", "simulated");
    for (guint i = 0; i < G_N_ELEMENTS(scenarios); i++)
        for (guint j = 0; j < G_N_ELEMENTS(models); j++) {
            g_autofree char *path = g_build_filename(source, "scenarios", scenarios[i], NULL);
            double wall = 0, cpu = 0;
            int status = tune(bin, path, models[j], out, &wall, &cpu);
            if (status != 0)
                printf("%-20s %-16s refused (exit %d)\n", scenarios[i], models[j], status);
            else
                printf("%-20s %-16s %8.2f %8.2f %12u\n", scenarios[i], models[j], wall, cpu,
                       simulated(out));
        }
    g_remove(out);
    return 0;
}
