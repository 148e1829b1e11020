/* Overlap methods: see overlap.h and real-schedules.md section 2.1.
 *
 * Userbuffers' SM-based kernels (pipeline and bulk) move data with plain
 * vectorised loads and stores from `num_sm` CTAs, without NCCL's FIFOs and
 * flags per slice; their rate is modelled as CTAs x the load/store
 * bandwidth one SM can drive (hw->sm_mem_gbps, from the L2 bandwidth per
 * SM), and bounded by NVLink and HBM through the engine. NCCL's per-channel
 * Simple rate (about 10 GB/s on A100) is not used here: it is set by
 * NCCL's protocol, and NVIDIA's A100 configuration runs bulk overlap on 2
 * SMs, which at that rate could not move a layer's activations in time.
 * Copy-engine sends take no SMs but share HBM and NVLink.
 */
#include "sched/overlap.h"

#include "cost/kernel-cost.h"
#include "sched/method.h"
#include "sched/overlap-private.h"

/* CTAs of the last pipeline reduce-scatter chunk (TE's UB_MAX_SM). */
#define UB_MAX_SM 32

guint
tps_overlap_gemm_sms(const TpsBuilder *b, const TpsOverlapConfig *cfg)
{
    if (!cfg->set_sm_margin || cfg->num_sm == 0 || cfg->num_sm >= b->hw->sms)
        return 0;
    return b->hw->sms - cfg->num_sm;
}

static double
elt(const TpsBuilder *b)
{
    return tps_dtype_bytes(b->scenario->dtype);
}

/* Bytes of a gathered element: the LayerNorm-fed inputs of QKV and FC1 are
 * gathered as the LayerNorm wrote them, in FP8 under dtype fp8 (Transformer
 * Engine 1.x gathers its FP8 ln_out, and its userbuffers for these layers
 * are FP8 buffers); everything else in bf16. */
static double
ag_elt(const TpsBuilder *b, const TpsGemmShape *g)
{
    return g->ln_input ? tps_dtype_gemm_bytes(b->scenario->dtype) : elt(b);
}

/* Every rank's `streams` waits for main's work so far (the event each
 * overlap starts with). */
static void
fork_from_main(TpsBuilder *b, const TpsStreamId *streams)
{
    TpsOpIds before;
    tps_builder_record(b, b->main, &before);
    tps_builder_wait(b, streams, &before);
}

/* Main waits for the last op of each of `streams` (the overlap's end). */
static void
join_to_main(TpsBuilder *b, const TpsStreamId *streams)
{
    TpsOpIds last;
    tps_builder_record(b, streams, &last);
    for (guint r = 0; r < tps_builder_sim_ranks(b); r++)
        if (last.id[r] != TPS_TASK_NONE)
            tps_engine_stream_wait(b->engine, b->main[r], last.id[r]);
}

/* How long a one-thread flag kernel runs: one store of a flag over NVLink,
 * which is what NCCL's LL protocol pays per hop (its lines carry their own
 * flags): calib nccl_cost_model_constants.nvlink_ring_hw_latency_us LL. */
static TpsTime
flag_ns(const TpsBuilder *b)
{
    return tps_time_from_us(b->hw->nccl_hw_latency_us[TPS_PROTO_LL]);
}

/* A userbuffers P2P push of `bytes` from `rank` to `dst` on `stream`: a
 * copy-engine cudaMemcpyAsync (use_ce, the default: no SMs), or an SM-based
 * send kernel of `num_sm` CTAs (at least 1) that takes SMs from the GEMMs.
 * Both move the same bytes through HBM and NVLink. Returns the task whose
 * end sets the receiver's flag: behind a copy, userbuffers launches a
 * one-CTA kernel on the same stream that raises it (Transformer Engine's
 * userbuffers_send: kuserbuffers_pushsend, signal only), which holds an SM
 * and a place in the launch queue like any kernel; an SM-based send kernel
 * raises it itself after its data. */
