/* Heatmaps (see heatmap.h). */
#include "render/heatmap.h"

#include <math.h>
#include <string.h>

#include "render/draw.h"

struct TpsHeatmap {
    char *title, *subtitle, *x_label, *y_label, *value_label;
    char **x_values, **y_values;
    guint nx, ny;
    double *cells; /* ny rows of nx */
    double width, height;
};

#define CELL_W 96.0
#define CELL_H 40.0
#define LEFT 150.0
#define TOP 78.0
#define BOTTOM 92.0
#define RIGHT 40.0

TpsHeatmap *
tps_heatmap_new(const char *title, const char *subtitle, const char *x_label,
                const char *const *x_values, const char *y_label, const char *const *y_values,
                const char *value_label)
{
    TpsHeatmap *h = g_new0(TpsHeatmap, 1);
    h->title = g_strdup(title);
    h->subtitle = g_strdup(subtitle);
    h->x_label = g_strdup(x_label);
    h->y_label = g_strdup(y_label);
    h->value_label = g_strdup(value_label);
    h->x_values = g_strdupv((char **)x_values);
    h->y_values = g_strdupv((char **)y_values);
    h->nx = g_strv_length(h->x_values);
    h->ny = g_strv_length(h->y_values);
    h->cells = g_new(double, MAX(h->nx * h->ny, 1));
    for (guint i = 0; i < h->nx * h->ny; i++)
        h->cells[i] = NAN;
    /* Wide enough for the title (about 9.5 points a character of 15-point
     * bold) and the colour scale. */
    h->width = MAX(MAX(LEFT + h->nx * CELL_W + RIGHT, 640), 32 + 9.5 * strlen(h->title));
    h->height = TOP + h->ny * CELL_H + BOTTOM;
    return h;
}

void
tps_heatmap_free(TpsHeatmap *h)
{
    if (h == NULL)
        return;
    g_free(h->title);
    g_free(h->subtitle);
    g_free(h->x_label);
    g_free(h->y_label);
    g_free(h->value_label);
    g_strfreev(h->x_values);
    g_strfreev(h->y_values);
    g_free(h->cells);
    g_free(h);
}

void
tps_heatmap_set(TpsHeatmap *h, guint x, guint y, double value)
{
    g_return_if_fail(h != NULL && x < h->nx && y < h->ny);
    h->cells[y * h->nx + x] = value;
}

void
tps_heatmap_size(const TpsHeatmap *h, double *width, double *height)
{
    *width = h->width;
    *height = h->height;
}

/* A sequential scale from light yellow to dark blue (cividis' ends and
 * middle, interpolated); t in [0, 1]. */
static guint32
scale_rgb(double t)
{
    static const guint32 stops[] = {0xFFE945, 0xA59C74, 0x7C7B78, 0x4A5B7B, 0x00224E};
    const guint n = G_N_ELEMENTS(stops) - 1;
    t = CLAMP(t, 0, 1) * n;
    guint i = MIN((guint)t, n - 1);
    double f = t - i;
    guint32 a = stops[i], b = stops[i + 1], rgb = 0;
    for (guint shift = 0; shift <= 16; shift += 8) {
        double ca = (a >> shift) & 0xFF, cb = (b >> shift) & 0xFF;
        rgb |= (guint32)lround(ca + (cb - ca) * f) << shift;
    }
    return rgb;
}

static void
set_rgb(cairo_t *cr, guint32 rgb)
{
    cairo_set_source_rgb(cr, ((rgb >> 16) & 0xFF) / 255.0, ((rgb >> 8) & 0xFF) / 255.0,
                         (rgb & 0xFF) / 255.0);
}

/* A value in 4 significant digits. */
static char *
value_text(double v)
{
    if (fabs(v) >= 1000)
        return g_strdup_printf("%.0f", v);
    return g_strdup_printf("%.4g", v);
}

