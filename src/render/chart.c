/* Line charts: see chart.h. */
#include "render/chart.h"

#include <math.h>

#include "render/draw.h"
#include "render/timeline.h"

typedef struct {
    char *name;
    char *note;    /* a second legend line saying what the name means, or NULL */
    GArray *x, *y; /* double */
} Series;

struct TpsChart {
    char *title, *subtitle, *x_label, *y_label;
    gboolean x_log2;
    gboolean scatter;
    GPtrArray *series; /* Series */
    double width, height;
};

/* Okabe-Ito, darkest first; yellow last (weak on white). */
static const guint32 series_rgb[] = {0x0072B2, 0xD55E00, 0x009E73, 0xE69F00,
                                     0xCC79A7, 0x56B4E9, 0x000000, 0xF0E442};

static void
series_free(gpointer p)
{
    Series *s = p;
    g_free(s->name);
    g_free(s->note);
    g_array_unref(s->x);
    g_array_unref(s->y);
    g_free(s);
}

TpsChart *
tps_chart_new(const char *title, const char *subtitle, const char *x_label, const char *y_label)
{
    TpsChart *c = g_new0(TpsChart, 1);
    c->title = g_strdup(title);
    c->subtitle = g_strdup(subtitle);
    c->x_label = g_strdup(x_label);
    c->y_label = g_strdup(y_label);
    c->series = g_ptr_array_new_with_free_func(series_free);
    c->width = 900;
    c->height = 520;
    return c;
}

void
tps_chart_free(TpsChart *c)
{
    if (c == NULL)
        return;
    g_free(c->title);
    g_free(c->subtitle);
    g_free(c->x_label);
    g_free(c->y_label);
    g_ptr_array_unref(c->series);
    g_free(c);
}

void
tps_chart_set_x_log2(TpsChart *chart, gboolean log2)
{
    chart->x_log2 = log2;
}

void
tps_chart_set_scatter(TpsChart *chart, gboolean scatter)
{
    chart->scatter = scatter;
}

guint
tps_chart_add_series(TpsChart *chart, const char *name)
{
    Series *s = g_new0(Series, 1);
    s->name = g_strdup(name);
    s->x = g_array_new(FALSE, FALSE, sizeof(double));
    s->y = g_array_new(FALSE, FALSE, sizeof(double));
    g_ptr_array_add(chart->series, s);
    return chart->series->len - 1;
}

void
tps_chart_set_series_note(TpsChart *chart, guint series, const char *note)
{
    g_return_if_fail(series < chart->series->len);
    Series *s = g_ptr_array_index(chart->series, series);
    g_free(s->note);
    s->note = g_strdup(note);
}

/* Whether a series has a point to draw: one without is left out of the
 * legend too (a strategy that applied nowhere on the axis). */
static gboolean
series_drawn(const Series *s)
{
    for (guint k = 0; k < s->y->len; k++)
        if (isfinite(g_array_index(s->y, double, k)))
            return TRUE;
    return FALSE;
}

void
tps_chart_add_point(TpsChart *chart, guint series, double x, double y)
{
    g_return_if_fail(series < chart->series->len);
    Series *s = g_ptr_array_index(chart->series, series);
    g_array_append_val(s->x, x);
    g_array_append_val(s->y, y);
}

guint
tps_chart_n_series(const TpsChart *chart)
{
    return chart->series->len;
}

void
tps_chart_size(const TpsChart *chart, double *width, double *height)
{
    *width = chart->width;
    *height = chart->height;
}

static void
set_rgb(cairo_t *cr, guint32 rgb)
{
    cairo_set_source_rgb(cr, ((rgb >> 16) & 0xFF) / 255.0, ((rgb >> 8) & 0xFF) / 255.0,
                         (rgb & 0xFF) / 255.0);
}

static void
marker_sized(cairo_t *cr, guint kind, double x, double y, guint32 rgb, double r)
{
    set_rgb(cr, rgb);
    switch (kind % 5) {
    case 0:
        cairo_arc(cr, x, y, r, 0, 2 * G_PI);
        break;
    case 1:
        cairo_rectangle(cr, x - r * 0.85, y - r * 0.85, 1.7 * r, 1.7 * r);
        break;
    case 2:
        cairo_move_to(cr, x, y - r * 1.1);
        cairo_line_to(cr, x + r, y + r * 0.8);
        cairo_line_to(cr, x - r, y + r * 0.8);
        cairo_close_path(cr);
        break;
    case 3:
        cairo_move_to(cr, x, y - r * 1.2);
        cairo_line_to(cr, x + r, y);
        cairo_line_to(cr, x, y + r * 1.2);
        cairo_line_to(cr, x - r, y);
        cairo_close_path(cr);
        break;
    default:
        cairo_arc(cr, x, y, r, 0, 2 * G_PI);
        cairo_fill_preserve(cr);
        set_rgb(cr, 0xFFFFFF);
        cairo_set_line_width(cr, 1.5);
        cairo_stroke(cr);
        cairo_arc(cr, x, y, r * 0.45, 0, 2 * G_PI);
        set_rgb(cr, rgb);
        break;
    }
    cairo_fill(cr);
}

