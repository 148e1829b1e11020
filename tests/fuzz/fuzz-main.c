/* Replay main for the fuzz targets when they are built without libFuzzer:
 * runs LLVMFuzzerTestOneInput() once over each file given on the command
 * line, and over each regular file of each folder given (not recursively,
 * in sorted order so runs are reproducible). A crash, a sanitizer report or
 * a critical warning (G_DEBUG=fatal-criticals) fails the run; the targets
 * themselves accept any input, valid or not.
 */
#include <glib.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static gboolean
run_file(const char *path)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *contents = NULL;
    gsize length = 0;

    if (!g_file_get_contents(path, &contents, &length, &error)) {
        fprintf(stderr, "fuzz-replay: %s\n", error->message);
        return FALSE;
    }
    LLVMFuzzerTestOneInput((const uint8_t *)contents, length);
    return TRUE;
}

static int
compare_strings(gconstpointer a, gconstpointer b)
{
    return g_strcmp0(*(char *const *)a, *(char *const *)b);
}

static gboolean
run_dir(const char *path, guint *count)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GDir) dir = g_dir_open(path, 0, &error);
    if (dir == NULL) {
        fprintf(stderr, "fuzz-replay: %s\n", error->message);
        return FALSE;
    }
    g_autoptr(GPtrArray) files = g_ptr_array_new_with_free_func(g_free);
    const char *name;
    while ((name = g_dir_read_name(dir)) != NULL) {
        char *file = g_build_filename(path, name, NULL);
        if (g_file_test(file, G_FILE_TEST_IS_REGULAR))
            g_ptr_array_add(files, file);
        else
            g_free(file);
    }
    g_ptr_array_sort(files, compare_strings);
    for (guint i = 0; i < files->len; i++) {
        if (!run_file(g_ptr_array_index(files, i)))
            return FALSE;
        (*count)++;
    }
    return TRUE;
}

int
main(int argc, char **argv)
{
    guint count = 0;

    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE-OR-DIR...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        gboolean ok;
        if (g_file_test(argv[i], G_FILE_TEST_IS_DIR)) {
            ok = run_dir(argv[i], &count);
        } else {
            ok = run_file(argv[i]);
            count++;
        }
        if (!ok)
            return 1;
    }
    printf("fuzz-replay: %u inputs\n", count);
    return 0;
}
