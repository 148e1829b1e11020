#include "sched/simulate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "cost/nccl-env.h"
#include "sched/bands.h"
#include "sched/layer.h"
#include "sched/pipeline.h"

/* ---- analytic figures ---- */

/* The width of the attention products: hidden, or with model.head_dim
 * heads x head_dim. */
static double
attention_width(const TpsScenario *sc)
{
    return sc->head_dim != 0 ? (double)sc->heads * (double)sc->head_dim : (double)sc->hidden;
}

/* Q K^T and attention x V of one layer's forward, over every query head
 * (grouped-query attention shares K and V, not the products). Under a
 * causal mask (model.causal) the computed half: a query sees the keys up to
 * its own, s (s + 1) / 2 pairs of s^2, counted as s^2 / 2, as Megatron's
 * reported TFLOP/s count it (megatron/training/training.py
 * num_floating_point_operations: the attention term times 0.5 when
 * causal). */
static double
attention_forward_flops(const TpsScenario *sc)
{
    const double T = (double)sc->micro_batch * sc->seq_len;
    /* Multi-head latent attention: Q K^T over qk_head_dim +
     * qk_pos_emb_head_dim channels a head, P V over v_head_dim. */
    const double width =
        sc->mla ? 0.5 * (double)sc->heads * (double)(tps_scenario_mla_qk_dim(sc) + sc->v_head_dim)
                : attention_width(sc);
    const double square = 2.0 * 2.0 * T * (double)sc->seq_len * width;
    return sc->causal ? 0.5 * square : square;
}

/* The model FLOPs of one layer's forward, an MoE layer's (`moe`) from its
 * active parameters: the router and the top_k experts each token goes
 * to, plus the shared experts. */
static double
layer_forward_flops(const TpsScenario *sc, gboolean moe)
{
    const double T = (double)sc->micro_batch * sc->seq_len;
    const double h = sc->hidden, f = sc->ffn_hidden;
    /* QKV (h + 2 kv_heads x head_dim columns: 3 h without grouped-query
     * attention), projection, the MLP's two matrices (three with SwiGLU),
     * plus Q K^T and attention x V (over every query head: grouped-query
     * attention shares K and V, not the products). With model.head_dim
     * the heads hold heads x head_dim columns. */
    double qkv = h + 2.0 * (double)tps_scenario_kv_heads(sc) * (h / (double)sc->heads);
    const double attn = attention_width(sc);
    if (sc->head_dim != 0)
        qkv = attn + 2.0 * (double)tps_scenario_kv_heads(sc) * (double)sc->head_dim;
    const double mlp = sc->mlp == TPS_MLP_SWIGLU ? 3.0 : 2.0;
    double mlp_flops = mlp * 2.0 * T * h * f;
    if (moe) {
        const TpsMoe *m = &sc->moe;
        const double active =
            (double)m->top_k * (double)m->ffn_hidden + (double)m->shared_ffn_hidden;
        mlp_flops = mlp * 2.0 * T * h * active + 2.0 * T * h * (double)m->experts;
    }
    /* Multi-head latent attention: its five GEMMs (down, up and output
     * projections), 2 T FLOPs a weight. */
    const double attn_gemms =
        sc->mla
            ? 2.0 * T * (tps_scenario_mla_replicated_params(sc) + tps_scenario_mla_split_params(sc))
            : 2.0 * T * h * qkv + 2.0 * T * h * attn;
    return attn_gemms + mlp_flops + attention_forward_flops(sc);
}

/* Of all layers' forwards. */
static double
layers_forward_flops(const TpsScenario *sc)
{
    if (!tps_scenario_is_moe(sc))
        return sc->layers * layer_forward_flops(sc, FALSE);
    const double moe = (double)tps_scenario_moe_layers(sc);
    return moe * layer_forward_flops(sc, TRUE) +
           ((double)sc->layers - moe) * layer_forward_flops(sc, FALSE);
}

double
tps_model_flops_per_iteration(const TpsScenario *sc)
{
    const double T = (double)sc->micro_batch * sc->seq_len;
    const double micro = (double)sc->global_batch / sc->micro_batch;
    const double logits = 2.0 * T * sc->hidden * (double)sc->vocab;
    /* Backward costs twice the forward (dgrad + wgrad). */
    return micro * 3.0 * (layers_forward_flops(sc) + logits);
}

double
tps_hardware_flops_per_iteration(const TpsScenario *sc)
{
    const double micro = (double)sc->global_batch / sc->micro_batch;
    double extra = 0.0;
    if (sc->recompute == TPS_RECOMPUTE_FULL && tps_scenario_is_moe(sc))
        return tps_model_flops_per_iteration(sc) + micro * layers_forward_flops(sc);
    if (sc->recompute == TPS_RECOMPUTE_FULL)
        extra = layer_forward_flops(sc, FALSE);
    else if (sc->recompute == TPS_RECOMPUTE_SELECTIVE)
        extra = attention_forward_flops(sc); /* Q K^T and P V again */
    return tps_model_flops_per_iteration(sc) + micro * sc->layers * extra;
}

double
tps_mfu_peak_tflops(const TpsHardware *hw)
{
    return hw->peak_tflops[TPS_DTYPE_BF16];
}

/* ---- running graphs ---- */

static gboolean
run_builder(TpsBuilder *b, TpsRunStats *stats, GError **error)
{
    /* Folded: every rank added as many tasks as rank 0 (each of its
     * stand-ins names one of rank 0's). */
    for (guint r = 0; b->folded && r < b->ranks; r++)
        g_assert(b->fold_next[r] == b->fold_ids->len);
    if (!tps_engine_run(b->engine, stats, error)) {
        g_prefix_error(error, "%s: ", b->scenario->name);
        return FALSE;
    }
    return TRUE;
}

/* Latest end of the marker over all ranks. */
static TpsTime
mark_end(const TpsBuilder *b, const TpsOpIds *mark)
{
    TpsTime end = 0;
    for (guint r = 0; r < tps_builder_sim_ranks(b); r++)
        end = MAX(end, tps_engine_span(b->engine, mark->id[r])->end);
    return end;
}

/* Rank 0's exposed and busy communication time within [lo, hi), added. */
static void
comm_figures(const TpsRun *run, TpsTime lo, TpsTime hi, TpsTime *exposed, TpsTime *busy)
{
    *exposed += tps_run_exposed(run, 0, lo, hi);
    *busy += tps_run_busy(run, 0, TPS_CLASS_COMM, lo, hi);
}

/* Rank 0's communication kernels that `apart` picks (a CP stream's, an
 * MoE layer's dispatch and combine) apart from the TP group's: each
 * group's exposed (not under compute) and busy time in [lo, hi), added to
 * `part` and `tp` ([0] exposed, [1] busy). */
