/* Drawing with Cairo: see draw.h. */
#include "render/draw.h"

#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <pango/pangocairo.h>
#include <png.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/output.h"

#define FONT "DejaVu Sans"
#define PNG_SCALE 2.0

gboolean
tps_image_format_from_path(const char *path, TpsImageFormat *format, GError **error)
{
    const char *dot = strrchr(path, '.');
    if (dot && g_ascii_strcasecmp(dot, ".png") == 0)
        *format = TPS_IMAGE_PNG;
    else if (dot && g_ascii_strcasecmp(dot, ".svg") == 0)
        *format = TPS_IMAGE_SVG;
    else if (dot && g_ascii_strcasecmp(dot, ".pdf") == 0)
        *format = TPS_IMAGE_PDF;
    else {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "%s: unknown image format (the name must end in .png, .svg or .pdf)", path);
        return FALSE;
    }
    return TRUE;
}

static void
set_rgb(cairo_t *cr, guint32 rgb)
{
    cairo_set_source_rgb(cr, ((rgb >> 16) & 0xFF) / 255.0, ((rgb >> 8) & 0xFF) / 255.0,
                         (rgb & 0xFF) / 255.0);
}

static PangoLayout *
text_layout(cairo_t *cr, const char *text, double size, gboolean bold)
{
    PangoLayout *layout = pango_cairo_create_layout(cr);
    PangoFontDescription *desc = pango_font_description_from_string(FONT);
    pango_font_description_set_absolute_size(desc, size * PANGO_SCALE);
    pango_font_description_set_weight(desc, bold ? PANGO_WEIGHT_BOLD : PANGO_WEIGHT_NORMAL);
    pango_layout_set_font_description(layout, desc);
    pango_font_description_free(desc);
    pango_layout_set_text(layout, text, -1);
    return layout;
}

void
tps_text_size(cairo_t *cr, const char *text, double size, gboolean bold, double *width,
              double *height)
{
    PangoLayout *layout = text_layout(cr, text, size, bold);
    int w, h;
    pango_layout_get_size(layout, &w, &h);
    if (width)
        *width = (double)w / PANGO_SCALE;
    if (height)
        *height = (double)h / PANGO_SCALE;
    g_object_unref(layout);
}

/* SVG text. Cairo 1.16's SVG surface writes every glyph as a path (a
 * <symbol> per glyph, a <use> per character): the words cannot be
 * searched, selected, read by a screen reader or restyled. So an SVG
 * figure is drawn in two layers: Cairo draws the shapes, and the text
 * goes into real <text> elements, collected here (the surface's user data
 * while an SVG is drawn) and written before the end of Cairo's document.
 * Pango still measures every string, so the layout is the PNG's. */
static const cairo_user_data_key_t svg_text_key;

/* The text Pango would show in `max_width`: `text` itself, or its longest
 * prefix that fits followed by an ellipsis. */
static char *
ellipsized(cairo_t *cr, const char *text, double size, gboolean bold, double max_width)
{
    double w;
    tps_text_size(cr, text, size, bold, &w, NULL);
    if (max_width <= 0 || w <= max_width)
        return g_strdup(text);
    glong n = g_utf8_strlen(text, -1);
    for (glong keep = n - 1; keep > 0; keep--) {
        const char *end = g_utf8_offset_to_pointer(text, keep);
        g_autofree char *head = g_strndup(text, end - text);
        char *cut = g_strconcat(head, "…", NULL);
        tps_text_size(cr, cut, size, bold, &w, NULL);
        if (w <= max_width)
            return cut;
        g_free(cut);
    }
    return g_strdup("…");
}