static TpsTaskId
p2p_send(TpsBuilder *b, const TpsOverlapConfig *cfg, guint rank, guint dst, TpsStreamId stream,
         double bytes, const char *name)
{
    TpsTaskSpec spec = {
        .kind = TPS_KIND_COPY,
        .name = name,
        .rank = rank,
        .stream = stream,
        .parent = TPS_TASK_NONE,
        .launch = TRUE,
        .copy_engine = TRUE,
        .dst_rank = dst,
        .link_bytes = bytes,
        .floor_ns = tps_time_from_ns(bytes / b->hw->copy_engine_gbps),
        .bytes = bytes,
    };
    if (!cfg->use_ce) {
        guint ctas = MIN(MAX(cfg->num_sm, 1u), b->hw->sms);
        spec.kind = TPS_KIND_COMM;
        spec.copy_engine = FALSE;
        spec.ctas = ctas;
        spec.floor_ns = tps_time_from_ns(bytes / (ctas * b->hw->sm_mem_gbps));
        return tps_builder_add(b, &spec);
    }
    tps_builder_add(b, &spec);
    g_autofree char *flag_name = g_strdup_printf("%s.flag", name);
    TpsTaskSpec flag = {
        .kind = TPS_KIND_COMM,
        .name = flag_name,
        .rank = rank,
        .stream = stream,
        .parent = TPS_TASK_NONE,
        .launch = TRUE,
        .ctas = 1,
        .fixed_ns = flag_ns(b),
    };
    return tps_builder_add(b, &flag);
}

/* The receive side of a userbuffers P2P: a one-CTA kernel on `rank`'s
 * receive stream that spins on the flag the sender raises
 * (kuserbuffers_pushrecv), so it holds its SM from its start until
 * `signal` has ended. */
static TpsTaskId
recv_flag(TpsBuilder *b, guint rank, TpsTaskId signal, const char *name)
{
    TpsTaskSpec spec = {
        .kind = TPS_KIND_COMM,
        .name = name,
        .rank = rank,
        .stream = b->recv[rank],
        .parent = TPS_TASK_NONE,
        .launch = TRUE,
        .ctas = 1,
    };
    TpsTaskId id = tps_builder_add(b, &spec);
    tps_builder_end_after(b, id, signal);
    return id;
}

/* An SM-based userbuffers kernel on each rank's comm stream: `ctas` CTAs;
 * each rank pulls `bytes_per_peer` from every peer (all-gather: the peer's
 * shard; reduce-scatter: this rank's slice of the peer's partial sum). It
 * starts with a cross-rank flag barrier: no data moves before every rank
 * has reached the same kernel. */
static void
ub_kernel(TpsBuilder *b, guint ctas, double bytes_per_peer, const char *name, TpsOpIds *out)
{
    const guint t = b->ranks;
    TpsOpIds kernels;
    g_autofree char *flow_name = g_strdup_printf("%s.pull", name);
    double cap = MAX(1, ctas) * b->hw->sm_mem_gbps;
    TpsTime floor_ns = tps_time_from_ns(bytes_per_peer * (t - 1) / cap);

    for (guint r = 0; r < t; r++) {
        TpsTaskSpec spec = {
            .kind = TPS_KIND_COMM,
            .name = name,
            .rank = r,
            .stream = b->comm[r],
            .parent = TPS_TASK_NONE,
            .launch = TRUE,
            .container = TRUE,
            .ctas = ctas,
            .bytes = bytes_per_peer * (t - 1),
        };
        kernels.id[r] = tps_builder_add(b, &spec);
    }
    for (guint r = 0; r < t; r++) {
        for (guint q = 0; q < t; q++) {
            if (q == r)
                continue;
            /* Data flows from the peer q into r, pulled by r's CTAs. */
            TpsTaskSpec spec = {
                .kind = TPS_KIND_FLOW,
                .name = flow_name,
                .rank = q,
                .stream = TPS_STREAM_NONE,
                .parent = kernels.id[r],
                .dst_rank = r,
                .link_bytes = bytes_per_peer,
                .floor_ns = floor_ns,
                .bytes = bytes_per_peer,
            };
            TpsTaskId id = tps_builder_add(b, &spec);
            for (guint p = 0; p < t; p++)
                if (p != r)
                    tps_builder_after_start(b, id, kernels.id[p]);
        }
    }
    if (out)
        *out = kernels;
}

