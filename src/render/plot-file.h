/* Figure definitions (plots/NAME.yaml, docs/figures.md): a small strict
 * YAML format read with io/input/yaml-tree.h, every error reported as
 * FILE:LINE:COLUMN.
 *
 *   kind: timeline | sweep | step | tune  # required (tune: the gain per GEMM
 *                                   # and method of tpsim tune from the first
 *                                   # userbuffers strategy, default te-default)
 *   scenario: ../scenarios/x.yaml   # required; relative to the plot file
 *   title: "..."                    # optional (default from the runs)
 *   strategies: [a, b]              # optional (default: the scenario's)
 *   output: NAME                    # optional file stem (default: the plot file's)
 *   formats: [png, svg, pdf]        # optional (default: all three)
 *   width: 1200                     # optional, points
 *   # timeline only
 *   rank: 0 | all                   # default 0
 *   pass: forward | backward | both # default both (model scenarios)
 *   window: [START_US, END_US]      # default: the whole pass
 *   links: true                     # NVLink lanes (default true)
 *   streams: [gemm0, ub_send]       # only these streams (default: all with work)
 *   labels: names | ring_shards     # ring_shards: ring all-gather steps named by shard
 *   # sweep only
 *   parameter: num_splits | seq_len | tp
 *   values: [1, 2, 4]
 *   metric: time_ms | step_time_s | forward_ms | backward_ms | exposed_comm_ms |
 *           tp_comm_ms | overlap_efficiency      # default time_ms; the result
 *                                                # columns with a metric name
 *                                                # (io/output/result-columns.h)
 *   x_log2: true                    # default: true when every value is a power of two
 *
 * A sweep draws one line per strategy; a point where a strategy does not
 * apply (userbuffers beyond one NVLink domain, ...) is a gap.
 */
#pragma once

#include <glib.h>

/* Figures of sweep outputs (docs/sweeps.md, "Figures"):
 *
 *   kind: sweep-lines | sweep-heatmap
 *   sweep: ../sweeps/x.yaml         # run for the figure (see the runner below), or
 *   data: x.csv                     # the CSV output of tpsim sweep
 *   x: parallel.tp                  # a column (a varied path)
 *   y: parallel.pp                  # heatmap: the second one
 *   metric: step_time_s             # a numeric column (default step_time_s)
 *   where: {parallel.pp: 8}         # only the rows with these values
 *   series: strategy                # lines: one line per value (default strategy)
 *   strategies: [megatron, te-a100] # lines: these series, in this order
 *   strategy: te-a100               # heatmap: the one drawn (needed when several)
 *   x_log2: true                    # lines
 *
 * Running a sweep file needs the plan layer, above this one: the command
 * line registers the function that does it (CSV text, newly allocated, or
 * NULL with `error` set). Without one, `sweep:` is an error. */
typedef char *(*TpsPlotSweepRunner)(const char *sweep_path, GError **error);
void tps_plot_file_set_sweep_runner(TpsPlotSweepRunner runner);

/* Render the figure defined in `path` into `output_dir` (created if
 * needed), one file per format. `written` (may be NULL) receives the
 * paths written (newly allocated strings; give it a g_free free func). */
gboolean tps_plot_file_render(const char *path, const char *output_dir, GPtrArray *written,
                              GError **error);
