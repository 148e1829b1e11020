/* NCCL's NVLS_TREE all-reduce (NCCL 2.18 and later): NVLS (NVLink SHARP)
 * inside each NVLink domain, a double binary tree between the domains
 * over their NICs. Its offer, its time in NCCL's own tuning model (how
 * NCCL chooses it) and its plan (how tpsim times it). */
#pragma once

#include <glib.h>

#include "cost/collective.h"
#include "cost/nccl-tuning.h"

/* Whether NCCL has NVLS_TREE for the call: an all-reduce, nccl.nvls 1, a
 * group spanning two or more NVLink domains with more than two members in
 * each (NVIDIA/nccl src/graph/tuning.cc: NVLS_TREE off on one node;
 * src/transport/nvls.cc ncclNvlsInit: no NVLS for 2 local GPUs or fewer). */
gboolean tps_nvls_tree_offered(const TpsHardware *hw, TpsCollKind kind, const TpsGroupShape *shape);

/* NCCL's model time (us) of an NVLS_TREE all-reduce of `bytes`; `net_graph`
 * is the graph bandwidth across domains (nChannels x bwInter, GB/s) the
 * ring's model takes too; with the constants and form of `t` (hw's
 * nccl.version). -1 where not offered. */
double tps_nvls_tree_model_us(const TpsHardware *hw, const TpsNcclTuning *t, double bytes,
                              const TpsGroupShape *shape, double net_graph);

/* The plan of an NVLS_TREE all-reduce of `bytes` over `shape`. */
void tps_nvls_tree_plan(const TpsHardware *hw, double bytes, const TpsGroupShape *shape,
                        TpsCollPlan *plan);
