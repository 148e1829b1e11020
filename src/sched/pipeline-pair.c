/* The combined interleaved 1F1B (model.moe.overlap_ep_comm with
 * parallel.pp > 1, which Megatron-Core allows only with virtual
 * pipelining): which ops of a stage's order run as one combined step,
 * and how long it lasts (that also the combined 1F1B's of pp 1, whose
 * two chunks are one).
 *
 * Megatron-Core (megatron/core/pipeline_parallel/schedules.py,
 * forward_backward_pipelining_with_interleaving and
 * get_pp_rank_microbatches): the warm-up runs one forward more than the
 * plain interleaved schedule ("to ensure the forward and backward
 * computations are independent in all 1f1b steps"); every step k of the
 * steady state passes forward k + warm-up and backward k together to
 * combined_1f1b_schedule_for_interleaved_pipelining (combined_1f1b.py),
 * the warm-up's forwards and the cool-down's backwards alone.
 * TransformerModelChunkSchedulePlan.run
 * (megatron/core/models/common/model_chunk_schedule_plan.py) waits for
 * both inputs (pre_forward, pre_backward) before any layer, runs the
 * forward's layer i beside the backward's layer L - 1 - i (the combined
 * layer of layer.c, each pair by its two layers' kinds where the model
 * mixes dense and MoE layers), the layers one chunk has more than the
 * other alone (the backward's before the forward's), and sends the forward's output and the backward's input gradient after
 * the last layer. See docs/step-model.md, "The combined interleaved
 * 1F1B". */
#include "sched/pipeline-private.h"

guint64
tps_pipe_pair_extra(const TpsScenario *sc)
{
    return tps_scenario_is_moe(sc) && sc->moe.overlap_ep_comm && sc->pp > 1 ? 1 : 0;
}

guint64
tps_pipe_warmup(const TpsScenario *sc, guint stage, guint64 total)
{
    return MIN(tps_pipeline_raw_warmup(sc->pp, sc->vpp, stage) + tps_pipe_pair_extra(sc), total);
}

/* The position of model chunk `chunk` of micro-batch `mb` among a stage's
 * forwards (or backwards): the inverse of the order's numbering
 * (tps_pipeline_order()). */
static guint64
nth_op(guint pp, guint vpp, guint chunk, guint64 mb, gboolean backward)
{
    const guint c = backward ? vpp - 1 - chunk : chunk;
    return (mb / pp) * pp * vpp + (guint64)c * pp + mb % pp;
}

gboolean
tps_pipe_pair_partner(const TpsScenario *sc, guint s, const TpsPipeOp *op, guint64 micro,
                      guint *chunk)
{
    if (tps_pipe_pair_extra(sc) == 0)
        return FALSE;
    const guint pp = sc->pp, vpp = sc->vpp;
    /* (micro G_MAXUINT64: a micro-batch of many, in the steady state.) */
    const guint64 total = micro > G_MAXUINT64 / vpp ? G_MAXUINT64 : micro * vpp;
    const guint64 w = tps_pipe_warmup(sc, s, total);
    const guint64 n = nth_op(pp, vpp, op->chunk, op->mb, op->backward);
    /* Forward n pairs with backward n - w; backward n with forward n + w. */
    if (op->backward ? n >= total - w : n < w)
        return FALSE;
    const guint64 other = op->backward ? n + w : n - w;
    const guint c = (guint)((other / pp) % vpp);
    *chunk = op->backward ? c : vpp - 1 - c;
    return TRUE;
}

/* One layer's forward (kind MoE or not: `f`) beside one layer's backward
 * (`b`): the four pairs of simulate.c. */
static TpsTime
pair_of_kinds(const TpsPieceTimes *pc, gboolean f, gboolean b)
{
    return f ? (b ? pc->layer_fb : pc->moe_dense_fb) : (b ? pc->dense_moe_fb : pc->dense_fb);
}

/* A layer alone, by its kind. */
static TpsTime
alone_of_kind(const TpsPieceTimes *pc, gboolean moe, gboolean backward)
{
    if (backward)
        return moe ? pc->layer_bwd : pc->dense_bwd;
    return moe ? pc->layer_fwd : pc->dense_fwd;
}

TpsTime
tps_pipe_pair_ns(const TpsScenario *sc, const TpsPieceTimes *pc, guint s, guint fwd_chunk,
                 guint bwd_chunk)
{
    const guint lf = tps_scenario_chunk_layers(sc, s, fwd_chunk);
    const guint lb = tps_scenario_chunk_layers(sc, s, bwd_chunk);
    const guint both = MIN(lf, lb);
    if (!tps_scenario_mixes_layers(sc))
        return both * pc->layer_fb + (lf - both) * pc->layer_fwd + (lb - both) * pc->layer_bwd;
    /* TransformerModelChunkSchedulePlan.run: forward layer i (get_layer(i))
     * beside the backward chunk's last layer not yet run (pop_layer():
     * layer lb - 1 - i); then the backward's layers left, from lb - 1 -
     * both down to 0, alone; then the forward's, from both to lf - 1. */
    const guint64 ff = tps_scenario_chunk_first_layer(sc, s, fwd_chunk);
    const guint64 fb = tps_scenario_chunk_first_layer(sc, s, bwd_chunk);
    TpsTime ns = 0;
    for (guint i = 0; i < both; i++)
        ns += pair_of_kinds(pc, tps_scenario_moe_layer(sc, ff + i),
                            tps_scenario_moe_layer(sc, fb + lb - 1 - i));
    for (guint i = both; i < lb; i++)
        ns += alone_of_kind(pc, tps_scenario_moe_layer(sc, fb + lb - 1 - i), TRUE);
    for (guint i = both; i < lf; i++)
        ns += alone_of_kind(pc, tps_scenario_moe_layer(sc, ff + i), FALSE);
    return ns;
}
