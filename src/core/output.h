/* Writing an output file so that nothing half-written is ever seen.
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
 */
#pragma once

#include <glib.h>
#include <stdio.h>

/* Streams an output into `out`. Returns FALSE with `error` set when it
 * cannot produce the content (its message gets "PATH: " in front); write
 * errors on `out` need no checking here: tps_write_atomic_stream() checks
 * the stream afterwards. Must not close `out`. */
typedef gboolean (*TpsWriteFunc)(FILE *out, gpointer user_data, GError **error);

/* Write the `len` bytes of `contents` to `path` (see above). */
gboolean tps_write_atomic(const char *path, const char *contents, gsize len, GError **error);

/* Write to `path` (see above) what `write` streams, for outputs too big to
 * build in memory first (Cairo surfaces, traces). */
gboolean tps_write_atomic_stream(const char *path, TpsWriteFunc write, gpointer user_data,
                                 GError **error);