static void
apart_comm_figures(const TpsRun *run, TpsTime lo, TpsTime hi,
                   gboolean (*apart)(const TpsSpan *sp, const TpsBuilder *b), const TpsBuilder *b,
                   TpsTime part[2], TpsTime tp[2])
{
    g_autoptr(GArray) part_ids = g_array_new(FALSE, FALSE, sizeof(TpsTaskId));
    g_autoptr(GArray) tp_ids = g_array_new(FALSE, FALSE, sizeof(TpsTaskId));
    for (TpsTaskId id = 0; id < tps_run_n_spans(run); id++) {
        const TpsSpan *sp = tps_run_span(run, id);
        if (sp->rank != 0 || tps_kind_class(sp->kind) != TPS_CLASS_COMM)
            continue;
        g_array_append_val(apart(sp, b) ? part_ids : tp_ids, id);
    }
    g_autoptr(GArray) compute = tps_run_intervals(run, 0, TPS_CLASS_COMPUTE, NULL);
    GArray *ids[2] = {part_ids, tp_ids};
    TpsTime *out[2] = {part, tp};
    for (guint i = 0; i < 2; i++) {
        g_autoptr(GArray) comm = tps_run_intervals(run, 0, TPS_CLASS_COMM, ids[i]);
        g_autoptr(GArray) under = g_array_copy(compute);
        out[i][0] += tps_intervals_exposed(comm, under, lo, hi);
        out[i][1] += tps_intervals_measure(comm, lo, hi);
    }
}

/* A kernel of rank 0's CP stream. */
static gboolean
on_cp_stream(const TpsSpan *sp, const TpsBuilder *b)
{
    return sp->stream == b->cp[0];
}

/* The attention core of one direction in [lo, hi) under context
 * parallelism, as a breakdown row: from the first to the last task of
 * rank 0's CP streams and attention kernels, the attention kernels' busy
 * time as its compute, the CP stream's kernels as its communication,
 * exposed where no compute runs; the efficiency the share of that
 * communication hidden (1 - exposed / busy). */
static void
cp_breakdown(const TpsBuilder *b, const TpsRun *run, TpsTime lo, TpsTime hi, TpsGemmBreakdown *g)
{
    g_autoptr(GArray) attn = g_array_new(FALSE, FALSE, sizeof(TpsInterval));
    g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(TpsTaskId));
    TpsTime first = TPS_TIME_NEVER, last = 0;
    for (TpsTaskId id = 0; id < tps_run_n_spans(run); id++) {
        const TpsSpan *sp = tps_run_span(run, id);
        if (sp->rank != 0 || sp->start < lo || sp->end > hi ||
            tps_kind_class(sp->kind) == TPS_CLASS_LINK)
            continue;
        const gboolean on_cp = sp->stream == b->cp[0] || sp->stream == b->cp_attn[0];
        if (!on_cp && sp->kind != TPS_KIND_ATTENTION)
            continue;
        if (sp->kind == TPS_KIND_ATTENTION) {
            TpsInterval iv = {sp->start, sp->end};
            g_array_append_val(attn, iv);
        }
        if (sp->stream == b->cp[0] && tps_kind_class(sp->kind) == TPS_CLASS_COMM)
            g_array_append_val(ids, id);
        first = MIN(first, sp->start);
        last = MAX(last, sp->end);
    }
    if (first >= last)
        return;
    g_autoptr(GArray) comm = tps_run_intervals(run, 0, TPS_CLASS_COMM, ids);
    g_autoptr(GArray) compute = tps_run_intervals(run, 0, TPS_CLASS_COMPUTE, NULL);
    const TpsTime busy = tps_intervals_measure(comm, first, last);
    const TpsTime exposed = tps_intervals_exposed(comm, compute, first, last);
    *g = (TpsGemmBreakdown){
        .present = TRUE,
        .collective = TPS_COLL_COUNT,
        .method = TPS_METHOD_NONE,
        .schedule = tps_cp_comm_names[b->scenario->cp_comm],
        .time_ms = tps_time_to_ms(last - first),
        .gemm_ms = tps_time_to_ms(tps_intervals_measure(attn, first, last)),
        .comm_ms = tps_time_to_ms(busy),
        .exposed_ms = tps_time_to_ms(exposed),
        .efficiency = busy > 0 ? 1.0 - (double)exposed / (double)busy : NAN,
    };
}

static int moe_part(const char *name);

/* An MoE layer's dispatch or combine kernel. */
static gboolean
moe_dispatch_or_combine(const TpsSpan *sp, const TpsBuilder *b)
{
    const int part = moe_part(sp->name);
    return part == 0 || part == 1;
}

/* Communication of one GEMM that queued behind other communication on
 * its stream (two overlaps sharing NCCL's side stream or a userbuffers
 * stream): the real system serialises them the same way; say which. */
static void
serialisation_note(const TpsRun *run, GArray *ids, TpsGemmBreakdown *g)
{
    for (guint i = 0; i < ids->len; i++) {
        const TpsSpan *sp = tps_run_span(run, g_array_index(ids, TpsTaskId, i));
        if (tps_kind_class(sp->kind) != TPS_CLASS_COMM || sp->stream_wait <= 0 ||
            sp->stream == TPS_STREAM_NONE)
            continue;
        /* Its stream predecessor: the latest earlier task on that stream. */
        const TpsSpan *pred = NULL;
        for (TpsTaskId id = sp->id; id-- > 0;) {
            const TpsSpan *q = tps_run_span(run, id);
            if (q->stream == sp->stream) {
                pred = q;
                break;
            }
        }
        if (pred == NULL || tps_kind_class(pred->kind) != TPS_CLASS_COMM)
            continue;
        /* Chunks of the same overlap queue behind each other by design. */
        gboolean same = FALSE;
        for (guint j = 0; j < ids->len && !same; j++)
            same = g_array_index(ids, TpsTaskId, j) == pred->id;
        if (same)
            continue;
        g_snprintf(g->note, sizeof g->note, "%s queued %.3f ms on stream '%s' behind %s", sp->name,
                   tps_time_to_ms(sp->stream_wait), tps_run_stream_name(run, sp->stream),
                   pred->name);
        return;
    }
}

/* How the collective of one GEMM ran (TpsGemmBreakdown.schedule): without
 * an overlap method, Megatron's NCCL collectives run either on the compute
 * stream (blocking) or on its NCCL side stream beside the GEMM (the
 * backward's all-gather and reduce-scatter), which the method "none" did
 * not tell apart. */
static const char *
schedule_name(const TpsRun *run, GArray *ids, const TpsGemmBreakdown *g)
{
    if (g->collective == TPS_COLL_COUNT)
        return "none";
    if (g->method != TPS_METHOD_NONE)
        return tps_method_names[g->method];
    TpsStreamId gemm_stream = TPS_STREAM_NONE;
    for (guint i = 0; i < ids->len && gemm_stream == TPS_STREAM_NONE; i++) {
        const TpsSpan *sp = tps_run_span(run, g_array_index(ids, TpsTaskId, i));
        if (sp->kind == TPS_KIND_GEMM)
            gemm_stream = sp->stream;
    }
    for (guint i = 0; i < ids->len; i++) {
        const TpsSpan *sp = tps_run_span(run, g_array_index(ids, TpsTaskId, i));
        if (tps_kind_class(sp->kind) == TPS_CLASS_COMM && sp->stream != TPS_STREAM_NONE &&
            sp->stream != gemm_stream)
            return "nccl-side-stream";
    }
    return "blocking";
}

/* The per-GEMM figures of the measured layer, from the tasks the builder
 * recorded for each slot on rank 0. */