static void
marker(cairo_t *cr, guint kind, double x, double y, guint32 rgb)
{
    marker_sized(cr, kind, x, y, rgb, 4.2);
}

static double
xpos(const TpsChart *c, double x)
{
    return c->x_log2 ? log2(MAX(x, 1e-12)) : x;
}

/* Distinct x values over all series (stops counting at 13). */
static guint
distinct_x(const TpsChart *c)
{
    double seen[13];
    guint n = 0;
    for (guint i = 0; i < c->series->len && n < G_N_ELEMENTS(seen); i++) {
        const Series *s = g_ptr_array_index(c->series, i);
        for (guint k = 0; k < s->x->len && n < G_N_ELEMENTS(seen); k++) {
            double x = g_array_index(s->x, double, k);
            gboolean dup = FALSE;
            for (guint j = 0; j < n && !dup; j++)
                dup = seen[j] == x;
            if (!dup)
                seen[n++] = x;
        }
    }
    return n;
}

/* An x tick label: powers of two of 1024 and more as K/M/G (bytes, tokens). */
static char *
fmt_tick(double v)
{
    static const char *const units[] = {"", "K", "M", "G", "T"};
    guint u = 0;
    while (u + 1 < G_N_ELEMENTS(units) && fabs(v) >= 1024 && fmod(v, 1024) == 0) {
        v /= 1024;
        u++;
    }
    return g_strdup_printf("%g%s", v, units[u]);
}

static char *
fmt_value(double v, double step)
{
    int dec = step >= 1.0 ? 0 : (int)ceil(-log10(step) - 1e-9);
    if (fabs(v) < step * 1e-6)
        v = 0.0;
    return g_strdup_printf("%.*f", dec, v);
}

/* The plot area of a chart, in points, and the data ranges it shows. */
typedef struct {
    double left, px0, px1, py0, py1;
    double xmin, xmax; /* the data's x (log2 on a log2 axis) */
    double x_lo, x_hi; /* the axis' x, padded */
    double y_lo, y_hi; /* the axis' y, on whole steps */
    double ystep;
} Frame;

static double
frame_x(const Frame *f, double v)
{
    return f->px0 + (v - f->x_lo) / (f->x_hi - f->x_lo) * (f->px1 - f->px0);
}

static double
frame_y(const Frame *f, double v)
{
    return f->py1 - (v - f->y_lo) / (f->y_hi - f->y_lo) * (f->py1 - f->py0);
}

/* The plot area and the axes' ranges: the data's, padded; y from zero when
 * the data is not far from it. */
static void
chart_frame(const TpsChart *c, Frame *f)
{
    f->left = 16, f->px0 = 84, f->px1 = c->width - 210, f->py0 = 78, f->py1 = c->height - 64;
    double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
    for (guint i = 0; i < c->series->len; i++) {
        const Series *s = g_ptr_array_index(c->series, i);
        for (guint k = 0; k < s->x->len; k++) {
            double x = xpos(c, g_array_index(s->x, double, k)), y = g_array_index(s->y, double, k);
            xmin = MIN(xmin, x);
            xmax = MAX(xmax, x);
            if (isfinite(y)) {
                ymin = MIN(ymin, y);
                ymax = MAX(ymax, y);
            }
        }
    }
    if (!isfinite(xmin))
        xmin = 0, xmax = 1;
    if (!isfinite(ymin))
        ymin = 0, ymax = 1;
    if (xmax <= xmin)
        xmin -= 1, xmax += 1;
    /* Start at zero when the data is not far from it (honest bars of time). */
    if (ymin >= 0 && ymin <= 0.6 * ymax)
        ymin = 0;
    double pad = (ymax - ymin) * 0.08;
    if (pad <= 0)
        pad = fabs(ymax) * 0.1 + 1e-3;
    double y_lo = ymin == 0 ? 0 : ymin - pad, y_hi = ymax + pad;
    double first;
    const double ystep = tps_nice_step(y_lo, y_hi, 6, &first);
    f->y_lo = floor(y_lo / ystep + 1e-9) * ystep;
    f->y_hi = ceil(y_hi / ystep - 1e-9) * ystep;
    f->ystep = ystep;
    const double xpad = (xmax - xmin) * 0.04;
    f->xmin = xmin, f->xmax = xmax;
    f->x_lo = xmin - xpad, f->x_hi = xmax + xpad;
}

