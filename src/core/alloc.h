/* Process-wide allocator tuning for the command line and benchmarks.
 *
 * A run builds and frees one engine per strategy and graph piece, up to a
 * few hundred MB for deep pipelines. With glibc's defaults, freed blocks of
 * that size go back to the kernel and the next engine pays every page
 * fault again; measured on the 1T-class scenario, that was two thirds of
 * the run. tps_alloc_tune() keeps freed memory in the heap instead (a
 * no-op on other C libraries). Call it once, early, from main().
 */
#pragma once

void tps_alloc_tune(void);

/* Peak resident memory of the process in MiB (VmHWM), or -1 when the
 * system does not say (benchmarks report it). */
double tps_alloc_peak_rss_mib(void);