static void
gemm_breakdown(const TpsBuilder *b, const TpsRun *run, TpsResult *res)
{
    g_autoptr(GArray) all_compute = tps_run_intervals(run, 0, TPS_CLASS_COMPUTE, NULL);

    for (guint slot = 0; slot < TPS_GEMM_SLOT_COUNT; slot++) {
        GArray *ids = b->slot_tasks[slot];
        TpsGemmBreakdown *g = &res->gemms[slot];
        if (ids->len == 0)
            continue;
        g_autoptr(GArray) gemm = g_array_new(FALSE, FALSE, sizeof(TpsInterval));
        g_autoptr(GArray) comm = tps_run_intervals(run, 0, TPS_CLASS_COMM, ids);
        g_autoptr(GArray) compute = g_array_copy(all_compute);
        TpsTime lo = TPS_TIME_NEVER, hi = 0;
        for (guint i = 0; i < ids->len; i++) {
            const TpsSpan *sp = tps_run_span(run, g_array_index(ids, TpsTaskId, i));
            if (tps_kind_class(sp->kind) == TPS_CLASS_LINK)
                continue; /* inside its kernel */
            if (sp->kind == TPS_KIND_GEMM) {
                TpsInterval iv = {sp->start, sp->end};
                g_array_append_val(gemm, iv);
            }
            lo = MIN(lo, sp->start);
            hi = MAX(hi, sp->end);
        }
        g->present = TRUE;
        g->collective = b->slot_coll[slot];
        g->method = b->overlap[slot].method;
        g->schedule = schedule_name(run, ids, g);
        g->m = b->slot_m[slot];
        g->n = b->slot_n[slot];
        g->k = b->slot_k[slot];
        g->comm_bytes = b->slot_bytes[slot];
        g->time_ms = tps_time_to_ms(hi - lo);
        g->gemm_ms = tps_time_to_ms(tps_intervals_measure(gemm, lo, hi));
        g->exposed_ms = tps_time_to_ms(tps_intervals_exposed(comm, compute, lo, hi));
        g->comm_ms = tps_time_to_ms(tps_intervals_measure(comm, lo, hi));
        const TpsTime alone = b->slot_gemm_alone[slot], blocking = b->slot_comm_alone[slot];
        g->efficiency = blocking > 0 ? 1.0 - (double)((hi - lo) - alone) / (double)blocking : NAN;
        serialisation_note(run, ids, g);
    }
}

/* Which part of the routed MoE layer a span is, by its op's name after
 * the layer's prefix ("l1.", "l0r." for recomputed work): 0 to the
 * experts (the dispatch, the combine's gradient), 1 back (the combine,
 * the dispatch's gradient), 2 an expert GEMM, -1 none. The callers count
 * spans within the measured layer's windows. */
static int
moe_part(const char *name)
{
    const char *op = strchr(name, '.');
    if (name[0] != 'l' || op == NULL)
        return -1;
    op++;
    if (g_str_has_prefix(op, "dispatch_bwd"))
        return 1;
    if (g_str_has_prefix(op, "combine_bwd") || g_str_has_prefix(op, "dispatch"))
        return 0;
    if (g_str_has_prefix(op, "combine"))
        return 1;
    if (g_str_has_prefix(op, "expert_fc"))
        return 2;
    return -1;
}

/* The routed part's figures of the measured layer (TpsMoeBreakdown). */
static void
moe_breakdown(const TpsBuilder *b, const TpsRun *run, TpsTime f0, TpsTime f1, TpsTime b1,
              TpsTime b0, TpsResult *res)
{
    if (!tps_scenario_is_moe(b->scenario))
        return;
    GArray *ids[3];
    for (guint i = 0; i < 3; i++)
        ids[i] = g_array_new(FALSE, FALSE, sizeof(TpsTaskId));
    for (TpsTaskId id = 0; id < tps_run_n_spans(run); id++) {
        const TpsSpan *sp = tps_run_span(run, id);
        if (sp->rank != 0 || tps_kind_class(sp->kind) == TPS_CLASS_LINK)
            continue;
        const int part = moe_part(sp->name);
        if (part >= 0)
            g_array_append_val(ids[part], id);
    }
    const TpsTime lo[2] = {f0, b1}, hi[2] = {f1, b0};
    double busy[3] = {0.0, 0.0, 0.0}, exposed[2] = {0.0, 0.0};
    /* The interval functions clip what they are given to their window:
     * fresh arrays for each. */
    for (guint w = 0; w < 2; w++)
        for (guint i = 0; i < 3; i++) {
            g_autoptr(GArray) iv =
                tps_run_intervals(run, 0, i < 2 ? TPS_CLASS_COMM : TPS_CLASS_COMPUTE, ids[i]);
            busy[i] += tps_time_to_ms(tps_intervals_measure(iv, lo[w], hi[w]));
            if (i == 2)
                continue;
            g_autoptr(GArray) mine = tps_run_intervals(run, 0, TPS_CLASS_COMM, ids[i]);
            g_autoptr(GArray) compute = tps_run_intervals(run, 0, TPS_CLASS_COMPUTE, NULL);
            exposed[i] += tps_time_to_ms(tps_intervals_exposed(mine, compute, lo[w], hi[w]));
        }
    res->moe = (TpsMoeBreakdown){
        .present = TRUE,
        .dispatch_ms = busy[0],
        .dispatch_exposed_ms = exposed[0],
        .combine_ms = busy[1],
        .combine_exposed_ms = exposed[1],
        .experts_ms = busy[2],
    };
    for (guint i = 0; i < 3; i++)
        g_array_unref(ids[i]);
}

/* The finished run of the builder's graph, labelled with the strategy. */
static TpsRun *
export_run(const TpsBuilder *b, const TpsStrategy *strategy)
{
    TpsRun *run = tps_engine_export_run(b->engine);
    run->label = g_strdup(strategy->name);
    return run;
}

/* The layer, two deep: forward l0, l1; backward l1, l0. The measured
 * layer is l1 forward and l0 backward (the builder records it); `m` marks
 * the ends of l0's and l1's forward, then of l1's and l0's backward. */
static void
build_two_layers(TpsBuilder *b, const TpsScenario *sc, TpsOpIds m[4])
{
    tps_layer_forward(b, 0);
    tps_builder_mark(b, "l0.fwd_end", &m[0]);
    b->recording = TRUE;
    tps_layer_forward(b, 1);
    b->recording = FALSE;
    tps_builder_mark(b, "l1.fwd_end", &m[1]);
    for (int i = 1; i >= 0; i--) {
        if (sc->recompute == TPS_RECOMPUTE_FULL)
            tps_layer_forward(b, (guint)i + TPS_LAYER_RECOMPUTE); /* the forward again */
        b->recording = i == 0;
        tps_layer_backward(b, (guint)i);
        b->recording = FALSE;
        tps_builder_mark(b, i == 1 ? "l1.bwd_end" : "l0.bwd_end", i == 1 ? &m[2] : &m[3]);
    }
}

/* The measured layer's figures from its run, forward from f0 to f1 and
 * backward from b1 to b0: TP communication exposed and busy, the band
 * of rank 0 (the ranks of a TP group run the same work), the GEMM
 * breakdown. */
