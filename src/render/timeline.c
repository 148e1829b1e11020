/* Timeline layout: see timeline.h. */
#include "render/timeline.h"
#include "render/timeline-geometry.h"
#include "render/span-order.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

const char *const tps_pass_names[] = {"forward", "backward", "both", NULL};

/* Okabe & Ito (2008), "Color Universal Design": distinguishable with every
 * common colour-vision deficiency and in greyscale print by lightness
 * (blue and vermillion dark, orange and yellow light). */
static const struct {
    guint32 rgb, text;
    const char *name;
} styles[TPS_STYLE_COUNT] = {
    [TPS_STYLE_GEMM] = {0x0072B2, 0xFFFFFF, "GEMM"},
    [TPS_STYLE_ATTENTION] = {0xCC79A7, 0x000000, "attention"},
    [TPS_STYLE_MEMORY] = {0x009E73, 0xFFFFFF, "memory-bound"},
    [TPS_STYLE_COMM] = {0xE69F00, 0x000000, "comm kernel"},
    [TPS_STYLE_TRANSFER] = {0xF0E442, 0x000000, "link transfer"},
    [TPS_STYLE_WAIT] = {0xBBBBBB, 0x000000, "waiting"},
    [TPS_STYLE_EXPOSED] = {0xD55E00, 0xFFFFFF, "exposed comm"},
    [TPS_STYLE_HOST] = {0x56B4E9, 0x000000, "host issue"},
    [TPS_STYLE_FORWARD] = {0x56B4E9, 0x000000, "forward"},
    [TPS_STYLE_BACKWARD] = {0x0072B2, 0xFFFFFF, "backward"},
    [TPS_STYLE_P2P] = {0xF0E442, 0x000000, "P2P transfer"},
    [TPS_STYLE_DP] = {0xE69F00, 0x000000, "DP reduction (overlapped)"},
    [TPS_STYLE_DP_EXPOSED] = {0xD55E00, 0xFFFFFF, "DP reduction (exposed)"},
    [TPS_STYLE_OPTIMIZER] = {0x009E73, 0xFFFFFF, "optimizer"},
    [TPS_STYLE_IDLE] = {0xE4E4E4, 0x000000, "idle (bubble)"},
};

guint32
tps_style_rgb(TpsStyle style)
{
    g_return_val_if_fail(style < TPS_STYLE_COUNT, 0);
    return styles[style].rgb;
}

guint32
tps_style_text_rgb(TpsStyle style)
{
    g_return_val_if_fail(style < TPS_STYLE_COUNT, 0);
    return styles[style].text;
}

const char *
tps_style_name(TpsStyle style)
{
    g_return_val_if_fail(style < TPS_STYLE_COUNT, NULL);
    return styles[style].name;
}

static TpsStyle
kind_style(TpsTaskKind kind)
{
    switch (kind) {
    case TPS_KIND_GEMM:
        return TPS_STYLE_GEMM;
    case TPS_KIND_ATTENTION:
        return TPS_STYLE_ATTENTION;
    case TPS_KIND_MEMORY:
        return TPS_STYLE_MEMORY;
    case TPS_KIND_COMM:
        return TPS_STYLE_COMM;
    case TPS_KIND_FLOW:
    case TPS_KIND_COPY:
        return TPS_STYLE_TRANSFER;
    default:
        return TPS_STYLE_WAIT;
    }
}

/* Geometry in points (timeline-geometry.h), and this figure's own. */
#define RANK_GAP 7.0
#define BAND_H 7.0

void
tps_timeline_options_init(TpsTimelineOptions *options)
{
    memset(options, 0, sizeof *options);
    options->rank = 0;
    options->pass = TPS_PASS_BOTH;
    options->links = TRUE;
    options->width = 1200.0;
}

const char *
tps_timeline_short_name(const char *name)
{
    if (name == NULL)
        return "";
    if ((name[0] == 'l' && g_ascii_isdigit(name[1])) || g_str_has_prefix(name, "op.")) {
        const char *dot = strchr(name, '.');
        if (dot && dot[1])
            return dot + 1;
    }
    return name;
}

double
tps_nice_step(double lo, double hi, guint target, double *first)
{
    double range = hi - lo;
    if (!(range > 0.0))
        range = 1.0;
    double raw = range / MAX(target, 1u);
    double mag = pow(10.0, floor(log10(raw)));
    double norm = raw / mag;
    double step = norm <= 1.0 ? 1.0 : norm <= 2.0 ? 2.0 : norm <= 5.0 ? 5.0 : 10.0;
    step *= mag;
    if (first)
        *first = ceil(lo / step - 1e-9) * step;
    return step;
}

