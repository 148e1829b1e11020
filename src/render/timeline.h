/* Timeline layout: the recorded spans of one or more runs turned into a
 * figure described as plain data (lanes, boxes, ticks, legend, title), in
 * points, before anything is drawn. Drawing (render/draw.h) only paints
 * this data, so tests check the layout as numbers rather than pixels.
 *
 * A figure has one panel per run (one strategy; several stacked panels make
 * a comparison figure on a shared time axis). A panel has, per rank, a
 * host lane (what its issuing thread did, from the run's host spans: the
 * issue of each task, host-only work, and the waits of blocking syncs)
 * and one lane per stream that has work in the time window, then one lane per
 * NVLink direction (sender -> receiver) that carries flows or copy-engine
 * transfers of the shown ranks. A lane whose spans overlap in time (flows
 * sharing a link) is split into rows so that the boxes of a lane never
 * overlap. Time runs left to right from the start of the shown pass (0 on
 * the axis); every box is clipped to the window.
 *
 * Exposed communication, as tps_simulate() counts it (communication
 * kernels and copies of a rank while none of its compute kernels runs), is
 * marked as a band under the critical lane: the main stream of the first
 * shown rank.
 *
 * Ownership: a TpsTimeline owns every string and array in it; it keeps no
 * pointer into the records it was made from.
 */
#pragma once

#include <glib.h>

#include "sched/simulate.h"

/* Colour classes of boxes and legend entries (Okabe-Ito palette). */
typedef enum {
    TPS_STYLE_GEMM,
    TPS_STYLE_ATTENTION,
    TPS_STYLE_MEMORY,
    TPS_STYLE_COMM,     /* communication kernel (NCCL, userbuffers) */
    TPS_STYLE_TRANSFER, /* bytes over a link: flow or copy-engine transfer */
    TPS_STYLE_WAIT,     /* waiting / marker (receive spin, barrier) */
    TPS_STYLE_EXPOSED,  /* exposed communication band */
    TPS_STYLE_HOST,     /* the host thread busy: issuing a task, host-only work */
    /* The step figure (render/step-figure.h): */
    TPS_STYLE_FORWARD,    /* a pipeline forward chunk of one micro-batch */
    TPS_STYLE_BACKWARD,   /* a pipeline backward chunk */
    TPS_STYLE_P2P,        /* activations or gradients between stages */
    TPS_STYLE_DP,         /* DP gradient reduction under the stage's compute */
    TPS_STYLE_DP_EXPOSED, /* DP gradient reduction after the stage's last chunk */
    TPS_STYLE_OPTIMIZER,  /* the optimizer step */
    TPS_STYLE_IDLE,       /* a stage with nothing to run: the pipeline bubble */
    TPS_STYLE_COUNT
} TpsStyle;

/* 0xRRGGBB of a style, the colour its label is written in, and its legend name. */
guint32 tps_style_rgb(TpsStyle style);
guint32 tps_style_text_rgb(TpsStyle style);
const char *tps_style_name(TpsStyle style);

typedef enum {
    TPS_PASS_FORWARD,
    TPS_PASS_BACKWARD,
    TPS_PASS_BOTH,
} TpsPass;

/* "forward", "backward", "both"; NULL-terminated. */
extern const char *const tps_pass_names[];

#define TPS_RANK_ALL (-1)

typedef struct {
    int rank;                   /* a rank, or TPS_RANK_ALL */
    TpsPass pass;               /* model scenarios: FORWARD is layer l1's forward, BACKWARD layer
                                   l0's backward (the measured ones), BOTH layer l1's forward then
                                   its backward; op scenarios always show the whole op */
    double window_start_us;     /* window relative to the pass start; */
    double window_end_us;       /* end <= start: the whole pass */
    gboolean links;             /* add the NVLink sender -> receiver lanes (default TRUE) */
    double width;               /* figure width in points (default 1200) */
    const char *const *streams; /* NULL-terminated stream names to show (NULL: all; "host"
                                   names the host lanes) */
    gboolean ring_shards;       /* label ring-exchange all-gather chunks with the shard they
                                   carry: step i of rank r works on shard (r - i) mod ranks
                                   (docs/overlap-methods.md), GEMM chunks "name[i]" and the
                                   i-th copy of a stream lane */
} TpsTimelineOptions;

