/* Helpers shared by the unit test programs (linked into each). */
#pragma once

#include <check.h>
#include <glib.h>

/* Run `suite` (verbosity and forking from the CK_* environment, TAP to the
 * CK_TAP_LOG_FILE_NAME given by tests/meson.build) and return the process
 * exit status: EXIT_SUCCESS when every check passed. */
int tps_test_run(Suite *suite);

/* The folder of the shared data (traces/, calibration/): $TPSIM_SHARED_DIR
 * when the environment names one, else $TPSIM_SHARED_DEFAULT, which
 * tests/meson.build sets to ../shared beside the source tree. NULL when
 * neither is set. */
const char *tps_test_shared_dir(void);

/* Skip the running test, which cannot run here (the shared data it reads
 * are absent: $TPSIM_SHARED_DIR, tests/meson.build points it at
 * ../shared): it ends at once, is no failure, and its TAP line is
 * "ok N - ... # SKIP REASON", which meson counts as skipped. */
#define tps_test_skip(...) tps_test_skip_at(__FILE__, __LINE__, __VA_ARGS__)
G_GNUC_NORETURN void tps_test_skip_at(const char *file, int line, const char *format, ...)
    G_GNUC_PRINTF(3, 4);

/* Run the program whose path is in the environment variable `bin_env`
 * (TPSIM_BIN, TPSIM_GPUBENCH, set by tests/meson.build) with the
 * NULL-terminated `args`, in `cwd` (NULL: the current folder). Its output
 * replaces *out and *err (freed first; either may be NULL to discard).
 * Fails the check when the program cannot be run or does not exit
 * normally; returns its exit status. */
int tps_test_spawn(const char *bin_env, const char *cwd, const char *const *args, char **out,
                   char **err);

/* The same with the program's standard output opened on `stdout_path` (a
 * file or a device such as /dev/full) instead of captured. */
int tps_test_spawn_to(const char *bin_env, const char *cwd, const char *const *args,
                      const char *stdout_path, char **err);

/* A new temporary folder named PREFIX-XXXXXX (fails the check when it
 * cannot be made); newly allocated. */
char *tps_test_tmpdir(const char *prefix);

/* Remove `dir` and the files in it (one level: tests make flat folders);
 * a missing folder is fine. */
void tps_test_remove_dir(const char *dir);
