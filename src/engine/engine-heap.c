/* The event queue: an indexed binary min-heap on (time, seq). Each task
 * has at most one pending event and each rank's host launcher one, so a
 * node's heap position lives in a flat array indexed by node, the heap has
 * room for every node from the start, and nothing is allocated on insert.
 * seq grows on every (re)schedule, which makes ties reproducible.
 */
#include "engine/engine-private.h"

static inline gboolean
heap_less(const HeapEntry *a, const HeapEntry *b)
{
    return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

static void
heap_sift_up(TpsEngine *engine, guint32 i)
{
    HeapEntry entry = engine->heap[i];
    while (i > 0) {
        guint32 parent = (i - 1) / 2;
        if (!heap_less(&entry, &engine->heap[parent]))
            break;
        heap_put(engine, i, engine->heap[parent]);
        i = parent;
    }
    heap_put(engine, i, entry);
}

void
eng_heap_sift_down(TpsEngine *engine, guint32 i)
{
    HeapEntry entry = engine->heap[i];
    guint32 n = engine->heap_len;
    for (;;) {
        guint32 child = 2 * i + 1;
        if (child >= n)
            break;
        if (child + 1 < n && heap_less(&engine->heap[child + 1], &engine->heap[child]))
            child++;
        if (!heap_less(&engine->heap[child], &entry))
            break;
        heap_put(engine, i, engine->heap[child]);
        i = child;
    }
    heap_put(engine, i, entry);
}

/* Queue `node` at `time`, moving it if it is queued already. The heap has
 * room for every node, so this never allocates. */
void
eng_heap_schedule(TpsEngine *engine, guint32 node, TpsTime time)
{
    HeapEntry entry = {.time = time, .seq = engine->seq++, .node = node};
    guint32 i = engine->heap_pos[node];
    if (i == NONE32) {
        i = engine->heap_len++;
        heap_put(engine, i, entry);
        heap_sift_up(engine, i);
        return;
    }
    gboolean earlier = heap_less(&entry, &engine->heap[i]);
    heap_put(engine, i, entry);
    if (earlier)
        heap_sift_up(engine, i);
    else
        eng_heap_sift_down(engine, i);
}

void
eng_heap_remove(TpsEngine *engine, guint32 node)
{
    guint32 i = engine->heap_pos[node];
    if (i == NONE32)
        return;
    engine->heap_pos[node] = NONE32;
    guint32 last = --engine->heap_len;
    if (i == last)
        return;
    HeapEntry moved = engine->heap[last];
    gboolean earlier = heap_less(&moved, &engine->heap[i]);
    heap_put(engine, i, moved);
    if (earlier)
        heap_sift_up(engine, i);
    else
        eng_heap_sift_down(engine, i);
}
