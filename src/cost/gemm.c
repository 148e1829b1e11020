/* GEMM cost: output tiles on SMs, in waves, with split-k for skinny
 * outputs, an operand-stream bound per SM, the store of each wave's tiles,
 * the HBM bound and a per-kernel latency (docs/cost-model.md, "GEMM").
 *
 * C[m,n] is cut into tm x tn output tiles, one CTA each, one CTA per SM (the
 * large-tile CUTLASS/cuBLAS kernels fill an SM's shared memory). A CTA
 * computes 2 tm tn k FLOPs at the per-SM tensor peak times the tile's
 * main-loop efficiency, and pays a prologue/epilogue worth k_overhead more
 * k-iterations (filling the shared-memory pipeline). It also streams its A
 * and B panels, (tm + tn) k elements (the rows and columns that exist),
 * through L2 at what one SM can load (gpu.sm_mem_gbps); its main loop is as
 * long as the slower of the two. Then the wave stores its tiles: the
 * concurrent CTAs' tm tn elements each, at L2 bandwidth (sms x sm_mem_gbps)
 * while the whole of C fits in L2 (the lines are written back later, under
 * the next waves' main loops), at HBM bandwidth once it does not (every
 * line stored evicts one to HBM). An Ampere CTA stores after its main loop
 * (store_exposed 1); Hopper's warp-specialised kernels store through TMA
 * while the next tile's main loop runs (store_exposed 0):
 *
 *   main    = max(2 tm tn (k + k_overhead) / (peak_per_sm x efficiency),
 *                 bytes (min(tm, m) + min(tn, n)) k / sm_mem_gbps)
 *   store   = store_exposed x bytes tm tn min(ctas, sms)
 *             / (C fits L2 ? sms x sm_mem_gbps : HBM)
 *   wave_ns = main + store
 *   time    = latency + max(ceil(ctas / sms) x wave_ns, hbm_bytes / HBM)
 *             [+ latency + (4 s + bytes) m n / HBM under split-k: the reduction]
 *
 * so the time steps up as the tile count crosses a multiple of the SMs the
 * kernel gets (wave quantization). When the tiles leave SMs idle (a skinny
 * output: few tokens, or a narrow TP shard), k is split into s slices of at
 * least split_k_min_k (s a power of two up to split_k_max, until the CTAs
 * fill the SMs): s times the CTAs, each on k / s, writing s fp32 partial
 * tiles (4 s m n bytes) instead of C. As in cuBLAS (splitKreduce_kernel
 * after the GEMM kernel of the same op in the shared traces), a second
 * kernel then reduces them: its own latency, then the 4 s m n bytes read
 * and C written at HBM bandwidth, after the last wave (in fixed_ns). That
 * second latency is what keeps a GEMM whose tiles nearly fill the SMs
 * unsplit. HBM traffic is otherwise the
 * compulsory one (A, B read once, C written once). With few tokens the
 * weights dominate those bytes and the GEMM is memory-bound.
 *
 * The configuration (tile, split) with the shortest time on the SMs allowed
 * is chosen, as cuBLAS heuristics do; ties keep the first listed tile and
 * the smallest split. A chunk of a split GEMM (an overlap method's) is a
 * GEMM of the chunk's shape and gets exactly this model's time for it,
 * latency included: chunking pays the latency once per chunk and the waves
 * of each chunk are quantized on their own. The HBM traffic the engine
 * shares (cost/gemm-traffic.c) adds to the compulsory bytes the operand
 * panels each wave re-reads that L2 does not keep.
 */
#include "cost/kernel-cost.h"

#include <math.h>
#include <string.h>

/* Bytes of an fp32 partial sum (split-k workspace). */
#define SPLIT_PARTIAL_BYTES 4.0

static double
peak_flops_per_sm_ns(const TpsHardware *hw, TpsDtype dtype)
{
    /* TFLOP/s = 1e3 FLOP/ns */
    return hw->peak_tflops[dtype] * 1e3 / (double)hw->sms;
}

static guint
usable_sms(const TpsHardware *hw, guint max_sms)
{
    return (max_sms == 0 || max_sms > hw->sms) ? hw->sms : max_sms;
}

/* The clock a kernel's main loops run at, as a fraction of the one the
 * tile efficiencies hold at (gemm.power_sms, gemm.power_exponent): the
 * board's power limit caps the tensor cores' dynamic power, which grows
 * with the SMs that run a main loop and with the clock, so past power_sms
 * active SMs the clock falls as (power_sms / active)^exponent. `active` is
 * the mean over the kernel's waves, ctas / waves: the power controller
 * averages over far longer than a wave. `power` is what one active SM draws
 * relative to a main loop on data (gemm.power_zero_operand for an all-zero
 * A operand, whose multipliers do not toggle): the limit holds power_sms /
 * power such SMs at the full clock. */
