/* The hardware schema: one table of every value of a hardware model file
 * (models/NAME.yaml) and the TpsHardware member it lives in. The loader
 * (io/input/model-file.c), the writer (io/output/model-writer.c) and calibration
 * (calib/calibrate.c) walk it instead of keeping key lists of their own, so
 * a hardware field is added in one place (docs/extending.md).
 *
 * An entry is one key of the file, in one of three shapes:
 *   scalar  `section.key`: one value;
 *   map     `section.key.ELEMENT`: an array of the member's type, one element
 *           per name of `elements` (a dtype, an NCCL protocol), written as a
 *           map;
 *   list    `section.key.I.member`: one member of the items of a list
 *           (gemm.tiles); the entries of one list are consecutive, the number
 *           of items in use is a guint of TpsHardware.
 * Those dotted paths name single values: they are the writer's comment keys
 * (every value of a model carries a comment naming its source, looked up by
 * its path; a list item is one line, its comment keyed by its last member),
 * calibration's parameter keys, and the paths of get/set below.
 *
 * The table's order is the file's: sections in order of first use, keys in
 * order within them. The loader reports the first missing key in that order
 * and the writer writes it. The one top-level entry (section NULL) is the
 * model's name, which the io layer reads and writes itself (it must match
 * the file name).
 *
 * Values are in the file's units (`unit`): numbers are stored as they are
 * written, except TIME (TpsTime nanoseconds in memory, microseconds in the
 * file and through get/set).
 */
#pragma once

#include <glib.h>

#include "cost/hardware.h"

typedef enum {
    TPS_HW_DOUBLE, /* double */
    TPS_HW_UINT,   /* guint */
    TPS_HW_TIME,   /* TpsTime; microseconds in the file */
    TPS_HW_STRING, /* char * (owned); not a number: get/set by path refuse it */
    TPS_HW_BOOL,   /* gboolean; true/false in the file, 1/0 through get/set */
    TPS_HW_ENUM,   /* an int-sized enum; one of `names` in the file, its index through get/set */
} TpsHardwareType;

typedef enum {
    TPS_HW_SCALAR,
    TPS_HW_MAP,
    TPS_HW_LIST,
} TpsHardwareShape;

/* The storage of a list (gemm.tiles). */
typedef struct {
    const char *item;   /* what an item is, plural, for messages ("tiles") */
    gsize count_offset; /* guint in TpsHardware: items in use */
    guint max_items;    /* capacity of the array; a file has 1 to max_items */
    gsize stride;       /* bytes from one item to the next */
} TpsHardwareList;

typedef struct {
    const char *section; /* "gpu", "node", ...; NULL: top level */
    const char *key;     /* key within the section; for a list, the list's key */
    const char *member;  /* TPS_HW_LIST: key within each item; else NULL */
    TpsHardwareType type;
    TpsHardwareShape shape;
    gsize offset;                /* into TpsHardware: the value, the map's first element, or
                                    the member of the list's first item */
    const char *const *elements; /* TPS_HW_MAP: element keys, NULL-terminated */
    const TpsHardwareList *list; /* TPS_HW_LIST: the list's storage */
    const char *const *names;    /* TPS_HW_ENUM: the values, NULL-terminated */
    double min, max;             /* allowed range, inclusive (numbers; file units) */
    gboolean required;           /* a missing key is an error (every field today: a model
                                    states every value with its source) */
    double default_value;        /* when not required and missing (scalars and maps) */
    const char *unit;            /* "GB/s", "us", "" for counts and fractions ... */
    const char *doc;             /* one line */
    const char *fit;             /* the calibration fit that sets it ("launch", "gemm",
                                    "collectives", "copy"); NULL: never fitted */
    double fit_min, fit_max;     /* the range that fit may move it in (DOUBLE only) */
} TpsHardwareField;

/* The table, in file order; *n_fields receives its length. */
const TpsHardwareField *tps_hardware_schema(guint *n_fields);

/* The entry of a single value's `path` ("node.nvlink_gbps",
 * "nccl.slot_bytes.ll", "gemm.tiles.2.efficiency", "name") and, in *index
 * (may be NULL), the map element or list item it names (0 for a scalar);
 * NULL when no entry has that path. A list index is not checked against the
 * items in use (that needs a model): get/set do. */
const TpsHardwareField *tps_hardware_schema_find(const char *path, guint *index);

/* The value at `path` of `hw` as a double (see the types above). Unknown
 * paths, strings and list items beyond those in use: FALSE with
 * TPS_ERROR_INPUT. */
gboolean tps_hardware_schema_get(const TpsHardware *hw, const char *path, double *value,
                                 GError **error);

/* Sets the value at `path`, checked as the loader checks it: within
 * [min, max], a whole number for UINT, 0 or 1 for BOOL, an index of `names`
 * for ENUM; otherwise (and for the errors of get) FALSE with TPS_ERROR_INPUT
 * and `hw` unchanged. */
gboolean tps_hardware_schema_set(TpsHardware *hw, const char *path, double value, GError **error);

/* The end of the run of entries from `first` that share one key of the file
 * (the members of a list): first + 1 for a scalar or a map. */
guint tps_hardware_schema_key_end(guint first);

/* Values of `field` in `hw`: 1, the number of map elements, or the list
 * items in use. */
guint tps_hardware_field_count(const TpsHardwareField *field, const TpsHardware *hw);

/* Offset into TpsHardware of element or item `index` of `field`. */
gsize tps_hardware_field_offset(const TpsHardwareField *field, guint index);

/* The dotted path of element or item `index` of `field`, newly allocated. */
char *tps_hardware_field_path(const TpsHardwareField *field, guint index);

/* Unchecked access to a number (not TPS_HW_STRING) of element or item
 * `index`, in the units of get/set; for code that walks the table. */
double tps_hardware_field_get(const TpsHardwareField *field, const TpsHardware *hw, guint index);
void tps_hardware_field_set(const TpsHardwareField *field, TpsHardware *hw, guint index,
                            double value);