/* The engine-time window [lo, hi) of a run and its axis origin. */
static void
run_window(const TpsRun *rec, const TpsTimelineOptions *opt, TpsTime *origin, TpsTime *lo,
           TpsTime *hi)
{
    TpsTime a = rec->fwd_start, b = rec->fwd_end;
    if (!rec->is_op) {
        if (opt->pass == TPS_PASS_BACKWARD)
            a = rec->bwd_start, b = rec->bwd_end;
        else if (opt->pass == TPS_PASS_BOTH)
            /* Layer l1's forward runs straight into its own backward, which
             * ends where l0's (the measured one) starts: one layer, forward
             * then backward, without a gap. */
            b = MAX(rec->bwd_start, rec->fwd_end);
    }
    *origin = a;
    if (opt->window_end_us > opt->window_start_us) {
        double ws = MAX(opt->window_start_us, 0.0), we = opt->window_end_us;
        *lo = a + (TpsTime)llround(ws * 1000.0);
        *hi = MIN(b, a + (TpsTime)llround(we * 1000.0));
        if (*lo > *hi)
            *lo = *hi;
    } else {
        *lo = a;
        *hi = b;
    }
}

/* One lane while it is being filled. */
typedef struct {
    guint key_rank;
    guint key; /* stream id, or ranks + dst for a link lane */
    gboolean link;
    guint dst;
    GArray *tasks; /* TpsTaskId */
} LaneBuild;

static gint
lane_build_cmp(gconstpointer pa, gconstpointer pb)
{
    const LaneBuild *a = pa, *b = pb;
    if (a->key_rank != b->key_rank)
        return a->key_rank < b->key_rank ? -1 : 1;
    if (a->link != b->link)
        return a->link ? 1 : -1;
    return a->key < b->key ? -1 : a->key > b->key ? 1 : 0;
}

static gboolean
rank_shown(const TpsTimelineOptions *opt, const guint *rep, guint rank)
{
    if (opt->rank == TPS_RANK_ALL)
        return rep == NULL || rep[rank] == rank;
    return (guint)opt->rank == rank;
}

static gboolean
stream_shown(const TpsTimelineOptions *opt, const char *name)
{
    if (opt->streams == NULL)
        return TRUE;
    for (guint i = 0; opt->streams[i]; i++)
        if (g_strcmp0(opt->streams[i], name) == 0)
            return TRUE;
    return FALSE;
}

/* Fit or leave out: a box is labelled with the task's short name, always
 * the same name for the same task (`fc2_fprop[0]`, never a shortened
 * `fc2[0]` beside a full `fc2_fprop[1]`), when it is wide enough for the
 * name or for most of it (LABEL_MIN_CHARS, and the drawing cuts the rest
 * with "…"); a box that would show two letters and an ellipsis ("ge…")
 * is left unlabelled, as the legend and its neighbours name it. */
#define LABEL_MIN_CHARS 6
static char *
fit_label(const char *name, double width, double height)
{
    if (height < 12.0 || name == NULL)
        return NULL;
    const char *shown = tps_timeline_short_name(name);
    const double chars = MIN((double)strlen(shown), (double)LABEL_MIN_CHARS);
    if (width < chars * CHAR_W + LABEL_PAD)
        return NULL;
    return g_strdup(shown);
}

/* The shard label of a ring-exchange all-gather step (options->ring_shards),
 * or NULL when the span is not one or the label does not fit. */
static char *
ring_shard_label(const TpsSpan *sp, guint ranks, guint *copies, double width, double height)
{
    int step = -1;
    gboolean copy = sp->kind == TPS_KIND_COPY;
    if (copy) {
        step = (int)(*copies)++;
    } else if (sp->kind == TPS_KIND_GEMM && sp->name) {
        const char *open = strrchr(sp->name, '[');
        if (open)
            step = atoi(open + 1);
    }
    if (step < 0 || height < 12.0)
        return NULL;
    guint shard = (sp->rank + ranks - (guint)step % ranks) % ranks;
    char *label = copy ? g_strdup_printf("shard %u → GPU%u", shard, (sp->rank + 1) % ranks)
                       : g_strdup_printf("GEMM on shard %u%s", shard, step == 0 ? " (own)" : "");
    if (g_utf8_strlen(label, -1) * CHAR_W + LABEL_PAD > width) {
        g_free(label);
        label = g_strdup_printf("%u", shard);
        if (CHAR_W + LABEL_PAD > width) {
            g_free(label);
            return NULL;
        }
    }
    return label;
}

static void
free_lane_build(gpointer p)
{
    LaneBuild *lb = p;
    g_array_unref(lb->tasks);
}

/* The host lane of `rank` at `*y` (nothing when its thread did nothing in
 * [lo, hi)): one row, its spans never overlap. Issues are labelled with
 * the task they issue; a sync's wait is drawn as waiting. Returns whether
 * a lane was added. */
