#include "core/error.h"

/* The quark's name is stringified, dashes and all: not for clang-format. */
/* clang-format off */
G_DEFINE_QUARK(tps-error-quark, tps_error)
/* clang-format on */
