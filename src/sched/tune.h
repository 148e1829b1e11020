/* The userbuffers configuration of one layout (`tpsim tune`,
 * docs/tune.md): each GEMM slot's method and knobs searched under
 * Transformer Engine's rules, every configuration simulated as the strategy
 * `custom` (the overlap map on top of megatron), ranked by step time and
 * banded against the step without userbuffers (megatron).
 *
 * TE's rules the space keeps (transformer_engine/pytorch/module/base.py,
 * initialize_ub; shared/docs/real-schedules.md section 2): each slot takes
 * only the methods the method table allows there (sched/method.h), and no
 * slot can be left without overlap on its own: TE overlaps every GEMM it
 * knows, and Megatron switches overlap off by group (the all-gather
 * GEMMs, --disable-tp-comm-overlap-ag; the reduce-scatter GEMMs, -rs; the
 * bulk dgrad and wgrad overlaps, --disable-tp-comm-bulk-dgrad/-wgrad), so
 * "none" is a choice of a group. CUDA_DEVICE_MAX_CONNECTIONS is 1, as
 * Megatron asserts with --tp-comm-overlap (the engine's single hardware
 * queue). Not searched: cga_size (no modelled effect), atomic_gemm (FP8
 * only, not modelled), a reduce-scatter method on the column-parallel
 * dgrads (--tp-comm-overlap-rs-dgrad, which the Megatron mapping does not
 * take).
 *
 * The search: every configuration of the joint space when it has at most
 * `max_exhaustive` points; otherwise coordinate descent from the base
 * configuration: each group's on/off, then each of its slots' candidates
 * (the group on) with every other slot fixed, the fastest kept (ties: the
 * configuration before, then the earlier candidate),
 * in slot order, repeated until a pass changes nothing (or `max_passes`);
 * then the same from NVIDIA's tuned A100 table (te-a100) when the base is
 * another, and the faster of the two ends kept.
 * It finds a configuration no single slot change improves; it is exact
 * when the slots' effects on the step add up, and not otherwise (two slots
 * whose overlaps share a stream or SMs can hide a joint optimum).
 */
#pragma once

#include <glib.h>

#include "sched/scenario.h"
#include "sched/simulate.h"
#include "sched/strategy.h"

/* Megatron's overlap groups (each switched off by one flag). */
typedef enum {
    TPS_TUNE_GROUP_AG,         /* qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad */
    TPS_TUNE_GROUP_RS,         /* proj_fprop, fc2_fprop */
    TPS_TUNE_GROUP_BULK_DGRAD, /* qkv_dgrad, fc1_dgrad */
    TPS_TUNE_GROUP_BULK_WGRAD, /* qkv_wgrad, fc1_wgrad */
    TPS_TUNE_GROUP_COUNT
} TpsTuneGroup;

/* The group of a model slot, and the Megatron flag that turns it off. */
TpsTuneGroup tps_tune_group_of(TpsGemmSlot slot);
const char *tps_tune_group_flag(TpsTuneGroup group);

#define TPS_TUNE_MAX_CANDIDATES 64

/* The candidates of one slot: methods other than none, knobs all given. */
typedef struct {
    guint n;
    TpsOverlapConfig c[TPS_TUNE_MAX_CANDIDATES];
} TpsTuneSlotSpace;

typedef struct {
    TpsTuneSlotSpace slot[TPS_GEMM_OP];
    gboolean group_may_be_off[TPS_TUNE_GROUP_COUNT];
    guint64 max_exhaustive; /* joint points up to which every one is simulated */
    guint max_passes;       /* of coordinate descent */
    gboolean a100_start;    /* descend from te-a100's table too (its configurations join the
                               space) */
} TpsTuneSpace;

/* The default space of `scenario` (a model scenario with SP): ring_exchange
 * on the all-gather slots (copy engine, with and without aggregate where tp
 * is even and above 2; SM-based sends on 2, 4 or 8 SMs); pipeline (2, 4 or
 * 8 splits; 2, 4, 8, 16 or 32 SMs; with and without margin) and
 * ring_exchange (with and without margin) on proj_fprop and fc2_fprop;
 * bulk (2, 4, 8, 16 or 32 SMs, with and without margin) on the dgrad and
 * wgrad slots. SM counts at or above the GPU's are left out. */
void tps_tune_space_default(const TpsScenario *scenario, TpsTuneSpace *space);

/* Points of the joint space: per group, the product of its slots'
 * candidate counts, plus one when it may be off. */
guint64 tps_tune_space_size(const TpsTuneSpace *space);

/* One simulated configuration. */
typedef struct {
    TpsOverlapConfig cfg[TPS_GEMM_SLOT_COUNT];
    gboolean group_on[TPS_TUNE_GROUP_COUNT];
    TpsResult result;
    double gain;                /* none's step / this step - 1 */
    double gain_low, gain_high; /* its band: the difference band over this step */
    gboolean beats_none;        /* gain_low > 0: faster than no userbuffers beyond the band */
    gboolean tied;              /* within the band of the fastest (rank 1 is not tied) */
} TpsTuneEntry;

/* Per slot and method: the fastest step with only that slot changed from
 * the chosen configuration (the last pass's evaluations), as a gain over
 * no userbuffers; NAN where not evaluated. */
typedef struct {
    double gain, low, high;
    guint candidate; /* index in the slot's space */
    guint entry;     /* the simulated configuration (the search's own numbering) */
    double slot_ms;  /* that slot's time per layer there (first task to last, --breakdown's
                        time), against none.gemms[slot].time_ms */
} TpsTuneSlotGain;

typedef struct {
    gboolean exhaustive;
    guint passes;          /* of coordinate descent (0: exhaustive), both starts */
    gboolean second_start; /* descended from te-a100 too */
    guint evaluated;   /* configurations simulated */
    TpsResult none;    /* megatron: no userbuffers */
    TpsTuneEntry base; /* the configuration the search started from */
    GArray *ranked;    /* TpsTuneEntry, every configuration simulated, fastest first */
    TpsTuneSlotGain slot_gain[TPS_GEMM_OP][TPS_METHOD_COUNT];
    gboolean overlap_pays; /* the fastest beats no userbuffers beyond the band */
    char verdict[600];     /* without overlap_pays: the mechanism that loses */
} TpsTuneReport;

/* Called from the calling thread while the search runs: `done` of `total`
 * configurations of the current step (`what`: a slot or group name, or
 * "exhaustive") of pass `pass`. */
typedef void (*TpsTuneProgress)(guint pass, const char *what, guint done, guint total,
                                gpointer data);

/* Search `space` on `scenario` from the configuration of `base` (a
 * userbuffers preset, or custom), on `jobs` threads (0: the online CPUs).
 * An input error when the scenario cannot take userbuffers (an op
 * scenario, no SP, TP across NVLink domains) or `base` does not apply. */
gboolean tps_tune(const TpsScenario *scenario, const TpsStrategy *base, const TpsTuneSpace *space,
                  guint jobs, TpsTuneProgress progress, gpointer data, TpsTuneReport *report,
                  GError **error);

void tps_tune_report_clear(TpsTuneReport *report);

/* The fastest configuration as overlap entries (method none for the slots
 * of groups switched off). */
const TpsTuneEntry *tps_tune_best(const TpsTuneReport *report);