/* ---- all-gather + GEMM ---- */

/* A copy-engine D2D copy of `bytes` inside each rank's memory on
 * `streams[r]` (cudaMemcpyAsync device to device): a copy engine and the
 * bytes read and written through HBM, no SMs. */
static void
d2d_copy(TpsBuilder *b, const TpsStreamId *streams, double bytes, const char *name)
{
    for (guint r = 0; r < b->ranks; r++) {
        TpsTaskSpec spec = {
            .kind = TPS_KIND_COPY,
            .name = name,
            .rank = r,
            .stream = streams[r],
            .parent = TPS_TASK_NONE,
            .launch = TRUE,
            .copy_engine = TRUE,
            .hbm_bytes = 2.0 * bytes,
            .bytes = bytes,
        };
        tps_builder_add(b, &spec);
    }
}

void
tps_overlap_ring_exchange_ag(TpsBuilder *b, const TpsGemmShape *g, const TpsOverlapConfig *cfg)
{
    const guint t = b->ranks;
    const double shard = (double)(g->m / t) * g->k * ag_elt(b, g);
    const gboolean aggregate = cfg->aggregate && t % 2 == 0 && t > 2;
    /* Aggregated: first the pair exchange, then two chunks per step. */
    const guint steps = aggregate ? t / 2 : t;
    const guint64 rows = aggregate ? 2 * (g->m / t) : g->m / t;
    const double step_bytes = aggregate ? 2 * shard : shard;
    g_autofree char *copy_in = g_strdup_printf("%s.ub_copy", g->name);
    g_autofree char *copy_out = g_strdup_printf("%s.ub_copy_out", g->name);
    g_autofree char *pair = g_strdup_printf("%s.ag_pair", g->name);
    g_autofree char *send = g_strdup_printf("%s.ag_send", g->name);
    /* TE's P2P overlap runs its GEMM chunks on the SMs left by the margin
     * too (CommOverlapP2PBase: _math_sms), which a ring_exchange entry
     * takes from an RS slot's pipeline defaults when it leaves it out. */
    const guint gemm_sms = tps_overlap_gemm_sms(b, cfg);
    g_autofree char *recv = g_strdup_printf("%s.ag_recv", g->name);

    /* The local shard is copied into its chunk of the userbuffer, unless a
     * fused LayerNorm wrote it there. */
    if (!g->ln_input)
        tps_builder_memory(b, b->main, copy_in, 2.0 * shard, NULL);
    for (guint j = 0; j < MIN(3u, steps); j++)
        fork_from_main(b, b->gemm[j]);
    fork_from_main(b, b->send);
    fork_from_main(b, b->recv);

    if (aggregate) {
        /* Exchange with the pair neighbour (r ^ 1): the first GEMM needs
         * both chunks. */
        TpsTaskId signals[TPS_MAX_RANKS];
        TpsOpIds recvs;
        for (guint r = 0; r < t; r++)
            signals[r] = p2p_send(b, cfg, r, r ^ 1u, b->send[r], shard, pair);
        for (guint r = 0; r < t; r++)
            recvs.id[r] = recv_flag(b, r, signals[r ^ 1u], pair);
        tps_builder_wait(b, b->send, &recvs);
        tps_builder_wait(b, b->gemm[0], &recvs);
    }

    b->coll_bytes[TPS_COLL_ALL_GATHER] += (double)g->m * g->k * ag_elt(b, g);
    b->coll_count[TPS_COLL_ALL_GATHER]++;
    const guint dist = aggregate ? 2 : 1;
    for (guint i = 0; i < steps; i++) {
        g_autofree char *gname = g_strdup_printf("%s[%u]", g->name, i);
        tps_builder_gemm(b, b->gemm[i % 3], gname, rows, g->n, g->k, gemm_sms, NULL);
        if (i + 1 == steps)
            break;
        /* Send the chunk in hand to the next rank (it was received at the
         * previous step, or is the local one), receive from the previous. */
        TpsTaskId signals[TPS_MAX_RANKS];
        TpsOpIds recvs;
        for (guint r = 0; r < t; r++)
            signals[r] = p2p_send(b, cfg, r, (r + dist) % t, b->send[r], step_bytes, send);
        for (guint r = 0; r < t; r++)
            recvs.id[r] = recv_flag(b, r, signals[(r + t - dist) % t], recv);
        /* The next send forwards what was just received; the next GEMM
         * computes on it. */
        tps_builder_wait(b, b->send, &recvs);
        tps_builder_wait(b, b->gemm[(i + 1) % 3], &recvs);
    }
    /* The copy kept for the backward pass, behind the last send. */
    if (g->ln_input)
        d2d_copy(b, b->send, shard, copy_out);
    for (guint j = 0; j < MIN(3u, steps); j++)
        join_to_main(b, b->gemm[j]);
    join_to_main(b, b->send);
    join_to_main(b, b->recv);
}