static double
power_clock(const TpsHardware *hw, guint64 ctas, guint sms, double power)
{
    if (!(hw->gemm_power_sms > 0.0) || ctas == 0 || sms == 0)
        return 1.0;
    const double waves = (double)((ctas + sms - 1) / sms);
    const double load = power * (double)ctas / waves;
    return load <= hw->gemm_power_sms ? 1.0
                                      : pow(hw->gemm_power_sms / load, hw->gemm_power_exponent);
}

/* The clock the board's average-power limit leaves the GPU after
 * `loaded_us` of load from idle, as a fraction of the one the tile
 * efficiencies hold at. Beside the fast limit of power_clock, which acts
 * on each kernel's active SMs, the power controller lowers the whole
 * GPU's clock as the power it averages over a long window rises: a GPU
 * that starts from idle runs at the tiles' clock and settles to
 * gemm.power_sustained of it with time constant gemm.power_tau_ms,
 *
 *   clock = sustained + (1 - sustained) exp(-loaded / tau).
 *
 * loaded_us 0 is sustained load (training's back-to-back kernels). */
static double
power_settled(const TpsHardware *hw, double loaded_us)
{
    const double sustained = hw->gemm_sustained > 0.0 ? hw->gemm_sustained : 1.0;
    if (!(loaded_us > 0.0) || !(hw->gemm_power_tau_ms > 0.0))
        return sustained;
    return sustained + (1.0 - sustained) * exp(-loaded_us / (hw->gemm_power_tau_ms * 1e3));
}

/* The power of an active SM's main loop on `operands`, relative to data. */
static double
operand_power(const TpsHardware *hw, TpsGemmOperands operands)
{
    if (operands == TPS_GEMM_OPERANDS_ZERO_A && hw->gemm_power_zero > 0.0)
        return hw->gemm_power_zero;
    return 1.0;
}

/* HBM bytes of a split-k GEMM kernel: A and B once, s fp32 partial tiles
 * written (the reduction kernel writes C). */
static double
split_main_bytes(double in_elt, guint64 count, guint64 m, guint64 n, guint64 k, guint s)
{
    return (double)count * (in_elt * ((double)m * (double)k + (double)k * (double)n) +
                            SPLIT_PARTIAL_BYTES * s * (double)m * (double)n);
}

/* The reduction of a split-k GEMM: a second kernel after the GEMM kernel
 * (cuBLAS's splitKreduce_kernel, as the shared Kineto traces show it,
 * launched after the GEMM on the same stream), so it pays its own kernel
 * latency, then reads the s fp32 partials and writes C at HBM bandwidth.
 * It runs after the last wave, not under it. */
static double
split_reduce_ns(const TpsHardware *hw, double elt, double outputs, guint s)
{
    return hw->gemm_latency_us * 1e3 +
           (SPLIT_PARTIAL_BYTES * s + elt) * outputs / tps_cost_hbm_gbps(hw);
}

/* The operand bytes per unit of k one CTA of a tm x tn tile loads through
 * L2: its A rows and B columns that exist. In a thread-block cluster of c
 * CTAs (Hopper) the CTAs along one grid dimension share the other
 * operand's panel: TMA multicasts it, each CTA loading 1 / c of it. The
 * larger panel that has c tiles beside it in the grid is the shared one. */
static double
stream_panel(const TpsHardware *hw, double in_elt, guint64 m, guint64 n, guint tm, guint tn)
{
    const double rows = (double)MIN(m, (guint64)tm), cols = (double)MIN(n, (guint64)tn);
    const guint c = MAX(hw->gemm_cluster, 1u);
    if (c == 1)
        return in_elt * (rows + cols);
    const guint64 gm = (m + tm - 1) / tm, gn = (n + tn - 1) / tn;
    double shared = 0.0;
    if (gm >= c) /* c CTAs down a column of tiles read one B panel */
        shared = MAX(shared, cols);
    if (gn >= c) /* c CTAs along a row of tiles read one A panel */
        shared = MAX(shared, rows);
    return in_elt * (rows + cols - shared * (1.0 - 1.0 / c));
}

/* A split GEMM whose kernel reduces its own slices (split_k_in_kernel, the
 * serial split-k of Hopper's cuBLAS): every slice but the last writes its
 * fp32 partial tile, the last reads them and writes C. The bytes through
 * HBM: A and B once, the partials written and read, C written. */
static double
serial_split_bytes(double in_elt, double elt, guint64 count, guint64 m, guint64 n, guint64 k,
                   guint s)
{
    return (double)count * (in_elt * ((double)m * (double)k + (double)k * (double)n) +
                            (2.0 * SPLIT_PARTIAL_BYTES * (s - 1) + elt) * (double)m * (double)n);
}