static gboolean
add_host_lane(TpsTimeline *tl, const TpsRun *rec, guint rank, const char *who, guint panel,
              TpsTime origin, TpsTime lo, TpsTime hi, double t0, double xscale, double *y,
              gboolean *used)
{
    const guint lane_index = tl->lanes->len;
    gboolean any = FALSE;
    for (guint i = 0; i < rec->host->len; i++) {
        const TpsHostSpan *h = &g_array_index(rec->host, TpsHostSpan, i);
        if (h->rank != rank || h->end <= lo || h->start >= hi || h->end <= h->start)
            continue;
        TpsTime s = MAX(h->start, lo), e = MIN(h->end, hi);
        TpsBox box = {0};
        box.style = h->kind == TPS_HOST_SYNC ? TPS_STYLE_WAIT : TPS_STYLE_HOST;
        box.lane = lane_index;
        box.task = TPS_TASK_NONE;
        box.clipped = h->start < lo || h->end > hi;
        box.x = tl->plot_x0 + ((double)(s - origin) / 1000.0 - t0) * xscale;
        box.width = (double)(e - s) / 1000.0 * xscale;
        box.y = *y + 1.5;
        box.height = ROW_H - 3.0;
        if (h->kind == TPS_HOST_ISSUE && h->task < tps_run_n_spans(rec))
            box.label = fit_label(tps_run_span(rec, h->task)->name, box.width, box.height);
        else if (h->kind == TPS_HOST_SYNC)
            box.label = fit_label("sync", box.width, box.height);
        used[box.style] = TRUE;
        g_array_append_val(tl->boxes, box);
        any = TRUE;
    }
    if (!any)
        return FALSE;
    TpsLane lane = {0};
    lane.label = g_strdup_printf("%s host", who);
    lane.rank = rank;
    lane.host = TRUE;
    lane.panel = panel;
    lane.rows = 1;
    lane.y = *y;
    lane.height = ROW_H;
    g_array_append_val(tl->lanes, lane);
    *y += ROW_H + LANE_GAP;
    return TRUE;
}

/* A span of a rank for the comparison of ranks: by start, then by the
 * offset of its receiver (flows to every peer start together, created in
 * peer order, which is another order of offsets on every rank). */
typedef struct {
    TpsTime start;
    guint offset;
    TpsTaskId id;
} RankSpan;

