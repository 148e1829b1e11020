/* NCCL's NVLS (NVLink SHARP) inside one NVLink domain in NCCL's own
 * tuning model: the time by which NCCL chooses it, by release
 * (nccl.version, cost/nccl-tuning.h). tpsim's time of a chosen NVLS call
 * is its own (cost/collective.c, plan_nvls). */
#pragma once

#include <glib.h>

#include "cost/collective.h"
#include "cost/nccl-tuning.h"

/* NCCL's model time (us) of an NVLS call of `kind` and `bytes` over
 * `shape` (one NVLink domain that has NVLS), with the constants and form
 * of `t`; -1 where the release has no NVLS for `kind` (2.18: an
 * all-gather or a reduce-scatter). */
double tps_nvls_model_us(const TpsHardware *hw, const TpsNcclTuning *t, TpsCollKind kind,
                         double bytes, const TpsGroupShape *shape);