static void
layer_figures(const TpsBuilder *b, const TpsRun *run, TpsTime f0, TpsTime f1, TpsTime b1,
              TpsTime b0, TpsResult *res)
{
    const TpsScenario *sc = b->scenario;
    TpsTime exposed = 0, busy = 0;
    if (sc->cp > 1) {
        TpsTime cp[2] = {0, 0}, tp[2] = {0, 0};
        apart_comm_figures(run, f0, f1, on_cp_stream, b, cp, tp);
        apart_comm_figures(run, b1, b0, on_cp_stream, b, cp, tp);
        exposed = tp[0], busy = tp[1];
        res->cp_exposed_ms = tps_time_to_ms(cp[0]);
        res->cp_comm_ms = tps_time_to_ms(cp[1]);
        cp_breakdown(b, run, f0, f1, &res->cp_attention[0]);
        cp_breakdown(b, run, b1, b0, &res->cp_attention[1]);
    } else if (tps_scenario_is_moe(sc)) {
        TpsTime ep[2] = {0, 0}, tp[2] = {0, 0};
        apart_comm_figures(run, f0, f1, moe_dispatch_or_combine, b, ep, tp);
        apart_comm_figures(run, b1, b0, moe_dispatch_or_combine, b, ep, tp);
        exposed = tp[0], busy = tp[1];
        res->ep_exposed_ms = tps_time_to_ms(ep[0]);
        res->ep_comm_ms = tps_time_to_ms(ep[1]);
    } else {
        comm_figures(run, f0, f1, &exposed, &busy);
        comm_figures(run, b1, b0, &exposed, &busy);
    }
    res->exposed_comm_ms = tps_time_to_ms(exposed);
    res->tp_comm_ms = tps_time_to_ms(busy);
    TpsTime parts[TPS_BAND_COUNT] = {0};
    const gboolean small = sc->micro_batch * sc->seq_len < TPS_BAND_GEMM_MIN_TOKENS;
    tps_band_parts(run, 0, f0, f1, small, parts);
    tps_band_parts(run, 0, b1, b0, small, parts);
    double low, high;
    tps_band_of_parts(&sc->hardware, parts, &low, &high);
    const double layer = (double)((f1 - f0) + (b0 - b1));
    res->band_low = layer > 0 ? low / layer : 1.0;
    res->band_high = layer > 0 ? high / layer : 1.0;
    for (guint c = 0; c < TPS_BAND_COUNT; c++)
        res->band_parts_ns[c] = (double)parts[c];
    gemm_breakdown(b, run, res);
    moe_breakdown(b, run, f0, f1, b1, b0, res);
}

/* Room in `engine` for the graph `hint` says (tasks, edges: atomics) at
 * once, where one was built before (the engine's arrays are otherwise
 * grown by doubling, each time copied): capacity only, the graph and its
 * run are the same. */
static void
reserve_hint(TpsEngine *engine, const guint hint[2])
{
    tps_engine_reserve(engine, (guint)g_atomic_int_get(&hint[0]),
                       (guint)g_atomic_int_get(&hint[1]));
}

/* `engine`'s graph noted in `hint`, where it is the largest so far (a
 * race only loses a hint). */
static void
note_hint(const TpsEngine *engine, guint hint[2])
{
    const guint n[2] = {tps_engine_n_tasks(engine), tps_engine_n_edges(engine)};
    for (guint i = 0; i < 2; i++)
        if (n[i] > (guint)g_atomic_int_get(&hint[i]))
            g_atomic_int_set(&hint[i], (gint)n[i]);
}

/* model.moe.overlap_ep_comm: the combined forward and backward of one
 * layer, its forward layer of kind `fwd_moe` and its backward one of
 * `bwd_moe`, simulated two deep as the layer is (a pair of layers 0 and
 * 3, then the measured pair of layers 1 and 2, the forward chained from
 * the first's combine): its time into *time, and where `res` is given the
 * routed part's figures of the measured pair (dispatch, combine, busy and
 * exposed beside the other micro-batch's compute) in place of the
 * separate passes'. */
static gboolean
simulate_pair(const TpsScenario *sc, const TpsStrategy *strategy, gboolean fwd_moe,
              gboolean bwd_moe, TpsResult *res, TpsTime *time, GError **error)
{
    TpsBuilder b;
    TpsOpIds chain, m[2];
    TpsRunStats stats;
    /* On several hardware queues: Megatron-Core's MoE README gives
     * CUDA_DEVICE_MAX_CONNECTIONS > 1 as a requirement of the overlap
     * (megatron/core/transformer/moe/README.md, "Requirements for EP A2A
     * Overlap"); with one, a kernel of either stream waiting for its
     * stream's last would hold back the other stream's. */
    tps_builder_init_queues(&b, sc, strategy->id, FALSE);
    for (guint r = 0; r < b.ranks; r++)
        chain.id[r] = TPS_TASK_NONE;
    tps_layer_forward_backward_kinds(&b, 0, fwd_moe, 3, bwd_moe, &chain);
    tps_builder_mark(&b, "pair0.end", &m[0]);
    tps_layer_forward_backward_kinds(&b, 1, fwd_moe, 2, bwd_moe, &chain);
    tps_builder_mark(&b, "pair1.end", &m[1]);
    if (!run_builder(&b, &stats, error)) {
        tps_builder_clear(&b);
        return FALSE;
    }
    const TpsTime p0 = mark_end(&b, &m[0]), p1 = mark_end(&b, &m[1]);
    *time = p1 - p0;
    if (res != NULL) {
        g_autoptr(TpsRun) run = export_run(&b, strategy);
        TpsTime ep[2] = {0, 0}, tp[2] = {0, 0};
        apart_comm_figures(run, p0, p1, moe_dispatch_or_combine, &b, ep, tp);
        res->ep_exposed_ms = tps_time_to_ms(ep[0]);
        res->ep_comm_ms = tps_time_to_ms(ep[1]);
        moe_breakdown(&b, run, p0, p1, p1, p1, res);
        res->moe.pair_ms = tps_time_to_ms(p1 - p0);
    }
    tps_builder_clear(&b);
    return TRUE;
}

/* The pairs of the step: the MoE layers' (its figures into `res`), and
 * where dense layers are mixed in, the three pairs with a dense layer in
 * them (Megatron pairs layer i's forward with layer n - 1 - i's
 * backward, of whichever kinds). */
static gboolean
simulate_layer_pair(const TpsScenario *sc, const TpsStrategy *strategy, TpsResult *res,
                    TpsPieceTimes *pieces, GError **error)
{
    if (!tps_scenario_is_moe(sc) || !sc->moe.overlap_ep_comm)
        return TRUE;
    if (!simulate_pair(sc, strategy, TRUE, TRUE, res, &pieces->layer_fb, error))
        return FALSE;
    if (!tps_scenario_mixes_layers(sc))
        return TRUE;
    return simulate_pair(sc, strategy, FALSE, FALSE, NULL, &pieces->dense_fb, error) &&
           simulate_pair(sc, strategy, FALSE, TRUE, NULL, &pieces->dense_moe_fb, error) &&
           simulate_pair(sc, strategy, TRUE, FALSE, NULL, &pieces->moe_dense_fb, error);
}

/* The layer, simulated two deep on every TP rank: its forward and
 * backward times into `pieces`, its figures into `res`, its run into
 * `record` if asked. */