static gint
rank_span_cmp(gconstpointer pa, gconstpointer pb)
{
    const RankSpan *a = pa, *b = pb;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    if (a->offset != b->offset)
        return a->offset < b->offset ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* The spans of each rank in that order (RankSpan arrays). */
static GPtrArray *
spans_by_rank(const TpsRun *rec)
{
    GPtrArray *by = g_ptr_array_new_with_free_func((GDestroyNotify)g_array_unref);
    for (guint r = 0; r < rec->ranks; r++)
        g_ptr_array_add(by, g_array_new(FALSE, FALSE, sizeof(RankSpan)));
    for (TpsTaskId id = 0; id < tps_run_n_spans(rec); id++) {
        const TpsSpan *sp = tps_run_span(rec, id);
        if (sp->rank < rec->ranks && sp->end > sp->start) {
            RankSpan rs = {sp->start, (tps_run_dst_rank(rec, id) + rec->ranks - sp->rank) %
                                          rec->ranks,
                           id};
            g_array_append_val(g_ptr_array_index(by, sp->rank), rs);
        }
    }
    for (guint r = 0; r < rec->ranks; r++)
        g_array_sort(g_ptr_array_index(by, r), rank_span_cmp);
    return by;
}

/* Whether rank b did what rank a did, up to a shift in time: the same
 * tasks (kind, stream name, name, link to the same neighbour offset) with
 * the same start offsets and lengths, within 0.1% or 20 ns (the fluid
 * solver's rounding). */
static gboolean
same_schedule(const TpsRun *rec, const GArray *a, const GArray *b)
{
    if (a->len != b->len)
        return FALSE;
    if (a->len == 0)
        return TRUE;
    const TpsTime a0 = g_array_index(a, RankSpan, 0).start;
    const TpsTime b0 = g_array_index(b, RankSpan, 0).start;
    for (guint i = 0; i < a->len; i++) {
        const RankSpan *ra = &g_array_index(a, RankSpan, i), *rb = &g_array_index(b, RankSpan, i);
        const TpsSpan *x = tps_run_span(rec, ra->id), *y = tps_run_span(rec, rb->id);
        if (x->kind != y->kind || ra->offset != rb->offset || g_strcmp0(x->name, y->name) != 0 ||
            g_strcmp0(tps_run_stream_name(rec, x->stream), tps_run_stream_name(rec, y->stream)) !=
                0)
            return FALSE;
        double tol = MAX(20.0, 0.001 * (double)(x->end - x->start));
        if (fabs((double)((x->start - a0) - (y->start - b0))) > tol ||
            fabs((double)((x->end - x->start) - (y->end - y->start))) > tol)
            return FALSE;
    }
    return TRUE;
}

/* --timeline-rank all: rep[r] is the first rank whose schedule rank r
 * repeats (itself when none); only representatives are drawn. */
static void
fold_ranks(const TpsRun *rec, guint *rep)
{
    g_autoptr(GPtrArray) by = spans_by_rank(rec);
    for (guint r = 0; r < rec->ranks; r++) {
        rep[r] = r;
        for (guint q = 0; q < r; q++) {
            if (rep[q] == q &&
                same_schedule(rec, g_ptr_array_index(by, q), g_ptr_array_index(by, r))) {
                rep[r] = q;
                break;
            }
        }
    }
}

/* "GPU3", or "GPUs 0-7" / "GPUs 0,2,4" for the ranks folded into `rank`. */
static char *
rank_name(const guint *rep, guint ranks, guint rank)
{
    g_autoptr(GArray) members = g_array_new(FALSE, FALSE, sizeof(guint));
    for (guint r = 0; rep && r < ranks; r++)
        if (rep[r] == rank)
            g_array_append_val(members, r);
    if (members->len <= 1)
        return g_strdup_printf("GPU%u", rank);
    guint first = g_array_index(members, guint, 0);
    guint last = g_array_index(members, guint, members->len - 1);
    if (last - first + 1 == members->len)
        return g_strdup_printf("GPUs %u-%u", first, last);
    GString *s = g_string_new("GPUs ");
    for (guint i = 0; i < members->len; i++)
        g_string_append_printf(s, "%s%u", i ? "," : "", g_array_index(members, guint, i));
    return g_string_free(s, FALSE);
}

TpsTimeline *
tps_timeline_alloc(const char *title, const char *subtitle, double width)
{
    TpsTimeline *tl = g_new0(TpsTimeline, 1);
    tl->title = g_strdup(title);
    tl->subtitle = g_strdup(subtitle);
    tl->panels = g_array_new(FALSE, TRUE, sizeof(TpsPanel));
    tl->lanes = g_array_new(FALSE, TRUE, sizeof(TpsLane));
    tl->boxes = g_array_new(FALSE, TRUE, sizeof(TpsBox));
    tl->ticks = g_array_new(FALSE, TRUE, sizeof(TpsTick));
    tl->legend = g_array_new(FALSE, TRUE, sizeof(guint));
    tl->marks = g_array_new(FALSE, TRUE, sizeof(TpsMark));
    tl->width = MAX(width, 400.0);
    tl->plot_x0 = MARGIN + LABEL_COL;
    tl->plot_x1 = tl->width - MARGIN - 8.0;
    return tl;
}

/* Whether the options' rank is one of the TP group's. */
static gboolean
check_rank(const TpsTimelineOptions *options, const TpsRun *rec, GError **error)
{
    if (options->rank != TPS_RANK_ALL &&
        (options->rank < 0 || (guint)options->rank >= rec->ranks)) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "timeline: rank %d does not exist (the TP group has ranks 0 to %u)",
                    options->rank, rec->ranks - 1);
        return FALSE;
    }
    return TRUE;
}

/* The shared axis into tl->t0_us and tl->t1_us: from the window start to
 * the longest shown pass. FALSE when that leaves nothing to show. */
static gboolean
shared_axis(TpsTimeline *tl, const TpsTimelineRun *runs, guint n, const TpsTimelineOptions *options,
            GError **error)
{
    double t0 = options->window_end_us > options->window_start_us
                    ? MAX(options->window_start_us, 0.0)
                    : 0.0;
    double t1 = t0;
    for (guint p = 0; p < n; p++) {
        TpsTime origin, lo, hi;
        run_window(runs[p].record, options, &origin, &lo, &hi);
        t1 = MAX(t1, (double)(hi - origin) / 1000.0);
    }
    if (t1 <= t0) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "timeline: nothing to show in the window %.3f:%.3f µs", t0,
                    options->window_end_us);
        return FALSE;
    }
    tl->t0_us = t0;
    tl->t1_us = t1;
    return TRUE;
}

/* One panel in the making: its run, its window and the figure it adds to. */
typedef struct {
    TpsTimeline *tl;
    const TpsRun *rec;
    const TpsTimelineOptions *options;
    guint panel;
    const guint *rep; /* each rank's representative (fold_ranks), or NULL */
    TpsTime origin, lo, hi;
    double t0, xscale; /* the axis start (us) and points per us */
    guint crit_rank;
    GArray *exposed; /* the critical rank's exposed intervals in the window */
    gboolean *used;  /* the styles drawn, for the legend */
} PanelBuild;

