/* Writing output files: see output.h. */
#include "core/output.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"

/* Symbolic links followed before giving up, the kernel's own limit. */
#define MAX_LINKS 40

/* A temporary file that nobody holds locked is a killed run's leftover once
 * it is this old: its writer takes the lock right after creating it, so the
 * age only covers that instant (and file systems with coarse times). */
#define LEFTOVER_MIN_AGE_S 10

/* The part of a temporary file's name after `.NAME` (mkstemp's six
 * characters follow). */
#define TEMP_INFIX ".tpsim-"
#define TEMP_RANDOM 6

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

/* ---- temporary files removed on a fatal signal ----
 *
 * The registry is a plain array of strings that the handler walks with
 * unlink() only (async-signal-safe). It is changed with those signals
 * blocked, so the handler never sees it half-updated, and a temporary file
 * is created and registered in one blocked section: a signal cannot land
 * between the two. */

static const int cleanup_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};

static char **registry;
static size_t registry_len, registry_cap;
static gboolean handlers_installed;
/* tps_output_interrupt_note(): read by the handler in whichever thread
 * the signal lands, so the note is never freed (a literal). */
static volatile sig_atomic_t interrupt_clear;
static const char *volatile interrupt_note;

/* Standard error from the handler: nothing to do if it fails. */
static void
handler_say(const char *text, size_t len)
{
    ssize_t unused = write(STDERR_FILENO, text, len);
    (void)unused;
}

static void
on_fatal_signal(int sig)
{
    const int saved = errno;
    for (size_t i = 0; i < registry_len; i++)
        if (registry[i] != NULL)
            unlink(registry[i]);
    /* What standard error shows last: no half-drawn progress line, and
     * the run's note (none for a closed pipe, which nobody reads). */
    static const char clear[] = "\r\033[K";
    const char *note = interrupt_note;
    if (interrupt_clear)
        handler_say(clear, sizeof clear - 1);
    if (note != NULL && sig != SIGPIPE)
        handler_say(note, strlen(note));
    errno = saved;
    /* SA_RESETHAND restored the default action; raised again, the signal
     * is delivered when this returns and ends the process as it would
     * have without us (the exit status says which signal). */
    raise(sig);
}

static void
block_signals(sigset_t *old)
{
    sigset_t set;
    sigemptyset(&set);
    for (gsize i = 0; i < G_N_ELEMENTS(cleanup_signals); i++)
        sigaddset(&set, cleanup_signals[i]);
    pthread_sigmask(SIG_BLOCK, &set, old);
}

static void
restore_signals(const sigset_t *old)
{
    pthread_sigmask(SIG_SETMASK, old, NULL);
}

/* Only signals left at their default action: a program (or a test runner)
 * that handles or ignores one keeps its choice. */
static void
install_handlers(void)
{
    if (handlers_installed)
        return;
    handlers_installed = TRUE;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal_signal;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    for (gsize i = 0; i < G_N_ELEMENTS(cleanup_signals); i++)
        sigaddset(&sa.sa_mask, cleanup_signals[i]);
    for (gsize i = 0; i < G_N_ELEMENTS(cleanup_signals); i++) {
        struct sigaction old;
        if (sigaction(cleanup_signals[i], NULL, &old) == 0 && !(old.sa_flags & SA_SIGINFO) &&
            old.sa_handler == SIG_DFL)
            sigaction(cleanup_signals[i], &sa, NULL);
    }
}

void
tps_output_interrupt_note(gboolean clear_line, const char *note)
{
    install_handlers();
    interrupt_note = note;
    interrupt_clear = clear_line;
}

/* With the signals blocked. */
static void
registry_add(const char *path)
{
    for (size_t i = 0; i < registry_len; i++) {
        if (registry[i] == NULL) {
            registry[i] = g_strdup(path);
            return;
        }
    }
    if (registry_len == registry_cap) {
        registry_cap = MAX(8, 2 * registry_cap);
        registry = g_renew(char *, registry, registry_cap);
    }
    registry[registry_len] = g_strdup(path);
    registry_len++;
}

static void
registry_remove(const char *path)
{
    sigset_t old;
    block_signals(&old);
    for (size_t i = 0; i < registry_len; i++) {
        if (registry[i] != NULL && strcmp(registry[i], path) == 0) {
            g_free(registry[i]);
            registry[i] = NULL;
            break;
        }
    }
    restore_signals(&old);
}

