/* What the files of the tune module share (tune.c: the space and the
 * driver; tune-search.c: evaluation, exhaustive search, coordinate descent
 * and ranking; tune-explain.c: the mechanism that loses). */
#pragma once

#include <glib.h>

#include "sched/tune.h"

/* A point of the space: each slot's candidate (index into its space) and
 * each group on or off. */
typedef struct {
    guint pick[TPS_GEMM_OP];
    gboolean on[TPS_TUNE_GROUP_COUNT];
} TuneState;

/* Simulates configurations, once each (memo by configuration), on worker
 * threads; entries in the order they were first asked for. */
typedef struct {
    const TpsScenario *sc;
    const TpsTuneSpace *space;
    TpsSimCache *cache;
    guint jobs;
    TpsTuneProgress progress;
    gpointer data;
    GHashTable *memo; /* configuration key -> index + 1 in entries */
    GArray *entries;  /* TpsTuneEntry */
} Evaluator;

/* A candidate on `slot` with every knob given (cga_size TE's default). */
void tps_tune_candidate(const TpsScenario *sc, TpsGemmSlot slot, TpsMethod method, guint num_splits,
                        guint num_sm, gboolean margin, gboolean aggregate, gboolean use_ce,
                        TpsOverlapConfig *out);
gboolean tps_tune_same_config(const TpsOverlapConfig *a, const TpsOverlapConfig *b);
void tps_tune_state_config(const TpsTuneSpace *space, const TuneState *st,
                           TpsOverlapConfig out[TPS_GEMM_SLOT_COUNT]);
void tps_tune_base_state(const TpsScenario *sc, const TpsStrategy *base, TpsTuneSpace *space,
                         TuneState *st);

void tps_tune_evaluator_init(Evaluator *ev, const TpsScenario *sc, const TpsTuneSpace *space,
                             guint jobs, TpsTuneProgress progress, gpointer data);
void tps_tune_evaluator_clear(Evaluator *ev);
/* Simulate the `n` states (those not simulated before); `out[i]` gets the
 * entry index of states[i]. */
gboolean tps_tune_evaluate(Evaluator *ev, const TuneState *states, guint n, guint pass,
                           const char *what, guint *out, GError **error);
gboolean tps_tune_exhaustive(Evaluator *ev, TuneState *best, GError **error);
gboolean tps_tune_descend(Evaluator *ev, TuneState *state, guint *passes,
                          TpsTuneSlotGain gains[TPS_GEMM_OP][TPS_METHOD_COUNT], GError **error);
/* report->ranked from the entries, with gains, bands and ties. */
void tps_tune_rank(const Evaluator *ev, TpsTuneReport *report);
void tps_tune_slot_gains_exhaustive(const Evaluator *ev, TpsTuneReport *report);
/* The gain of `r` over report->none and its band. */
void tps_tune_gain(const TpsScenario *sc, const TpsResult *none, const TpsResult *r, double *gain,
                   double *low, double *high);
void tps_tune_explain(const TpsScenario *sc, TpsTuneReport *report);