/* Adds task `id` to the lane of `key`, made when it is the first. */
static void
lane_add_task(GArray *builds, GHashTable *by_key, const TpsSpan *sp, TpsTaskId id, guint key,
              gboolean link, guint dst)
{
    gpointer slot;
    guint index;
    if (g_hash_table_lookup_extended(by_key, GUINT_TO_POINTER(key + 1), NULL, &slot)) {
        index = GPOINTER_TO_UINT(slot);
    } else {
        LaneBuild lb = {.key_rank = sp->rank,
                        .key = key,
                        .link = link,
                        .dst = dst,
                        .tasks = g_array_new(FALSE, FALSE, sizeof(TpsTaskId))};
        index = builds->len;
        g_array_append_val(builds, lb);
        g_hash_table_insert(by_key, GUINT_TO_POINTER(key + 1), GUINT_TO_POINTER(index));
    }
    g_array_append_val(g_array_index(builds, LaneBuild, index).tasks, id);
}

/* The spans in the panel's window grouped into lanes, in lane order. */
static GArray *
group_lanes(const PanelBuild *pb)
{
    const TpsRun *rec = pb->rec;
    const TpsTimelineOptions *options = pb->options;
    g_autoptr(GHashTable) by_key = g_hash_table_new(g_direct_hash, g_direct_equal);
    GArray *builds = g_array_new(FALSE, TRUE, sizeof(LaneBuild));
    g_array_set_clear_func(builds, free_lane_build);
    guint ntasks = tps_run_n_spans(rec);
    for (TpsTaskId id = 0; id < ntasks; id++) {
        const TpsSpan *sp = tps_run_span(rec, id);
        if (sp->end <= sp->start || sp->end <= pb->lo || sp->start >= pb->hi)
            continue;
        if (!rank_shown(options, pb->rep, sp->rank))
            continue;
        /* A copy shows on its stream and on its link; a flow only on its link. */
        if (sp->stream != TPS_STREAM_NONE &&
            stream_shown(options, tps_run_stream_name(rec, sp->stream)))
            lane_add_task(builds, by_key, sp, id, sp->stream, FALSE, sp->rank);
        /* A link lane shows traffic: flows and copies that carry bytes (no
         * lane for a link nothing crossed). */
        if (!options->links || (sp->kind != TPS_KIND_FLOW && sp->kind != TPS_KIND_COPY) ||
            !(sp->bytes > 0.0))
            continue;
        guint dst = tps_run_dst_rank(rec, id);
        if (dst == sp->rank)
            continue;
        lane_add_task(builds, by_key, sp, id, rec->streams->len + sp->rank * rec->ranks + dst, TRUE,
                      dst);
    }

    /* The critical lane: the first shown rank's main stream. It carries
     * the exposed band even when no kernel of the window runs on it
     * (an op whose GEMM chunks all run on GEMM streams). */
    if (pb->exposed->len > 0 && stream_shown(options, "main")) {
        for (guint st = 0; st < rec->streams->len; st++) {
            const TpsRunStream *rs = tps_run_stream(rec, st);
            if (rs->rank != pb->crit_rank || g_strcmp0(rs->name, "main") != 0 ||
                g_hash_table_contains(by_key, GUINT_TO_POINTER(st + 1)))
                continue;
            LaneBuild lb = {.key_rank = pb->crit_rank,
                            .key = st,
                            .dst = pb->crit_rank,
                            .tasks = g_array_new(FALSE, FALSE, sizeof(TpsTaskId))};
            g_array_append_val(builds, lb);
            break;
        }
    }
    g_array_sort(builds, lane_build_cmp);
    return builds;
}

/* The lane's spans by start (`*starts`), packed into rows: each into the
 * first row free at its start (`*row_of`). Returns the number of rows. */