void
tps_overlap_ag_gemm(TpsBuilder *b, const TpsGemmShape *g, const TpsOverlapConfig *cfg)
{
    /* One rank has nothing to gather: every method is the plain GEMM. */
    const TpsMethodInfo *method = tps_method_info(cfg->method);
    if (method->ag_gemm != NULL && b->ranks > 1) {
        method->ag_gemm(b, g, cfg);
        return;
    }
    g_autofree char *ag = g_strdup_printf("%s.ag", g->name);
    tps_builder_collective(b, b->main, TPS_COLL_ALL_GATHER, (double)g->m * g->k * ag_elt(b, g), ag,
                           NULL);
    tps_builder_gemm(b, b->main, g->name, g->m, g->n, g->k, 0, NULL);
}

/* ---- GEMM + reduce-scatter ---- */

void
tps_overlap_pipeline_rs(TpsBuilder *b, const TpsGemmShape *g, const TpsOverlapConfig *cfg)
{
    const guint t = b->ranks, splits = MAX(1u, cfg->num_splits);
    const guint64 cols = g->n / splits;
    const double slice = (double)(g->m / t) * cols * elt(b);
    const guint gemm_sms = tps_overlap_gemm_sms(b, cfg);
    g_autofree char *rs = g_strdup_printf("%s.rs", g->name);

    b->coll_bytes[TPS_COLL_REDUCE_SCATTER] += (double)g->m * g->n * elt(b);
    b->coll_count[TPS_COLL_REDUCE_SCATTER]++;
    for (guint j = 0; j < MIN(3u, splits); j++)
        fork_from_main(b, b->gemm[j]);
    fork_from_main(b, b->comm);

    /* Transformer Engine's default order (rs_overlap_first_gemm off): chunk
     * i's GEMM, then the reduce-scatter of chunk i, which waits for it. With
     * one hardware queue that waiting kernel holds back the launch of GEMM
     * i+1 behind it until GEMM i ends, so chunk GEMMs never share the GPU:
     * each reduce-scatter runs beside the next chunk's GEMM. */
    for (guint i = 0; i < splits; i++) {
        g_autofree char *gname = g_strdup_printf("%s[%u]", g->name, i);
        g_autofree char *cname = g_strdup_printf("%s[%u]", rs, i);
        guint64 n_i = i + 1 == splits ? g->n - cols * (splits - 1) : cols;
        TpsOpIds gemm;
        tps_builder_gemm(b, b->gemm[i % 3], gname, g->m, n_i, g->k, gemm_sms, &gemm);
        guint ctas = i + 1 == splits ? UB_MAX_SM : cfg->num_sm;
        tps_builder_wait(b, b->comm, &gemm);
        ub_kernel(b, MIN(ctas, b->hw->sms), slice, cname, NULL);
    }
    for (guint j = 0; j < MIN(3u, splits); j++)
        join_to_main(b, b->gemm[j]);
    join_to_main(b, b->comm);
}

