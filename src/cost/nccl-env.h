/* nccl.algo and nccl.proto read as NCCL reads NCCL_ALGO and NCCL_PROTO,
 * and what a release does with a call they leave no algorithm for.
 *
 * A value is a list of names (case-insensitive, comma-separated, all but
 * those when it starts with '^'). From NCCL 2.24 it may be several such
 * lists separated by ';', each after a function's name and ':'
 * ("AllReduce:Tree;AllGather:Ring"), the first without one for every
 * function; each list sets its functions anew (NVIDIA/nccl
 * src/graph/tuning.cc parseList at v2.24.3-1 to v2.28.9-1).
 *
 * Where the lists leave a call no algorithm NCCL can run (Tree for an
 * all-gather, NVLS without NVLink SHARP, CollNet without a SHARP fabric),
 * NCCL 2.19 to 2.23 run the ring (the "backup" ring bandwidth of
 * ncclTopoTuneModel and topoGetAlgoInfo), 2.18 and 2.24 and later fail the
 * call ("no algorithm/protocol available", ncclInvalidUsage where
 * NCCL_ALGO or NCCL_PROTO is set: src/enqueue.cc). tpsim's default
 * constants (no nccl.version) are read as the later releases'. */
#pragma once

#include <glib.h>

#include "cost/collective.h"
#include "cost/hardware.h"
#include "cost/topology.h"

/* What is wrong with a value that does not parse. */
typedef enum {
    TPS_NCCL_LISTS_OK,
    TPS_NCCL_LISTS_UNKNOWN_NAME,     /* a name not among the names */
    TPS_NCCL_LISTS_UNKNOWN_FUNCTION, /* a function NCCL has not */
    TPS_NCCL_LISTS_NO_FUNCTION,      /* a list after the first without one */
    TPS_NCCL_LISTS_NOTHING,          /* a list that allows nothing */
} TpsNcclListsError;

typedef struct {
    guint mask[TPS_COLL_COUNT]; /* bit i: names[i] allowed for that kind */
    guint covered;              /* bit k: the value set kind k's list */
    gboolean prefixed;          /* a list after a function's name */
    TpsNcclListsError error;    /* where the value does not parse */
} TpsNcclLists;

/* Parses `value` (NULL: everything allowed, nothing covered) over
 * `names`. FALSE for an unknown name or function, or a list after the
 * first without a function (the offset in *bad), or a list that allows
 * nothing (*bad -1); out->error says which. NCCL's "Broadcast" and "Reduce" are known and
 * ignored: tpsim issues neither. */
gboolean tps_nccl_parse_lists(const char *value, const char *const *names, TpsNcclLists *out,
                              int *bad);

/* The names of `list` (nccl.algo or nccl.proto, read when the model was
 * read; one that fails here allows all) allowed for `kind`. */
guint tps_nccl_allowed(const char *list, const char *const *names, TpsCollKind kind);

/* Whether `list` sets `kind`'s names (else NCCL keeps its defaults for
 * it, LL128's automatic enabling among them). */
gboolean tps_nccl_covers(const char *list, TpsCollKind kind);

/* Whether hw's release reads per-function lists (2.24 and later, and the
 * default constants). */
gboolean tps_nccl_function_lists(const TpsHardware *hw);

/* Whether hw's release runs the ring where the lists leave nothing (2.19
 * to 2.23). */
gboolean tps_nccl_ring_backup(const TpsHardware *hw);

/* Notes a call that hw's release fails (the lists leave it nothing and no
 * ring backup), for tps_nccl_take_refusal(); the first since the last
 * take is kept. Per thread. */
void tps_nccl_note_refusal(TpsCollKind kind, const TpsGroupShape *shape);

/* FALSE with `error` set, naming the call and where nccl.algo or
 * nccl.proto was written, when a call was noted since the last take;
 * TRUE otherwise. Either way the note is cleared. */
gboolean tps_nccl_take_refusal(const TpsHardware *hw, GError **error);