static gboolean
simulate_layer(const TpsScenario *sc, const TpsStrategy *strategy, TpsResult *res,
               TpsPieceTimes *pieces, TpsRun **record, guint size_hint[2], GError **error)
{
    TpsBuilder b;
    TpsOpIds m[4];
    /* Its figures are rank 0's and its times the group's: one rank stands
     * for the TP group's identical ones, unless every rank's run is
     * asked for. */
    if (record != NULL)
        tps_builder_init(&b, sc, strategy->id);
    else
        tps_builder_init_fold(&b, sc, strategy->id);
    if (size_hint != NULL)
        reserve_hint(b.engine, size_hint);
    build_two_layers(&b, sc, m);
    res->tasks = tps_engine_n_tasks(b.engine);
    if (size_hint != NULL)
        note_hint(b.engine, size_hint);
    if (!run_builder(&b, &res->stats, error)) {
        tps_builder_clear(&b);
        return FALSE;
    }

    TpsTime f0 = mark_end(&b, &m[0]), f1 = mark_end(&b, &m[1]);
    TpsTime b1 = mark_end(&b, &m[2]), b0 = mark_end(&b, &m[3]);
    res->forward_ms = tps_time_to_ms(f1 - f0);
    res->backward_ms = tps_time_to_ms(b0 - b1);
    pieces->layer_fwd = f1 - f0;
    pieces->layer_bwd = b0 - b1;

    g_autoptr(TpsRun) run = export_run(&b, strategy);
    layer_figures(&b, run, f0, f1, b1, b0, res);
    if (!simulate_layer_pair(sc, strategy, res, pieces, error)) {
        tps_builder_clear(&b);
        return FALSE;
    }
    if (record) {
        run->fwd_start = f0;
        run->fwd_end = f1;
        run->bwd_start = b1;
        run->bwd_end = b0;
        *record = g_steal_pointer(&run);
    }
    tps_builder_clear(&b);
    return TRUE;
}

/* A model that mixes dense and MoE layers: its dense layer simulated as
 * the MoE one is (two deep, on every TP rank), its times into
 * pieces->dense_fwd and dense_bwd and res->dense_forward_ms and
 * dense_backward_ms; nothing for a model that does not mix. */
static gboolean
simulate_dense_layer(const TpsScenario *sc, const TpsStrategy *strategy, TpsResult *res,
                     TpsPieceTimes *pieces, guint size_hint[2], GError **error)
{
    if (!tps_scenario_mixes_layers(sc))
        return TRUE;
    TpsScenario dense;
    tps_scenario_dense_layer(sc, &dense);
    g_autofree TpsResult *figures = g_new0(TpsResult, 1);
    figures->strategy = strategy;
    TpsPieceTimes got = {0};
    if (!simulate_layer(&dense, strategy, figures, &got, NULL, size_hint, error))
        return FALSE;
    pieces->dense_fwd = got.layer_fwd;
    pieces->dense_bwd = got.layer_bwd;
    res->dense_forward_ms = figures->forward_ms;
    res->dense_backward_ms = figures->backward_ms;
    return TRUE;
}

/* Embedding, output layer and loss of one micro-batch, each piece timed
 * between markers, into `pieces`; their sum into `res`. */
static gboolean
simulate_head(const TpsScenario *sc, const TpsStrategy *strategy, TpsResult *res,
              TpsPieceTimes *pieces, GError **error)
{
    TpsBuilder b;
    TpsRunStats stats;
    TpsOpIds marks[4];
    /* (The largest head graph of the process, as for the layer's.) */
    static guint size_hint[2];
    /* Every rank's run is never asked for: one rank stands for the TP
     * group's identical ones where they are. */
    tps_builder_init_fold(&b, sc, strategy->id);
    reserve_hint(b.engine, size_hint);
    tps_embedding_forward(&b);
    tps_builder_mark(&b, "embedding.end", &marks[0]);
    tps_head_forward(&b);
    tps_builder_mark(&b, "head.end", &marks[1]);
    tps_head_backward(&b);
    tps_builder_mark(&b, "head_bwd.end", &marks[2]);
    tps_embedding_backward(&b);
    tps_builder_mark(&b, "embedding_bwd.end", &marks[3]);
    note_hint(b.engine, size_hint);
    if (!run_builder(&b, &stats, error)) {
        tps_builder_clear(&b);
        return FALSE;
    }
    TpsTime piece_end[4];
    for (guint i = 0; i < 4; i++)
        piece_end[i] = mark_end(&b, &marks[i]);
    res->head_ms = tps_time_to_ms(piece_end[3]);
    tps_builder_clear(&b);

    pieces->emb_fwd = piece_end[0];
    pieces->head_fwd = piece_end[1] - piece_end[0];
    pieces->head_bwd = piece_end[2] - piece_end[1];
    pieces->emb_bwd = piece_end[3] - piece_end[2];
    return TRUE;
}

/* The simulated pieces of a step: the layer (two deep, on every TP rank)
 * and the embedding/head graph; fills the layer figures of `res`. */
static gboolean
simulate_pieces(const TpsScenario *sc, const TpsStrategy *strategy, TpsResult *res,
                TpsPieceTimes *pieces, TpsRun **record, GError **error)
{
    /* Tasks and edges of the largest layer graph built without a cache
     * in this process (atomics), as the cache keeps its own: capacity
     * only (before: the engine's arrays grown by doubling from 64, each
     * time copied, 1.0 million of the 1T-class pieces' 12.7 million
     * instructions). */
    static guint size_hint[2];
    TpsPieceTimes got = {0};
    if (!simulate_layer(sc, strategy, res, &got, record, size_hint, error) ||
        !simulate_dense_layer(sc, strategy, res, &got, size_hint, error) ||
        !simulate_head(sc, strategy, res, &got, error))
        return FALSE;
    *pieces = got;
    return TRUE;
}

/* The step around the pieces: the pipeline schedule, the data-parallel
 * reduction and the optimizer; then MFU, HFU, tokens/s and memory. */
static gboolean
simulate_step(const TpsScenario *sc, const TpsStrategy *strategy, const TpsPieceTimes *pieces,
              TpsResult *res, GError **error)
{
    TpsStepResult step;
    if (!tps_pipeline_simulate(sc, pieces, &step, error))
        return FALSE;
    /* The same on every stage, so the busiest stage stays the busiest. */
    TpsOverlapConfig overlap[TPS_GEMM_SLOT_COUNT];
    tps_strategy_overlap(strategy, sc, overlap);
    tps_stage_memory_add_userbuffers(sc, overlap, &step.memory);
    res->micro_batches = sc->global_batch / (sc->micro_batch * sc->dp);
    res->step_time_s = tps_time_to_ms(step.step) * 1e-3;
    /* The layers are most of a step; the embedding, head, optimizer and
     * data-parallel reduction are taken with the layer's relative band. */
    res->step_time_s_low = res->step_time_s * res->band_low;
    res->step_time_s_high = res->step_time_s * res->band_high;
    res->optimizer_ms = tps_time_to_ms(step.optimizer);
    res->bubble_fraction = step.bubble_fraction;
    res->dp_exposed_ms = tps_time_to_ms(step.dp_exposed);
    res->param_gather_exposed_ms = tps_time_to_ms(step.param_gather_exposed);
    res->compute_end_s = tps_time_to_ms(step.compute_end) * 1e-3;

    const double gpus = (double)sc->tp * sc->pp * sc->dp * MAX(sc->cp, 1u);
    const double peak = tps_mfu_peak_tflops(&sc->hardware) * 1e12;
    const double per_gpu_s = res->step_time_s * gpus, model = tps_model_flops_per_iteration(sc);
    res->model_tflops_per_gpu = model / per_gpu_s * 1e-12;
    res->mfu = model / (per_gpu_s * peak);
    res->hfu = tps_hardware_flops_per_iteration(sc) / (per_gpu_s * peak);
    res->tokens_per_s = (double)sc->global_batch * sc->seq_len / res->step_time_s;
    const double gib = (double)(1 << 30);
    res->memory_gib = step.memory.total / gib;
    res->memory_stage = step.busiest_stage;
    res->memory_weights_gib = step.memory.weights_grads / gib;
    res->memory_optimizer_gib = step.memory.optimizer / gib;
    res->memory_activations_gib = step.memory.activations / gib;
    res->memory_overheads_gib = (step.memory.fragmentation + step.memory.context +
                                 step.memory.nccl + step.memory.userbuffers) /
                                gib;
    res->memory_context_gib = step.memory.context / gib;
    res->memory_nccl_gib = step.memory.nccl / gib;
    res->memory_nvls_gib = step.memory.nvls / gib;
    res->memory_userbuffers_gib = step.memory.userbuffers / gib;
    res->memory_fragmentation_gib = step.memory.fragmentation / gib;
    /* Everything the process holds, overheads included, within what CUDA
     * can allocate. */
    res->fits_memory = res->memory_gib <= sc->hardware.memory_gib;
    res->memory_headroom_gib = sc->hardware.memory_gib - res->memory_gib;
    return TRUE;
}