/* The horizontal grid lines and the y ticks' labels. */
static void
draw_y_grid(cairo_t *cr, const Frame *f)
{
    cairo_set_line_width(cr, 0.6);
    for (double v = f->y_lo; v <= f->y_hi + f->ystep * 1e-6; v += f->ystep) {
        set_rgb(cr, fabs(v) < f->ystep * 1e-6 ? 0x999999 : 0xE2E2E2);
        cairo_move_to(cr, f->px0, frame_y(f, v));
        cairo_line_to(cr, f->px1, frame_y(f, v));
        cairo_stroke(cr);
        g_autofree char *label = fmt_value(v, f->ystep);
        double th;
        tps_text_size(cr, label, 9, FALSE, NULL, &th);
        tps_draw_text(cr, label, f->px0 - 6, frame_y(f, v) - th / 2, 9, FALSE, 0x333333, 0, 2);
    }
}

/* The x ticks (data values): the data's values on a log2 axis (powers of
 * two for a dense scatter), nice steps otherwise. */
static GArray *
x_ticks(const TpsChart *c, const Frame *f)
{
    GArray *xt = g_array_new(FALSE, FALSE, sizeof(double));
    if (c->x_log2 && c->scatter && distinct_x(c) > 12) {
        /* Powers of two, every `every`-th one so that at most a dozen
         * labels share the axis. */
        int lo = (int)ceil(f->xmin - 1e-9), hi = (int)floor(f->xmax + 1e-9);
        int every = MAX(1, (hi - lo + 11) / 12);
        for (int e = lo; e <= hi; e += every) {
            double v = ldexp(1.0, e);
            g_array_append_val(xt, v);
        }
    } else if (c->x_log2) {
        for (guint i = 0; i < c->series->len; i++) {
            const Series *s = g_ptr_array_index(c->series, i);
            for (guint k = 0; k < s->x->len; k++) {
                double x = g_array_index(s->x, double, k);
                gboolean seen = FALSE;
                for (guint j = 0; j < xt->len; j++)
                    seen |= g_array_index(xt, double, j) == x;
                if (!seen)
                    g_array_append_val(xt, x);
            }
        }
    } else {
        double xf;
        double xstep = tps_nice_step(f->xmin, f->xmax, 7, &xf);
        for (double v = xf; v <= f->xmax + xstep * 1e-6; v += xstep)
            g_array_append_val(xt, v);
    }
    return xt;
}

/* The vertical grid lines and x ticks' labels, the axes and their labels. */
static void
draw_axes(cairo_t *cr, const TpsChart *c, const Frame *f)
{
    g_autoptr(GArray) xt = x_ticks(c, f);
    for (guint j = 0; j < xt->len; j++) {
        double v = g_array_index(xt, double, j), x = frame_x(f, xpos(c, v));
        set_rgb(cr, 0xEEEEEE);
        cairo_move_to(cr, x, f->py0);
        cairo_line_to(cr, x, f->py1);
        cairo_stroke(cr);
        g_autofree char *label = c->x_log2 && c->scatter ? fmt_tick(v) : g_strdup_printf("%g", v);
        tps_draw_text(cr, label, x, f->py1 + 7, 9, FALSE, 0x333333, 0, 1);
    }
    set_rgb(cr, 0x333333);
    cairo_set_line_width(cr, 1);
    cairo_move_to(cr, f->px0, f->py0);
    cairo_line_to(cr, f->px0, f->py1);
    cairo_line_to(cr, f->px1, f->py1);
    cairo_stroke(cr);
    tps_draw_text(cr, c->x_label, (f->px0 + f->px1) / 2, f->py1 + 26, 10, FALSE, 0x222222, 0, 1);
    cairo_save(cr);
    cairo_translate(cr, f->left, (f->py0 + f->py1) / 2);
    cairo_rotate(cr, -G_PI / 2);
    tps_draw_text(cr, c->y_label, 0, 0, 10, FALSE, 0x222222, 0, 1);
    cairo_restore(cr);
}

/* A scatter: small translucent markers only, density shows where points
 * pile up; the zero line is the reference a residual is read against. */
