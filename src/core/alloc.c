#include "core/alloc.h"

#include <glib.h>
#include <string.h>

#include <stdlib.h> /* defines __GLIBC__ where it applies */
#ifdef __GLIBC__
#include <malloc.h>
#endif

void
tps_alloc_tune(void)
{
#ifdef __GLIBC__
    /* mallopt caps M_MMAP_THRESHOLD at 32 MiB, below an engine's largest
     * arrays: serve everything from the heap instead, and keep up to 1 GiB
     * of freed memory there. */
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

double
tps_alloc_peak_rss_mib(void)
{
    g_autofree char *status = NULL;
    if (!g_file_get_contents("/proc/self/status", &status, NULL, NULL))
        return -1.0;
    const char *line = strstr(status, "VmHWM:");
    return line ? g_ascii_strtod(line + 6, NULL) / 1024.0 : -1.0;
}