static void
svg_text(GString *svg, cairo_t *cr, const char *text, double x, double baseline, double size,
         gboolean bold, guint32 rgb)
{
    cairo_matrix_t m;
    cairo_get_matrix(cr, &m);
    g_autofree char *esc = g_markup_escape_text(text, -1);
    char n[6][G_ASCII_DTOSTR_BUF_SIZE];
    const double v[6] = {m.xx, m.yx, m.xy, m.yy, m.x0, m.y0};
    for (int i = 0; i < 6; i++)
        g_ascii_formatd(n[i], sizeof n[i], "%.4g", v[i]);
    char xs[G_ASCII_DTOSTR_BUF_SIZE], ys[G_ASCII_DTOSTR_BUF_SIZE], ss[G_ASCII_DTOSTR_BUF_SIZE];
    g_ascii_formatd(xs, sizeof xs, "%.2f", x);
    g_ascii_formatd(ys, sizeof ys, "%.2f", baseline);
    g_ascii_formatd(ss, sizeof ss, "%.2f", size);
    g_string_append_printf(svg,
                           "<text transform=\"matrix(%s %s %s %s %s %s)\" x=\"%s\" y=\"%s\" "
                           "font-family=\"" FONT "\" font-size=\"%s\"%s fill=\"#%06X\" "
                           "xml:space=\"preserve\">%s</text>\n",
                           n[0], n[1], n[2], n[3], n[4], n[5], xs, ys, ss,
                           bold ? " font-weight=\"bold\"" : "", rgb & 0xFFFFFF, esc);
}

double
tps_draw_text(cairo_t *cr, const char *text, double x, double y, double size, gboolean bold,
              guint32 rgb, double max_width, int align)
{
    GString *svg = cairo_surface_get_user_data(cairo_get_target(cr), &svg_text_key);
    if (svg) {
        g_autofree char *shown = ellipsized(cr, text, size, bold, max_width);
        PangoLayout *layout = text_layout(cr, shown, size, bold);
        int w, h;
        pango_layout_get_size(layout, &w, &h);
        double tw = (double)w / PANGO_SCALE;
        double baseline = y + (double)pango_layout_get_baseline(layout) / PANGO_SCALE;
        g_object_unref(layout);
        double x0 = align == 1 ? x - tw / 2 : align == 2 ? x - tw : x;
        svg_text(svg, cr, shown, x0, baseline, size, bold, rgb);
        return tw;
    }
    PangoLayout *layout = text_layout(cr, text, size, bold);
    if (max_width > 0) {
        pango_layout_set_width(layout, (int)(max_width * PANGO_SCALE));
        pango_layout_set_ellipsize(layout, PANGO_ELLIPSIZE_END);
    }
    int w, h;
    pango_layout_get_size(layout, &w, &h);
    double tw = (double)w / PANGO_SCALE;
    if (max_width > 0) {
        PangoRectangle ink, logical;
        pango_layout_get_pixel_extents(layout, &ink, &logical);
        tw = MIN(tw, logical.width);
    }
    double x0 = align == 1 ? x - tw / 2 : align == 2 ? x - tw : x;
    if (max_width > 0 && align != 0) {
        /* The layout is max_width wide; place its (left-aligned) text. */
        pango_layout_set_alignment(layout, PANGO_ALIGN_LEFT);
    }
    cairo_save(cr);
    set_rgb(cr, rgb);
    cairo_move_to(cr, x0, y);
    pango_cairo_show_layout(cr, layout);
    cairo_restore(cr);
    g_object_unref(layout);
    return tw;
}

/* A diagonal hatch over a rectangle, for styles that must read in
 * greyscale too (waiting, exposed). */
static void
hatch(cairo_t *cr, double x, double y, double w, double h, guint32 rgb)
{
    cairo_save(cr);
    cairo_rectangle(cr, x, y, w, h);
    cairo_clip(cr);
    set_rgb(cr, rgb);
    cairo_set_line_width(cr, 0.8);
    for (double d = -h; d < w; d += 5.0) {
        cairo_move_to(cr, x + d, y + h);
        cairo_line_to(cr, x + d + h, y);
    }
    cairo_stroke(cr);
    cairo_restore(cr);
}

