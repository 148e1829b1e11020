/* nccl.algo and nccl.proto as NCCL reads NCCL_ALGO and NCCL_PROTO
 * (cost/nccl-env.h). */
#include "cost/nccl-env.h"
#include "core/error.h"
#include "cost/nccl-tuning.h"

#include <string.h>

/* NCCL's functions that tpsim issues none of (NVIDIA/nccl src/init.cc
 * ncclFuncStr: Broadcast, Reduce, AllGather, ReduceScatter, AllReduce). */
static const char *const unissued_funcs[] = {"Broadcast", "Reduce", NULL};

gboolean
tps_coll_parse_list(const char *value, const char *const *names, guint *mask, int *bad)
{
    g_return_val_if_fail(names != NULL && mask != NULL, FALSE);
    guint all = 0, listed = 0;
    for (guint i = 0; names[i] != NULL; i++)
        all |= 1u << i;
    *mask = all;
    if (value == NULL)
        return TRUE;
    const gboolean exclude = value[0] == '^';
    for (const char *w = value + exclude; *w != '\0';) {
        const char *end = strchr(w, ',');
        gsize len = end ? (gsize)(end - w) : strlen(w);
        guint i = 0;
        while (names[i] != NULL &&
               !(strlen(names[i]) == len && g_ascii_strncasecmp(w, names[i], len) == 0))
            i++;
        if (names[i] == NULL) {
            if (bad)
                *bad = (int)(w - value);
            return FALSE;
        }
        listed |= 1u << i;
        w += len + (end != NULL);
    }
    *mask = exclude ? all & ~listed : listed;
    if (bad)
        *bad = -1;
    return *mask != 0;
}

/* The kinds a function's name stands for: one of tpsim's, none for the
 * functions it issues none of; FALSE for a name NCCL has not. */
static gboolean
function_kinds(const char *name, gsize len, guint *kinds)
{
    for (guint k = 0; k < TPS_COLL_COUNT; k++)
        if (strlen(tps_coll_kind_names[k]) == len &&
            g_ascii_strncasecmp(name, tps_coll_kind_names[k], len) == 0) {
            *kinds = 1u << k;
            return TRUE;
        }
    *kinds = 0;
    for (guint i = 0; unissued_funcs[i] != NULL; i++)
        if (strlen(unissued_funcs[i]) == len && g_ascii_strncasecmp(name, unissued_funcs[i], len) == 0)
            return TRUE;
    return FALSE;
}

/* One entry of a value, `len` characters at `entry` (its offset `at`),
 * the first of its value when `first`: its functions' lists set anew. */
static gboolean
parse_entry(const char *entry, gsize len, int at, gboolean first, const char *const *names,
            TpsNcclLists *out, int *bad)
{
    const char *colon = memchr(entry, ':', len);
    guint kinds = (1u << TPS_COLL_COUNT) - 1;
    const char *list = entry;
    if (colon != NULL) {
        if (!function_kinds(entry, (gsize)(colon - entry), &kinds)) {
            *bad = at;
            out->error = TPS_NCCL_LISTS_UNKNOWN_FUNCTION;
            return FALSE;
        }
        out->prefixed = TRUE;
        list = colon + 1;
    } else if (!first) {
        *bad = at; /* NCCL: every entry but the first names its function */
        out->error = TPS_NCCL_LISTS_NO_FUNCTION;
        return FALSE;
    }
    g_autofree char *names_list = g_strndup(list, len - (gsize)(list - entry));
    guint mask;
    int inner = -1;
    if (!tps_coll_parse_list(names_list, names, &mask, &inner)) {
        *bad = inner < 0 ? -1 : at + (int)(list - entry) + inner;
        out->error = inner < 0 ? TPS_NCCL_LISTS_NOTHING : TPS_NCCL_LISTS_UNKNOWN_NAME;
        return FALSE;
    }
    for (guint k = 0; k < TPS_COLL_COUNT; k++)
        if (kinds & (1u << k))
            out->mask[k] = mask;
    out->covered |= kinds;
    return TRUE;
}

gboolean
tps_nccl_parse_lists(const char *value, const char *const *names, TpsNcclLists *out, int *bad)
{
    g_return_val_if_fail(names != NULL && out != NULL, FALSE);
    int unused;
    bad = bad != NULL ? bad : &unused;
    *bad = -1;
    memset(out, 0, sizeof(*out));
    guint all = 0;
    for (guint i = 0; names[i] != NULL; i++)
        all |= 1u << i;
    for (guint k = 0; k < TPS_COLL_COUNT; k++)
        out->mask[k] = all;
    if (value == NULL)
        return TRUE;
    for (const char *e = value;;) {
        const char *end = strchr(e, ';');
        const gsize len = end ? (gsize)(end - e) : strlen(e);
        /* (An empty entry after the first is skipped, as NCCL's strtok
         * does.) */
        if ((len > 0 || e == value) &&
            !parse_entry(e, len, (int)(e - value), e == value, names, out, bad))
            return FALSE;
        if (end == NULL)
            break;
        e = end + 1;
    }
    return TRUE;
}