static void
draw_scatter(cairo_t *cr, const TpsChart *c, const Frame *f)
{
    if (f->y_lo < 0 && f->y_hi > 0) {
        set_rgb(cr, 0x666666);
        cairo_set_line_width(cr, 1.2);
        cairo_move_to(cr, f->px0, frame_y(f, 0));
        cairo_line_to(cr, f->px1, frame_y(f, 0));
        cairo_stroke(cr);
    }
    cairo_push_group(cr);
    for (guint i = 0; i < c->series->len; i++) {
        const Series *s = g_ptr_array_index(c->series, i);
        guint32 rgb = series_rgb[i % G_N_ELEMENTS(series_rgb)];
        for (guint k = 0; k < s->x->len; k++) {
            double y = g_array_index(s->y, double, k);
            if (isfinite(y))
                marker_sized(cr, i, frame_x(f, xpos(c, g_array_index(s->x, double, k))),
                             frame_y(f, y), rgb, 2.3);
        }
    }
    cairo_pop_group_to_source(cr);
    cairo_paint_with_alpha(cr, 0.75);
}

/* Each series' line (broken at gaps), then its markers on top. */
static void
draw_series_lines(cairo_t *cr, const TpsChart *c, const Frame *f)
{
    for (guint i = 0; i < c->series->len; i++) {
        const Series *s = g_ptr_array_index(c->series, i);
        guint32 rgb = series_rgb[i % G_N_ELEMENTS(series_rgb)];
        set_rgb(cr, rgb);
        cairo_set_line_width(cr, 2.0);
        gboolean pen = FALSE;
        for (guint k = 0; k < s->x->len; k++) {
            double y = g_array_index(s->y, double, k);
            if (!isfinite(y)) {
                pen = FALSE;
                continue;
            }
            double x = frame_x(f, xpos(c, g_array_index(s->x, double, k)));
            if (pen)
                cairo_line_to(cr, x, frame_y(f, y));
            else
                cairo_move_to(cr, x, frame_y(f, y));
            pen = TRUE;
        }
        cairo_stroke(cr);
        for (guint k = 0; k < s->x->len; k++) {
            double y = g_array_index(s->y, double, k);
            if (isfinite(y))
                marker(cr, i, frame_x(f, xpos(c, g_array_index(s->x, double, k))), frame_y(f, y),
                       rgb);
        }
    }
}

/* The legend column right of the plot: the series drawn. */
static void
draw_legend(cairo_t *cr, const TpsChart *c, const Frame *f)
{
    const double px1 = f->px1;
    double ly = f->py0;
    for (guint i = 0; i < c->series->len; i++) {
        const Series *s = g_ptr_array_index(c->series, i);
        guint32 rgb = series_rgb[i % G_N_ELEMENTS(series_rgb)];
        if (!series_drawn(s))
            continue;
        if (!c->scatter) {
            set_rgb(cr, rgb);
            cairo_set_line_width(cr, 2.0);
            cairo_move_to(cr, px1 + 22, ly + 8);
            cairo_line_to(cr, px1 + 48, ly + 8);
            cairo_stroke(cr);
        }
        marker(cr, i, px1 + 35, ly + 8, rgb);
        tps_draw_text(cr, s->name, px1 + 56, ly, 10, FALSE, 0x222222, c->width - px1 - 60, 0);
        if (s->note) {
            tps_draw_text(cr, s->note, px1 + 56, ly + 13, 8.5, FALSE, 0x555555,
                          c->width - px1 - 60, 0);
            ly += 12;
        }
        ly += 22;
    }
}

void
tps_chart_draw(cairo_t *cr, gconstpointer data)
{
    const TpsChart *c = data;
    Frame f;
    chart_frame(c, &f);
    tps_draw_heading(cr, c->width, f.left, c->title, c->subtitle);
    draw_y_grid(cr, &f);
    draw_axes(cr, c, &f);

    cairo_save(cr);
    cairo_rectangle(cr, f.px0 - 6, f.py0 - 6, f.px1 - f.px0 + 12, f.py1 - f.py0 + 12);
    cairo_clip(cr);
    if (c->scatter)
        draw_scatter(cr, c, &f);
    else
        draw_series_lines(cr, c, &f);
    cairo_restore(cr);
    draw_legend(cr, c, &f);
}

gboolean
tps_chart_write(const TpsChart *chart, const char *path, GError **error)
{
    return tps_render_file(path, chart->width, chart->height, tps_chart_draw, chart, error);
}