/* A legend swatch of `style` at (x, y), 12 x 12. */
static void
swatch(cairo_t *cr, TpsStyle style, double x, double y)
{
    set_rgb(cr, tps_style_rgb(style));
    cairo_rectangle(cr, x, y, 12, 12);
    cairo_fill(cr);
    if (style == TPS_STYLE_WAIT || style == TPS_STYLE_IDLE)
        hatch(cr, x, y, 12, 12, 0x888888);
    set_rgb(cr, 0x555555);
    cairo_set_line_width(cr, 0.6);
    cairo_rectangle(cr, x + 0.3, y + 0.3, 11.4, 11.4);
    cairo_stroke(cr);
}

void
tps_draw_heading(cairo_t *cr, double width, double left, const char *title, const char *subtitle)
{
    set_rgb(cr, 0xFFFFFF);
    cairo_paint(cr);
    tps_draw_text(cr, title, left, 12.0, 15.0, TRUE, 0x111111, width - 2 * left, 0);
    if (subtitle)
        tps_draw_text(cr, subtitle, left, 36.0, 10.0, FALSE, 0x444444, width - 2 * left, 0);
}

/* The left margin of a timeline's headings and lane labels. */
#define TIMELINE_LEFT 16.0

/* The legend: swatch + name, in one row, measured so that nothing
 * overlaps. */
static void
draw_legend(cairo_t *cr, const TpsTimeline *tl)
{
    double lx = tl->plot_x0;
    for (guint i = 0; i < tl->legend->len; i++) {
        TpsStyle style = g_array_index(tl->legend, guint, i);
        double w;
        tps_text_size(cr, tps_style_name(style), 9.5, FALSE, &w, NULL);
        if (lx + 18 + w > tl->width - TIMELINE_LEFT && lx > tl->plot_x0)
            break; /* cannot happen with the seven short names at >= 800 pt */
        swatch(cr, style, lx, tl->legend_y + 4);
        tps_draw_text(cr, tps_style_name(style), lx + 17, tl->legend_y + 2.5, 9.5, FALSE, 0x222222,
                      0, 0);
        lx += 17 + w + 16;
    }
}

/* Each lane's background and label. */
static void
draw_lanes(cairo_t *cr, const TpsTimeline *tl)
{
    for (guint i = 0; i < tl->lanes->len; i++) {
        const TpsLane *lane = &g_array_index(tl->lanes, TpsLane, i);
        set_rgb(cr, lane->link ? 0xFAFAF2 : lane->critical ? 0xEEF3F8 : 0xF3F3F3);
        cairo_rectangle(cr, tl->plot_x0, lane->y, tl->plot_x1 - tl->plot_x0, lane->height);
        cairo_fill(cr);
        double size = lane->link ? 7.5 : 8.5;
        double th;
        tps_text_size(cr, lane->label, size, lane->critical, NULL, &th);
        double row_h = lane->link ? lane->height / lane->rows : 20.0;
        tps_draw_text(cr, lane->label, tl->plot_x0 - 6, lane->y + (row_h - th) / 2, size,
                      lane->critical, lane->link ? 0x666666 : 0x222222,
                      tl->plot_x0 - TIMELINE_LEFT - 6, 2);
    }
}

/* The boxes, in their styles; sub-point boxes are drawn a hairline wide
 * so they stay visible. */
