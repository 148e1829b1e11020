/* tpsim: the command line. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "core/alloc.h"
#include "core/error.h"
#include "core/output.h"
#include "render/draw.h"
#include "sched/strategy.h"

#include "version.h"

typedef struct {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
} Command;

/* Sorted by name. */
static const Command commands[] = {
    {"bench", "time the simulator itself (engine throughput, one GPT-3 175B layer)", tps_cmd_bench},
    {"calibrate", "fit a hardware model to traces and measurements", tps_cmd_calibrate},
    {"compare", "compare a real trace with the prediction of a scenario", tps_cmd_compare},
    {"merge", "join the outputs of the shards of a sweep (--shard I/N) into one", tps_cmd_merge},
    {"plot", "render a figure definition of plots/", tps_cmd_plot},
    {"run",
     "simulate each strategy of a scenario and print step time, exposed communication, "
     "MFU and memory",
     tps_cmd_run},
    {"search", "find the best layouts of a model on N GPUs (tp, pp, vpp, dp, micro-batch, ...)",
     tps_cmd_search},
    {"sweep", "simulate a base scenario with any of its values varied (sweeps/)", tps_cmd_sweep},
    {"trace", "read real PyTorch profiler (Kineto) traces: tpsim trace summary TRACE",
     tps_cmd_trace},
    {"tune",
     "find the userbuffers configuration (--tp-comm-overlap-cfg) of a layout, or that it "
     "should not overlap",
     tps_cmd_tune},
    {"validate",
     "the cost models against every dataset of the calibration set, with error "
     "statistics",
     tps_cmd_validate},
};

char *
tps_cli_printable(const char *text)
{
    GString *out = g_string_sized_new(strlen(text));
    const char *p = text;
    while (*p) {
        gunichar c = g_utf8_get_char_validated(p, -1);
        if (c == (gunichar)-1 || c == (gunichar)-2) { /* not UTF-8: the byte */
            g_string_append_printf(out, "\\x%02x", (guchar)*p);
            p++;
            continue;
        }
        const char *next = g_utf8_next_char(p);
        /* C0 controls but newline and tab, DEL, and the C1 controls
         * (U+0080-U+009F, which some terminals take as ESC [ and the like). */
        if ((c < 0x20 && c != '\n' && c != '\t') || (c >= 0x7f && c <= 0x9f))
            g_string_append_printf(out, c < 0x80 ? "\\x%02x" : "\\u%04x", (guint)c);
        else
            g_string_append_len(out, p, next - p);
        p = next;
    }
    return g_string_free(out, FALSE);
}

int
tps_cli_fail(GError *error)
{
    /* Messages quote the input (keys, names, paths): a key holding ESC
     * sequences must not drive the terminal (issue 13, D14). */
    g_autofree char *message = tps_cli_printable(error->message);
    fprintf(stderr, "tpsim: %s\n", message);
    if (error->domain == TPS_ERROR && error->code == TPS_ERROR_USAGE)
        return TPS_EXIT_USAGE;
    if (error->domain == G_OPTION_ERROR)
        return TPS_EXIT_USAGE;
    return TPS_EXIT_INPUT;
}

gboolean
tps_cli_format(const char *command, const char *name, const char *const *choices, guint *index,
               GError **error)
{
    *index = 0;
    if (name == NULL)
        return TRUE;
    for (guint i = 0; choices[i]; i++) {
        if (strcmp(choices[i], name) == 0) {
            *index = i;
            return TRUE;
        }
    }
    /* "table, csv or json" */
    g_autoptr(GString) list = g_string_new(NULL);
    guint n = g_strv_length((char **)choices);
    for (guint i = 0; i < n; i++)
        g_string_append_printf(list, "%s%s", i == 0 ? "" : i + 1 == n ? " or " : ", ", choices[i]);
    g_set_error(error, TPS_ERROR, TPS_ERROR_USAGE, "%s: unknown format '%s' (%s)", command, name,
                list->str);
    return FALSE;
}

gboolean
tps_cli_strategy_names(const char *const *names, GError **error)
{
    for (const char *const *r = names; r != NULL && *r != NULL; r++) {
        if (tps_strategy_lookup(*r) != NULL)
            continue;
        /* The scheduler's message, as an option's. */
        TpsScenario none;
        tps_scenario_init(&none);
        const char *one[] = {*r, NULL};
        g_autoptr(GError) local = NULL;
        g_autofree const TpsStrategy **chosen = tps_strategy_select(&none, one, &local);
        tps_scenario_clear(&none);
        g_set_error_literal(error, TPS_ERROR, TPS_ERROR_USAGE,
                            local != NULL ? local->message : "--strategy: unknown strategy");
        return FALSE;
    }
    return TRUE;
}

gboolean
tps_cli_image_path(const char *path, GError **error)
{
    TpsImageFormat format;
    g_autoptr(GError) local = NULL;
    if (tps_image_format_from_path(path, &format, &local))
        return TRUE;
    g_set_error_literal(error, TPS_ERROR, TPS_ERROR_USAGE, local->message);
    return FALSE;
}

gboolean
tps_cli_jobs(const char *command, gint value, guint *jobs, GError **error)
{
    if (value == TPS_CLI_JOBS_UNSET) {
        *jobs = 0;
        return TRUE;
    }
    if (value < 1 || value > 4096) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_USAGE, "%s: --jobs takes 1 to 4096, not %d",
                    command, value);
        return FALSE;
    }
    *jobs = (guint)value;
    return TRUE;
}

gboolean
tps_cli_claim(TpsOutputSet *set, const char *path, const char *option, GError **error)
{
    g_autoptr(GError) local = NULL;
    if (tps_output_set_claim(set, path, option, &local))
        return TRUE;
    g_set_error_literal(error, TPS_ERROR, TPS_ERROR_USAGE, local->message);
    return FALSE;
}

int
tps_cli_emit(const char *text, const char *output)
{
    g_autoptr(GError) error = NULL;
    /* Standard output too, so that a failed write (a full disk behind a
     * redirection) is an error rather than a truncated result. */
    if (!tps_write_atomic(output ? output : "-", text, strlen(text), &error))
        return tps_cli_fail(error);
    return TPS_EXIT_OK;
}

static void
usage(FILE *out)
{
    fprintf(out, "Usage: tpsim COMMAND [OPTION...]\n\n"
                 "Discrete-event simulator of tensor-parallel / sequence-parallel training\n"
                 "schedules (Megatron TP/SP) and their communication-overlap strategies.\n\n"
                 "Commands:\n");
    for (gsize i = 0; i < G_N_ELEMENTS(commands); i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nOptions:\n"
                 "  -h, --help     show this help\n"
                 "  --version      show the version\n\n"
                 "`tpsim COMMAND --help` describes a command. Hardware models are looked up in\n"
                 "$TPSIM_MODEL_PATH (colon-separated folders), then in the built-in models/.\n");
}

int
main(int argc, char **argv)
{
    tps_alloc_tune();
    /* "wrote FILE" on standard error for every file a command writes. */
    tps_output_announce(stderr);
    if (argc < 2) {
        usage(stderr);
        return TPS_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return TPS_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("tpsim %s\n", TPS_VERSION);
        return TPS_EXIT_OK;
    }
    for (gsize i = 0; i < G_N_ELEMENTS(commands); i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "tpsim: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return TPS_EXIT_USAGE;
}
