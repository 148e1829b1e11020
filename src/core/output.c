/* Writing output files: see output.h. */
#include "core/output.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"

/* Symbolic links followed before giving up, the kernel's own limit. */
#define MAX_LINKS 40

/* What is written: a buffer, or a function that streams it. */
typedef struct {
    const char *contents;
    gsize len;
    TpsWriteFunc func;
    gpointer user_data;
} Source;

static gboolean
io_error(GError **error, const char *path, int err)
{
    g_set_error(error, TPS_ERROR, TPS_ERROR_IO, "cannot write %s: %s", path,
                g_strerror(err ? err : EIO));
    return FALSE;
}

/* Write `src` into `fp` and flush it. */
static gboolean
emit(FILE *fp, const char *path, const Source *src, GError **error)
{
    /* A write that fails inside the function only marks the stream; errno
     * still holds its reason unless the function made another failing call
     * since, hence the reset and EIO when nothing is left. */
    errno = 0;
    if (src->func) {
        g_autoptr(GError) local = NULL;
        if (!src->func(fp, src->user_data, &local)) {
            if (local == NULL)
                return io_error(error, path, errno);
            g_propagate_prefixed_error(error, g_steal_pointer(&local), "%s: ", path);
            return FALSE;
        }
    } else if (src->len > 0 && fwrite(src->contents, 1, src->len, fp) != src->len) {
        return io_error(error, path, errno);
    }
    if (ferror(fp))
        return io_error(error, path, errno);
    /* Most of a small output is still in the stream's buffer: its write
     * errors (ENOSPC, EIO, EPIPE) only show here. */
    if (fflush(fp) != 0)
        return io_error(error, path, errno);
    return TRUE;
}

/* Standard output stays open: the caller may print more after. */
static gboolean
write_stdout(const Source *src, GError **error)
{
    return emit(stdout, "standard output", src, error);
}

/* Devices, FIFOs and the like: opened and written as they are. */
static gboolean
write_through(const char *path, const Source *src, GError **error)
{
    int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return io_error(error, path, errno);
    FILE *fp = fdopen(fd, "wb");
    if (fp == NULL) {
        int saved = errno;
        close(fd);
        return io_error(error, path, saved);
    }
    gboolean ok = emit(fp, path, src, error);
    if (fclose(fp) != 0 && ok)
        ok = io_error(error, path, errno);
    return ok;
}

/* The path a chain of symbolic links from `path` ends at (it may not exist
 * yet: a dangling link creates its target), newly allocated; NULL with errno
 * set on a loop. */
static char *
follow_links(const char *path)
{
    char *cur = g_strdup(path);
    for (int hops = 0; hops <= MAX_LINKS; hops++) {
        struct stat st;
        /* Any other lstat failure (ENOENT above all) leaves the path as
         * it is: creating the file reports what is wrong with it. */
        if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode))
            return cur;
        char *target = g_file_read_link(cur, NULL);
        if (target == NULL) { /* replaced between the two calls */
            g_free(cur);
            errno = EINVAL;
            return NULL;
        }
        char *next;
        if (g_path_is_absolute(target)) {
            next = target;
        } else {
            g_autofree char *dir = g_path_get_dirname(cur);
            next = g_build_filename(dir, target, NULL);
            g_free(target);
        }
        g_free(cur);
        cur = next;
    }
    g_free(cur);
    errno = ELOOP;
    return NULL;
}

/* fsync the folder so that the rename itself survives a crash. */
static gboolean
sync_folder(const char *dir, const char *path, GError **error)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) /* a folder one may write into but not read: the rename is done */
        return TRUE;
    int rc = fsync(fd);
    int saved = errno;
    close(fd);
    /* EINVAL: a file system that cannot sync a folder. */
    if (rc != 0 && saved != EINVAL)
        return io_error(error, path, saved);
    return TRUE;
}

/* A regular file, or a new one: a temporary file renamed over it. */
static gboolean
write_replace(const char *path, const Source *src, GError **error)
{
    g_autofree char *target = follow_links(path);
    if (target == NULL)
        return io_error(error, path, errno);
    struct stat st;
    const gboolean exists = stat(target, &st) == 0;
    if (exists && S_ISDIR(st.st_mode))
        return io_error(error, path, EISDIR);

    g_autofree char *dir = g_path_get_dirname(target);
    g_autofree char *base = g_path_get_basename(target);
    g_autofree char *tmp = g_strdup_printf("%s/.%s.tpsim-XXXXXX", dir, base);
    /* 0666 less the umask, what a new file gets from open(); mkstemp alone
     * would make every output private. */
    int fd = g_mkstemp_full(tmp, O_WRONLY | O_CLOEXEC, 0666);
    if (fd < 0)
        return io_error(error, path, errno);
    /* A replaced file keeps its permission bits. Best effort: a file system
     * without modes refuses, and the content matters more. */
    if (exists && fchmod(fd, st.st_mode & 07777) != 0)
        g_debug("%s: cannot keep the mode: %s", path, g_strerror(errno));
    FILE *fp = fdopen(fd, "wb");
    if (fp == NULL) {
        int saved = errno;
        close(fd);
        g_unlink(tmp);
        return io_error(error, path, saved);
    }

    gboolean ok = emit(fp, path, src, error);
    if (ok && fsync(fileno(fp)) != 0)
        ok = io_error(error, path, errno);
    if (fclose(fp) != 0 && ok)
        ok = io_error(error, path, errno);
    if (ok && rename(tmp, target) != 0)
        ok = io_error(error, path, errno);
    if (!ok) {
        g_unlink(tmp);
        return FALSE;
    }
    /* The new content is in place even when this fails; the error says it
     * may not survive a crash. */
    return sync_folder(dir, path, error);
}

/* Whether `path` is written as it is rather than replaced (output.h). */
static gboolean
is_special(const char *path)
{
    /* /dev/fd/N may be a shell redirection to a regular file, whose inode
     * must stay the one the shell opened; nothing under /dev or /proc is a
     * place for a temporary file anyway. */
    if (g_str_has_prefix(path, "/dev/") || g_str_has_prefix(path, "/proc/"))
        return TRUE;
    struct stat st;
    return stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

static gboolean
write_source(const char *path, const Source *src, GError **error)
{
    /* /dev/stdout is the process's own stream, as in the shell: reopening
     * it would truncate an appending redirection (>>) and write beside the
     * buffer of stdout. */
    if (strcmp(path, "-") == 0 || strcmp(path, "/dev/stdout") == 0)
        return write_stdout(src, error);
    if (is_special(path))
        return write_through(path, src, error);
    return write_replace(path, src, error);
}

gboolean
tps_write_atomic(const char *path, const char *contents, gsize len, GError **error)
{
    g_return_val_if_fail(path != NULL, FALSE);
    g_return_val_if_fail(contents != NULL || len == 0, FALSE);
    const Source src = {.contents = contents, .len = len};
    return write_source(path, &src, error);
}

gboolean
tps_write_atomic_stream(const char *path, TpsWriteFunc write, gpointer user_data, GError **error)
{
    g_return_val_if_fail(path != NULL, FALSE);
    g_return_val_if_fail(write != NULL, FALSE);
    const Source src = {.func = write, .user_data = user_data};
    return write_source(path, &src, error);
}