/* ---- a cache of simulated pieces ---- */

struct TpsSimCache {
    GMutex lock;         /* over the members below */
    GHashTable *entries; /* key string -> CacheEntry */
    guint64 hits, misses;
    /* Tasks and edges of the largest layer graph built through the cache
     * (atomics): what the next one reserves. */
    guint size_hint[2];
};

typedef struct {
    TpsResult layer; /* layer figures and breakdown */
    TpsPieceTimes pieces;
} CacheEntry;

TpsSimCache *
tps_sim_cache_new(void)
{
    TpsSimCache *cache = g_new0(TpsSimCache, 1);
    g_mutex_init(&cache->lock);
    cache->entries = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    return cache;
}

void
tps_sim_cache_free(TpsSimCache *cache)
{
    if (cache == NULL)
        return;
    g_hash_table_unref(cache->entries);
    g_mutex_clear(&cache->lock);
    g_free(cache);
}

void
tps_sim_cache_stats(const TpsSimCache *cache, guint64 *hits, guint64 *misses)
{
    GMutex *lock = (GMutex *)&cache->lock;
    g_mutex_lock(lock);
    *hits = cache->hits;
    *misses = cache->misses;
    g_mutex_unlock(lock);
}

/* Everything the embedding/head graph depends on: the hardware, the layer
 * shape (with kv_heads, the MLP, the norm, the position embedding, biases
 * and the output layer), the TP layout, the vocabulary, recompute, CUDA
 * graphs and the strategy; not pp, vpp, dp nor the batch sizes beyond the
 * micro-batch, and not the overlap table: that graph (sched/layer.c,
 * tps_embedding_*() and tps_head_*()) has no GEMM slot, so its tasks are
 * the same under every userbuffers configuration. */
static void
append_head_key(GString *key, const TpsScenario *sc, const TpsStrategy *strategy)
{
    g_string_append_printf(key,
                           "%s|%" G_GUINT64_FORMAT "|%" G_GUINT64_FORMAT "|%" G_GUINT64_FORMAT
                           "|%" G_GUINT64_FORMAT "|%" G_GUINT64_FORMAT "|%" G_GUINT64_FORMAT
                           "|%d|%d|%d|%u|%d|%d|%s",
                           sc->hardware.name, sc->hidden, sc->heads, sc->ffn_hidden, sc->seq_len,
                           sc->vocab, sc->micro_batch, sc->dtype, sc->attention, sc->recompute,
                           sc->tp, sc->sp, sc->cuda_graphs, strategy->name);
    /* The Llama-class choices (the pieces' graphs and the head's weights). */
    g_string_append_printf(key, "|kv%" G_GUINT64_FORMAT "|%d|%d|%d|%d|%d",
                           tps_scenario_kv_heads(sc), sc->mlp, sc->norm, sc->position, sc->bias,
                           sc->tie_embeddings);
    /* The mask, and context parallelism: its size, its exchange, and what
     * places the ring's neighbour (the rank order, and with an order that
     * puts them before cp, pp and dp: all of them join the key). */
    if (sc->causal)
        g_string_append(key, "|causal");
    /* The FP8 recipe's kernels (delayed: the key as before). */
    if (sc->dtype == TPS_DTYPE_FP8 && sc->fp8_recipe != TPS_FP8_DELAYED)
        g_string_append_printf(key, "|fp8r%d", sc->fp8_recipe);
    if (sc->cp > 1) {
        TpsDim order[TPS_DIM_COUNT];
        tps_scenario_order(sc, order);
        g_autofree char *text = tps_grid_order_text(order);
        g_string_append_printf(key, "|cp%u.%d.%u.%s.%u.%u", sc->cp, sc->cp_comm, sc->cp_a2a, text,
                               sc->pp, sc->dp);
    }
}

/* The embedding/head graph's key ("head|" and the above). */
static char *
head_key(const TpsScenario *sc, const TpsStrategy *strategy)
{
    GString *key = g_string_new("head|");
    append_head_key(key, sc, strategy);
    return g_string_free(key, FALSE);
}

/* Everything the layer graph depends on: what the head's does, and the
 * strategy's overlap table. */
static char *
cache_key(const TpsScenario *sc, const TpsStrategy *strategy)
{
    GString *key = g_string_new(NULL);
    append_head_key(key, sc, strategy);
    /* The attention's head size and Q/K norms; the mixture of experts and
     * what places its groups (the expert grid is the whole world's: tp,
     * cp, dp, pp and the order). */
    if (sc->head_dim != 0 || sc->qk_norm)
        g_string_append_printf(key, "|hd%" G_GUINT64_FORMAT ".%d", sc->head_dim, sc->qk_norm);
    if (sc->mla)
        g_string_append_printf(key,
                               "|mla%" G_GUINT64_FORMAT ".%" G_GUINT64_FORMAT ".%" G_GUINT64_FORMAT
                               ".%" G_GUINT64_FORMAT ".%" G_GUINT64_FORMAT,
                               sc->q_lora_rank, sc->kv_lora_rank, sc->qk_head_dim,
                               sc->qk_pos_emb_head_dim, sc->v_head_dim);
    if (tps_scenario_is_moe(sc)) {
        const TpsMoe *m = &sc->moe;
        TpsDim order[TPS_DIM_COUNT];
        tps_scenario_order(sc, order);
        g_autofree char *text = tps_grid_order_text(order);
        g_string_append_printf(key,
                               "|moe%u.%u.%" G_GUINT64_FORMAT ".%" G_GUINT64_FORMAT
                               ".%d.%d.%d.%a.%a.ep%u.%u.%s.%u.%u.%u",
                               m->experts, m->top_k, m->ffn_hidden, m->shared_ffn_hidden,
                               m->dispatcher, m->grouped_gemm, m->shared_expert_overlap,
                               m->capacity_factor, m->load_imbalance, sc->ep, sc->etp, text, sc->cp,
                               sc->dp, sc->pp);
        /* A dense layer's times too where the model mixes the two. */
        if (tps_scenario_mixes_layers(sc))
            g_string_append(key, "|mixed");
        if (m->overlap_ep_comm)
            g_string_append(key, ".a2a_overlap");
    }
    if (strategy->id == TPS_STRATEGY_CUSTOM)
        for (guint i = 0; i < TPS_GEMM_SLOT_COUNT; i++) {
            const TpsOverlapConfig *c = &sc->overlap[i];
            g_string_append_printf(key, "|%d.%d.%u.%u.%u.%d.%d.%d.%u", c->set, c->method,
                                   c->num_splits, c->num_sm, c->cga_size, c->set_sm_margin,
                                   c->aggregate, c->use_ce, c->given);
        }
    return g_string_free(key, FALSE);
}