void
tps_overlap_ring_exchange_rs(TpsBuilder *b, const TpsGemmShape *g, const TpsOverlapConfig *cfg)
{
    const guint t = b->ranks;
    const guint64 rows = g->m / t;
    const double slice = (double)rows * g->n * elt(b);
    g_autofree char *send = g_strdup_printf("%s.rs_send", g->name);
    g_autofree char *recv = g_strdup_printf("%s.rs_recv", g->name);
    g_autofree char *reduce = g_strdup_printf("%s.rs_reduce", g->name);
    TpsOpIds gemms[TPS_MAX_RANKS];

    b->coll_bytes[TPS_COLL_REDUCE_SCATTER] += (double)g->m * g->n * elt(b);
    b->coll_count[TPS_COLL_REDUCE_SCATTER]++;
    fork_from_main(b, b->gemm[0]);
    fork_from_main(b, b->gemm[1]);
    fork_from_main(b, b->send);
    fork_from_main(b, b->recv);
    /* Partial i (i < t-1) belongs to rank r+i+1; the last one is local. At
     * most two partial GEMMs are in flight (two streams, FIFO); the partial
     * of GEMM i-1 is sent while GEMM i computes, and the receive kernel of
     * that step waits for GEMM i-1 too, then spins until the peer's partial
     * has landed (Transformer Engine's P2P split_overlap_rs). */
    for (guint i = 0; i <= t; i++) {
        if (i < t) {
            g_autofree char *gname = g_strdup_printf("%s[%u]", g->name, i);
            tps_builder_gemm(b, b->gemm[i % 2], gname, rows, g->n, g->k,
                             tps_overlap_gemm_sms(b, cfg), &gemms[i]);
        }
        if (i >= 1 && i - 1 < t - 1) {
            TpsTaskId signals[TPS_MAX_RANKS];
            tps_builder_wait(b, b->send, &gemms[i - 1]);
            tps_builder_wait(b, b->recv, &gemms[i - 1]);
            for (guint r = 0; r < t; r++)
                signals[r] = p2p_send(b, cfg, r, (r + i) % t, b->send[r], slice, send);
            /* Rank r gets its slice from r - i, which sent it to r. */
            for (guint r = 0; r < t; r++)
                recv_flag(b, r, signals[(r + t - i % t) % t], recv);
        }
    }
    join_to_main(b, b->gemm[0]);
    join_to_main(b, b->gemm[1]);
    join_to_main(b, b->send);
    join_to_main(b, b->recv);
    /* The owner sums the t partial slices (fp32 accumulation of t bf16
     * buffers) once every peer's partial has landed. */
    tps_builder_memory(b, b->main, reduce, (t + 1.0) * slice, NULL);
}

void
tps_overlap_gemm_rs(TpsBuilder *b, const TpsGemmShape *g, const TpsOverlapConfig *cfg)
{
    const TpsMethodInfo *method = tps_method_info(cfg->method);
    if (method->gemm_rs != NULL && b->ranks > 1) {
        method->gemm_rs(b, g, cfg);
        return;
    }
    g_autofree char *rs = g_strdup_printf("%s.rs", g->name);
    tps_builder_gemm(b, b->main, g->name, g->m, g->n, g->k, 0, NULL);
    tps_builder_collective(b, b->main, TPS_COLL_REDUCE_SCATTER, (double)g->m * g->n * elt(b), rs,
                           NULL);
}

/* ---- bulk ---- */

void
tps_overlap_bulk(TpsBuilder *b, TpsCollKind kind, double bytes, const TpsOverlapConfig *cfg,
                 const char *name, TpsOpIds *out)
{
    const guint t = b->ranks;
    if (kind == TPS_COLL_ALL_GATHER) {
        /* The local shard goes into its place in the userbuffer first. */
        g_autofree char *copy_in = g_strdup_printf("%s.ub_copy", name);
        tps_builder_memory(b, b->main, copy_in, 2.0 * bytes / t, NULL);
    }
    fork_from_main(b, b->comm);
    b->coll_bytes[kind] += bytes;
    b->coll_count[kind]++;
    ub_kernel(b, MIN(MAX(cfg->num_sm, 1u), b->hw->sms), bytes / t, name, out);
}