/* The lists of `list` over `names`, NULL where it fails (refused when the
 * model was read). Every collective plan asks (cost/collective.c's memo
 * key among them), so the last value parsed for each of the two name
 * sets is kept per thread, by its text: a what-if's copy of the model
 * holds the same text at another address. Values longer than a slot are
 * parsed each time. */
#define LISTS_SLOT_CHARS 256

static const TpsNcclLists *
lists_of(const char *list, const char *const *names)
{
    static _Thread_local struct {
        const char *const *names;
        char text[LISTS_SLOT_CHARS];
        gboolean ok;
        TpsNcclLists lists;
    } slots[2];
    static _Thread_local TpsNcclLists uncached;
    const gsize len = strlen(list);
    const guint i = names == tps_protocol_names;
    if (len >= LISTS_SLOT_CHARS)
        return tps_nccl_parse_lists(list, names, &uncached, NULL) ? &uncached : NULL;
    if (slots[i].names != names || strcmp(slots[i].text, list) != 0) {
        slots[i].names = names;
        memcpy(slots[i].text, list, len + 1);
        slots[i].ok = tps_nccl_parse_lists(list, names, &slots[i].lists, NULL);
    }
    return slots[i].ok ? &slots[i].lists : NULL;
}

guint
tps_nccl_allowed(const char *list, const char *const *names, TpsCollKind kind)
{
    const TpsNcclLists *lists = list != NULL ? lists_of(list, names) : NULL;
    return lists != NULL ? lists->mask[kind] : ~0u;
}

gboolean
tps_nccl_covers(const char *list, TpsCollKind kind)
{
    /* The names do not matter for what is covered, only that it parses:
     * a list that fails was refused when the model was read. */
    const TpsNcclLists *lists = list != NULL ? lists_of(list, tps_protocol_names) : NULL;
    return lists != NULL && (lists->covered & (1u << kind)) != 0;
}

gboolean
tps_nccl_function_lists(const TpsHardware *hw)
{
    const guint minor = tps_nccl_minor(hw->nccl_version);
    return minor == 0 || minor >= 24;
}

gboolean
tps_nccl_ring_backup(const TpsHardware *hw)
{
    const guint minor = tps_nccl_minor(hw->nccl_version);
    return minor >= 19 && minor <= 23;
}

/* The first refused call since the last take, per thread. */
static _Thread_local struct {
    gboolean set;
    TpsCollKind kind;
    guint ranks, domains;
} refusal;

void
tps_nccl_note_refusal(TpsCollKind kind, const TpsGroupShape *shape)
{
    if (refusal.set)
        return;
    refusal.set = TRUE;
    refusal.kind = kind;
    refusal.ranks = shape->ranks;
    refusal.domains = shape->domains;
}

gboolean
tps_nccl_take_refusal(const TpsHardware *hw, GError **error)
{
    if (!refusal.set)
        return TRUE;
    refusal.set = FALSE;
    const gboolean algo = hw->nccl_algo != NULL;
    const char *at = algo ? hw->nccl_algo_at : hw->nccl_proto_at;
    g_autofree char *where =
        refusal.domains > 1
            ? g_strdup_printf("%u ranks across %u NVLink domains", refusal.ranks, refusal.domains)
            : g_strdup_printf("%u ranks in one NVLink domain", refusal.ranks);
    g_autofree char *also = algo && hw->nccl_proto != NULL
                                ? g_strdup_printf(" (nccl.proto '%s')", hw->nccl_proto)
                                : g_strdup("");
    g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                "%s%snccl.%s '%s'%s leaves NCCL no algorithm for the %s of %s: NCCL %s fails "
                "the call (\"no algorithm/protocol available\"); allow one for it (from 2.24 "
                "per function, as '%s:Ring'), or set nccl.version 2.19 to 2.23, which run the "
                "ring instead",
                at != NULL ? at : "", at != NULL ? ": " : "", algo ? "algo" : "proto",
                algo ? hw->nccl_algo : hw->nccl_proto, also, tps_coll_kind_names[refusal.kind],
                where, hw->nccl_version != NULL ? hw->nccl_version : "2.24 and later",
                tps_coll_kind_names[refusal.kind]);
    return FALSE;
}
