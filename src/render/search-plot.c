/* The figure of a layout search: see search-plot.h. */
#include "render/search-plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/draw.h"
#include "render/timeline.h"

typedef struct {
    double memory, step;
    guint tp;
} Point;

/* A point of the front, with its enumeration index for ties. */
typedef struct {
    Point pt;
    guint index;
} FrontPoint;

struct TpsSearchPlot {
    char *title, *subtitle, *best_label;
    char *name, *hardware;
    guint gpus;
    /* The dots: every simulated layout, in the order added, spilled to an
     * unnamed temporary file so that memory does not grow with the
     * layouts (issue 11); what the axes need is kept as it comes. */
    FILE *spill;
    guint n_points;
    double xmax, ymin, ymax;
    guint tp_seen; /* bit tp for tp < 32 */
    gboolean spill_failed;
    GArray *front; /* FrontPoint, by memory ascending, step descending */
    gboolean has_best;
    Point best;
    double memory_limit; /* the GPU's, GiB */
    double width, height;
};

/* Okabe-Ito, as the other charts; one colour per tp. */
static const guint32 tp_rgb[] = {0x0072B2, 0xD55E00, 0x009E73, 0xCC79A7,
                                 0xE69F00, 0x56B4E9, 0x000000, 0xF0E442};