/* Create `.BASE.tpsim-XXXXXX` in `dir`, registered for removal on a signal
 * and locked for as long as the returned descriptor is open. -1 with errno
 * set on failure. */
static int
create_temp(const char *dir, const char *base, char **tmp_out)
{
    char *tmp = g_strdup_printf("%s/.%s" TEMP_INFIX "XXXXXX", dir, base);
    sigset_t old;
    block_signals(&old);
    install_handlers();
    /* 0666 less the umask, what a new file gets from open(); mkstemp alone
     * would make every output private. */
    int fd = g_mkstemp_full(tmp, O_WRONLY | O_CLOEXEC, 0666);
    int saved = errno;
    if (fd >= 0)
        registry_add(tmp);
    restore_signals(&old);
    if (fd < 0) {
        g_free(tmp);
        errno = saved;
        return -1;
    }
    /* Best effort: a file system without locks leaves the file unmarked,
     * and a later run then keeps it (see clean_leftovers). */
    if (flock(fd, LOCK_EX | LOCK_NB) != 0)
        g_debug("%s: no lock: %s", tmp, g_strerror(errno));
    *tmp_out = tmp;
    return fd;
}

/* ---- a killed run's leftovers ---- */

/* `.NAME.tpsim-XXXXXX`, NAME not empty. */
static gboolean
is_temp_name(const char *name)
{
    const gsize len = strlen(name);
    const gsize tail = strlen(TEMP_INFIX) + TEMP_RANDOM;
    if (name[0] != '.' || len < 2 + tail)
        return FALSE;
    if (strncmp(name + len - tail, TEMP_INFIX, strlen(TEMP_INFIX)) != 0)
        return FALSE;
    for (const char *c = name + len - TEMP_RANDOM; *c; c++)
        if (!g_ascii_isalnum(*c))
            return FALSE;
    return TRUE;
}

/* Remove from `dir` the temporary files of writers that are gone: those
 * nobody holds locked (a live writer does, see create_temp). */
static void
clean_leftovers(const char *dir)
{
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    if (d == NULL)
        return;
    const time_t now = time(NULL);
    for (const char *name; (name = g_dir_read_name(d)) != NULL;) {
        if (!is_temp_name(name))
            continue;
        g_autofree char *path = g_build_filename(dir, name, NULL);
        struct stat st, held;
        if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode) || now - st.st_mtime < LEFTOVER_MIN_AGE_S)
            continue;
        int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
            continue;
        /* Locked by us: its writer is dead. Still the file we looked at (a
         * new one of the same random name is not ours to remove). */
        if (flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &held) == 0 &&
            held.st_ino == st.st_ino && held.st_dev == st.st_dev) {
            if (g_unlink(path) == 0)
                g_debug("removed %s, left by a killed run", path);
        }
        close(fd);
    }
}

/* ---- writing ---- */

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

/* /dev/stdout is the process's own stream, as in the shell: reopening it
 * would truncate an appending redirection (>>) and write beside the buffer
 * of stdout. */
static gboolean
is_stdout(const char *path)
{
    return strcmp(path, "-") == 0 || strcmp(path, "/dev/stdout") == 0;
}

/* ---- which file a path names ---- */

typedef struct {
    gboolean special; /* standard output or a device: never compared */
    gboolean exists;
    dev_t dev;
    ino_t ino;
    char *canonical; /* the link target's folder resolved, plus its name */
} FileKey;

static void
file_key_init(FileKey *key, const char *path)
{
    memset(key, 0, sizeof *key);
    if (is_stdout(path) || is_special(path)) {
        key->special = TRUE;
        return;
    }
    g_autofree char *target = follow_links(path);
    const char *p = target ? target : path;
    struct stat st;
    if (stat(p, &st) == 0) {
        key->exists = TRUE;
        key->dev = st.st_dev;
        key->ino = st.st_ino;
    }
    g_autofree char *dir = g_path_get_dirname(p);
    g_autofree char *base = g_path_get_basename(p);
    char *real = realpath(dir, NULL);
    if (real != NULL) {
        key->canonical = g_build_filename(real, base, NULL);
        free(real);
    } else {
        key->canonical = g_canonicalize_filename(p, NULL);
    }
}

