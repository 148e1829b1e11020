/* Drawing with Cairo: painting a laid-out timeline, and writing any figure
 * to PNG, SVG or PDF (chosen by the file extension) atomically.
 *
 * Text goes through PangoCairo (hinted, kerned, sharp in every format);
 * fonts are "DejaVu Sans" with fontconfig's fallback. PNGs are rendered at
 * twice the point size so they stay sharp on high-density screens.
 *
 * Nothing is written unless drawing succeeded: the figure is streamed
 * through tps_write_atomic_stream() (core/output.h), which renames it into
 * place once Cairo's (sticky) status says every operation worked.
 */
#pragma once

#include <cairo.h>
#include <glib.h>

#include "render/timeline.h"

typedef enum {
    TPS_IMAGE_PNG,
    TPS_IMAGE_SVG,
    TPS_IMAGE_PDF,
} TpsImageFormat;

/* The format of `path` from its extension (.png, .svg, .pdf; any case).
 * Fails with TPS_ERROR_INPUT naming the three (the command line, which
 * alone knows the name came from an option, makes it a usage error). */
gboolean tps_image_format_from_path(const char *path, TpsImageFormat *format, GError **error);

/* Paints a figure of width x height points on `cr`. */
typedef void (*TpsDrawFunc)(cairo_t *cr, gconstpointer data);

/* Draw into `path` (format by extension) atomically. */
gboolean tps_render_file(const char *path, double width, double height, TpsDrawFunc draw,
                         gconstpointer data, GError **error);

/* Paint a timeline (its size: timeline->width x timeline->height). */
void tps_timeline_draw(cairo_t *cr, gconstpointer timeline);

/* tps_render_file() of a timeline. */
gboolean tps_timeline_write(const TpsTimeline *timeline, const char *path, GError **error);

/* Shared text helper: draw `text` with its top-left corner at (x, y), at
 * `size` points (bold if asked), in 0xRRGGBB, ellipsized to `max_width`
 * (<= 0: no limit), aligned (0 left, 1 centre, 2 right of x). Returns the
 * width it took. */
/* The page of every figure: a white background, the title (15 px bold)
 * and, when there is one, the subtitle (10 px, grey) below it, both from
 * `left` and clipped to the width less both margins. */
void tps_draw_heading(cairo_t *cr, double width, double left, const char *title,
                      const char *subtitle);

double tps_draw_text(cairo_t *cr, const char *text, double x, double y, double size, gboolean bold,
                     guint32 rgb, double max_width, int align);
/* The width and height `text` would take. */
void tps_text_size(cairo_t *cr, const char *text, double size, gboolean bold, double *width,
                   double *height);

/* Drop Pango's default font map at exit (draw.c says why Cairo's and
 * fontconfig's caches are kept): no drawing may follow. */
void tps_render_shutdown(void);