/* What the last slice of a tile adds after its main loop under serial
 * split-k: reading the s - 1 partial tiles (their rows and columns that
 * exist) at what one SM loads. */
static double
serial_reduce_ns(const TpsHardware *hw, guint64 m, guint64 n, guint tm, guint tn, guint s)
{
    return SPLIT_PARTIAL_BYTES * (s - 1) * (double)MIN(m, (guint64)tm) *
           (double)MIN(n, (guint64)tn) / hw->sm_mem_gbps;
}

/* The traffic and fixed time of the tile and split `out` holds. The
 * choice weighs the compulsory bytes (cuBLAS heuristics do not see L2
 * misses); the traffic the engine shares HBM by also counts the panels
 * each wave re-reads (gemm-traffic.c), and split-k's partial sums. */
static void
chosen_traffic(const TpsHardware *hw, TpsDtype dtype, guint64 count, guint64 m, guint64 n,
               guint64 k, guint max_sms, TpsKernelCost *out)
{
    const double elt = (double)tps_dtype_bytes(dtype);
    const double outputs = (double)count * (double)m * (double)n;
    out->fixed_ns = tps_time_from_us(hw->gemm_latency_us);
    if (out->ctas > 0) {
        /* The split kernel writes its fp32 partials instead of C (the
         * reduction kernel writes C, in fixed_ns). */
        const guint s = out->split_k;
        const gboolean serial = s > 1 && hw->split_k_in_kernel;
        const double partials = s == 1   ? 0.0
                                : serial ? 2.0 * SPLIT_PARTIAL_BYTES * (s - 1) * outputs
                                         : SPLIT_PARTIAL_BYTES * s * outputs - elt * outputs;
        out->hbm_bytes =
            tps_cost_gemm_traffic(hw, dtype, count, m, n, k, out->tile_m, out->tile_n, max_sms) +
            partials;
        if (serial)
            out->fixed_ns +=
                tps_time_from_ns(serial_reduce_ns(hw, m, n, out->tile_m, out->tile_n, s));
        else if (s > 1)
            out->fixed_ns += tps_time_from_ns(split_reduce_ns(hw, elt, outputs, s));
    }
}

/* Fills the tile and split choice of `count` independent m x n x k
 * products run as `run` says (operand_power, power_settled). */
static void
gemm_tiles(const TpsHardware *hw, TpsDtype dtype, const TpsGemmRun *run, guint64 count, guint64 m,
           guint64 n, guint64 k, guint max_sms, TpsKernelCost *out)
{
    memset(out, 0, sizeof(*out));
    out->max_sms = max_sms;
    if (count == 0 || m == 0 || n == 0 || k == 0)
        return;

    const guint sms = usable_sms(hw, max_sms);
    const double peak = peak_flops_per_sm_ns(hw, dtype);
    /* Operands of gemm_bytes (1 for fp8), the output of elt (bf16 under
     * fp8: Transformer Engine's FP8 GEMMs write bf16). */
    const double elt = (double)tps_dtype_bytes(dtype);
    const double in_elt = (double)tps_dtype_gemm_bytes(dtype);
    const double outputs = (double)count * (double)m * (double)n;
    const double bytes = (double)count * (in_elt * ((double)m * (double)k + (double)k * (double)n) +
                                          elt * (double)m * (double)n);
    const double hbm = tps_cost_hbm_gbps(hw);
    /* Where the tiles are stored: L2 while all of C fits in it. */
    const double store_gbps =
        elt * outputs <= hw->l2_mib * 1024.0 * 1024.0 ? hw->sm_mem_gbps * hw->sms : hbm;
    const guint split_max = MAX(hw->split_k_max, 1u);
    const guint64 min_k = MAX(hw->split_k_min_k, 1u);
    const double power = operand_power(hw, run->operands);
    const double settled = power_settled(hw, run->loaded_us);
    double best = INFINITY;

    /* A recorded kernel: its tile and split alone, whatever the model
     * would have chosen. */
    const gboolean forced = run->tile_m > 0;
    const guint split_lo = forced ? MAX(run->split_k, 1u) : 1;
    const guint split_hi = forced ? split_lo : split_max;

    for (guint i = 0; i < hw->n_tiles; i++) {
        const TpsGemmTile *t = &hw->tiles[i];
        if (forced && (t->m != run->tile_m || t->n != run->tile_n))
            continue;
        const guint64 tiles = count * ((m + t->m - 1) / t->m) * ((n + t->n - 1) / t->n);
        const double panel = stream_panel(hw, in_elt, m, n, t->m, t->n);
        for (guint s = split_lo; s <= split_hi; s *= 2) {
            /* More slices only while the tiles leave SMs idle and each
             * slice keeps enough k to run its pipeline. */
            if (!forced && s > 1 && (tiles * (s / 2) >= sms || k / s < min_k))
                break;
            const guint64 slice = (k + s - 1) / s;
            const guint64 ctas = tiles * s;
            const double clock = power_clock(hw, ctas, sms, power) * settled;
            double compute = 2.0 * t->m * t->n * ((double)slice + hw->k_overhead) /
                             (peak * t->efficiency * clock);
            double stream = panel * (double)slice / hw->sm_mem_gbps;
            double store = hw->gemm_store_exposed * elt * t->m * t->n *
                           (double)MIN(ctas, (guint64)sms) / store_gbps;
            TpsTime wave_ns = tps_time_from_ns(MAX(compute, stream) + store);
            const gboolean serial = s > 1 && hw->split_k_in_kernel;
            double traffic = s == 1   ? bytes
                             : serial ? serial_split_bytes(in_elt, elt, count, m, n, k, s)
                                      : split_main_bytes(in_elt, count, m, n, k, s);
            double waves = (double)((ctas + sms - 1) / sms);
            double after = s == 1   ? 0.0
                           : serial ? serial_reduce_ns(hw, m, n, t->m, t->n, s)
                                    : split_reduce_ns(hw, elt, outputs, s);
            double time = MAX(waves * (double)wave_ns, traffic / hbm) + after;
            if (time < best && ctas <= G_MAXUINT) {
                best = time;
                out->ctas = (guint)ctas;
                out->wave_ns = wave_ns;
                out->hbm_bytes = traffic;
                out->tile_m = t->m;
                out->tile_n = t->n;
                out->split_k = s;
            }
        }
    }
    chosen_traffic(hw, dtype, count, m, n, k, max_sms, out);
    out->flops = 2.0 * (double)count * (double)m * (double)n * (double)k;
}