static void
draw_boxes(cairo_t *cr, const TpsTimeline *tl)
{
    for (guint i = 0; i < tl->boxes->len; i++) {
        const TpsBox *b = &g_array_index(tl->boxes, TpsBox, i);
        double w = MAX(b->width, 0.35);
        set_rgb(cr, tps_style_rgb(b->style));
        cairo_rectangle(cr, b->x, b->y, w, b->height);
        cairo_fill(cr);
        if (b->style == TPS_STYLE_WAIT)
            hatch(cr, b->x, b->y, w, b->height, 0x8A8A8A);
        if (b->style == TPS_STYLE_IDLE)
            hatch(cr, b->x, b->y, w, b->height, 0xB0B0B0);
        if (w >= 3.0 && b->style != TPS_STYLE_EXPOSED && b->style != TPS_STYLE_IDLE) {
            /* A thin white edge separates back-to-back kernels. */
            cairo_set_line_width(cr, 0.6);
            set_rgb(cr, 0xFFFFFF);
            cairo_rectangle(cr, b->x + 0.3, b->y + 0.3, w - 0.6, b->height - 0.6);
            cairo_stroke(cr);
        }
        if (b->label) {
            double th;
            tps_text_size(cr, b->label, 8.5, FALSE, NULL, &th);
            tps_draw_text(cr, b->label, b->x + 3, b->y + (b->height - th) / 2, 8.5, FALSE,
                          tps_style_text_rgb(b->style), b->width - 5, 0);
        }
    }
}

/* The marks: a dashed line across the panel, its label right of it (and
 * its left label left of it). */
static void
draw_marks(cairo_t *cr, const TpsTimeline *tl)
{
    for (guint i = 0; i < tl->marks->len; i++) {
        const TpsMark *m = &g_array_index(tl->marks, TpsMark, i);
        static const double dash[] = {4.0, 3.0};
        cairo_save(cr);
        set_rgb(cr, 0x333333);
        cairo_set_line_width(cr, 1.0);
        cairo_set_dash(cr, dash, 2, 0);
        cairo_move_to(cr, m->x, m->y0);
        cairo_line_to(cr, m->x, m->y1);
        cairo_stroke(cr);
        cairo_restore(cr);
        if (m->left_label)
            tps_draw_text(cr, m->left_label, m->x - 4, m->y0, 8.5, FALSE, 0x333333, 0, 2);
        tps_draw_text(cr, m->label, m->x + 4, m->y0, 8.5, FALSE, 0x333333, 0, 0);
    }
}

/* The panels' headings above their lanes, a rule between panels. */
static void
draw_panel_headings(cairo_t *cr, const TpsTimeline *tl)
{
    const double left = TIMELINE_LEFT;
    for (guint i = 0; i < tl->panels->len; i++) {
        const TpsPanel *p = &g_array_index(tl->panels, TpsPanel, i);
        if (i > 0) {
            set_rgb(cr, 0x999999);
            cairo_set_line_width(cr, 0.8);
            cairo_move_to(cr, left, p->y - 4);
            cairo_line_to(cr, tl->width - left, p->y - 4);
            cairo_stroke(cr);
        }
        tps_draw_text(cr, p->heading, left, p->y + 2, 11.0, TRUE, 0x111111, tl->width - 2 * left,
                      0);
    }
}

/* The time axis: its line, ticks, their labels and the axis label. */
static void
draw_time_axis(cairo_t *cr, const TpsTimeline *tl)
{
    set_rgb(cr, 0x333333);
    cairo_set_line_width(cr, 1.0);
    cairo_move_to(cr, tl->plot_x0, tl->axis_y + 0.5);
    cairo_line_to(cr, tl->plot_x1, tl->axis_y + 0.5);
    for (guint i = 0; i < tl->ticks->len; i++) {
        const TpsTick *tick = &g_array_index(tl->ticks, TpsTick, i);
        cairo_move_to(cr, tick->x, tl->axis_y);
        cairo_line_to(cr, tick->x, tl->axis_y + 5);
    }
    cairo_stroke(cr);
    for (guint i = 0; i < tl->ticks->len; i++) {
        const TpsTick *tick = &g_array_index(tl->ticks, TpsTick, i);
        tps_draw_text(cr, tick->label, tick->x, tl->axis_y + 7, 9.0, FALSE, 0x333333, 0, 1);
    }
    tps_draw_text(cr, tl->axis_label, (tl->plot_x0 + tl->plot_x1) / 2, tl->axis_y + 24, 10.0, FALSE,
                  0x222222, 0, 1);
}