static int
cmp_memory_then_step(const void *a, const void *b, gpointer rows_p)
{
    const TpsSearchRow *rows = rows_p;
    const TpsSearchRow *x = &rows[*(const guint *)a], *y = &rows[*(const guint *)b];
    if (x->memory_gib != y->memory_gib)
        return x->memory_gib < y->memory_gib ? -1 : 1;
    if (x->step_time_s != y->step_time_s)
        return x->step_time_s < y->step_time_s ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

GArray *
tps_search_pareto(const TpsSearchRow *rows, guint n)
{
    g_autoptr(GArray) order = g_array_new(FALSE, FALSE, sizeof(guint));
    for (guint i = 0; i < n; i++)
        if (rows[i].simulated)
            g_array_append_val(order, i);
    g_qsort_with_data(order->data, (gint)order->len, sizeof(guint), cmp_memory_then_step,
                      (gpointer)rows);
    /* By memory ascending, a row is on the front when it is faster than
     * every row before it (which are at most as large). */
    GArray *front = g_array_new(FALSE, FALSE, sizeof(guint));
    double fastest = INFINITY;
    for (guint k = 0; k < order->len; k++) {
        const guint i = g_array_index(order, guint, k);
        if (rows[i].step_time_s < fastest) {
            fastest = rows[i].step_time_s;
            g_array_append_val(front, i);
        }
    }
    return front;
}

/* (memory, step, index) of a before b. */
static gboolean
front_before(const FrontPoint *a, const FrontPoint *b)
{
    if (a->pt.memory != b->pt.memory)
        return a->pt.memory < b->pt.memory;
    if (a->pt.step != b->pt.step)
        return a->pt.step < b->pt.step;
    return a->index < b->index;
}

/* Keep the front as rows come, in any order, with tps_search_pareto()'s
 * rule: a row is off it when a row before it in (memory, step, index)
 * order is at most as slow. Along the front the steps fall, so only the
 * row just before the new one can exclude it, and the new one excludes
 * the rows right after it that are not faster. */
static void
front_add(GArray *front, const FrontPoint *f)
{
    guint lo = 0, hi = front->len;
    while (lo < hi) {
        const guint mid = lo + (hi - lo) / 2;
        if (front_before(&g_array_index(front, FrontPoint, mid), f))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0 && g_array_index(front, FrontPoint, lo - 1).pt.step <= f->pt.step)
        return;
    guint end = lo;
    while (end < front->len && f->pt.step <= g_array_index(front, FrontPoint, end).pt.step)
        end++;
    if (end > lo)
        g_array_remove_range(front, lo, end - lo);
    g_array_insert_val(front, lo, *f);
}

TpsSearchPlot *
tps_search_plot_begin(const TpsScenario *sc, guint gpus)
{
    TpsSearchPlot *p = g_new0(TpsSearchPlot, 1);
    p->width = 960;
    p->height = 600;
    p->front = g_array_new(FALSE, FALSE, sizeof(FrontPoint));
    p->memory_limit = sc->hardware.memory_gib;
    p->name = g_strdup(sc->name);
    p->hardware = g_strdup(sc->hardware.name);
    p->gpus = gpus;
    p->ymin = INFINITY;
    p->spill = tmpfile();
    p->spill_failed = p->spill == NULL;
    return p;
}

void
tps_search_plot_add(TpsSearchPlot *p, const TpsSearchRow *row)
{
    if (!row->simulated)
        return;
    /* Zeroed whole: the struct's padding goes to the file too. */
    Point pt;
    memset(&pt, 0, sizeof pt);
    pt.memory = row->memory_gib;
    pt.step = row->step_time_s;
    pt.tp = row->layout.tp;
    if (p->spill && fwrite(&pt, sizeof pt, 1, p->spill) != 1)
        p->spill_failed = TRUE;
    p->n_points++;
    p->xmax = MAX(p->xmax, pt.memory);
    p->ymin = MIN(p->ymin, pt.step);
    p->ymax = MAX(p->ymax, pt.step);
    if (pt.tp < 32)
        p->tp_seen |= 1u << pt.tp;
    const FrontPoint f = {pt, row->index};
    front_add(p->front, &f);
}

void
tps_search_plot_end(TpsSearchPlot *p, const TpsSearchRow *best)
{
    p->title = g_strdup_printf("%s on %u GPUs (%s): step time against memory per GPU", p->name,
                               p->gpus, p->hardware);
    p->subtitle = g_strdup_printf("%u layouts simulated (every tp, pp, vpp, micro-batch, "
                                  "recompute, optimizer and strategy that fits); the line is the "
                                  "Pareto front: no layout is both faster and smaller",
                                  p->n_points);
    if (best && best->simulated) {
        p->has_best = TRUE;
        p->best = (Point){best->memory_gib, best->step_time_s, best->layout.tp};
        g_autofree char *key = tps_layout_key(&best->layout);
        p->best_label = g_strdup_printf("best: %s, %.3g s, %.1f GiB", key, best->step_time_s,
                                        best->memory_gib);
    }
}

TpsSearchPlot *
tps_search_plot_new(const TpsScenario *sc, guint gpus, const TpsSearchRow *rows, guint n,
                    const TpsSearchRow *best)
{
    TpsSearchPlot *p = tps_search_plot_begin(sc, gpus);
    for (guint i = 0; i < n; i++)
        tps_search_plot_add(p, &rows[i]);
    tps_search_plot_end(p, best);
    return p;
}

guint
tps_search_plot_front(const TpsSearchPlot *p, guint *indices, guint max)
{
    for (guint k = 0; k < p->front->len && k < max; k++)
        indices[k] = g_array_index(p->front, FrontPoint, k).index;
    return p->front->len;
}

void
tps_search_plot_free(TpsSearchPlot *p)
{
    if (p == NULL)
        return;
    g_free(p->title);
    g_free(p->subtitle);
    g_free(p->best_label);
    g_free(p->name);
    g_free(p->hardware);
    if (p->spill)
        fclose(p->spill);
    g_array_unref(p->front);
    g_free(p);
}

static void
set_rgb(cairo_t *cr, guint32 rgb)
{
    cairo_set_source_rgb(cr, ((rgb >> 16) & 0xFF) / 255.0, ((rgb >> 8) & 0xFF) / 255.0,
                         (rgb & 0xFF) / 255.0);
}

static guint
tp_colour(guint tp)
{
    /* tp is a power of two in practice: 1, 2, 4, 8, ... one colour each. */
    guint i = 0;
    while (tp > 1) {
        tp >>= 1;
        i++;
    }
    return tp_rgb[i % G_N_ELEMENTS(tp_rgb)];
}

/* The plot area of the figure, in points, and the ranges it shows: memory
 * on x, the step time on a log axis on y (log10). */
typedef struct {
    double left, px0, px1, py0, py1;
    double x_lo, x_hi, xstep;
    double y_lo, y_hi;
    gboolean show_limit; /* whether the GPU's memory is marked */
} Frame;

static double
frame_x(const Frame *f, double v)
{
    return f->px0 + (v - f->x_lo) / (f->x_hi - f->x_lo) * (f->px1 - f->px0);
}

static double
frame_y(const Frame *f, double v)
{
    return f->py1 - (log10(v) - f->y_lo) / (f->y_hi - f->y_lo) * (f->py1 - f->py0);
}

/* The plot area and the axes' ranges. */
static void
plot_frame(const TpsSearchPlot *p, Frame *f)
{
    f->left = 18, f->px0 = 86, f->px1 = p->width - 170, f->py0 = 84, f->py1 = p->height - 66;
    double xmax = p->xmax, ymin = p->ymin, ymax = p->ymax;
    /* The GPU's memory bounds what fits: show it when the data comes near
     * it (else it would squeeze the points into a corner). */
    f->show_limit = xmax >= 0.5 * p->memory_limit;
    if (f->show_limit)
        xmax = MAX(xmax, p->memory_limit);
    if (xmax <= 0)
        xmax = 1;
    if (!(ymin > 0))
        ymin = ymax = 1;
    double xf;
    f->xstep = tps_nice_step(0, xmax, 8, &xf);
    f->x_lo = 0, f->x_hi = ceil(xmax * 1.02 / f->xstep) * f->xstep;
    /* Step times span decades between the best layouts and the worst: a
     * log axis, ticks at 1, 2 and 5 of each decade. */
    f->y_lo = floor(log10(ymin) * 10.0 - 0.5) / 10.0;
    f->y_hi = ceil(log10(ymax) * 10.0 + 0.5) / 10.0;
}

/* The grid and ticks, the GPU's memory, the axes and their labels. */
static void
draw_axes(cairo_t *cr, const TpsSearchPlot *p, const Frame *f)
{
    cairo_set_line_width(cr, 0.6);
    for (int e = (int)floor(f->y_lo); e <= (int)ceil(f->y_hi); e++) {
        static const double mantissa[] = {1, 2, 5};
        for (guint m = 0; m < G_N_ELEMENTS(mantissa); m++) {
            const double v = mantissa[m] * pow(10.0, e);
            if (log10(v) < f->y_lo - 1e-9 || log10(v) > f->y_hi + 1e-9)
                continue;
            set_rgb(cr, 0xE2E2E2);
            cairo_move_to(cr, f->px0, frame_y(f, v));
            cairo_line_to(cr, f->px1, frame_y(f, v));
            cairo_stroke(cr);
            g_autofree char *label = g_strdup_printf("%g", v);
            tps_draw_text(cr, label, f->px0 - 6, frame_y(f, v) - 6, 10, FALSE, 0x333333, 0, 2);
        }
    }
    for (double v = f->x_lo; v <= f->x_hi + f->xstep * 1e-6; v += f->xstep) {
        set_rgb(cr, 0xEEEEEE);
        cairo_move_to(cr, frame_x(f, v), f->py0);
        cairo_line_to(cr, frame_x(f, v), f->py1);
        cairo_stroke(cr);
        g_autofree char *label = g_strdup_printf("%g", v);
        tps_draw_text(cr, label, frame_x(f, v), f->py1 + 7, 10, FALSE, 0x333333, 0, 1);
    }
    if (f->show_limit) {
        set_rgb(cr, 0x888888);
        cairo_set_line_width(cr, 1.2);
        const double dash[] = {5, 4};
        cairo_set_dash(cr, dash, 2, 0);
        cairo_move_to(cr, frame_x(f, p->memory_limit), f->py0);
        cairo_line_to(cr, frame_x(f, p->memory_limit), f->py1);
        cairo_stroke(cr);
        cairo_set_dash(cr, NULL, 0, 0);
        g_autofree char *limit = g_strdup_printf("GPU memory %.0f GiB", p->memory_limit);
        tps_draw_text(cr, limit, frame_x(f, p->memory_limit) - 4, f->py0 + 2, 9, FALSE, 0x555555, 0,
                      2);
    }

    set_rgb(cr, 0x333333);
    cairo_set_line_width(cr, 1);
    cairo_move_to(cr, f->px0, f->py0);
    cairo_line_to(cr, f->px0, f->py1);
    cairo_line_to(cr, f->px1, f->py1);
    cairo_stroke(cr);
    tps_draw_text(cr, "memory per GPU, busiest stage (GiB)", (f->px0 + f->px1) / 2, f->py1 + 28, 11,
                  FALSE, 0x222222, 0, 1);
    cairo_save(cr);
    cairo_translate(cr, f->left, (f->py0 + f->py1) / 2);
    cairo_rotate(cr, -G_PI / 2);
    tps_draw_text(cr, "training step (s, log scale)", 0, 0, 11, FALSE, 0x222222, 0, 1);
    cairo_restore(cr);
}

/* Every layout: small translucent dots, so that density shows; read back
 * from the spill in the order added, a chunk at a time. */
static void
draw_layouts(cairo_t *cr, const TpsSearchPlot *p, const Frame *f)
{
    cairo_push_group(cr);
    if (p->spill)
        rewind(p->spill);
    for (guint done = 0; p->spill && done < p->n_points;) {
        Point chunk[512];
        const size_t got = fread(chunk, sizeof chunk[0], MIN(p->n_points - done, 512u), p->spill);
        if (got == 0)
            break;
        for (size_t i = 0; i < got; i++) {
            const Point *pt = &chunk[i];
            set_rgb(cr, tp_colour(pt->tp));
            cairo_new_path(cr);
            cairo_arc(cr, frame_x(f, pt->memory), frame_y(f, pt->step), 2.6, 0, 2 * G_PI);
            cairo_fill(cr);
        }
        done += (guint)got;
    }
    cairo_pop_group_to_source(cr);
    cairo_paint_with_alpha(cr, 0.55);
}

/* The Pareto front: a staircase (a faster layout needs more memory), its
 * points ringed. */
static void
draw_front(cairo_t *cr, const TpsSearchPlot *p, const Frame *f)
{
    set_rgb(cr, 0x111111);
    cairo_set_line_width(cr, 1.8);
    for (guint k = 0; k < p->front->len; k++) {
        const Point *pt = &g_array_index(p->front, FrontPoint, k).pt;
        if (k == 0) {
            cairo_move_to(cr, frame_x(f, pt->memory), frame_y(f, pt->step));
        } else {
            const Point *prev = &g_array_index(p->front, FrontPoint, k - 1).pt;
            cairo_line_to(cr, frame_x(f, pt->memory), frame_y(f, prev->step));
            cairo_line_to(cr, frame_x(f, pt->memory), frame_y(f, pt->step));
        }
    }
    cairo_stroke(cr);
    for (guint k = 0; k < p->front->len; k++) {
        const Point *pt = &g_array_index(p->front, FrontPoint, k).pt;
        set_rgb(cr, 0xFFFFFF);
        cairo_new_path(cr);
        cairo_arc(cr, frame_x(f, pt->memory), frame_y(f, pt->step), 4.2, 0, 2 * G_PI);
        cairo_fill_preserve(cr);
        set_rgb(cr, 0x111111);
        cairo_set_line_width(cr, 1.6);
        cairo_stroke(cr);
    }
}

/* The best layout's label, above and to the side where it has room, with
 * a line to its point. */
static void
draw_best_label(cairo_t *cr, const TpsSearchPlot *p, const Frame *f)
{
    const double bx = frame_x(f, p->best.memory), by = frame_y(f, p->best.step);
    double tw, th;
    tps_text_size(cr, p->best_label, 10, TRUE, &tw, &th);
    double tx = bx + 12 + tw <= f->px1 ? bx + 12 : MAX(f->px0 + 8, bx - 12 - tw);
    double ty = by - 60 - th >= f->py0 ? by - 60 - th : by + 14;
    set_rgb(cr, 0xD55E00);
    cairo_set_line_width(cr, 1);
    cairo_move_to(cr, bx, by);
    cairo_line_to(cr, tx < bx ? tx + tw : tx, ty + th / 2);
    cairo_stroke(cr);
    cairo_set_source_rgba(cr, 1, 1, 1, 0.9);
    cairo_rectangle(cr, tx - 3, ty - 2, tw + 6, th + 4);
    cairo_fill(cr);
    tps_draw_text(cr, p->best_label, tx, ty, 10, TRUE, 0xA04000, 0, 0);
}

/* The legend right of the plot: the colours of tp, the front, the best. */
static void
draw_legend(cairo_t *cr, const TpsSearchPlot *p, const Frame *f)
{
    double ly = f->py0;
    const double lx = f->px1 + 20;
    tps_draw_text(cr, "layouts by tp", lx, ly, 10, TRUE, 0x222222, 0, 0);
    ly += 20;
    const guint seen = p->tp_seen;
    for (guint tp = 1; tp < 32; tp++) {
        if (!(seen & (1u << tp)))
            continue;
        set_rgb(cr, tp_colour(tp));
        cairo_new_path(cr);
        cairo_arc(cr, lx + 6, ly + 7, 4, 0, 2 * G_PI);
        cairo_fill(cr);
        g_autofree char *name = g_strdup_printf("tp %u", tp);
        tps_draw_text(cr, name, lx + 18, ly, 10, FALSE, 0x222222, 0, 0);
        ly += 20;
    }
    ly += 8;
    set_rgb(cr, 0x111111);
    cairo_set_line_width(cr, 1.8);
    cairo_move_to(cr, lx, ly + 7);
    cairo_line_to(cr, lx + 14, ly + 7);
    cairo_stroke(cr);
    tps_draw_text(cr, "Pareto front", lx + 18, ly, 10, FALSE, 0x222222, 0, 0);
    ly += 20;
    set_rgb(cr, 0xD55E00);
    cairo_set_line_width(cr, 2.5);
    cairo_new_path(cr);
    cairo_arc(cr, lx + 7, ly + 7, 5.5, 0, 2 * G_PI);
    cairo_stroke(cr);
    tps_draw_text(cr, "best", lx + 18, ly, 10, FALSE, 0x222222, 0, 0);
}

static void
draw(cairo_t *cr, gconstpointer data)
{
    const TpsSearchPlot *p = data;
    Frame f;
    plot_frame(p, &f);
    tps_draw_heading(cr, p->width, f.left, p->title, p->subtitle);
    draw_axes(cr, p, &f);

    cairo_save(cr);
    cairo_rectangle(cr, f.px0, f.py0, f.px1 - f.px0, f.py1 - f.py0);
    cairo_clip(cr);
    draw_layouts(cr, p, &f);
    draw_front(cr, p, &f);
    if (p->has_best) {
        set_rgb(cr, 0xD55E00);
        cairo_new_path(cr);
        cairo_arc(cr, frame_x(&f, p->best.memory), frame_y(&f, p->best.step), 6.5, 0, 2 * G_PI);
        cairo_set_line_width(cr, 2.5);
        cairo_stroke(cr);
    }
    cairo_restore(cr);
    if (p->has_best)
        draw_best_label(cr, p, &f);
    draw_legend(cr, p, &f);
}

gboolean
tps_search_plot_write(const TpsSearchPlot *plot, const char *path, GError **error)
{
    if (plot->spill_failed) {
        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_FAILED,
                    "%s: the temporary file of the figure's points could not be written", path);
        return FALSE;
    }
    return tps_render_file(path, plot->width, plot->height, draw, plot, error);
}
