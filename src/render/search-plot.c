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

static void
draw(cairo_t *cr, gconstpointer data)
{
    const TpsSearchPlot *p = data;
    const double left = 18, px0 = 86, px1 = p->width - 170, py0 = 84, py1 = p->height - 66;

    tps_draw_heading(cr, p->width, left, p->title, p->subtitle);

    double xmax = p->xmax, ymin = p->ymin, ymax = p->ymax;
    /* The GPU's memory bounds what fits: show it when the data comes near
     * it (else it would squeeze the points into a corner). */
    const gboolean show_limit = xmax >= 0.5 * p->memory_limit;
    if (show_limit)
        xmax = MAX(xmax, p->memory_limit);
    if (xmax <= 0)
        xmax = 1;
    if (!(ymin > 0))
        ymin = ymax = 1;
    double xf;
    const double xstep = tps_nice_step(0, xmax, 8, &xf);
    const double x_lo = 0, x_hi = ceil(xmax * 1.02 / xstep) * xstep;
    /* Step times span decades between the best layouts and the worst: a
     * log axis, ticks at 1, 2 and 5 of each decade. */
    const double y_lo = floor(log10(ymin) * 10.0 - 0.5) / 10.0;
    const double y_hi = ceil(log10(ymax) * 10.0 + 0.5) / 10.0;
#define XS(v) (px0 + ((v)-x_lo) / (x_hi - x_lo) * (px1 - px0))
#define YS(v) (py1 - (log10(v) - y_lo) / (y_hi - y_lo) * (py1 - py0))

    cairo_set_line_width(cr, 0.6);
    for (int e = (int)floor(y_lo); e <= (int)ceil(y_hi); e++) {
        static const double mantissa[] = {1, 2, 5};
        for (guint m = 0; m < G_N_ELEMENTS(mantissa); m++) {
            const double v = mantissa[m] * pow(10.0, e);
            if (log10(v) < y_lo - 1e-9 || log10(v) > y_hi + 1e-9)
                continue;
            set_rgb(cr, 0xE2E2E2);
            cairo_move_to(cr, px0, YS(v));
            cairo_line_to(cr, px1, YS(v));
            cairo_stroke(cr);
            g_autofree char *label = g_strdup_printf("%g", v);
            tps_draw_text(cr, label, px0 - 6, YS(v) - 6, 10, FALSE, 0x333333, 0, 2);
        }
    }
    for (double v = x_lo; v <= x_hi + xstep * 1e-6; v += xstep) {
        set_rgb(cr, 0xEEEEEE);
        cairo_move_to(cr, XS(v), py0);
        cairo_line_to(cr, XS(v), py1);
        cairo_stroke(cr);
        g_autofree char *label = g_strdup_printf("%g", v);
        tps_draw_text(cr, label, XS(v), py1 + 7, 10, FALSE, 0x333333, 0, 1);
    }
    if (show_limit) {
        set_rgb(cr, 0x888888);
        cairo_set_line_width(cr, 1.2);
        const double dash[] = {5, 4};
        cairo_set_dash(cr, dash, 2, 0);
        cairo_move_to(cr, XS(p->memory_limit), py0);
        cairo_line_to(cr, XS(p->memory_limit), py1);
        cairo_stroke(cr);
        cairo_set_dash(cr, NULL, 0, 0);
        g_autofree char *limit = g_strdup_printf("GPU memory %.0f GiB", p->memory_limit);
        tps_draw_text(cr, limit, XS(p->memory_limit) - 4, py0 + 2, 9, FALSE, 0x555555, 0, 2);
    }

    set_rgb(cr, 0x333333);
    cairo_set_line_width(cr, 1);
    cairo_move_to(cr, px0, py0);
    cairo_line_to(cr, px0, py1);
    cairo_line_to(cr, px1, py1);
    cairo_stroke(cr);
    tps_draw_text(cr, "memory per GPU, busiest stage (GiB)", (px0 + px1) / 2, py1 + 28, 11, FALSE,
                  0x222222, 0, 1);
    cairo_save(cr);
    cairo_translate(cr, left, (py0 + py1) / 2);
    cairo_rotate(cr, -G_PI / 2);
    tps_draw_text(cr, "training step (s, log scale)", 0, 0, 11, FALSE, 0x222222, 0, 1);
    cairo_restore(cr);

    /* Every layout: small translucent dots, so that density shows. */
    cairo_save(cr);
    cairo_rectangle(cr, px0, py0, px1 - px0, py1 - py0);
    cairo_clip(cr);
    cairo_push_group(cr);
    /* Read back from the spill in the order added, a chunk at a time. */
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
            cairo_arc(cr, XS(pt->memory), YS(pt->step), 2.6, 0, 2 * G_PI);
            cairo_fill(cr);
        }
        done += (guint)got;
    }
    cairo_pop_group_to_source(cr);
    cairo_paint_with_alpha(cr, 0.55);

    /* The Pareto front: a staircase (a faster layout needs more memory). */
    set_rgb(cr, 0x111111);
    cairo_set_line_width(cr, 1.8);
    for (guint k = 0; k < p->front->len; k++) {
        const Point *pt = &g_array_index(p->front, FrontPoint, k).pt;
        if (k == 0) {
            cairo_move_to(cr, XS(pt->memory), YS(pt->step));
        } else {
            const Point *prev = &g_array_index(p->front, FrontPoint, k - 1).pt;
            cairo_line_to(cr, XS(pt->memory), YS(prev->step));
            cairo_line_to(cr, XS(pt->memory), YS(pt->step));
        }
    }
    cairo_stroke(cr);
    for (guint k = 0; k < p->front->len; k++) {
        const Point *pt = &g_array_index(p->front, FrontPoint, k).pt;
        set_rgb(cr, 0xFFFFFF);
        cairo_new_path(cr);
        cairo_arc(cr, XS(pt->memory), YS(pt->step), 4.2, 0, 2 * G_PI);
        cairo_fill_preserve(cr);
        set_rgb(cr, 0x111111);
        cairo_set_line_width(cr, 1.6);
        cairo_stroke(cr);
    }
    if (p->has_best) {
        const double bx = XS(p->best.memory), by = YS(p->best.step);
        set_rgb(cr, 0xD55E00);
        cairo_new_path(cr);
        cairo_arc(cr, bx, by, 6.5, 0, 2 * G_PI);
        cairo_set_line_width(cr, 2.5);
        cairo_stroke(cr);
    }
    cairo_restore(cr);
    if (p->has_best) {
        const double bx = XS(p->best.memory), by = YS(p->best.step);
        double tw, th;
        tps_text_size(cr, p->best_label, 10, TRUE, &tw, &th);
        /* Above and to the side where it has room. */
        double tx = bx + 12 + tw <= px1 ? bx + 12 : MAX(px0 + 8, bx - 12 - tw);
        double ty = by - 60 - th >= py0 ? by - 60 - th : by + 14;
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

    /* Legend: the colours of tp, the front, the best. */
    double ly = py0;
    const double lx = px1 + 20;
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
#undef XS
#undef YS
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
