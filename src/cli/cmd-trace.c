/* tpsim trace summary TRACE: what a PyTorch profiler (Kineto) trace says
 * about its GPU kernels (docs/traces.md); tpsim trace host TRACE...: what
 * the framework costs the issuing thread per op class (docs/cost-model.md,
 * "Host"). */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "core/error.h"
#include "core/output.h"
#include "io/output/result-writer.h"
#include "io/trace/trace-cpu.h"
#include "io/trace/trace-import.h"
#include "io/trace/trace-summary.h"

static int
trace_summary(int argc, char **argv)
{
    g_autofree char *format_name = NULL;
    g_autofree char *output = NULL;
    g_autoptr(GError) error = NULL;
    GOptionEntry entries[] = {
        {"format", 'f', 0, G_OPTION_ARG_STRING, &format_name,
         "Output format: table (default) or json", "FORMAT"},
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
         "Write the summary to FILE (atomically) instead of standard output", "FILE"},
        {NULL},
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("TRACE.json[.gz]");
    g_option_context_set_summary(
        ctx, "Summarize a PyTorch profiler (Kineto) trace, gzipped or plain: GPU kernels per\n"
             "class (GEMM, NCCL, other), NCCL collectives with message sizes and bus bandwidth\n"
             "where the trace gives them, busy time per stream, and the fraction of NCCL time\n"
             "overlapped by other kernels. Traces written by `tpsim run --trace` are read too.");
    g_option_context_set_description(ctx, "See docs/traces.md; the JSON keys are in "
                                          "docs/scenario-format.md.\n\n"
                                          "Exit status: 0 success, 1 unreadable file or not a "
                                          "trace, 2 usage error.");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_set_prgname("tpsim trace summary");
    if (!g_option_context_parse(ctx, &argc, &argv, &error))
        return tps_cli_fail(error);
    if (argc != 2) {
        g_set_error(&error, TPS_ERROR, TPS_ERROR_USAGE,
                    argc < 2 ? "trace summary: missing TRACE (see tpsim trace summary --help)"
                             : "trace summary: one trace at a time");
        return tps_cli_fail(error);
    }
    static const char *const formats[] = {"table", "json", NULL};
    guint format;
    if (!tps_cli_format("trace summary", format_name, formats, &format, &error))
        return tps_cli_fail(error);
    const gboolean json = format == 1;
    g_autoptr(TpsOutputSet) outputs = tps_output_set_begin("trace summary");
    tps_output_set_add_input(outputs, argv[1]);
    if (!tps_cli_claim(outputs, output ? output : "-", "--output", &error))
        return tps_cli_fail(error);

    g_autoptr(TpsTrace) trace = tps_trace_load(argv[1], &error);
    if (trace == NULL)
        return tps_cli_fail(error);
    g_autoptr(TpsTraceSummary) summary = tps_trace_summarize(trace);
    g_autofree char *text =
        json ? tps_trace_summary_to_json(summary) : tps_trace_summary_to_table(summary);
    int status = tps_cli_emit(text, output);
    if (status == TPS_EXIT_OK && !tps_output_set_commit(outputs, &error))
        status = tps_cli_fail(error);
    return status;
}

static int
trace_host(int argc, char **argv)
{
    g_autofree char *output = NULL;
    g_autoptr(GError) error = NULL;
    GOptionEntry entries[] = {
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
         "Write the table to FILE (atomically) instead of standard output", "FILE"},
        {NULL},
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("TRACE.json[.gz]...");
    g_option_context_set_summary(
        ctx, "Measure the CPU side of PyTorch profiler (Kineto) traces: per op class (GEMM,\n"
             "elementwise, NCCL, memcpy) the host time of one framework op and the gap before\n"
             "it, and the durations of launch, event-record, stream-wait and graph-launch\n"
             "calls and launch-to-start latencies, pooled over the traces whose profiler cost\n"
             "is small, with each trace's median: what the host: section of a hardware model\n"
             "is fitted to.");
    g_option_context_set_description(ctx, "See docs/cost-model.md (Host).\n\n"
                                          "Exit status: 0 success, 1 unreadable file or not a "
                                          "trace, 2 usage error.");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_set_prgname("tpsim trace host");
    if (!g_option_context_parse(ctx, &argc, &argv, &error))
        return tps_cli_fail(error);
    if (argc < 2) {
        g_set_error(&error, TPS_ERROR, TPS_ERROR_USAGE,
                    "trace host: missing TRACE (see tpsim trace host --help)");
        return tps_cli_fail(error);
    }
    g_autoptr(TpsCpuProfile) profile = tps_cpu_profile_new();
    for (int i = 1; i < argc; i++)
        if (!tps_cpu_profile_add_file(profile, argv[i], &error))
            return tps_cli_fail(error);
    g_autofree char *text = tps_cpu_profile_to_table(profile);
    return tps_cli_emit(text, output);
}

/* Sorted by name. */
static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
} subcommands[] = {
    {"host", trace_host},
    {"summary", trace_summary},
};

int
tps_cmd_trace(int argc, char **argv)
{
    g_autoptr(GError) error = NULL;
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("Usage: tpsim trace summary TRACE.json[.gz] [--format table|json] [--output FILE]\n"
               "       tpsim trace host TRACE.json[.gz]... [--output FILE]\n\n"
               "Read PyTorch profiler (Kineto) traces. `tpsim trace summary --help` and\n"
               "`tpsim trace host --help` for more.\n");
        return TPS_EXIT_OK;
    }
    if (argc < 2) {
        g_set_error(&error, TPS_ERROR, TPS_ERROR_USAGE,
                    "trace: missing subcommand (tpsim trace summary TRACE)");
        return tps_cli_fail(error);
    }
    for (gsize i = 0; i < G_N_ELEMENTS(subcommands); i++)
        if (strcmp(argv[1], subcommands[i].name) == 0)
            return subcommands[i].run(argc - 1, argv + 1);
    g_set_error(&error, TPS_ERROR, TPS_ERROR_USAGE,
                "trace: unknown subcommand '%s' (tpsim trace summary TRACE)", argv[1]);
    return tps_cli_fail(error);
}