static guint
pack_rows(const PanelBuild *pb, const LaneBuild *lb, GArray **starts_out, guint **row_of_out)
{
    GArray *starts = g_array_sized_new(FALSE, FALSE, sizeof(TpsSpanStart), lb->tasks->len);
    for (guint i = 0; i < lb->tasks->len; i++) {
        TpsTaskId id = g_array_index(lb->tasks, TpsTaskId, i);
        TpsSpanStart s = {MAX(tps_run_span(pb->rec, id)->start, pb->lo), id};
        g_array_append_val(starts, s);
    }
    g_array_sort(starts, tps_span_start_cmp);
    g_autoptr(GArray) row_end = g_array_new(FALSE, FALSE, sizeof(TpsTime));
    guint *row_of = g_new0(guint, starts->len);
    for (guint i = 0; i < starts->len; i++) {
        const TpsSpanStart *s = &g_array_index(starts, TpsSpanStart, i);
        TpsTime e = MIN(tps_run_span(pb->rec, s->id)->end, pb->hi);
        guint r;
        for (r = 0; r < row_end->len; r++)
            if (g_array_index(row_end, TpsTime, r) <= s->start)
                break;
        if (r == row_end->len)
            g_array_append_val(row_end, e);
        else
            g_array_index(row_end, TpsTime, r) = e;
        row_of[i] = r;
    }
    *starts_out = starts;
    *row_of_out = row_of;
    return row_end->len;
}

/* The lane's label; marks it critical when it is the first main stream of
 * the critical rank (`*crit_done` then set). */
static void
label_lane(const PanelBuild *pb, const LaneBuild *lb, TpsLane *lane, gboolean *crit_done)
{
    const TpsRun *rec = pb->rec;
    g_autofree char *who = rank_name(pb->rep, rec->ranks, lb->key_rank);
    const gboolean folded = !g_str_has_prefix(who, "GPU") || who[3] == 's';
    if (lb->link && folded) {
        /* Each folded rank sends to its own neighbour at this offset. */
        lane->label = g_strdup_printf("%s: r→r+%u link", who,
                                      (lb->dst + rec->ranks - lb->key_rank) % rec->ranks);
    } else if (lb->link) {
        lane->label = g_strdup_printf("GPU%u→GPU%u link", lb->key_rank, lb->dst);
    } else {
        const char *sname = tps_run_stream_name(rec, lb->key);
        lane->label = g_strdup_printf("%s %s", who, sname ? sname : "?");
        if (!*crit_done && lb->key_rank == pb->crit_rank && sname && strcmp(sname, "main") == 0)
            lane->critical = *crit_done = TRUE;
    }
}

/* The boxes of the lane's spans, each in its row. */
static void
add_span_boxes(const PanelBuild *pb, const LaneBuild *lb, const TpsLane *lane, guint lane_index,
               double row_h, const GArray *starts, const guint *row_of)
{
    TpsTimeline *tl = pb->tl;
    guint copies = 0;
    for (guint i = 0; i < starts->len; i++) {
        const TpsSpan *sp = tps_run_span(pb->rec, g_array_index(starts, TpsSpanStart, i).id);
        /* From when it ran: a kernel that started while every SM
         * was taken is drawn from its first SM, so equal chunks
         * look equal (a box from its start would add its wait). */
        TpsTime s = MAX(tps_span_run_start(sp), pb->lo), e = MIN(sp->end, pb->hi);
        if (e <= s)
            continue;
        TpsBox box = {0};
        box.style = kind_style(sp->kind);
        box.lane = lane_index;
        box.task = sp->id;
        box.clipped = sp->start < pb->lo || sp->end > pb->hi;
        box.x = tl->plot_x0 + ((double)(s - pb->origin) / 1000.0 - pb->t0) * pb->xscale;
        box.width = (double)(e - s) / 1000.0 * pb->xscale;
        box.y = lane->y + row_of[i] * row_h + 1.5;
        box.height = row_h - 3.0;
        box.label = pb->options->ring_shards && !lb->link
                        ? ring_shard_label(sp, pb->rec->ranks, &copies, box.width, box.height)
                        : NULL;
        if (box.label == NULL)
            box.label = fit_label(sp->name, box.width, box.height);
        pb->used[box.style] = TRUE;
        g_array_append_val(tl->boxes, box);
    }
}

/* The exposed band at `y`, under the critical lane, inside its height. */
static void
add_exposed_band(const PanelBuild *pb, guint lane_index, double y)
{
    TpsTimeline *tl = pb->tl;
    for (guint i = 0; i < pb->exposed->len; i++) {
        const TpsInterval *iv = &g_array_index(pb->exposed, TpsInterval, i);
        TpsBox band = {0};
        band.style = TPS_STYLE_EXPOSED;
        band.lane = lane_index;
        band.task = TPS_TASK_NONE;
        band.x = tl->plot_x0 + ((double)(iv->start - pb->origin) / 1000.0 - pb->t0) * pb->xscale;
        band.width = (double)(iv->end - iv->start) / 1000.0 * pb->xscale;
        band.y = y + 1.0;
        band.height = BAND_H - 2.0;
        pb->used[TPS_STYLE_EXPOSED] = TRUE;
        g_array_append_val(tl->boxes, band);
    }
}

/* The lane of `lb` at `*y`, its boxes, and the exposed band under it when
 * it is the critical lane; `*y` moves below it. */
