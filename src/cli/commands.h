/* Subcommands of the tpsim command line: one per file, found in the sorted
 * table of main.c. Each returns the process exit status: 0 success, 1
 * invalid input, 2 usage error (design.md, "Command line"). */
#pragma once

#include <glib.h>

#include "core/output.h"

#define TPS_EXIT_OK 0
#define TPS_EXIT_INPUT 1
#define TPS_EXIT_USAGE 2

int tps_cmd_run(int argc, char **argv);
int tps_cmd_bench(int argc, char **argv);
int tps_cmd_plot(int argc, char **argv);
int tps_cmd_trace(int argc, char **argv);
int tps_cmd_calibrate(int argc, char **argv);
int tps_cmd_compare(int argc, char **argv);
int tps_cmd_validate(int argc, char **argv);
int tps_cmd_search(int argc, char **argv);
int tps_cmd_sweep(int argc, char **argv);
int tps_cmd_tune(int argc, char **argv);
int tps_cmd_merge(int argc, char **argv);

/* Run the sweep file `path` (all CPUs) and return its CSV output, newly
 * allocated; NULL with `error` set. `tpsim plot` draws sweep outputs with
 * it (render/plot-file.h, `sweep:`). */
char *tps_cli_sweep_csv(const char *path, GError **error);

/* Print `error` as "tpsim: message" and map its code to an exit status. */
int tps_cli_fail(GError *error);

/* `text` with what a terminal would act on escaped: control characters
 * (but newline and tab) as \xNN or \uNNNN, bytes that are not UTF-8 as
 * \xNN. For messages that quote the input. Newly allocated. */
char *tps_cli_printable(const char *text);

/* The index of --format `name` among the NULL-terminated `choices` (NULL
 * name: 0, the default); an unknown one is a usage error of `command`
 * that lists the choices. */
gboolean tps_cli_format(const char *command, const char *name, const char *const *choices,
                        guint *index, GError **error);

/* Every name of `names` (NULL-terminated, or NULL) a strategy: otherwise a
 * usage error "--strategy: unknown strategy ..." (a bad option value),
 * before any file is read (the scheduler reports an unknown name as an
 * input error: a scenario's strategies: name them too). */
gboolean tps_cli_strategy_names(const char *const *names, GError **error);

/* Check that the figure file `path` of an option (--timeline) names an image
 * format; an unknown one is a usage error here, though render reports it as
 * an input error (a figure definition names its formats too). */
gboolean tps_cli_image_path(const char *path, GError **error);

/* --jobs J of sweep and search: the option's variable starts at
 * TPS_CLI_JOBS_UNSET (the online CPUs, *jobs 0); given, J is 1 to 4096,
 * else a usage error. */
#define TPS_CLI_JOBS_UNSET G_MININT
gboolean tps_cli_jobs(const char *command, gint value, guint *jobs, GError **error);

/* tps_output_set_claim() for an output named by an option: a clash with
 * an input or another output is a usage error. */
gboolean tps_cli_claim(TpsOutputSet *set, const char *path, const char *option, GError **error);

/* Write a command's result: to `output` atomically when given, else to
 * standard output (staged into the command's output set when it has one:
 * core/output.h). Returns the exit status. */
int tps_cli_emit(const char *text, const char *output);
