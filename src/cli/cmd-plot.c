/* tpsim plot PLOT.yaml [--output-dir DIR]: render one figure definition of
 * plots/ (format: docs/figures.md, src/render/plot-file.h). */
#include <stdio.h>

#include "cli/commands.h"
#include "core/error.h"
#include "core/output.h"
#include "render/draw.h"
#include "render/plot-file.h"

int
tps_cmd_plot(int argc, char **argv)
{
    g_autofree char *output_dir = NULL;
    g_autoptr(GError) error = NULL;
    GOptionEntry entries[] = {
        {"output-dir", 'o', 0, G_OPTION_ARG_FILENAME, &output_dir,
         "Write the figure files into DIR (default: the current folder)", "DIR"},
        {NULL},
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("PLOT.yaml...");
    g_option_context_set_summary(ctx, "Render figure definitions (plots/*.yaml): timelines of "
                                      "strategies and sweep line charts,\nas PNG, SVG or PDF.");
    g_option_context_set_description(ctx,
                                     "The format, key by key, is described in "
                                     "docs/scenario-format.md;\n"
                                     "docs/figures.md shows what the figures of plots/ draw.\n\n"
                                     "Exit status: 0 success, 1 invalid input, 2 usage error.");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_set_prgname("tpsim plot");
    if (!g_option_context_parse(ctx, &argc, &argv, &error))
        return tps_cli_fail(error);
    if (argc < 2) {
        g_set_error(&error, TPS_ERROR, TPS_ERROR_USAGE,
                    "plot: missing PLOT.yaml (see tpsim plot --help)");
        return tps_cli_fail(error);
    }
    /* Every figure of every definition, and the list of them on standard
     * output, or nothing (core/output.h): a bad second definition leaves
     * the first one's files as they were. */
    tps_plot_file_set_sweep_runner(tps_cli_sweep_csv);
    g_autoptr(TpsOutputSet) outputs = tps_output_set_begin("plot");
    for (int i = 1; i < argc; i++)
        tps_output_set_add_input(outputs, argv[i]);
    int status = TPS_EXIT_OK;
    g_autoptr(GString) list = g_string_new(NULL);
    for (int i = 1; i < argc && status == TPS_EXIT_OK; i++) {
        g_autoptr(GPtrArray) written = g_ptr_array_new_with_free_func(g_free);
        if (!tps_plot_file_render(argv[i], output_dir ? output_dir : ".", written, &error)) {
            status = tps_cli_fail(error);
            break;
        }
        for (guint k = 0; k < written->len; k++)
            g_string_append_printf(list, "%s\n", (const char *)g_ptr_array_index(written, k));
    }
    tps_render_shutdown(); /* font caches: a clean exit for leak checkers */
    if (status == TPS_EXIT_OK)
        status = tps_cli_emit(list->str, NULL);
    if (status == TPS_EXIT_OK && !tps_output_set_commit(outputs, &error))
        status = tps_cli_fail(error);
    return status;
}