void
tps_timeline_draw(cairo_t *cr, gconstpointer data)
{
    const TpsTimeline *tl = data;
    tps_draw_heading(cr, tl->width, TIMELINE_LEFT, tl->title, tl->subtitle);
    draw_legend(cr, tl);
    draw_lanes(cr, tl);

    /* Grid lines at the ticks, under the boxes. */
    const double top = tl->panels->len ? g_array_index(tl->panels, TpsPanel, 0).y + 20 : 0;
    cairo_set_line_width(cr, 0.5);
    set_rgb(cr, 0xD8D8D8);
    for (guint i = 0; i < tl->ticks->len; i++) {
        const TpsTick *tick = &g_array_index(tl->ticks, TpsTick, i);
        cairo_move_to(cr, tick->x, top);
        cairo_line_to(cr, tick->x, tl->axis_y);
    }
    cairo_stroke(cr);

    draw_boxes(cr, tl);
    draw_marks(cr, tl);
    draw_panel_headings(cr, tl);
    draw_time_axis(cr, tl);
}

gboolean
tps_timeline_write(const TpsTimeline *timeline, const char *path, GError **error)
{
    return tps_render_file(path, timeline->width, timeline->height, tps_timeline_draw, timeline,
                           error);
}

/* PNG through libpng directly: cairo's own PNG writer lets libpng try
 * every row filter at the default zlib level, which took 80% of the time
 * of a large timeline (0.9 s for 8 ranks of a GPT-3 layer). Figures are
 * flat colour and mostly repeat the row above, so the UP filter with
 * deflate at level 1 is about three times faster, for files a little
 * larger (level 6 costs 20% more time for 30% smaller files; run-length
 * deflate is no faster and doubles the size). */
static void
png_fail(png_structp png, png_const_charp message)
{
    g_strlcpy(png_get_error_ptr(png), message, 128);
    png_longjmp(png, 1);
}

static void
png_warn(png_structp png, png_const_charp message)
{
}

static gboolean
write_png(cairo_surface_t *surface, FILE *fp, char why[128])
{
    cairo_surface_flush(surface);
    const int w = cairo_image_surface_get_width(surface);
    const int h = cairo_image_surface_get_height(surface);
    const int stride = cairo_image_surface_get_stride(surface);
    const guchar *data = cairo_image_surface_get_data(surface);
    if (data == NULL) {
        g_strlcpy(why, "no image data", 128);
        return FALSE;
    }
    guchar *row = g_malloc((gsize)w * 3);
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, why, png_fail, png_warn);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    gboolean ok = FALSE;
    if (png && info && setjmp(png_jmpbuf(png)) == 0) {
        png_init_io(png, fp);
        png_set_compression_level(png, 1);
        png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_UP);
        png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_RGB,
                     PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_BASE, PNG_FILTER_TYPE_BASE);
        png_write_info(png, info);
        for (int y = 0; y < h; y++) {
            const guint32 *px = (const guint32 *)(const void *)(data + (gsize)y * (gsize)stride);
            for (int x = 0; x < w; x++) { /* xRGB in native endianness */
                row[3 * x] = (guchar)(px[x] >> 16);
                row[3 * x + 1] = (guchar)(px[x] >> 8);
                row[3 * x + 2] = (guchar)px[x];
            }
            png_write_row(png, row);
        }
        png_write_end(png, NULL);
        ok = TRUE;
    } else if (png == NULL || info == NULL) {
        g_strlcpy(why, "out of memory", 128);
    }
    png_destroy_write_struct(png ? &png : NULL, info ? &info : NULL);
    g_free(row);
    return ok;
}

static cairo_status_t
draw_on(cairo_surface_t *surface, double scale, TpsDrawFunc draw, gconstpointer data)
{
    cairo_t *cr = cairo_create(surface);
    cairo_scale(cr, scale, scale);
    draw(cr, data);
    cairo_status_t status = cairo_status(cr);
    cairo_destroy(cr);
    return status;
}