/* Look `key` up: a copy of its entry into *out. `count`: a layer's key,
 * counted in the hits and misses (tps_sim_cache_stats()). */
static gboolean
cache_lookup(TpsSimCache *cache, const char *key, CacheEntry *out, gboolean count)
{
    /* Copied out under the lock: another thread may insert meanwhile. */
    g_mutex_lock(&cache->lock);
    const CacheEntry *entry = g_hash_table_lookup(cache->entries, key);
    if (entry) {
        cache->hits += count;
        *out = *entry;
    }
    g_mutex_unlock(&cache->lock);
    return entry != NULL;
}

/* Keep a copy of `entry` under `key` (taken), unless another thread did. */
static void
cache_insert(TpsSimCache *cache, char *key, const CacheEntry *entry, gboolean count)
{
    g_mutex_lock(&cache->lock);
    cache->misses += count;
    if (g_hash_table_contains(cache->entries, key))
        g_free(key); /* simulated twice: the same figures */
    else
        g_hash_table_insert(cache->entries, key, g_memdup2(entry, sizeof *entry));
    g_mutex_unlock(&cache->lock);
}

/* The embedding/head graph through the cache: simulated once for all the
 * overlap tables of one layout. */
static gboolean
head_cached(const TpsScenario *sc, const TpsStrategy *strategy, TpsResult *res,
            TpsPieceTimes *pieces, TpsSimCache *cache, GError **error)
{
    if (cache == NULL)
        return simulate_head(sc, strategy, res, pieces, error);
    char *key = head_key(sc, strategy);
    CacheEntry *entry = g_new0(CacheEntry, 1);
    gboolean ok = TRUE;
    if (cache_lookup(cache, key, entry, FALSE)) {
        g_free(key);
    } else if ((ok = simulate_head(sc, strategy, &entry->layer, &entry->pieces, error))) {
        cache_insert(cache, key, entry, FALSE);
    } else {
        g_free(key);
    }
    if (ok) {
        res->head_ms = entry->layer.head_ms;
        pieces->emb_fwd = entry->pieces.emb_fwd;
        pieces->head_fwd = entry->pieces.head_fwd;
        pieces->head_bwd = entry->pieces.head_bwd;
        pieces->emb_bwd = entry->pieces.emb_bwd;
    }
    g_free(entry);
    return ok;
}

static gboolean
simulate_model(const TpsScenario *sc, const TpsStrategy *strategy, TpsResult *res, TpsRun **record,
               TpsSimCache *cache, GError **error)
{
    TpsPieceTimes pieces;
    if (cache == NULL || record != NULL) {
        if (!simulate_pieces(sc, strategy, res, &pieces, record, error))
            return FALSE;
        return simulate_step(sc, strategy, &pieces, res, error);
    }
    char *key = cache_key(sc, strategy);
    CacheEntry *entry = g_new(CacheEntry, 1);
    if (cache_lookup(cache, key, entry, TRUE)) {
        g_free(key);
        *res = entry->layer;
        pieces = entry->pieces;
    } else {
        TpsPieceTimes got = {0};
        if (!simulate_layer(sc, strategy, res, &got, NULL, cache->size_hint, error) ||
            !simulate_dense_layer(sc, strategy, res, &got, cache->size_hint, error) ||
            !head_cached(sc, strategy, res, &got, cache, error)) {
            g_free(key);
            g_free(entry);
            return FALSE;
        }
        pieces = got;
        entry->layer = *res;
        entry->pieces = pieces;
        cache_insert(cache, key, entry, TRUE);
    }
    g_free(entry);
    return simulate_step(sc, strategy, &pieces, res, error);
}

/* Run one op graph, two deep: the op, then the measured op, which starts
 * with the host ahead of the GPU as in a loop of that op (as the layer
 * graph does; with a single op the host's first issue would be counted as
 * if it could never be hidden). Returns the measured op's time, from the
 * end of the first, and its comm busy time; with `res`, the engine's
 * figures and the error band of the measured op on rank 0. */
static gboolean
run_op(const TpsScenario *sc, const TpsStrategy *strategy, gboolean gemm_only, TpsTime *time,
       TpsTime *comm_busy, TpsResult *res, TpsRun **record, GError **error)
{
    const TpsStrategyId id = strategy->id;
    TpsBuilder b;
    TpsRunStats stats;
    TpsOpIds warm;
    tps_builder_init(&b, sc, id);
    for (guint i = 0; i < 2; i++) {
        /* The measured op's tasks feed the breakdown (--breakdown). */
        b.recording = i == 1 && !gemm_only && res != NULL;
        if (gemm_only)
            tps_op_gemm_alone(&b);
        else
            tps_op_graph(&b);
        b.recording = FALSE;
        if (i == 0)
            tps_builder_mark(&b, "op.warm_end", &warm);
    }
    if (res)
        res->tasks = tps_engine_n_tasks(b.engine);
    if (!run_builder(&b, &stats, error)) {
        tps_builder_clear(&b);
        return FALSE;
    }
    const TpsTime from = mark_end(&b, &warm);
    *time = stats.makespan - from;
    if (res)
        res->stats = stats;
    if (comm_busy || record || res) {
        g_autoptr(TpsRun) run = export_run(&b, strategy);
        if (res)
            gemm_breakdown(&b, run, res);
        if (comm_busy)
            *comm_busy = tps_run_busy(run, 0, TPS_CLASS_COMM, from, TPS_TIME_NEVER);
        if (res) {
            TpsTime parts[TPS_BAND_COUNT] = {0};
            tps_band_parts(run, 0, from, stats.makespan, sc->m < TPS_BAND_GEMM_MIN_TOKENS, parts);
            double low, high;
            tps_band_of_parts(&sc->hardware, parts, &low, &high);
            res->op_time_ms_low = low / 1e6;
            res->op_time_ms_high = high / 1e6;
            for (guint c = 0; c < TPS_BAND_COUNT; c++)
                res->band_parts_ns[c] = (double)parts[c];
        }
        if (record) {
            run->is_op = TRUE;
            run->fwd_start = from;
            run->fwd_end = stats.makespan;
            *record = g_steal_pointer(&run);
        }
    }
    tps_builder_clear(&b);
    return TRUE;
}

static gboolean
simulate_op(const TpsScenario *sc, const TpsStrategy *strategy, TpsResult *res, TpsRun **record,
            GError **error)
{
    TpsTime time, comm, gemm, blocking;
    const TpsStrategy *blocking_strategy = tps_strategy_by_id(TPS_STRATEGY_SP_BLOCKING);
    if (!run_op(sc, strategy, FALSE, &time, &comm, res, record, error) ||
        !run_op(sc, strategy, TRUE, &gemm, NULL, NULL, NULL, error) ||
        !run_op(sc, blocking_strategy, FALSE, &blocking, NULL, NULL, NULL, error))
        return FALSE;
    res->op_time_ms = tps_time_to_ms(time);
    res->op_comm_ms = tps_time_to_ms(comm);
    res->op_gemm_ms = tps_time_to_ms(gemm);
    /* Flux's overlap efficiency: 1 - ECT / ECT_blocking, ECT = time minus
     * the unsplit GEMM alone. */
    res->op_overlap_efficiency =
        blocking > gemm ? 1.0 - (double)(time - gemm) / (double)(blocking - gemm) : 0.0;
    return TRUE;
}