static void
file_key_clear(FileKey *key)
{
    g_clear_pointer(&key->canonical, g_free);
}

static gboolean
file_key_equal(const FileKey *a, const FileKey *b)
{
    if (a->special || b->special)
        return FALSE;
    if (a->exists && b->exists)
        return a->dev == b->dev && a->ino == b->ino;
    return g_strcmp0(a->canonical, b->canonical) == 0;
}

/* ---- output sets ---- */

typedef enum {
    DEST_STDOUT,  /* kept in memory, written to standard output */
    DEST_THROUGH, /* kept in memory, written through to the device */
    DEST_REPLACE, /* a temporary file renamed over the target */
} DestKind;

typedef struct {
    char *path; /* as given, for messages */
    char *what; /* the option that named it, or NULL */
    FileKey key;
    gboolean staged;
    DestKind kind;
    /* DEST_REPLACE */
    char *target, *dir, *tmp;
    int fd; /* the temporary file, open (hence locked) until the rename */
    /* DEST_STDOUT, DEST_THROUGH */
    char *buf;
    size_t len;
} Output;

typedef struct {
    char *path;
    FileKey key;
} Input;

struct _TpsOutputSet {
    char *command;
    GPtrArray *inputs;   /* Input * */
    GPtrArray *outputs;  /* Output *, in the order claimed or staged */
    GHashTable *cleaned; /* folders cleaned of leftovers */
};

static TpsOutputSet *current;
static FILE *announce; /* tps_output_announce() */

void
tps_output_announce(FILE *stream)
{
    announce = stream;
}

/* Remove the temporary file of `o`, if any. */
static void
output_discard(Output *o)
{
    if (o->tmp != NULL) {
        g_unlink(o->tmp);
        registry_remove(o->tmp);
        g_clear_pointer(&o->tmp, g_free);
    }
    if (o->fd >= 0) {
        close(o->fd);
        o->fd = -1;
    }
    g_clear_pointer(&o->buf, free);
    o->len = 0;
}

static void
output_free(Output *o)
{
    output_discard(o);
    g_free(o->path);
    g_free(o->what);
    g_free(o->target);
    g_free(o->dir);
    file_key_clear(&o->key);
    g_free(o);
}

static void
input_free(Input *in)
{
    g_free(in->path);
    file_key_clear(&in->key);
    g_free(in);
}

static TpsOutputSet *
set_new(const char *command)
{
    TpsOutputSet *set = g_new0(TpsOutputSet, 1);
    set->command = g_strdup(command);
    set->inputs = g_ptr_array_new_with_free_func((GDestroyNotify)input_free);
    set->outputs = g_ptr_array_new_with_free_func((GDestroyNotify)output_free);
    set->cleaned = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    return set;
}

TpsOutputSet *
tps_output_set_begin(const char *command)
{
    g_return_val_if_fail(command != NULL, NULL);
    g_return_val_if_fail(current == NULL, NULL);
    current = set_new(command);
    return current;
}

void
tps_output_set_free(TpsOutputSet *set)
{
    if (set == NULL)
        return;
    if (current == set)
        current = NULL;
    g_ptr_array_unref(set->inputs);
    g_ptr_array_unref(set->outputs); /* removes what was not committed */
    g_hash_table_unref(set->cleaned);
    g_free(set->command);
    g_free(set);
}

void
tps_output_set_add_input(TpsOutputSet *set, const char *path)
{
    g_return_if_fail(set != NULL && path != NULL);
    Input *in = g_new0(Input, 1);
    in->path = g_strdup(path);
    file_key_init(&in->key, path);
    g_ptr_array_add(set->inputs, in);
}

/* "--trace 'x.json'", or "'x.json'" for an output no option named. */
static char *
describe(const char *what, const char *path)
{
    return what ? g_strdup_printf("%s '%s'", what, path) : g_strdup_printf("'%s'", path);
}