/* The stream Cairo's SVG and PDF surfaces write into. */
static cairo_status_t
write_to_stream(void *closure, const unsigned char *bytes, unsigned int length)
{
    return fwrite(bytes, 1, length, closure) == length ? CAIRO_STATUS_SUCCESS
                                                       : CAIRO_STATUS_WRITE_ERROR;
}

static cairo_status_t
write_to_string(void *closure, const unsigned char *bytes, unsigned int length)
{
    g_string_append_len(closure, (const char *)bytes, length);
    return CAIRO_STATUS_SUCCESS;
}

typedef struct {
    TpsImageFormat format;
    double width, height;
    TpsDrawFunc draw;
    gconstpointer data;
} RenderJob;

/* A TpsWriteFunc: draws the figure of a RenderJob into `out`. */
static gboolean
render_to(FILE *out, gpointer user_data, GError **error)
{
    const RenderJob *job = user_data;
    cairo_surface_t *surface = NULL;
    g_autoptr(GString) svg = NULL;
    g_autoptr(GString) texts = NULL;
    switch (job->format) {
    case TPS_IMAGE_PNG:
        surface =
            cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)(job->width * PNG_SCALE + 0.5),
                                       (int)(job->height * PNG_SCALE + 0.5));
        break;
    case TPS_IMAGE_SVG:
        /* Into memory: the text layer goes in before Cairo's </svg>. */
        svg = g_string_new(NULL);
        texts = g_string_new(NULL);
        surface = cairo_svg_surface_create_for_stream(write_to_string, svg, job->width,
                                                      job->height);
        cairo_surface_set_user_data(surface, &svg_text_key, texts, NULL);
        break;
    case TPS_IMAGE_PDF:
        surface =
            cairo_pdf_surface_create_for_stream(write_to_stream, out, job->width, job->height);
        break;
    }
    cairo_status_t status = cairo_surface_status(surface);
    if (status == CAIRO_STATUS_SUCCESS)
        status =
            draw_on(surface, job->format == TPS_IMAGE_PNG ? PNG_SCALE : 1.0, job->draw, job->data);
    char png_why[128] = "";
    const char *png_error = NULL;
    if (status == CAIRO_STATUS_SUCCESS && job->format == TPS_IMAGE_PNG &&
        !write_png(surface, out, png_why))
        png_error = png_why;
    /* SVG and PDF are written out here. */
    cairo_surface_finish(surface);
    if (status == CAIRO_STATUS_SUCCESS)
        status = cairo_surface_status(surface);
    cairo_surface_destroy(surface);
    if (status == CAIRO_STATUS_SUCCESS && svg) {
        const char *end = g_strrstr(svg->str, "</svg>");
        gsize at = end ? (gsize)(end - svg->str) : svg->len;
        g_string_insert(svg, at, texts->str);
        if (fwrite(svg->str, 1, svg->len, out) != svg->len)
            status = CAIRO_STATUS_WRITE_ERROR;
    }

    if (status != CAIRO_STATUS_SUCCESS || png_error) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_IO, "drawing failed: %s",
                    png_error ? png_error : cairo_status_to_string(status));
        return FALSE;
    }
    return TRUE;
}

gboolean
tps_render_file(const char *path, double width, double height, TpsDrawFunc draw, gconstpointer data,
                GError **error)
{
    RenderJob job = {.width = width, .height = height, .draw = draw, .data = data};
    if (!tps_image_format_from_path(path, &job.format, error))
        return FALSE;
    return tps_write_atomic_stream(path, render_to, &job, error);
}

/* Drops the default font map, so that its fonts are not left for a leak
 * checker to report. Cairo's and fontconfig's own static caches stay:
 * cairo_debug_reset_static_data() aborts the process (an assertion in
 * _cairo_hash_table_destroy) when a font is still referenced, which Pango's
 * fontconfig initialisation thread can still do at exit (seen in about one
 * run in eight of `tpsim run --timeline`), and both caches are reachable
 * from static pointers, which leak checkers do not report. */
void
tps_render_shutdown(void)
{
    pango_cairo_font_map_set_default(NULL);
}