static double
result_time(const TpsResult *r, gboolean op)
{
    return op ? r->op_time_ms : r->step_time_s;
}

static int
cmp_result(gconstpointer a, gconstpointer b, gpointer op)
{
    const gboolean skip_a = ((const TpsResult *)a)->skipped[0] != '\0';
    const gboolean skip_b = ((const TpsResult *)b)->skipped[0] != '\0';
    if (skip_a != skip_b)
        return skip_a ? 1 : -1; /* the skipped ones last, by name */
    double x = skip_a ? 0 : result_time(a, *(gboolean *)op);
    double y = skip_b ? 0 : result_time(b, *(gboolean *)op);
    if (x != y)
        return x < y ? -1 : 1;
    return strcmp(((const TpsResult *)a)->strategy->name, ((const TpsResult *)b)->strategy->name);
}

void
tps_results_rank(TpsResult *results, guint n, const TpsResult *reference)
{
    if (n == 0)
        return;
    /* Whether these are op results: op scenarios have no step time. */
    gboolean op = FALSE;
    for (guint i = 0; i < n; i++)
        if (results[i].skipped[0] == '\0') {
            op = results[i].step_time_s == 0.0 && results[i].op_time_ms > 0.0;
            break;
        }
    g_qsort_with_data(results, (gint)n, sizeof(TpsResult), cmp_result, &op);
    for (guint i = 0; i < n; i++) {
        double t = results[i].skipped[0] ? 0 : result_time(&results[i], op);
        results[i].gain = reference && t > 0 ? result_time(reference, op) / t - 1.0 : NAN;
    }
}

/* `ok` unless a collective of the run was one that the scenario's NCCL
 * release fails (nccl.algo and nccl.proto leave it no algorithm:
 * cost/nccl-env.h), noted since nccl_forget() began the run. */
static gboolean
nccl_ran(const TpsScenario *sc, gboolean ok, GError **error)
{
    if (!ok)
        tps_nccl_take_refusal(&sc->hardware, NULL);
    return ok && tps_nccl_take_refusal(&sc->hardware, error);
}

static void
nccl_forget(const TpsScenario *sc)
{
    tps_nccl_take_refusal(&sc->hardware, NULL);
}

gboolean
tps_simulate_step_schedule(const TpsScenario *sc, const TpsStrategy *strategy,
                           TpsStepSchedule **schedule, GError **error)
{
    if (sc->is_op) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "%s: an op scenario has no training step to draw",
                    sc->file != NULL ? sc->file : sc->name);
        return FALSE;
    }
    TpsResult res = {0};
    res.strategy = strategy;
    TpsPieceTimes pieces;
    nccl_forget(sc);
    if (!nccl_ran(sc, simulate_pieces(sc, strategy, &res, &pieces, NULL, error), error))
        return FALSE;
    return tps_pipeline_schedule(sc, &pieces, schedule, error);
}

gboolean
tps_simulate(const TpsScenario *scenario, const TpsStrategy *strategy, TpsResult *result,
             GError **error)
{
    return tps_simulate_record(scenario, strategy, result, NULL, error);
}

gboolean
tps_simulate_record(const TpsScenario *scenario, const TpsStrategy *strategy, TpsResult *result,
                    TpsRun **record, GError **error)
{
    return tps_simulate_cached(scenario, strategy, NULL, result, record, error);
}

gboolean
tps_simulate_pieces(const TpsScenario *scenario, const TpsStrategy *strategy, TpsPieceTimes *pieces,
                    GError **error)
{
    g_return_val_if_fail(strategy->implemented && !scenario->is_op, FALSE);
    TpsResult result;
    memset(&result, 0, sizeof(result));
    result.strategy = strategy;
    nccl_forget(scenario);
    return nccl_ran(scenario, simulate_pieces(scenario, strategy, &result, pieces, NULL, error),
                    error);
}

gboolean
tps_simulate_cached(const TpsScenario *scenario, const TpsStrategy *strategy, TpsSimCache *cache,
                    TpsResult *result, TpsRun **record, GError **error)
{
    if (record)
        *record = NULL;
    g_return_val_if_fail(strategy->implemented, FALSE);
    memset(result, 0, sizeof(*result));
    result->strategy = strategy;
    result->gain = NAN;

    nccl_forget(scenario);
    gboolean ok = scenario->is_op
                      ? simulate_op(scenario, strategy, result, record, error)
                      : simulate_model(scenario, strategy, result, record, cache, error);
    ok = nccl_ran(scenario, ok, error);
    if (!ok && record)
        g_clear_pointer(record, tps_run_free);
    return ok;
}

/* ---- differences of results ---- */

/* The parts of `r` scaled to its step (op: its op time), ns per class. */
static void
step_parts(const TpsScenario *sc, const TpsResult *r, double out[TPS_BAND_COUNT])
{
    double sum = 0.0;
    for (guint c = 0; c < TPS_BAND_COUNT; c++)
        sum += r->band_parts_ns[c];
    const double total = sc->is_op ? r->op_time_ms * 1e6 : r->step_time_s * 1e9;
    for (guint c = 0; c < TPS_BAND_COUNT; c++)
        out[c] = sum > 0 ? r->band_parts_ns[c] * total / sum : 0.0;
}

void
tps_result_difference(const TpsScenario *scenario, const TpsResult *a, const TpsResult *b,
                      double *diff, double *low, double *high)
{
    g_return_if_fail(scenario != NULL && a != NULL && b != NULL);
    double pa[TPS_BAND_COUNT], pb[TPS_BAND_COUNT], lo, hi;
    step_parts(scenario, a, pa);
    step_parts(scenario, b, pb);
    tps_band_of_difference(&scenario->hardware, pa, pb, &lo, &hi);
    const double unit = scenario->is_op ? 1e6 : 1e9; /* ms or s */
    if (diff)
        *diff = scenario->is_op ? a->op_time_ms - b->op_time_ms : a->step_time_s - b->step_time_s;
    if (low)
        *low = lo / unit;
    if (high)
        *high = hi / unit;
}

gboolean
tps_result_tied(const TpsScenario *scenario, const TpsResult *a, const TpsResult *b)
{
    double low, high;
    tps_result_difference(scenario, a, b, NULL, &low, &high);
    return low <= 0.0 && high >= 0.0;
}

void
tps_results_mark_ties(const TpsScenario *scenario, TpsResult *results, guint n)
{
    const TpsResult *fastest = NULL;
    for (guint i = 0; i < n; i++) {
        TpsResult *r = &results[i];
        if (r->skipped[0]) {
            r->tied = TPS_TIE_UNRANKED;
            continue;
        }
        if (fastest == NULL)
            fastest = r;
        r->tied = r != fastest && tps_result_tied(scenario, r, fastest) ? TPS_TIE_YES : TPS_TIE_NO;
    }
}
