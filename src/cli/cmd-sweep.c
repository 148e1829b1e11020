/* tpsim sweep SWEEP.yaml: every point of a sweep file through the batch
 * runner; tpsim merge PART...: the outputs of its shards joined. */
#include <string.h>

#include "cli/commands.h"
#include "core/error.h"
#include "core/output.h"
#include "plan/batch.h"
#include "plan/sweep.h"

/* An input error of the batch layer about an option is a usage error. */
static int
usage_error(const char *command, GError *local)
{
    g_autoptr(GError) error =
        g_error_new(TPS_ERROR, TPS_ERROR_USAGE, "%s: %s", command, local->message);
    g_error_free(local);
    return tps_cli_fail(error);
}

/* The format of --output FILE: --format, else its extension (.json), else
 * CSV. */
static gboolean
output_format(const char *command, const char *name, const char *output, TpsFormat *format,
              GError **error)
{
    static const char *const names[] = {"csv", "json", NULL};
    guint index = 0;
    if (name == NULL && output != NULL && g_str_has_suffix(output, ".json"))
        name = "json";
    if (!tps_cli_format(command, name, names, &index, error))
        return FALSE;
    *format = index == 1 ? TPS_FORMAT_JSON : TPS_FORMAT_CSV;
    return TRUE;
}

char *
tps_cli_sweep_csv(const char *path, GError **error)
{
    g_autoptr(TpsSweep) sweep = tps_sweep_load(path, error);
    if (sweep == NULL)
        return NULL;
    TpsBatchOptions opts;
    tps_batch_options_init(&opts);
    char *text = NULL;
    opts.text = &text;
    if (!tps_batch_run(tps_sweep_batch(sweep), tps_sweep_eval, sweep, &opts, error))
        return NULL;
    return text;
}

int
tps_cmd_sweep(int argc, char **argv)
{
    g_autofree char *output = NULL;
    g_autofree char *format_name = NULL;
    g_autofree char *shard = NULL;
    gint jobs = TPS_CLI_JOBS_UNSET;
    gboolean resume = FALSE, progress = FALSE;
    g_autoptr(GError) error = NULL;
    GOptionEntry entries[] = {
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
         "Write the results to FILE (streamed to FILE.partial as points finish; FILE when all "
         "are done)",
         "FILE"},
        {"format", 'f', 0, G_OPTION_ARG_STRING, &format_name,
         "csv (default) or json (the default for a FILE ending in .json)", "FORMAT"},
        {"jobs", 'j', 0, G_OPTION_ARG_INT, &jobs,
         "Evaluate J points at a time (default: the online CPUs)", "J"},
        {"resume", 0, 0, G_OPTION_ARG_NONE, &resume,
         "Continue a stopped run from FILE.partial: the points done are kept, the others run",
         NULL},
        {"shard", 0, 0, G_OPTION_ARG_STRING, &shard,
         "Evaluate only the points whose number modulo N is I (0 <= I < N); join the outputs "
         "with tpsim merge",
         "I/N"},
        {"progress", 0, 0, G_OPTION_ARG_NONE, &progress,
         "Show the progress bar on standard error even when it is not a terminal", NULL},
        {NULL},
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("SWEEP.yaml");
    g_option_context_set_summary(
        ctx, "Simulate every point of a sweep file: a base scenario with any of its values, or\n"
             "of its hardware model, varied (docs/sweeps.md). One row per point and strategy:\n"
             "the varied values, the layout and the results.");
    g_option_context_set_description(
        ctx, "Exit status: 0 success, 1 invalid input, 2 usage error. A point whose values\n"
             "the scenario rules refuse is a row \"skipped: REASON\", not an error.");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_set_prgname("tpsim sweep");
    if (!g_option_context_parse(ctx, &argc, &argv, &error))
        return tps_cli_fail(error);
    if (argc != 2) {
        g_set_error(&error, TPS_ERROR, TPS_ERROR_USAGE,
                    argc < 2 ? "sweep: missing SWEEP.yaml (see tpsim sweep --help)"
                             : "sweep: one sweep file at a time (see tpsim sweep --help)");
        return tps_cli_fail(error);
    }
    TpsBatchOptions opts;
    tps_batch_options_init(&opts);
    if (!tps_cli_jobs("sweep", jobs, &opts.jobs, &error))
        return tps_cli_fail(error);
    if (!output_format("sweep", format_name, output, &opts.format, &error))
        return tps_cli_fail(error);
    if (shard && !tps_batch_parse_shard(shard, &opts.shard_index, &opts.shard_count, &error))
        return usage_error("sweep", g_steal_pointer(&error));
    if (resume && (output == NULL || strcmp(output, "-") == 0)) {
        g_set_error(&error, TPS_ERROR, TPS_ERROR_USAGE,
                    "sweep: --resume needs --output FILE (FILE.partial says what is done)");
        return tps_cli_fail(error);
    }
    opts.resume = resume;
    opts.output = output ? output : "-";
    opts.progress = progress ? TPS_PROGRESS_ALWAYS : TPS_PROGRESS_AUTO;

    /* The output may not be the sweep file nor a file it reads (its base
     * scenario, the hardware model: the loader notes them into the set);
     * the set is ended before the run, whose partial and final files are
     * its own (plan/batch.h). */
    g_autoptr(TpsSweep) sweep = NULL;
    {
        g_autoptr(TpsOutputSet) outputs = tps_output_set_begin("sweep");
        tps_output_set_add_input(outputs, argv[1]);
        if (!tps_cli_claim(outputs, opts.output, "--output", &error))
            return tps_cli_fail(error);
        sweep = tps_sweep_load(argv[1], &error);
        if (sweep == NULL)
            return tps_cli_fail(error);
    }
    if (!tps_batch_run(tps_sweep_batch(sweep), tps_sweep_eval, sweep, &opts, &error))
        return tps_cli_fail(error);
    return TPS_EXIT_OK;
}

int
tps_cmd_merge(int argc, char **argv)
{
    g_autofree char *output = NULL;
    g_autoptr(GError) error = NULL;
    GOptionEntry entries[] = {
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
         "Write the joined result to FILE (default: standard output)", "FILE"},
        {NULL},
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("PART...");
    g_option_context_set_summary(
        ctx, "Join the outputs of the shards of one sweep or search (--shard I/N, every I of\n"
             "0..N-1, in any order) into the output one run without --shard writes, byte for\n"
             "byte.");
    g_option_context_set_description(ctx, "Exit status: 0 success, 1 invalid input (parts of "
                                          "different batches,\na shard missing or given twice), "
                                          "2 usage error.");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_set_prgname("tpsim merge");
    if (!g_option_context_parse(ctx, &argc, &argv, &error))
        return tps_cli_fail(error);
    if (argc < 2) {
        g_set_error(&error, TPS_ERROR, TPS_ERROR_USAGE,
                    "merge: missing PART... (see tpsim merge --help)");
        return tps_cli_fail(error);
    }
    g_autoptr(TpsOutputSet) outputs = tps_output_set_begin("merge");
    for (int i = 1; i < argc; i++)
        tps_output_set_add_input(outputs, argv[i]);
    if (!tps_cli_claim(outputs, output ? output : "-", "--output", &error))
        return tps_cli_fail(error);
    if (!tps_batch_merge((const char *const *)argv + 1, (guint)(argc - 1), output ? output : "-",
                         &error) ||
        !tps_output_set_commit(outputs, &error))
        return tps_cli_fail(error);
    return TPS_EXIT_OK;
}