gboolean
tps_output_note_input(const char *path, GError **error)
{
    g_return_val_if_fail(path != NULL, FALSE);
    if (current == NULL)
        return TRUE;
    Input *in = g_new0(Input, 1);
    in->path = g_strdup(path);
    file_key_init(&in->key, path);
    for (guint i = 0; i < current->outputs->len; i++) {
        const Output *o = g_ptr_array_index(current->outputs, i);
        if (file_key_equal(&o->key, &in->key)) {
            g_autofree char *d = describe(o->what, o->path);
            g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                        "%s: the output %s is the input '%s'; refusing to overwrite it",
                        current->command, d, in->path);
            input_free(in);
            return FALSE;
        }
    }
    g_ptr_array_add(current->inputs, in);
    return TRUE;
}

/* Refuse `key` when it is an input or an output already in the set (that
 * is not `self`). */
static gboolean
check_distinct(TpsOutputSet *set, const Output *self, const char *path, const char *what,
               const FileKey *key, GError **error)
{
    for (guint i = 0; i < set->inputs->len; i++) {
        const Input *in = g_ptr_array_index(set->inputs, i);
        if (file_key_equal(key, &in->key)) {
            g_autofree char *d = describe(what, path);
            g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                        "%s: the output %s is the input '%s'; refusing to overwrite it",
                        set->command, d, in->path);
            return FALSE;
        }
    }
    for (guint i = 0; i < set->outputs->len; i++) {
        const Output *o = g_ptr_array_index(set->outputs, i);
        if (o != self && file_key_equal(key, &o->key)) {
            g_autofree char *d0 = describe(o->what, o->path);
            g_autofree char *d1 = describe(what, path);
            g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                        "%s: the outputs %s and %s are the same file; one would be lost",
                        set->command, d0, d1);
            return FALSE;
        }
    }
    return TRUE;
}

static Output *
output_new(const char *path, const char *what)
{
    Output *o = g_new0(Output, 1);
    o->path = g_strdup(path);
    o->what = g_strdup(what);
    o->fd = -1;
    file_key_init(&o->key, path);
    return o;
}

gboolean
tps_output_set_claim(TpsOutputSet *set, const char *path, const char *what, GError **error)
{
    g_return_val_if_fail(set != NULL && path != NULL, FALSE);
    Output *o = output_new(path, what);
    if (!check_distinct(set, NULL, path, what, &o->key, error)) {
        output_free(o);
        return FALSE;
    }
    g_ptr_array_add(set->outputs, o);
    return TRUE;
}

/* The entry of `path` in the set: its claim when it has one that is not
 * staged yet, else a new one checked against the others. */
static Output *
entry_for(TpsOutputSet *set, const char *path, GError **error)
{
    Output *o = output_new(path, NULL);
    if (!o->key.special) {
        for (guint i = 0; i < set->outputs->len; i++) {
            Output *c = g_ptr_array_index(set->outputs, i);
            if (!c->staged && file_key_equal(&c->key, &o->key)) {
                output_free(o);
                return c;
            }
        }
    } else {
        /* Standard output and devices: the claim of the same name. */
        for (guint i = 0; i < set->outputs->len; i++) {
            Output *c = g_ptr_array_index(set->outputs, i);
            if (!c->staged && c->key.special && strcmp(c->path, path) == 0) {
                output_free(o);
                return c;
            }
        }
    }
    if (!check_distinct(set, NULL, path, NULL, &o->key, error)) {
        output_free(o);
        return NULL;
    }
    g_ptr_array_add(set->outputs, o);
    return o;
}

/* Keep the content in memory, for standard output or a device. */
static gboolean
stage_in_memory(Output *o, const Source *src, GError **error)
{
    FILE *fp = open_memstream(&o->buf, &o->len);
    if (fp == NULL)
        return io_error(error, o->path, errno);
    gboolean ok = emit(fp, o->path, src, error);
    if (fclose(fp) != 0 && ok)
        ok = io_error(error, o->path, errno);
    if (!ok)
        g_clear_pointer(&o->buf, free);
    return ok;
}

