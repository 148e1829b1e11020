/* Writing output files so that nothing half-written is ever seen.
 *
 * Every file tpsim writes (results, figures, traces, fitted models,
 * measurements) goes through here, so that one place decides what "replace a
 * file" means:
 *
 * - a regular file, or a name that does not exist yet, is written to a
 *   temporary file `.NAME.tpsim-XXXXXX` in the same folder, flushed to disk,
 *   renamed over the target, and the folder is flushed too: a reader sees
 *   the old content or the new, never a mix, even after a crash. An existing
 *   file keeps its permission bits (not its owner, nor other hard links);
 * - a symbolic link is followed: the file it points to is replaced, the
 *   link itself stays;
 * - anything else that exists (a character device such as /dev/null, a FIFO,
 *   a socket), and every path under /dev/ or /proc/, is written through:
 *   replacing /dev/null or /dev/stdout with a regular file would be wrong;
 * - `-` is standard output (written, flushed, not closed).
 *
 * A failure (a write, flush, fsync, close or rename that fails, including
 * ENOSPC from /dev/full) is a TPS_ERROR_IO naming the path and the system's
 * reason; the temporary file is then removed and the target left as it was.
 *
 * The outputs of one command form a set (TpsOutputSet): each is staged
 * (written to its temporary file, or kept in memory for standard output and
 * devices) and nothing is changed until the set is committed, which writes
 * the standard output and devices first (the writes that can still fail on
 * a full disk or a closed pipe), then renames every temporary file into
 * place. A set freed without a commit removes its temporary files, so a
 * command that fails at its third output leaves none of the three. While a
 * set is current, tps_write_atomic() and tps_write_atomic_stream() stage into
 * it: the layers that write files (render, io) need not know about sets.
 * The renames themselves are not undone: one that fails after another
 * succeeded (the folder removed meanwhile) leaves the first in place.
 *
 * A set refuses (TPS_ERROR_INPUT; the command line makes it a usage error
 * when options named both) an output that names one of the command's
 * inputs (those the command line adds, and every file the loaders read
 * while the set is current: tps_output_note_input()) or another output of
 * the same command (the same file when it
 * exists, by device and inode, through links; else the same canonical
 * path). Standard output and devices are exempt: writing two outputs to
 * /dev/null destroys nothing.
 *
 * Temporary files are removed on SIGINT, SIGTERM, SIGHUP and SIGPIPE (when
 * the process left those at their default action), and each temporary file
 * is locked (flock) while its writer lives, so that one a killed process
 * left behind (SIGKILL) is recognised and removed by the next write into
 * that folder.
 */
#pragma once

#include <glib.h>
#include <stdio.h>

/* Streams an output into `out`. Returns FALSE with `error` set when it
 * cannot produce the content (its message gets "PATH: " in front); write
 * errors on `out` need no checking here: tps_write_atomic_stream() checks
 * the stream afterwards. Must not close `out`. */
typedef gboolean (*TpsWriteFunc)(FILE *out, gpointer user_data, GError **error);

/* Write the `len` bytes of `contents` to `path` (see above): at once, or
 * staged into the current output set. */
gboolean tps_write_atomic(const char *path, const char *contents, gsize len, GError **error);

/* Write to `path` (see above) what `write` streams, for outputs too big to
 * build in memory first (Cairo surfaces, traces). */
gboolean tps_write_atomic_stream(const char *path, TpsWriteFunc write, gpointer user_data,
                                 GError **error);

/* For a long run that draws a progress line on standard error and leaves
 * what can be continued (a sweep's FILE.partial): until called again, the
 * fatal-signal handler above (SIGINT, SIGTERM, SIGHUP; SIGPIPE clears the
 * line only) first clears that line when `clear_line`, then writes `note`
 * (whole lines; NULL: none), and the process ends by the signal as it
 * would have. `note` is kept, never freed: a string literal, as the
 * handler may read it in any thread. tps_output_interrupt_note(FALSE,
 * NULL) ends it. */
void tps_output_interrupt_note(gboolean clear_line, const char *note);

typedef struct _TpsOutputSet TpsOutputSet;

/* Start the output set of `command` (used in messages: "run: ...") and make
 * it current. One set at a time. */
TpsOutputSet *tps_output_set_begin(const char *command);

/* Note an input file of the command, which no output may name. */
void tps_output_set_add_input(TpsOutputSet *set, const char *path);

/* Note a file that the command reads while the set is current (a hardware
 * model, a userbuffers configuration, a sweep's base scenario: the loaders
 * of io call it for every file they open, so that the command line need not
 * know them all). Without a current set it does nothing. FALSE with
 * TPS_ERROR_INPUT when an output already claimed names that file: the
 * command then stops before any work, and the file is left as it was. */
gboolean tps_output_note_input(const char *path, GError **error);

/* Reserve the output `path` given by option `what` ("--trace"): a
 * TPS_ERROR_INPUT when it names an input or another output. Claiming the
 * outputs right after parsing the options refuses a bad command line before
 * any work; an output staged without a claim is checked when staged. */
gboolean tps_output_set_claim(TpsOutputSet *set, const char *path, const char *what,
                              GError **error);

/* Write every staged output into place (see above). FALSE with `error` set
 * on the first failure; the temporary files not yet renamed are removed. */
gboolean tps_output_set_commit(TpsOutputSet *set, GError **error);

/* Where a committed output says "wrote PATH" (one line per file replaced,
 * as the command named it; standard output and devices say nothing): the
 * command-line tools pass stderr, so that every command that writes files
 * confirms each one from this one place. NULL (the default): nowhere. */
void tps_output_announce(FILE *stream);

/* End the set (no longer current); without a commit, remove its temporary
 * files and leave every target as it was. Accepts NULL. */
void tps_output_set_free(TpsOutputSet *set);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(TpsOutputSet, tps_output_set_free)
