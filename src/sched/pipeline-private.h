/* What the step frame's two simulations share: pipeline.c builds the step
 * graph and runs it on the engine (and extrapolates its steady state),
 * pipeline-replay.c replays it without the engine up to the optimizer
 * step, which both build with the same functions. See pipeline.c for what
 * each does and docs/step-model.md for the model.
 */
#pragma once

#include "engine/engine.h"
#include "sched/pipeline.h"

/* One pipeline graph of `micro` micro-batches per replica, built on an
 * engine and kept after its run so that its spans can be read. */
typedef struct {
    TpsEngine *engine;
    const TpsScenario *sc;
    guint64 micro;
    TpsStreamId *compute, *dp; /* per stage */
    /* Per stage, FSDP's double buffer: the stage's last two units (the one
     * before last, the last) whose gathered parameters it holds, or
     * TPS_TASK_NONE. */
    TpsTaskId *held;
    /* Per op (tps_pipe_op_index()): its first and last task (the same task but for
     * the last micro-batch's backward, split into gradient buckets), and
     * the flow that brings its input from the neighbouring virtual stage
     * (TPS_TASK_NONE for the first forward and the last backward). */
    TpsTaskId *first, *last, *arrival;
} TpsPipe;

/* What one run of a pipeline graph gives. */
typedef struct {
    TpsTime step;        /* makespan: the last optimizer step */
    TpsTime compute_end; /* the last forward/backward chunk */
    TpsTime busy0;       /* stage 0's chunk time */
    TpsTime dp_end;      /* the last DP collective */
    TpsTime optimizer;   /* the slowest stage's optimizer (and parameter gather) */
    TpsTime gather_wait; /* stage 0's wait for parameter all-gathers in its first
                            forwards (overlap_param_gather) */
    guint64 tasks, events;
    guint64 shared; /* replayed: re-solves of flows sharing a link */
    guint64 lone;   /* replayed: flows resolved alone, without events */
    gboolean in_order; /* replayed by the in-order pass (no two flows met) */
    guint64 periods;   /* replayed: steady periods jumped over (pipeline-period.c) */
    guint64 part_ops;  /* and stage 0's ops moved on beyond them (a part period) */
    TpsTaskId first_opt; /* on the engine: the first optimizer task */
} TpsPipeFigures;

static inline gsize
tps_pipe_op_index(const TpsPipe *p, guint stage, guint chunk, guint64 mb, gboolean backward)
{
    return (((gsize)stage * p->sc->vpp + chunk) * p->micro + mb) * 2 + (backward ? 1 : 0);
}

/* One task of a chunk on the compute stream, and the gradient reduction
 * that follows it on the DP stream, if one does, or the parameter
 * all-gather it waits for on the DP stream, if one is. */
typedef struct {
    TpsTime ns;
    gboolean reduce;
    TpsTime dp_ns;
    gboolean gather;
    TpsTime ag_ns;
    gboolean prefetch; /* FSDP's double buffer: the all-gather is issued ahead, when
                          the piece before starts, into the buffer of the piece two
                          before, once that piece has ended */
} TpsPipePiece;

/* `pc` with its amax_fwd and amax_bwd set for `sc`: under fp8 with
 * delayed scaling, at the exit of a model chunk's fp8_autocast (Megatron's
 * outer context of the TransformerBlock) and at the end of its backward,
 * Transformer Engine concatenates the chunk's amaxes (3 per GEMM forward,
 * 2 backward, 4 GEMMs a layer), all-reduces them (MAX) over the amax
 * reduction group (tensor x data x context parallel, Megatron's
 * get_amax_reduction_group) on the compute stream, and updates the amax
 * histories and scales in one fused kernel; 0 otherwise. */
void tps_pipe_amax_times(const TpsScenario *sc, TpsPieceTimes *pc);

/* Free what a pipeline graph holds. */
void tps_pipe_clear(TpsPipe *p);
/* A new engine on `machine` in `p`, with each stage's compute and DP
 * streams; the machine of the step graph (a rank per stage). */
void tps_pipe_engine(TpsPipe *p, const TpsMachine *machine);
void tps_pipe_machine(const TpsScenario *sc, TpsMachine *machine);
/* A task of `ns` on the stage's compute (or DP) stream. */
TpsTaskId tps_pipe_add_chunk(TpsPipe *p, guint stage, TpsTaskKind kind, const char *name,
                             TpsTime ns);
TpsTaskId tps_pipe_add_dp(TpsPipe *p, guint stage, const char *name, TpsTime ns);
/* The optimizer step of `stage` over `params` parameters of which this GPU
 * updates `shard`. */
void tps_pipe_optimizer_step(TpsPipe *p, guint stage, double params, double shard);
/* Whether stages `from` and `to` share a node of `m`; the flow of one
 * micro-batch's activation (or gradient) between them. */
gboolean tps_pipe_same_node(const TpsMachine *m, guint from, guint to);
void tps_pipe_transfer_spec(const TpsScenario *sc, const TpsMachine *m, guint from, guint to,
                            TpsTaskSpec *spec);
/* An input error where a chunk would last longer than a step can. */
gboolean tps_pipe_chunks_fit(const TpsScenario *sc, const TpsPieceTimes *pc, GError **error);
/* The tasks of op `op` of stage `s` into `out` (at least a chunk's layers
 * long); their number. */
guint tps_pipe_op_pieces(const TpsScenario *sc, const TpsPieceTimes *pc, guint s,
                         const TpsPipeOp *op, guint64 micro, TpsPipePiece *out);
/* The combined interleaved 1F1B (pipeline-pair.c; its warm-up
 * tps_pipe_warmup() of pipeline.h): whether op `op` of stage `s` runs in
 * a combined step of the steady state (*chunk: the other op's model
 * chunk); and the layers of a combined step of the forward of
 * `fwd_chunk` and the backward of `bwd_chunk` (at pp 1, the combined
 * 1F1B's, the two chunks one: each forward's layers beside the backward
 * of the micro-batch before). */
gboolean tps_pipe_pair_partner(const TpsScenario *sc, guint s, const TpsPipeOp *op, guint64 micro,
                               guint *chunk);
TpsTime tps_pipe_pair_ns(const TpsScenario *sc, const TpsPieceTimes *pc, guint s, guint fwd_chunk,
                         guint bwd_chunk);
/* Without overlap: the times of stage `s`'s bucket reductions after its
 * last backward. */
void tps_pipe_tail_reductions(const TpsScenario *sc, guint s, GArray *out);

/* Which pass of the replay runs first: time order; the in-order pass
 * (in time order where two flows meet); the cheaper of the two, the
 * in-order pass only where time order cannot jump over steady periods
 * (pipeline-period.c: with the jump, time order replays fewer ops). */
typedef enum {
    TPS_REPLAY_TIME_ORDER,
    TPS_REPLAY_IN_ORDER_FIRST,
    TPS_REPLAY_CHEAPEST,
} TpsReplayPass;

/* Replay the step of `micro` micro-batches per replica into `fig`
 * (pipeline-replay.c): by one pass in no time order where `pass` tries it
 * and no two flows are ever on one link at once (fig->in_order), else in
 * time order; *replayed FALSE where the replay does not hold (the figures
 * are then void). FALSE with `error` set on an error. */
gboolean tps_pipe_replay(const TpsScenario *sc, const TpsPieceTimes *pc, guint64 micro,
                         TpsReplayPass pass, TpsPipeFigures *fig, gboolean *replayed,
                         GError **error);
