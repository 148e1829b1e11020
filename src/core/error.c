#include "core/error.h"

G_DEFINE_QUARK(tps-error-quark, tps_error)
