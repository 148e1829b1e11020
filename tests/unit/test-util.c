#include "test-util.h"

#include <fcntl.h>
#include <glib/gstdio.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* A skipped test ends as a failed check whose message starts so (Check has
 * no skips of its own): tps_test_run() counts it out of the failures and
 * rewrites its TAP line. */
#define SKIP_PREFIX "SKIP: "

const char *
tps_test_shared_dir(void)
{
    const char *dir = g_getenv("TPSIM_SHARED_DIR");
    if (dir != NULL && dir[0] != '\0')
        return dir;
    return g_getenv("TPSIM_SHARED_DEFAULT");
}

void
tps_test_skip_at(const char *file, int line, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    g_autofree char *reason = g_strdup_vprintf(format, ap);
    va_end(ap);
    /* What ck_abort_msg() does, at the caller's line. */
    _ck_assert_failed(file, line, "Failed", SKIP_PREFIX "%s", reason);
}

/* Copy the TAP stream of `from` to `to` (a file, or "-": standard output),
 * a skipped test's "not ok N - TEST: SKIP: REASON" as "ok N - TEST # SKIP
 * REASON". */
static void
copy_tap(const char *from, const char *to)
{
    g_autofree char *text = NULL;
    if (!g_file_get_contents(from, &text, NULL, NULL))
        return;
    FILE *out = strcmp(to, "-") == 0 ? stdout : fopen(to, "w");
    if (out == NULL)
        return;
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (guint i = 0; lines[i] != NULL; i++) {
        const char *line = lines[i];
        const char *skip = strstr(line, ": " SKIP_PREFIX);
        if (g_str_has_prefix(line, "not ok ") && skip != NULL)
            fprintf(out, "ok %.*s # SKIP %s", (int)(skip - line - strlen("not ok ")),
                    line + strlen("not ok "), skip + strlen(": " SKIP_PREFIX));
        else
            fputs(line, out);
        if (lines[i + 1] != NULL)
            fputc('\n', out);
    }
    if (out == stdout)
        fflush(out);
    else
        fclose(out);
}

int
tps_test_run(Suite *suite)
{
    SRunner *sr = srunner_create(suite);
    /* The TAP stream goes through a file of ours, to mark the skips. */
    const char *tap = g_getenv("CK_TAP_LOG_FILE_NAME");
    g_autofree char *tmp = NULL;
    if (tap != NULL) {
        int fd = g_file_open_tmp("tpsim-tap-XXXXXX", &tmp, NULL);
        if (fd >= 0) {
            close(fd);
            srunner_set_tap(sr, tmp);
        }
    }
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    TestResult **failures = srunner_failures(sr);
    for (int i = 0; failures != NULL && i < srunner_ntests_failed(sr); i++)
        if (tr_rtype(failures[i]) == CK_FAILURE && tr_msg(failures[i]) != NULL &&
            g_str_has_prefix(tr_msg(failures[i]), SKIP_PREFIX))
            failed--;
    free(failures);
    srunner_free(sr); /* closes the TAP file */
    if (tmp != NULL) {
        copy_tap(tmp, tap);
        g_unlink(tmp);
    }
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* In the child, before exec: standard output onto the file named by
 * `data`. Only async-signal-safe calls (open, dup2, close, _exit). */
static void
redirect_stdout(gpointer data)
{
    int fd = open(data, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0)
        _exit(127);
    close(fd);
}

static int
spawn(const char *bin_env, const char *cwd, const char *const *args, const char *stdout_path,
      char **out, char **err)
{
    const char *bin = g_getenv(bin_env);
    ck_assert_msg(bin != NULL && g_file_test(bin, G_FILE_TEST_IS_EXECUTABLE),
                  "%s does not name a built program", bin_env);
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    g_ptr_array_add(argv, (gpointer)bin);
    for (guint i = 0; args[i]; i++)
        g_ptr_array_add(argv, (gpointer)args[i]);
    g_ptr_array_add(argv, NULL);

    g_autofree char *o = NULL, *e = NULL;
    g_autoptr(GError) error = NULL;
    int status = 0;
    ck_assert_msg(g_spawn_sync(cwd, (char **)argv->pdata, NULL, G_SPAWN_DEFAULT,
                               stdout_path ? redirect_stdout : NULL, (gpointer)stdout_path,
                               stdout_path ? NULL : &o, &e, &status, &error),
                  "cannot run %s: %s", bin, error ? error->message : "?");
    ck_assert_msg(WIFEXITED(status), "%s did not exit normally", bin);
    if (out) {
        g_free(*out);
        *out = g_steal_pointer(&o);
    }
    if (err) {
        g_free(*err);
        *err = g_steal_pointer(&e);
    }
    return WEXITSTATUS(status);
}

int
tps_test_spawn(const char *bin_env, const char *cwd, const char *const *args, char **out,
               char **err)
{
    return spawn(bin_env, cwd, args, NULL, out, err);
}

int
tps_test_spawn_to(const char *bin_env, const char *cwd, const char *const *args,
                  const char *stdout_path, char **err)
{
    return spawn(bin_env, cwd, args, stdout_path, NULL, err);
}

char *
tps_test_tmpdir(const char *prefix)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *tmpl = g_strdup_printf("%s-XXXXXX", prefix);
    char *dir = g_dir_make_tmp(tmpl, &error);
    ck_assert_msg(dir != NULL, "%s", error ? error->message : "");
    return dir;
}

void
tps_test_remove_dir(const char *dir)
{
    GDir *d = g_dir_open(dir, 0, NULL);
    if (d) {
        const char *name;
        while ((name = g_dir_read_name(d))) {
            g_autofree char *p = g_build_filename(dir, name, NULL);
            g_unlink(p);
        }
        g_dir_close(d);
    }
    g_rmdir(dir);
}
