/* Fuzz target: arbitrary bytes as a figure definition (plots/NAME.yaml),
 * rendered as `tpsim plot` does. The input is written to plots/fuzz.yaml of
 * a scratch folder whose scenarios/ links to the project's, so that the
 * definitions of plots/ (the corpus) find their scenarios; figures go to a
 * scratch out/ that is emptied after each input. Any input must either
 * render or fail with a message; nothing may crash, leak or emit a
 * critical. */
#include <glib.h>
#include <glib/gstdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/error.h"
#include "render/draw.h"
#include "render/plot-file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *root, *plot_path, *out_dir;

static void
setup(void)
{
    if (root != NULL)
        return;
    root = g_dir_make_tmp("tpsim-fuzz-plot-XXXXXX", NULL);
    g_assert(root != NULL);
    g_autofree char *plots = g_build_filename(root, "plots", NULL);
    g_autofree char *scenarios = g_build_filename(root, "scenarios", NULL);
    g_autofree char *source = g_build_filename(TPS_FUZZ_SOURCE_DIR, "scenarios", NULL);
    g_assert(g_mkdir(plots, 0700) == 0);
    g_assert(symlink(source, scenarios) == 0);
    plot_path = g_build_filename(plots, "fuzz.yaml", NULL);
    out_dir = g_build_filename(root, "out", NULL);
}

static void
empty_out(void)
{
    g_autoptr(GDir) d = g_dir_open(out_dir, 0, NULL);
    if (d == NULL)
        return;
    for (const char *n; (n = g_dir_read_name(d)) != NULL;) {
        g_autofree char *p = g_build_filename(out_dir, n, NULL);
        g_unlink(p);
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* A sweep simulates a scenario per value and strategy: keep single
     * runs short. */
    if (size > 4096)
        return 0;
    setup();
    g_assert(g_file_set_contents(plot_path, (const char *)data, (gssize)size, NULL));
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) written = g_ptr_array_new_with_free_func(g_free);
    if (tps_plot_file_render(plot_path, out_dir, written, &error)) {
        g_assert(error == NULL && written->len > 0);
        for (guint i = 0; i < written->len; i++)
            g_assert(g_file_test(g_ptr_array_index(written, i), G_FILE_TEST_IS_REGULAR));
    } else {
        g_assert(error != NULL && error->domain == TPS_ERROR && error->message != NULL);
        g_assert_cmpuint(written->len, ==, 0);
    }
    empty_out();
    tps_render_shutdown();
    return 0;
}
