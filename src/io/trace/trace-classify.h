/* The parts of the kernel classification that the trace reader uses
 * beyond the public ones of trace-import.h (trace-classify.c). */
#pragma once

#include <glib.h>

#include "io/trace/trace-import.h"

/* Bytes of a torch dtype name as Kineto writes it ("Float",
 * "c10::BFloat16", ...); 0 when unknown or NULL. */
int tps_trace_dtype_size(const char *dtype);

/* The collective ("AllGather", ...) of Kineto's "Collective name" argument
 * (generic kernels); NULL when unknown or NULL. */
const char *tps_trace_collective_from_arg(const char *arg);
