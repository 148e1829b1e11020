/* Subcommands of the tpsim command line: one per file, found in the sorted
 * table of main.c. Each returns the process exit status: 0 success, 1
 * invalid input, 2 usage error (design.md, "Command line"). */
#pragma once

#include <glib.h>

#define TPS_EXIT_OK 0
#define TPS_EXIT_INPUT 1
#define TPS_EXIT_USAGE 2

int tps_cmd_run(int argc, char **argv);
int tps_cmd_bench(int argc, char **argv);
int tps_cmd_plot(int argc, char **argv);
int tps_cmd_trace(int argc, char **argv);
int tps_cmd_calibrate(int argc, char **argv);
int tps_cmd_compare(int argc, char **argv);

/* Print `error` as "tpsim: message" and map its code to an exit status. */
int tps_cli_fail(GError *error);