/* Write the content into a temporary file beside the target. */
static gboolean
stage_replace(TpsOutputSet *set, Output *o, const Source *src, GError **error)
{
    o->target = follow_links(o->path);
    if (o->target == NULL)
        return io_error(error, o->path, errno);
    struct stat st;
    const gboolean exists = stat(o->target, &st) == 0;
    if (exists && S_ISDIR(st.st_mode))
        return io_error(error, o->path, EISDIR);

    o->dir = g_path_get_dirname(o->target);
    g_autofree char *base = g_path_get_basename(o->target);
    if (!g_hash_table_contains(set->cleaned, o->dir)) {
        clean_leftovers(o->dir);
        g_hash_table_add(set->cleaned, g_strdup(o->dir));
    }
    o->fd = create_temp(o->dir, base, &o->tmp);
    if (o->fd < 0)
        return io_error(error, o->path, errno);
    /* A replaced file keeps its permission bits. Best effort: a file system
     * without modes refuses, and the content matters more. */
    if (exists && fchmod(o->fd, st.st_mode & 07777) != 0)
        g_debug("%s: cannot keep the mode: %s", o->path, g_strerror(errno));
    /* The stream writes through a copy of the descriptor: closing it keeps
     * the file open, and so locked, until the rename. */
    int dup_fd = dup(o->fd);
    FILE *fp = dup_fd >= 0 ? fdopen(dup_fd, "wb") : NULL;
    if (fp == NULL) {
        int saved = errno;
        if (dup_fd >= 0)
            close(dup_fd);
        output_discard(o);
        return io_error(error, o->path, saved);
    }
    gboolean ok = emit(fp, o->path, src, error);
    if (ok && fsync(fileno(fp)) != 0)
        ok = io_error(error, o->path, errno);
    if (fclose(fp) != 0 && ok)
        ok = io_error(error, o->path, errno);
    if (!ok)
        output_discard(o);
    return ok;
}

static gboolean
stage(TpsOutputSet *set, const char *path, const Source *src, GError **error)
{
    Output *o = entry_for(set, path, error);
    if (o == NULL)
        return FALSE;
    o->kind = is_stdout(path) ? DEST_STDOUT : is_special(path) ? DEST_THROUGH : DEST_REPLACE;
    gboolean ok = o->kind == DEST_REPLACE ? stage_replace(set, o, src, error)
                                          : stage_in_memory(o, src, error);
    /* Staged even when it failed: the same path again is then refused as
     * written twice rather than silently retried. */
    o->staged = TRUE;
    return ok;
}

gboolean
tps_output_set_commit(TpsOutputSet *set, GError **error)
{
    g_return_val_if_fail(set != NULL, FALSE);
    /* First what can still fail on its content (a full disk behind
     * standard output, a closed pipe): then nothing has been replaced. */
    for (guint i = 0; i < set->outputs->len; i++) {
        Output *o = g_ptr_array_index(set->outputs, i);
        if (!o->staged || o->kind == DEST_REPLACE)
            continue;
        const Source src = {.contents = o->buf ? o->buf : "", .len = o->len};
        gboolean ok = o->kind == DEST_STDOUT ? write_stdout(&src, error)
                                             : write_through(o->path, &src, error);
        g_clear_pointer(&o->buf, free);
        if (!ok)
            return FALSE; /* the set's end removes the temporary files */
    }
    for (guint i = 0; i < set->outputs->len; i++) {
        Output *o = g_ptr_array_index(set->outputs, i);
        if (!o->staged || o->kind != DEST_REPLACE || o->tmp == NULL)
            continue;
        if (rename(o->tmp, o->target) != 0)
            return io_error(error, o->path, errno);
        registry_remove(o->tmp);
        g_clear_pointer(&o->tmp, g_free);
        close(o->fd);
        o->fd = -1;
        if (announce != NULL)
            fprintf(announce, "wrote %s\n", o->path);
    }
    /* The new contents are in place even when this fails; the error says
     * they may not survive a crash. */
    g_autoptr(GHashTable) synced = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint i = 0; i < set->outputs->len; i++) {
        Output *o = g_ptr_array_index(set->outputs, i);
        if (!o->staged || o->kind != DEST_REPLACE || g_hash_table_contains(synced, o->dir))
            continue;
        g_hash_table_add(synced, o->dir);
        if (!sync_folder(o->dir, o->path, error))
            return FALSE;
    }
    return TRUE;
}

/* Into the current set, or alone: a set of one, committed at once. */
static gboolean
write_source(const char *path, const Source *src, GError **error)
{
    if (current != NULL)
        return stage(current, path, src, error);
    TpsOutputSet *set = set_new("tpsim");
    gboolean ok = stage(set, path, src, error) && tps_output_set_commit(set, error);
    tps_output_set_free(set);
    return ok;
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