void tps_timeline_options_init(TpsTimelineOptions *options);

/* What a panel shows: one run and the words for its heading. */
typedef struct {
    const TpsRun *record;
    const char *heading; /* e.g. "ring-ag: 5.19 ms, exposed comm 0.12 ms" */
} TpsTimelineRun;

typedef struct {
    char *label; /* "GPU0 host", "GPU0 main", "GPU0→GPU1 NVLink" */
    guint rank;
    gboolean link;     /* an NVLink lane */
    gboolean host;     /* the rank's host (issuing thread) lane */
    gboolean critical; /* the lane exposed communication is marked on */
    guint panel;
    guint rows;       /* rows after packing overlapping spans */
    double y, height; /* the lane's band; boxes lie inside it */
} TpsLane;

typedef struct {
    double x, y, width, height;
    TpsStyle style;
    guint lane;       /* index in lanes; exposed bands: the critical lane */
    TpsTaskId task;   /* TPS_TASK_NONE for exposed bands and host boxes */
    char *label;      /* drawn inside when it fits, else NULL */
    gboolean clipped; /* cut by the window on either side */
} TpsBox;

typedef struct {
    double x;
    double value; /* in the axis unit */
    char *label;
} TpsTick;

/* A vertical mark across a panel's lanes (the start of the backward
 * pass), its label right of its top end, in a row of its own. */
typedef struct {
    double x, y0, y1;
    char *label;      /* right of the line */
    char *left_label; /* left of it, or NULL */
} TpsMark;

typedef struct {
    char *heading;
    double y, height;  /* the heading line and all its lanes */
    double exposed_us; /* exposed communication within the window */
    double span_us;    /* length of the shown pass (the window, clipped) */
} TpsPanel;

typedef struct {
    char *title;
    char *subtitle; /* may be NULL */
    double width, height;
    double legend_y;         /* baseline row of the legend, under the title */
    double plot_x0, plot_x1; /* time axis extent in points */
    double axis_y;           /* where the axis line is drawn */
    double t0_us, t1_us;     /* time at plot_x0 and plot_x1 */
    const char *unit;        /* "µs" or "ms" */
    char *axis_label;        /* "time since the layer's forward starts (ms)" */
    double unit_scale;       /* microseconds per unit (1 or 1000) */
    GArray *panels;          /* TpsPanel */
    GArray *lanes;           /* TpsLane */
    GArray *boxes;           /* TpsBox, exposed bands included */
    GArray *ticks;           /* TpsTick */
    GArray *legend;          /* TpsStyle (guint), the styles present */
    GArray *marks;           /* TpsMark */
} TpsTimeline;

/* Lay out `n` runs (one panel each) under `title` (and `subtitle`, may be
 * NULL). The runs must be of one scenario kind. Returns a new timeline;
 * fails with TPS_ERROR_INPUT when the rank does not exist or nothing lies
 * in the window. */
TpsTimeline *tps_timeline_new(const TpsTimelineRun *runs, guint n, const char *title,
                              const char *subtitle, const TpsTimelineOptions *options,
                              GError **error);
void tps_timeline_free(TpsTimeline *timeline);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TpsTimeline, tps_timeline_free)

/* Nice axis ticks for [lo, hi]: about `target` steps of 1, 2 or 5 x 10^k.
 * Returns the step; `*first` receives the first multiple of it >= lo. */
double tps_nice_step(double lo, double hi, guint target, double *first);

/* The task name without its layer prefix ("l1.", "op."). */
const char *tps_timeline_short_name(const char *name);
