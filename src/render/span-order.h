/* Render-private: tasks ordered by a start time, ties by id (the order the
 * timeline packs lanes in and the trace export emits flows in). */
#pragma once

#include <glib.h>

#include "engine/engine.h"

typedef struct {
    TpsTime start;
    TpsTaskId id;
} TpsSpanStart;

static inline gint
tps_span_start_cmp(gconstpointer pa, gconstpointer pb)
{
    const TpsSpanStart *a = pa, *b = pb;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id ? 1 : 0;
}