/* Training's GEMMs: operands of data, under sustained load. */
static const TpsGemmRun sustained_data = {TPS_GEMM_OPERANDS_DATA, 0.0, 0, 0, 0};

void
tps_cost_gemm(const TpsHardware *hw, TpsDtype dtype, guint64 m, guint64 n, guint64 k, guint max_sms,
              TpsKernelCost *out)
{
    g_return_if_fail(hw != NULL && out != NULL && dtype < TPS_DTYPE_COUNT);
    gemm_tiles(hw, dtype, &sustained_data, 1, m, n, k, max_sms, out);
}

void
tps_cost_gemm_operands(const TpsHardware *hw, TpsDtype dtype, TpsGemmOperands operands, guint64 m,
                       guint64 n, guint64 k, guint max_sms, TpsKernelCost *out)
{
    g_return_if_fail(hw != NULL && out != NULL && dtype < TPS_DTYPE_COUNT);
    g_return_if_fail(operands == TPS_GEMM_OPERANDS_DATA || operands == TPS_GEMM_OPERANDS_ZERO_A);
    const TpsGemmRun run = {operands, 0.0, 0, 0, 0};
    gemm_tiles(hw, dtype, &run, 1, m, n, k, max_sms, out);
}

gboolean
tps_cost_gemm_has_tile(const TpsHardware *hw, guint tile_m, guint tile_n)
{
    g_return_val_if_fail(hw != NULL, FALSE);
    for (guint i = 0; i < hw->n_tiles; i++)
        if (hw->tiles[i].m == tile_m && hw->tiles[i].n == tile_n)
            return TRUE;
    return FALSE;
}

void
tps_cost_gemm_run(const TpsHardware *hw, TpsDtype dtype, const TpsGemmRun *run, guint64 m,
                  guint64 n, guint64 k, guint max_sms, TpsKernelCost *out)
{
    g_return_if_fail(hw != NULL && out != NULL && run != NULL && dtype < TPS_DTYPE_COUNT);
    g_return_if_fail(run->operands == TPS_GEMM_OPERANDS_DATA ||
                     run->operands == TPS_GEMM_OPERANDS_ZERO_A);
    g_return_if_fail(run->loaded_us >= 0.0);
    g_return_if_fail(run->tile_m == 0 || tps_cost_gemm_has_tile(hw, run->tile_m, run->tile_n));
    gemm_tiles(hw, dtype, run, 1, m, n, k, max_sms, out);
}

void
tps_cost_batched_gemm(const TpsHardware *hw, TpsDtype dtype, guint64 count, guint64 m, guint64 n,
                      guint64 k, guint max_sms, TpsKernelCost *out)
{
    g_return_if_fail(hw != NULL && out != NULL && dtype < TPS_DTYPE_COUNT);
    gemm_tiles(hw, dtype, &sustained_data, count, m, n, k, max_sms, out);
}