void
tps_heatmap_draw(cairo_t *cr, gconstpointer data)
{
    const TpsHeatmap *h = data;
    tps_draw_heading(cr, h->width, 16, h->title, h->subtitle);

    double lo = INFINITY, hi = -INFINITY;
    for (guint i = 0; i < h->nx * h->ny; i++)
        if (!isnan(h->cells[i]))
            lo = MIN(lo, h->cells[i]), hi = MAX(hi, h->cells[i]);

    const double x0 = LEFT, y0 = TOP;
    for (guint y = 0; y < h->ny; y++) {
        /* The first value on top, as a table reads. */
        double cy = y0 + y * CELL_H;
        tps_draw_text(cr, h->y_values[y], x0 - 8, cy + CELL_H / 2 - 7, 10, FALSE, 0x333333, 0, 2);
        for (guint x = 0; x < h->nx; x++) {
            double cx = x0 + x * CELL_W, v = h->cells[y * h->nx + x];
            if (isnan(v)) {
                set_rgb(cr, 0xF2F2F2);
                cairo_rectangle(cr, cx, cy, CELL_W, CELL_H);
                cairo_fill(cr);
                set_rgb(cr, 0xCCCCCC);
                cairo_set_line_width(cr, 0.8);
                for (double d = -CELL_H; d < CELL_W; d += 8) {
                    cairo_move_to(cr, cx + MAX(d, 0), cy + MAX(-d, 0));
                    double len = MIN(CELL_W - MAX(d, 0), CELL_H - MAX(-d, 0));
                    cairo_line_to(cr, cx + MAX(d, 0) + len, cy + MAX(-d, 0) + len);
                }
                cairo_stroke(cr);
                tps_draw_text(cr, "-", cx + CELL_W / 2, cy + CELL_H / 2 - 7, 10, FALSE, 0x888888,
                              0, 1);
                continue;
            }
            double t = hi > lo ? (v - lo) / (hi - lo) : 0.5;
            set_rgb(cr, scale_rgb(t));
            cairo_rectangle(cr, cx, cy, CELL_W, CELL_H);
            cairo_fill(cr);
            g_autofree char *text = value_text(v);
            tps_draw_text(cr, text, cx + CELL_W / 2, cy + CELL_H / 2 - 7, 11, FALSE,
                          t > 0.55 ? 0xFFFFFF : 0x111111, CELL_W - 4, 1);
        }
    }
    /* Cell borders: white lines, so that equal colours still read as cells. */
    set_rgb(cr, 0xFFFFFF);
    cairo_set_line_width(cr, 2);
    for (guint x = 0; x <= h->nx; x++) {
        cairo_move_to(cr, x0 + x * CELL_W, y0);
        cairo_line_to(cr, x0 + x * CELL_W, y0 + h->ny * CELL_H);
    }
    for (guint y = 0; y <= h->ny; y++) {
        cairo_move_to(cr, x0, y0 + y * CELL_H);
        cairo_line_to(cr, x0 + h->nx * CELL_W, y0 + y * CELL_H);
    }
    cairo_stroke(cr);

    const double bottom = y0 + h->ny * CELL_H;
    for (guint x = 0; x < h->nx; x++)
        tps_draw_text(cr, h->x_values[x], x0 + x * CELL_W + CELL_W / 2, bottom + 6, 10, FALSE,
                      0x333333, CELL_W - 4, 1);
    tps_draw_text(cr, h->x_label, x0 + h->nx * CELL_W / 2, bottom + 24, 10, FALSE, 0x222222, 0, 1);
    tps_draw_text(cr, h->y_label, 16, y0 - 18, 10, FALSE, 0x222222, h->width - 32, 0);

    /* The scale: its ends, what the colour is. */
    if (lo <= hi) {
        const double sx = x0, sy = bottom + 50, sw = 160, sh = 10;
        for (guint i = 0; i < 64; i++) {
            set_rgb(cr, scale_rgb(i / 63.0));
            cairo_rectangle(cr, sx + sw * i / 64.0, sy, sw / 64.0 + 0.5, sh);
            cairo_fill(cr);
        }
        g_autofree char *lo_text = value_text(lo);
        g_autofree char *hi_text = value_text(hi);
        tps_draw_text(cr, lo_text, sx - 4, sy - 2, 9, FALSE, 0x333333, 0, 2);
        double w = tps_draw_text(cr, hi_text, sx + sw + 4, sy - 2, 9, FALSE, 0x333333, 0, 0);
        tps_draw_text(cr, h->value_label, sx + sw + 16 + w, sy - 2, 9, FALSE, 0x333333, 0, 0);
    }
}

gboolean
tps_heatmap_write(const TpsHeatmap *h, const char *path, GError **error)
{
    return tps_render_file(path, h->width, h->height, tps_heatmap_draw, h, error);
}