static void
add_lane(const PanelBuild *pb, const LaneBuild *lb, double *y, gboolean *crit_done)
{
    TpsTimeline *tl = pb->tl;
    g_autoptr(GArray) starts = NULL;
    g_autofree guint *row_of = NULL;
    const guint rows = pack_rows(pb, lb, &starts, &row_of);

    TpsLane lane = {0};
    lane.rank = lb->key_rank;
    lane.link = lb->link;
    lane.panel = pb->panel;
    lane.rows = MAX(rows, 1u);
    label_lane(pb, lb, &lane, crit_done);
    const double row_h = lb->link ? LINK_ROW_H : ROW_H;
    lane.y = *y;
    lane.height = row_h * lane.rows;
    guint lane_index = tl->lanes->len;
    add_span_boxes(pb, lb, &lane, lane_index, row_h, starts, row_of);
    *y += lane.height;
    if (lane.critical) {
        add_exposed_band(pb, lane_index, *y);
        lane.height += BAND_H;
        *y += BAND_H;
    }
    g_array_append_val(tl->lanes, lane);
    *y += LANE_GAP;
}

/* The panel of run `p` at `*y`: its heading, its ranks' lanes (each rank's
 * host lane above its streams) and the forward/backward mark; `*y` moves
 * below it. */
static void
add_panel(TpsTimeline *tl, const TpsTimelineRun *run, guint p, const TpsTimelineOptions *options,
          double xscale, double *y, gboolean *used)
{
    const TpsRun *rec = run->record;
    PanelBuild pb = {.tl = tl,
                     .rec = rec,
                     .options = options,
                     .panel = p,
                     .t0 = tl->t0_us,
                     .xscale = xscale,
                     .used = used};
    run_window(rec, options, &pb.origin, &pb.lo, &pb.hi);

    /* Every rank: draw each distinct schedule once (not with shard
     * labels, which differ from rank to rank: that figure is the ring). */
    g_autofree guint *rep = NULL;
    if (options->rank == TPS_RANK_ALL && !options->ring_shards) {
        rep = g_new(guint, rec->ranks);
        fold_ranks(rec, rep);
    }
    pb.rep = rep;
    pb.crit_rank = options->rank == TPS_RANK_ALL ? 0 : (guint)options->rank;
    g_autoptr(GArray) exposed = tps_run_exposed_intervals(rec, pb.crit_rank, pb.lo, pb.hi);
    pb.exposed = exposed;
    g_autoptr(GArray) builds = group_lanes(&pb);

    TpsPanel panel = {0};
    panel.heading = g_strdup(run->heading ? run->heading : rec->label);
    panel.y = *y;
    panel.span_us = (double)(pb.hi - pb.lo) / 1000.0;
    *y += HEADING_H;
    /* A row for the label of the forward/backward mark. */
    const gboolean marked = !rec->is_op && options->pass == TPS_PASS_BOTH && rec->fwd_end > pb.lo &&
                            rec->fwd_end < pb.hi;
    const double mark_label_y = *y - 4.0;
    if (marked)
        *y += 12.0;

    TpsTime exposed_ns = 0;
    for (guint i = 0; i < exposed->len; i++)
        exposed_ns += g_array_index(exposed, TpsInterval, i).end -
                      g_array_index(exposed, TpsInterval, i).start;
    panel.exposed_us = (double)exposed_ns / 1000.0;
    gboolean crit_done = FALSE;

    guint prev_rank = G_MAXUINT;
    const gboolean host_shown = stream_shown(options, "host");
    for (guint l = 0; l < builds->len; l++) {
        const LaneBuild *lb = &g_array_index(builds, LaneBuild, l);
        if (prev_rank != G_MAXUINT && lb->key_rank != prev_rank)
            *y += RANK_GAP;
        /* The rank's issuing thread above its streams. */
        if (lb->key_rank != prev_rank && host_shown) {
            g_autofree char *host_who = rank_name(rep, rec->ranks, lb->key_rank);
            add_host_lane(tl, rec, lb->key_rank, host_who, p, pb.origin, pb.lo, pb.hi, pb.t0,
                          xscale, y, used);
        }
        prev_rank = lb->key_rank;
        add_lane(&pb, lb, y, &crit_done);
    }
    panel.height = *y - panel.y;
    if (marked) {
        TpsMark mark = {0};
        mark.x = tl->plot_x0 + ((double)(rec->fwd_end - pb.origin) / 1000.0 - pb.t0) * xscale;
        mark.y0 = mark_label_y;
        mark.y1 = *y;
        mark.label = g_strdup("backward →");
        mark.left_label = g_strdup("← forward");
        g_array_append_val(tl->marks, mark);
    }
    g_array_append_val(tl->panels, panel);
    *y += 8.0;
}

