/* DeepEP's normal (training) dispatch and combine, which Megatron-Core's
 * flex dispatcher runs (model.moe.dispatcher flex; token_dispatcher.py
 * MoEFlexTokenDispatcher with the deepep backend, fused_a2a.py), over an
 * EP group placed on the topology (cost/topology.h).
 *
 * Each member sends a token once per destination, not once per expert:
 * across NVLink domains once per destination domain, over its NIC to the
 * member of the same local index there, which forwards it over NVLink to
 * the members holding the token's experts; inside a domain directly over
 * NVLink. The combine runs the same paths backwards and sums a token's
 * partial outputs on the way (in the forwarders and the receiving kernel).
 *
 * Routing is taken as uniform (assumption): a token's top_k experts are k
 * distinct experts drawn uniformly from E, spread evenly over the group's
 * G members, P of them per NVLink domain (N = G / P domains). A set of
 * E / x experts (a domain's: x = N; a member's: x = G) is missed by all k
 * with probability
 *
 *   q(x) = prod_{i=0}^{k-1} (E - E/x - i) / (E - i)
 *
 * (hypergeometric; (1 - 1/x)^k when E >> k), so a token reaches
 * D_N = N (1 - q(N)) domains (its own included) and D_G = G (1 - q(G))
 * members. Per member and dispatch, with t = h x elt bytes a token:
 *
 *   nic    = L (N - 1) (1 - q(N)) t       the domains other than its own
 *   nvlink = L D_G (P - 1) / P t          what it forwards: every member
 *            receives as many tokens over the NIC (and from its own domain)
 *            as it sends, L D_N, and passes each to the members of its
 *            domain that hold the token's experts, P (1 - q(G)) / (1 - q(N))
 *            of them on average, (P - 1) / P of those not itself
 *
 * and the time, the NIC and NVLink phases pipelined (DeepEP's chunked
 * kernels) so the slower one sets it:
 *
 *   t = latency + max(nvlink / (nvlink_gbps x nvlink_efficiency), nic / nic_share)
 *
 * nic_share the NIC share of one GPU (tps_topo_nic_share_gbps(hw, 1)) over
 * the spine's oversubscription when the group spans leaf groups, and the
 * latency that of NCCL's all-to-all on the same path (assumption: DeepEP's
 * NVSHMEM and NVLink handshakes taken as costing NCCL's).
 */
#pragma once

#include <glib.h>

#include "core/time.h"
#include "cost/hardware.h"
#include "cost/topology.h"

/* DeepEP's Buffer.num_sms default (deep_ep buffer: num_sms = 20), which
 * Megatron-Core sets when moe_flex_dispatcher_num_sms is unset
 * (_DeepepManager: set_deepep_num_sms(... else 20)). */
#define TPS_FLEX_SMS 20u
/* DeepEP's normal kernels reach at most 8 NVLink peers
 * (LEGACY_NUM_MAX_NVL_PEERS: the internode kernels' RDMA ranks are
 * groups of 8 ranks). */
#define TPS_FLEX_MAX_NVL_PEERS 8u

/* One member's dispatch (or combine) of L tokens. */
typedef struct {
    double domains;      /* D_N: distinct NVLink domains a token reaches, own included */
    double members;      /* D_G: distinct members a token reaches, itself included */
    double nic_bytes;    /* sent over its NIC share */
    double nvlink_bytes; /* sent (forwarded) over its NVLink port */
    guint sms;           /* SMs (CTAs) its kernel holds */
} TpsFlexPlan;

/* q(x) above: the probability that a token's top_k experts all miss one of
 * `parts` equal, consecutive parts of the experts. With node-limited
 * routing (`groups` equal groups of consecutive experts, the token's top_k
 * drawn uniformly from the experts of `group_topk` groups drawn uniformly:
 * Megatron's group_limited_topk; groups = group_topk = 0 or 1: none), a
 * part inside one group (parts a multiple of groups) is missed unless its
 * group is chosen, else by the draws from the pool U = group_topk E /
 * groups:
 *
 *   q = (1 - g/n) + g/n prod_{i<k} (U - E/x - i) / (U - i)
 *
 * and a part of m = groups / parts groups, j of them chosen
 * (hypergeometric: C(m, j) C(n - m, g - j) / C(n, g)), by the draws that
 * miss the j E / n experts of those:
 *
 *   q = sum_j C(m, j) C(n - m, g - j) / C(n, g) prod_{i<k} (U - j E/n - i) / (U - i)
 *
 * (n groups, g = group_topk; groups must divide parts or parts groups). */
double tps_flex_miss(guint experts, guint top_k, guint groups, guint group_topk, guint parts);

/* The plan of one dispatch of `tokens` tokens of `token_bytes` each by a
 * member of the group of `shape` (its P = the fewest members in one
 * domain, N = ranks / P) with `experts` experts, top_k, and the routing
 * groups (tps_flex_miss()). */
void tps_flex_plan(double tokens, double token_bytes, guint experts, guint top_k, guint groups,
                   guint group_topk, const TpsGroupShape *shape, TpsFlexPlan *plan);

/* The same over the ETP x EP group of `shape` (Megatron's flex dispatcher
 * with an expert tensor-parallel size `etp`: one communication group over
 * the TP and EP ranks, MoEFlexTokenDispatcher._initialize_metadata()
 * replicating each token's routing over the etp ranks of its experts' EP
 * rank, its routing map [tokens, etp x ep, local experts], top_k x etp of
 * etp x experts for DeepEP). The etp ranks of one EP rank, consecutive
 * (the expert grid's etp-ep order), lie in one domain (etp divides P):
 * a domain's part of the experts is still E / N, a member's E / (G /
 * etp), and a token reaches D_G = G (1 - q(G / etp)) members, each of its
 * experts' EP ranks' etp ranks. etp 1: tps_flex_plan(). */
void tps_flex_plan_etp(double tokens, double token_bytes, guint experts, guint top_k, guint groups,
                       guint group_topk, const TpsGroupShape *shape, guint etp, TpsFlexPlan *plan);

/* Its time alone on idle links; 0 for a group of one. No launch cost. */
TpsTime tps_flex_ns(const TpsHardware *hw, const TpsFlexPlan *plan, const TpsGroupShape *shape);
