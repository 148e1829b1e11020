#include "test-util.h"

#include <fcntl.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int
tps_test_run(Suite *suite)
{
    SRunner *sr = srunner_create(suite);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
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