/* The time axis at `y`: ticks in us below 2 ms of span, else ms, and its
 * label; the figure's height ends below it. */
static void
add_axis(TpsTimeline *tl, double y, double xscale, const TpsTimelineRun *runs,
         const TpsTimelineOptions *options)
{
    const double t0 = tl->t0_us, t1 = tl->t1_us;
    tl->axis_y = y;
    const gboolean ms = t1 - t0 >= 2000.0;
    tl->unit = ms ? "ms" : "µs";
    tl->unit_scale = ms ? 1000.0 : 1.0;
    const double u0 = t0 / tl->unit_scale, u1 = t1 / tl->unit_scale;
    const guint target = (guint)CLAMP((tl->plot_x1 - tl->plot_x0) / 90.0, 3.0, 12.0);
    double first;
    const double step = tps_nice_step(u0, u1, target, &first);
    for (double v = first; v <= u1 + step * 1e-6; v += step) {
        TpsTick tick = {0};
        double vv = fabs(v) < step * 1e-6 ? 0.0 : v;
        tick.value = vv;
        tick.x = tl->plot_x0 + (vv - u0) * tl->unit_scale * xscale;
        /* Enough decimals for the step, no more. */
        int dec = step >= 1.0 ? 0 : (int)ceil(-log10(step) - 1e-9);
        tick.label = g_strdup_printf("%.*f", dec, vv);
        g_array_append_val(tl->ticks, tick);
    }
    tl->height = y + AXIS_H + MARGIN;
    const char *from = runs[0].record->is_op                ? "the op starts"
                       : options->pass == TPS_PASS_BACKWARD ? "the layer's backward starts"
                                                            : "the layer's forward starts";
    tl->axis_label = g_strdup_printf("time since %s (%s)", from, tl->unit);
}

TpsTimeline *
tps_timeline_new(const TpsTimelineRun *runs, guint n, const char *title, const char *subtitle,
                 const TpsTimelineOptions *options, GError **error)
{
    g_return_val_if_fail(runs != NULL && n > 0 && title != NULL, NULL);
    TpsTimelineOptions defaults;
    if (options == NULL) {
        tps_timeline_options_init(&defaults);
        options = &defaults;
    }
    if (!check_rank(options, runs[0].record, error))
        return NULL;

    g_autoptr(TpsTimeline) tl = tps_timeline_alloc(title, subtitle, options->width);
    if (!shared_axis(tl, runs, n, options, error))
        return NULL;
    const double xscale = (tl->plot_x1 - tl->plot_x0) / (tl->t1_us - tl->t0_us); /* points per us */

    double y = MARGIN;
    y += TITLE_H;
    if (subtitle)
        y += SUBTITLE_H;
    tl->legend_y = y;
    y += LEGEND_H + 4.0;

    gboolean used[TPS_STYLE_COUNT] = {FALSE};
    for (guint p = 0; p < n; p++)
        add_panel(tl, &runs[p], p, options, xscale, &y, used);
    add_axis(tl, y, xscale, runs, options);

    for (guint s = 0; s < TPS_STYLE_COUNT; s++)
        if (used[s])
            g_array_append_val(tl->legend, s);
    return g_steal_pointer(&tl);
}

void
tps_timeline_free(TpsTimeline *tl)
{
    if (tl == NULL)
        return;
    g_free(tl->title);
    g_free(tl->subtitle);
    g_free(tl->axis_label);
    if (tl->panels) {
        for (guint i = 0; i < tl->panels->len; i++)
            g_free(g_array_index(tl->panels, TpsPanel, i).heading);
        g_array_unref(tl->panels);
    }
    if (tl->lanes) {
        for (guint i = 0; i < tl->lanes->len; i++)
            g_free(g_array_index(tl->lanes, TpsLane, i).label);
        g_array_unref(tl->lanes);
    }
    if (tl->boxes) {
        for (guint i = 0; i < tl->boxes->len; i++)
            g_free(g_array_index(tl->boxes, TpsBox, i).label);
        g_array_unref(tl->boxes);
    }
    if (tl->ticks) {
        for (guint i = 0; i < tl->ticks->len; i++)
            g_free(g_array_index(tl->ticks, TpsTick, i).label);
        g_array_unref(tl->ticks);
    }
    if (tl->legend)
        g_array_unref(tl->legend);
    if (tl->marks) {
        for (guint i = 0; i < tl->marks->len; i++)
            g_free(g_array_index(tl->marks, TpsMark, i).label);
        for (guint i = 0; i < tl->marks->len; i++)
            g_free(g_array_index(tl->marks, TpsMark, i).left_label);
        g_array_unref(tl->marks);
    }
    g_free(tl);
}
