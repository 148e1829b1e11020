/* Megatron-LM launch scripts read into scenario sections (see
 * megatron-args.h and docs/megatron-args.md).
 *
 * Two steps: the shell reader (shell-script.h) turns the script into
 * commands of words, with variables and arrays expanded and each word's
 * position kept (the position of a variable's value where a word is that
 * variable alone, so that "parallel.tp must divide ..." points at
 * TP_SIZE=8 rather than at $TP_SIZE); then the words of each command that
 * carries a Megatron or torchrun option are read as argparse reads them
 * (the last of a repeated option wins; no abbreviations: Megatron's parser
 * sets allow_abbrev=False) and mapped onto scenario keys. Names, defaults
 * and derived values follow megatron/training/arguments.py.
 */
#include "io/input/megatron-args.h"

#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "io/input/scenario-file.h"
#include "io/input/shell-script.h"

/* ---- options ---- */

typedef enum {
    O_LAYERS,
    O_HIDDEN,
    O_HEADS,
    O_GQA,
    O_GROUPS,
    O_FFN,
    O_SWIGLU,
    O_SEQ,
    O_MAX_POS,
    O_VOCAB,
    O_TOKENIZER_TYPE,
    O_TOKENIZER_MODEL,
    O_VOCAB_FILE,
    O_VOCAB_DIVISIBLE,
    O_NORM,
    O_POSITION,
    O_NO_POSITION,
    O_NO_BIAS,
    O_UNTIE,
    O_KV_CHANNELS,
    O_FLASH,
    O_ATTN_BACKEND,
    O_TP,
    O_PP,
    O_VPP_LAYERS,
    O_VPP,
    O_VSTAGES,
    O_SP,
    O_TP_PP_DP,
    O_CP,
    O_CP_COMM,
    O_HCP,
    O_MICRO,
    O_GLOBAL,
    O_RAMPUP,
    O_RECOMPUTE_GRANULARITY,
    O_RECOMPUTE_METHOD,
    O_RECOMPUTE_LAYERS,
    O_RECOMPUTE_ACTIVATIONS,
    O_DISTOPT,
    O_OVERLAP_GRAD,
    O_OVERLAP_PARAM,
    O_DDP_BUCKET,
    O_TP_COMM,
    O_TP_COMM_CFG,
    O_BULK_WGRAD_ON,
    O_BULK_WGRAD_OFF,
    O_BULK_DGRAD_ON,
    O_BULK_DGRAD_OFF,
    O_OVERLAP_AG_ON,
    O_OVERLAP_AG_OFF,
    O_OVERLAP_RS_ON,
    O_OVERLAP_RS_OFF,
    O_OVERLAP_RS_DGRAD,
    O_SPLIT_AG_ON,
    O_SPLIT_AG_OFF,
    O_SPLIT_RS_ON,
    O_SPLIT_RS_OFF,
    O_ATOMIC_AG,
    O_ATOMIC_RS,
    O_BF16,
    O_FP16,
    O_FP8_FORMAT,
    O_FP8_PARAM,
    O_FP8_RECIPE,
    O_GRAD_BF16,
    O_CUDA_GRAPH,
    O_NPROC,
    O_NNODES,
    O_HIDDEN_DROPOUT,
    O_FIRST_LAYERS,
    O_LAST_LAYERS,
    O_ACCOUNT_EMBEDDING,
    O_ACCOUNT_LOSS,
    O_QK_NORM,
    O_EXPERTS,
    O_TOPK,
    O_MOE_FFN,
    O_MOE_SHARED_FFN,
    O_MOE_LAYER_FREQ,
    O_MOE_DISPATCHER,
    O_MOE_DEEPEP,
    O_MOE_ROUTER_GROUPS,
    O_MOE_ROUTER_GROUP_TOPK,
    O_MOE_FLEX_BACKEND,
    O_MOE_GROUPED,
    O_MOE_CAPACITY,
    O_MOE_SHARED_OVERLAP,
    O_MOE_EP_OVERLAP,
    O_MOE_EXPERT_BIAS,
    O_EP,
    O_ETP,
    O_MEGATRON_FSDP,
    O_TORCH_FSDP2,
    O_SHARDING,
    O_AMAX_HISTORY,
    O_MLA,
    O_Q_LORA,
    O_KV_LORA,
    O_QK_HEAD,
    O_QK_POS,
    O_V_HEAD,
    O_COUNT
} OptId;

typedef struct {
    const char *name;
    gboolean takes_value;
    OptId id;
} Opt;

/* Megatron's names (megatron/training/arguments.py, and the older and newer
 * spellings of the --tp-comm-* switches), then torchrun's. */
static const Opt options[] = {
    {"--num-layers", TRUE, O_LAYERS},
    {"--hidden-size", TRUE, O_HIDDEN},
    {"--num-attention-heads", TRUE, O_HEADS},
    {"--group-query-attention", FALSE, O_GQA},
    {"--num-query-groups", TRUE, O_GROUPS},
    {"--ffn-hidden-size", TRUE, O_FFN},
    {"--swiglu", FALSE, O_SWIGLU},
    {"--seq-length", TRUE, O_SEQ},
    {"--encoder-seq-length", TRUE, O_SEQ},
    {"--max-position-embeddings", TRUE, O_MAX_POS},
    {"--vocab-size", TRUE, O_VOCAB},
    {"--tokenizer-type", TRUE, O_TOKENIZER_TYPE},
    {"--tokenizer-model", TRUE, O_TOKENIZER_MODEL},
    {"--vocab-file", TRUE, O_VOCAB_FILE},
    {"--make-vocab-size-divisible-by", TRUE, O_VOCAB_DIVISIBLE},
    {"--normalization", TRUE, O_NORM},
    {"--position-embedding-type", TRUE, O_POSITION},
    {"--no-position-embedding", FALSE, O_NO_POSITION},
    {"--disable-bias-linear", FALSE, O_NO_BIAS},
    {"--untie-embeddings-and-output-weights", FALSE, O_UNTIE},
    {"--kv-channels", TRUE, O_KV_CHANNELS},
    {"--use-flash-attn", FALSE, O_FLASH},
    {"--attention-backend", TRUE, O_ATTN_BACKEND},
    {"--tensor-model-parallel-size", TRUE, O_TP},
    {"--pipeline-model-parallel-size", TRUE, O_PP},
    {"--num-layers-per-virtual-pipeline-stage", TRUE, O_VPP_LAYERS},
    {"--virtual-pipeline-model-parallel-size", TRUE, O_VPP},
    {"--num-virtual-stages-per-pipeline-rank", TRUE, O_VSTAGES},
    {"--sequence-parallel", FALSE, O_SP},
    {"--use-tp-pp-dp-mapping", FALSE, O_TP_PP_DP},
    {"--context-parallel-size", TRUE, O_CP},
    {"--cp-comm-type", TRUE, O_CP_COMM},
    {"--hierarchical-context-parallel-sizes", TRUE, O_HCP},
    {"--micro-batch-size", TRUE, O_MICRO},
    {"--global-batch-size", TRUE, O_GLOBAL},
    {"--rampup-batch-size", TRUE, O_RAMPUP},
    {"--recompute-granularity", TRUE, O_RECOMPUTE_GRANULARITY},
    {"--recompute-method", TRUE, O_RECOMPUTE_METHOD},
    {"--recompute-num-layers", TRUE, O_RECOMPUTE_LAYERS},
    {"--recompute-activations", FALSE, O_RECOMPUTE_ACTIVATIONS},
    {"--use-distributed-optimizer", FALSE, O_DISTOPT},
    {"--overlap-grad-reduce", FALSE, O_OVERLAP_GRAD},
    {"--overlap-param-gather", FALSE, O_OVERLAP_PARAM},
    {"--ddp-bucket-size", TRUE, O_DDP_BUCKET},
    {"--tp-comm-overlap", FALSE, O_TP_COMM},
    {"--tp-comm-overlap-cfg", TRUE, O_TP_COMM_CFG},
    {"--tp-comm-bulk-wgrad", FALSE, O_BULK_WGRAD_ON},
    {"--disable-tp-comm-bulk-wgrad", FALSE, O_BULK_WGRAD_OFF},
    {"--no-tp-comm-bulk-wgrad", FALSE, O_BULK_WGRAD_OFF},
    {"--tp-comm-bulk-dgrad", FALSE, O_BULK_DGRAD_ON},
    {"--disable-tp-comm-bulk-dgrad", FALSE, O_BULK_DGRAD_OFF},
    {"--no-tp-comm-bulk-dgrad", FALSE, O_BULK_DGRAD_OFF},
    {"--tp-comm-overlap-ag", FALSE, O_OVERLAP_AG_ON},
    {"--disable-tp-comm-overlap-ag", FALSE, O_OVERLAP_AG_OFF},
    {"--no-tp-comm-overlap-ag", FALSE, O_OVERLAP_AG_OFF},
    {"--tp-comm-overlap-rs", FALSE, O_OVERLAP_RS_ON},
    {"--disable-tp-comm-overlap-rs", FALSE, O_OVERLAP_RS_OFF},
    {"--no-tp-comm-overlap-rs", FALSE, O_OVERLAP_RS_OFF},
    {"--tp-comm-overlap-rs-dgrad", FALSE, O_OVERLAP_RS_DGRAD},
    {"--tp-comm-split-ag", FALSE, O_SPLIT_AG_ON},
    {"--disable-tp-comm-split-ag", FALSE, O_SPLIT_AG_OFF},
    {"--no-tp-comm-split-ag", FALSE, O_SPLIT_AG_OFF},
    {"--tp-comm-split-rs", FALSE, O_SPLIT_RS_ON},
    {"--disable-tp-comm-split-rs", FALSE, O_SPLIT_RS_OFF},
    {"--no-tp-comm-split-rs", FALSE, O_SPLIT_RS_OFF},
    {"--tp-comm-atomic-ag", FALSE, O_ATOMIC_AG},
    {"--tp-comm-atomic-rs", FALSE, O_ATOMIC_RS},
    {"--bf16", FALSE, O_BF16},
    {"--fp16", FALSE, O_FP16},
    {"--fp8-format", TRUE, O_FP8_FORMAT},
    {"--fp8-param-gather", FALSE, O_FP8_PARAM},
    {"--fp8-recipe", TRUE, O_FP8_RECIPE},
    {"--grad-reduce-in-bf16", FALSE, O_GRAD_BF16},
    {"--enable-cuda-graph", FALSE, O_CUDA_GRAPH},
    /* torchrun (both spellings are accepted there). */
    {"--nproc_per_node", TRUE, O_NPROC},
    {"--nproc-per-node", TRUE, O_NPROC},
    {"--nnodes", TRUE, O_NNODES},
    {"--hidden-dropout", TRUE, O_HIDDEN_DROPOUT},
    {"--decoder-first-pipeline-num-layers", TRUE, O_FIRST_LAYERS},
    {"--decoder-last-pipeline-num-layers", TRUE, O_LAST_LAYERS},
    {"--account-for-embedding-in-pipeline-split", FALSE, O_ACCOUNT_EMBEDDING},
    {"--account-for-loss-in-pipeline-split", FALSE, O_ACCOUNT_LOSS},
    {"--qk-layernorm", FALSE, O_QK_NORM},
    /* Mixture of experts (model.moe, parallel.ep and etp). */
    {"--num-experts", TRUE, O_EXPERTS},
    {"--moe-router-topk", TRUE, O_TOPK},
    {"--moe-ffn-hidden-size", TRUE, O_MOE_FFN},
    {"--moe-shared-expert-intermediate-size", TRUE, O_MOE_SHARED_FFN},
    {"--moe-layer-freq", TRUE, O_MOE_LAYER_FREQ},
    {"--moe-token-dispatcher-type", TRUE, O_MOE_DISPATCHER},
    {"--moe-enable-deepep", FALSE, O_MOE_DEEPEP},
    {"--moe-router-num-groups", TRUE, O_MOE_ROUTER_GROUPS},
    {"--moe-router-group-topk", TRUE, O_MOE_ROUTER_GROUP_TOPK},
    {"--moe-flex-dispatcher-backend", TRUE, O_MOE_FLEX_BACKEND},
    {"--moe-grouped-gemm", FALSE, O_MOE_GROUPED},
    {"--moe-expert-capacity-factor", TRUE, O_MOE_CAPACITY},
    {"--moe-shared-expert-overlap", FALSE, O_MOE_SHARED_OVERLAP},
    {"--overlap-moe-expert-parallel-comm", FALSE, O_MOE_EP_OVERLAP},
    {"--moe-router-enable-expert-bias", FALSE, O_MOE_EXPERT_BIAS},
    {"--expert-model-parallel-size", TRUE, O_EP},
    {"--expert-tensor-parallel-size", TRUE, O_ETP},
    {"--use-megatron-fsdp", FALSE, O_MEGATRON_FSDP},
    {"--use-torch-fsdp2", FALSE, O_TORCH_FSDP2},
    {"--data-parallel-sharding-strategy", TRUE, O_SHARDING},
    {"--fp8-amax-history-len", TRUE, O_AMAX_HISTORY},
    /* Multi-head latent attention (MLATransformerConfig). */
    {"--multi-latent-attention", FALSE, O_MLA},
    {"--q-lora-rank", TRUE, O_Q_LORA},
    {"--kv-lora-rank", TRUE, O_KV_LORA},
    {"--qk-head-dim", TRUE, O_QK_HEAD},
    {"--qk-pos-emb-head-dim", TRUE, O_QK_POS},
    {"--v-head-dim", TRUE, O_V_HEAD},
};

static const Opt *
find_option(const char *name)
{
    for (guint i = 0; i < G_N_ELEMENTS(options); i++)
        if (strcmp(options[i].name, name) == 0)
            return &options[i];
    return NULL;
}

/* ---- the options tpsim does not map ---- */

typedef enum {
    F_IGNORE,       /* cannot change the simulated step */
    F_REFUSE,       /* changes what runs, and tpsim does not model it */
    F_REFUSE_OVER1, /* the same when its value is more than 1 */
    F_REFUSE_UNLESS /* the same unless its value is `unless` (Megatron's default) */
} FlagClass;

typedef struct {
    const char *name;
    gboolean prefix; /* every option whose name starts with it */
    FlagClass cls;
    const char *unless;
    const char *why; /* for a refusal: "tpsim does not model ..." */
} Flag;

#define WHY_MOE "tpsim models Megatron-Core's default MoE router and dispatch only"
#define WHY_SPLIT                                                                                  \
    "tpsim splits the layers over the pipeline stages evenly or with an uneven first and last "    \
    "stage, not by a custom layout"
#define WHY_OFFLOAD "tpsim does not model offloading to the CPU"

/* Megatron's options (megatron/training/arguments.py) that tpsim reads
 * but does not map: those that change what runs are refused, those that
 * cannot change a step (logging, paths, seeds, checkpoints, data,
 * learning-rate schedule, tokenizer files) are listed as ignored. What is
 * in neither is listed as not known to tpsim. */
static const Flag unmapped[] = {
    /* Mixture of experts. */
    /* Mixture of experts: the options mapped are in `options`; the
     * auxiliary loss's coefficients only scale a scalar of the loss. */
    {"--moe-aux-loss-coeff", FALSE, F_IGNORE, NULL, NULL},
    {"--moe-z-loss-coeff", FALSE, F_IGNORE, NULL, NULL},
    {"--moe-router-load-balancing-type", FALSE, F_REFUSE_UNLESS, "aux_loss", WHY_MOE},
    /* The flex dispatcher's SMs: DeepEP's default (cost/alltoall-flex.h). */
    {"--moe-flex-dispatcher-num-sms", FALSE, F_REFUSE_UNLESS, "20",
     "tpsim models DeepEP's default of 20 SMs"},
    {"--moe-deepep-num-sms", FALSE, F_REFUSE_UNLESS, "20",
     "tpsim models DeepEP's default of 20 SMs"},
    {"--moe-", TRUE, F_REFUSE, NULL, WHY_MOE},
    /* Sharded data parallelism. */
    /* Megatron FSDP's buffers: tpsim models the double buffer
     * (stage-memory.c) with or without the switch; meta-device init and
     * the buffers' NCCL registration change no step time tpsim models. */
    {"--fsdp-double-buffer", FALSE, F_IGNORE, NULL, NULL},
    {"--fsdp-manual-registration", FALSE, F_IGNORE, NULL, NULL},
    {"--init-model-with-meta-device", FALSE, F_IGNORE, NULL, NULL},
    {"--num-distributed-optimizer-instances", FALSE, F_REFUSE_OVER1, NULL,
     "tpsim models one distributed-optimizer instance over the whole data-parallel group"},
    /* The pipeline's split. */
    {"--pipeline-model-parallel-layout", FALSE, F_REFUSE, NULL, WHY_SPLIT},
    /* Other layers and steps. */
    {"--mtp-num-layers", FALSE, F_REFUSE, NULL, "tpsim does not model multi-token prediction"},
    {"--hybrid-override-pattern", FALSE, F_REFUSE, NULL,
     "tpsim does not model hybrid (Mamba) models"},
    {"--is-hybrid-model", FALSE, F_REFUSE, NULL, "tpsim does not model hybrid (Mamba) models"},
    {"--spec", FALSE, F_REFUSE, NULL, "tpsim models Megatron's GPT layer, not a custom spec"},
    {"--heterogeneous-layers-config-path", FALSE, F_REFUSE, NULL,
     "tpsim models layers of one shape"},
    {"--fp4-format", FALSE, F_REFUSE, NULL, "tpsim does not model FP4"},
    {"--optimizer", FALSE, F_REFUSE_UNLESS, "adam", "tpsim models the step of Adam"},
    {"--optimizer-cpu-offload", FALSE, F_REFUSE, NULL, WHY_OFFLOAD},
    {"--cpu-offloading", FALSE, F_REFUSE, NULL, WHY_OFFLOAD},
    {"--delay-wgrad-compute", FALSE, F_REFUSE, NULL,
     "tpsim does not model delayed weight-gradient GEMMs"},
    /* Nothing the step runs: learning rate and its schedule, iterations,
     * logging, checkpoints, data, seeds, the launcher's rendezvous. */
    {"--lr", FALSE, F_IGNORE, NULL, NULL},
    {"--min-lr", FALSE, F_IGNORE, NULL, NULL},
    {"--lr-", TRUE, F_IGNORE, NULL, NULL},
    {"--decoupled-lr", FALSE, F_IGNORE, NULL, NULL},
    {"--decoupled-min-lr", FALSE, F_IGNORE, NULL, NULL},
    {"--weight-decay", FALSE, F_IGNORE, NULL, NULL},
    {"--start-weight-decay", FALSE, F_IGNORE, NULL, NULL},
    {"--end-weight-decay", FALSE, F_IGNORE, NULL, NULL},
    {"--weight-decay-incr-style", FALSE, F_IGNORE, NULL, NULL},
    {"--clip-grad", FALSE, F_IGNORE, NULL, NULL},
    {"--adam-beta1", FALSE, F_IGNORE, NULL, NULL},
    {"--adam-beta2", FALSE, F_IGNORE, NULL, NULL},
    {"--adam-eps", FALSE, F_IGNORE, NULL, NULL},
    {"--init-method-std", FALSE, F_IGNORE, NULL, NULL},
    {"--seed", FALSE, F_IGNORE, NULL, NULL},
    {"--loss-scale", FALSE, F_IGNORE, NULL, NULL},
    {"--initial-loss-scale", FALSE, F_IGNORE, NULL, NULL},
    {"--min-loss-scale", FALSE, F_IGNORE, NULL, NULL},
    {"--loss-scale-window", FALSE, F_IGNORE, NULL, NULL},
    {"--hysteresis", FALSE, F_IGNORE, NULL, NULL},
    {"--train-iters", FALSE, F_IGNORE, NULL, NULL},
    {"--train-samples", FALSE, F_IGNORE, NULL, NULL},
    {"--exit-", TRUE, F_IGNORE, NULL, NULL},
    {"--eval-", TRUE, F_IGNORE, NULL, NULL},
    {"--log-", TRUE, F_IGNORE, NULL, NULL},
    {"--tensorboard-", TRUE, F_IGNORE, NULL, NULL},
    {"--wandb-", TRUE, F_IGNORE, NULL, NULL},
    {"--timing-log-level", FALSE, F_IGNORE, NULL, NULL},
    {"--save", FALSE, F_IGNORE, NULL, NULL},
    {"--save-interval", FALSE, F_IGNORE, NULL, NULL},
    {"--load", FALSE, F_IGNORE, NULL, NULL},
    {"--no-load-optim", FALSE, F_IGNORE, NULL, NULL},
    {"--no-load-rng", FALSE, F_IGNORE, NULL, NULL},
    {"--no-save-optim", FALSE, F_IGNORE, NULL, NULL},
    {"--no-save-rng", FALSE, F_IGNORE, NULL, NULL},
    {"--finetune", FALSE, F_IGNORE, NULL, NULL},
    {"--ckpt-", TRUE, F_IGNORE, NULL, NULL},
    {"--dist-ckpt-", TRUE, F_IGNORE, NULL, NULL},
    {"--use-dist-ckpt", FALSE, F_IGNORE, NULL, NULL},
    {"--async-save", FALSE, F_IGNORE, NULL, NULL},
    {"--auto-detect-ckpt-format", FALSE, F_IGNORE, NULL, NULL},
    {"--use-checkpoint-args", FALSE, F_IGNORE, NULL, NULL},
    {"--data-path", FALSE, F_IGNORE, NULL, NULL},
    {"--train-data-path", FALSE, F_IGNORE, NULL, NULL},
    {"--valid-data-path", FALSE, F_IGNORE, NULL, NULL},
    {"--test-data-path", FALSE, F_IGNORE, NULL, NULL},
    {"--data-cache-path", FALSE, F_IGNORE, NULL, NULL},
    {"--mock-data", FALSE, F_IGNORE, NULL, NULL},
    {"--split", FALSE, F_IGNORE, NULL, NULL},
    {"--num-workers", FALSE, F_IGNORE, NULL, NULL},
    {"--dataloader-type", FALSE, F_IGNORE, NULL, NULL},
    {"--no-mmap-bin-files", FALSE, F_IGNORE, NULL, NULL},
    {"--no-create-attention-mask-in-dataloader", FALSE, F_IGNORE, NULL, NULL},
    {"--merge-file", FALSE, F_IGNORE, NULL, NULL},
    {"--tokenizer-", TRUE, F_IGNORE, NULL, NULL},
    {"--tiktoken-pattern", FALSE, F_IGNORE, NULL, NULL},
    {"--legacy-tokenizer", FALSE, F_IGNORE, NULL, NULL},
    {"--profile", FALSE, F_IGNORE, NULL, NULL},
    {"--profile-", TRUE, F_IGNORE, NULL, NULL},
    {"--use-pytorch-profiler", FALSE, F_IGNORE, NULL, NULL},
    {"--vocab-extra-ids", FALSE, F_IGNORE, NULL, NULL},
    {"--distributed-timeout-minutes", FALSE, F_IGNORE, NULL, NULL},
    {"--use-mcore-models", FALSE, F_IGNORE, NULL, NULL},
    {"--fp8-amax-compute-algo", FALSE, F_IGNORE, NULL, NULL},
    {"--rotary-base", FALSE, F_IGNORE, NULL, NULL},
    /* torchrun's rendezvous. */
    {"--node_rank", FALSE, F_IGNORE, NULL, NULL},
    {"--node-rank", FALSE, F_IGNORE, NULL, NULL},
    {"--master_addr", FALSE, F_IGNORE, NULL, NULL},
    {"--master-addr", FALSE, F_IGNORE, NULL, NULL},
    {"--master_port", FALSE, F_IGNORE, NULL, NULL},
    {"--master-port", FALSE, F_IGNORE, NULL, NULL},
    {"--rdzv", TRUE, F_IGNORE, NULL, NULL},
    {"--rdzv_", TRUE, F_IGNORE, NULL, NULL},
};

static const Flag *
find_flag(const char *name, guint *index)
{
    for (guint i = 0; i < G_N_ELEMENTS(unmapped); i++)
        if (unmapped[i].prefix ? g_str_has_prefix(name, unmapped[i].name)
                            : strcmp(name, unmapped[i].name) == 0) {
            *index = i;
            return &unmapped[i];
        }
    return NULL;
}

typedef struct {
    const char *file;
    GPtrArray *notes;
    const TpsShellWord *opt[O_COUNT]; /* the option word, last given */
    const TpsShellWord *val[O_COUNT]; /* its value */
    const TpsShellWord *hcp_p2p;      /* --hierarchical-context-parallel-sizes' second value */
    const TpsShellWord *launch;       /* the first word of the first launch command */
    const TpsShellWord *world;        /* WORLD_SIZE=..., when torchrun does not say */
    const TpsShellWord *gpus_per_node; /* GPUS_PER_NODE=..., when torchrun does not say */
    const TpsShellWord *num_nodes;     /* NUM_NODES= or NNODES=, when torchrun does not say */
    TpsMegatronLayout layout;         /* what replaces the script's */
    GPtrArray *owned;         /* words made here (split option=value) */
    GString *ignored;         /* the options of F_IGNORE, with their values */
    GString *unknown;         /* the options in neither table */
    GHashTable *listed;       /* what is in ignored and unknown, listed once */
    const TpsShellWord *flag_opt[G_N_ELEMENTS(unmapped)]; /* a refusable option, last given */
    const TpsShellWord *flag_val[G_N_ELEMENTS(unmapped)]; /* its value */
} Args;

static gboolean
word_error(const Args *a, const TpsShellWord *w, GError **error, const char *fmt, ...)
    G_GNUC_PRINTF(4, 5);

static gboolean
word_error(const Args *a, const TpsShellWord *w, GError **error, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tps_input_error_atv(error, a->file, w->line, w->column, fmt, ap);
    va_end(ap);
    return FALSE;
}

static void
note(Args *a, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static void
note(Args *a, const char *fmt, ...)
{
    if (a->notes == NULL)
        return;
    va_list ap;
    va_start(ap, fmt);
    g_ptr_array_add(a->notes, g_strdup_vprintf(fmt, ap));
    va_end(ap);
}

static gboolean
is_option(const char *text)
{
    return g_str_has_prefix(text, "--") && text[2] != '\0';
}

/* The words of one command, "--a b" quoted as one word (as some scripts
 * build their arrays) split into the two argparse was meant to see, and
 * --key=value into key and value (the new words owned by `a`). */
static GPtrArray *
split_words(Args *a, GPtrArray *words)
{
    GPtrArray *split = g_ptr_array_new();
    for (guint i = 0; i < words->len; i++) {
        TpsShellWord *w = g_ptr_array_index(words, i);
        const char *sep = is_option(w->text) ? strpbrk(w->text, " \t=") : NULL;
        if (sep == NULL) {
            g_ptr_array_add(split, w);
            continue;
        }
        g_autofree char *name = g_strndup(w->text, (gsize)(sep - w->text));
        TpsShellWord *k = tps_shell_word_new(name, w->line, w->column, w->unresolved);
        const char *rest = sep + 1;
        while (*rest == ' ' || *rest == '\t')
            rest++;
        TpsShellWord *v =
            tps_shell_word_new(rest, w->line, w->column + (guint)(rest - w->text), w->unresolved);
        k->doubt = v->doubt = w->doubt;
        g_ptr_array_add(a->owned, k);
        g_ptr_array_add(a->owned, v);
        g_ptr_array_add(split, k);
        g_ptr_array_add(split, v);
    }
    return split;
}

/* Option `w` (split[*i]), which tpsim does not map: a flag kept to be
 * modelled or refused later, or listed (ignored or unknown) with the
 * values that follow it, *i moved past them. */
static void
read_unmapped(Args *a, const TpsShellWord *w, GPtrArray *split, guint *i)
{
    g_autoptr(GString) text = g_string_new(w->text);
    const TpsShellWord *first = NULL;
    while (*i + 1 < split->len) {
        const TpsShellWord *v = g_ptr_array_index(split, *i + 1);
        if (is_option(v->text) || g_str_has_suffix(v->text, ".py"))
            break;
        g_string_append_printf(text, " %s", v->text);
        if (first == NULL)
            first = v;
        (*i)++;
    }
    guint index;
    const Flag *f = find_flag(w->text, &index);
    if (f != NULL && f->cls != F_IGNORE) {
        a->flag_opt[index] = w;
        a->flag_val[index] = first != NULL && first->doubt == NULL ? first : NULL;
        return;
    }
    GString *list = f != NULL ? a->ignored : a->unknown;
    if (g_hash_table_add(a->listed, g_strdup(text->str)))
        g_string_append_printf(list, "%s%s", list->len ? ", " : "", text->str);
}

/* Mapped option `o`, word `w` (split[*i]): kept with its value (and a
 * list option's second value), *i moved past them; an error where it
 * expects a value and has none, or comes from a branch that may not run. */
static gboolean
read_mapped(Args *a, const Opt *o, const TpsShellWord *w, GPtrArray *split, guint *i,
            GError **error)
{
    a->opt[o->id] = w;
    a->val[o->id] = NULL;
    if (o->takes_value) {
        const TpsShellWord *next = *i + 1 < split->len ? g_ptr_array_index(split, *i + 1) : NULL;
        if (next == NULL || is_option(next->text))
            return word_error(a, w, error, "%s expects a value", w->text);
        a->val[o->id] = g_ptr_array_index(split, ++*i);
    }
    /* A list option (nargs='+'): its second value. */
    if (o->id == O_HCP) {
        const TpsShellWord *next = *i + 1 < split->len ? g_ptr_array_index(split, *i + 1) : NULL;
        a->hcp_p2p = next != NULL && !is_option(next->text) ? next : NULL;
        *i += a->hcp_p2p != NULL;
    }
    /* An option, or its value, from a branch that may not run. */
    const TpsShellWord *v = a->val[o->id];
    const TpsShellDoubt *d = w->doubt != NULL ? w->doubt : v != NULL ? v->doubt : NULL;
    if (d != NULL)
        return tps_input_error_at(error, a->file, d->line, d->column,
                                  "%s; from such a branch: %s%s%s", d->message, w->text,
                                  v != NULL ? " " : "", v != NULL ? v->text : "");
    return TRUE;
}

/* Read the options of one command. */
static gboolean
read_command(Args *a, GPtrArray *words, GError **error)
{
    g_autoptr(GPtrArray) split = split_words(a, words);
    for (guint i = 0; i < split->len; i++) {
        const TpsShellWord *w = g_ptr_array_index(split, i);
        if (!is_option(w->text))
            continue; /* the program (torchrun, python, pretrain_gpt.py) */
        const Opt *o = find_option(w->text);
        if (o == NULL)
            read_unmapped(a, w, split, &i);
        else if (!read_mapped(a, o, w, split, &i, error))
            return FALSE;
    }
    return TRUE;
}

static gboolean
command_is_launch(GPtrArray *words)
{
    for (guint i = 0; i < words->len; i++) {
        const TpsShellWord *w = g_ptr_array_index(words, i);
        g_autofree char *name = NULL;
        const char *eq = strpbrk(w->text, " \t=");
        name = eq != NULL ? g_strndup(w->text, (gsize)(eq - w->text)) : g_strdup(w->text);
        if (is_option(name) && find_option(name) != NULL)
            return TRUE;
    }
    return FALSE;
}

/* An option's value as a whole number in [min, max]. */
static gboolean
value_uint(const Args *a, OptId id, guint64 min, guint64 max, guint64 *out, GError **error)
{
    const TpsShellWord *v = a->val[id];
    if (v->unresolved)
        return word_error(a, v, error,
                          "%s is '%s', which the script does not set (tpsim reads the variables "
                          "assigned earlier in the script, not the environment or the script's "
                          "arguments)",
                          a->opt[id]->text, v->text);
    guint64 n;
    if (!g_ascii_string_to_unsigned(v->text, 10, min, max, &n, NULL))
        return word_error(a, v, error,
                          "%s takes a whole number from %" G_GUINT64_FORMAT " to %" G_GUINT64_FORMAT
                          ", not '%s'",
                          a->opt[id]->text, min, max, v->text);
    *out = n;
    return TRUE;
}

static gboolean
value_choice(const Args *a, OptId id, const char *const *choices, guint *out, GError **error)
{
    const TpsShellWord *v = a->val[id];
    for (guint i = 0; choices[i] != NULL; i++)
        if (strcmp(choices[i], v->text) == 0) {
            *out = i;
            return TRUE;
        }
    g_autofree char *list = g_strjoinv(", ", (char **)choices);
    return word_error(a, v, error, "%s takes one of %s, not '%s'", a->opt[id]->text, list,
                      v->text);
}

/* ---- the scenario sections ---- */

static TpsYamlNode *
section_of(TpsYamlNode *root, const char *name, const TpsShellWord *at)
{
    TpsYamlNode *s = tps_yaml_get(root, name);
    if (s == NULL) {
        s = tps_yaml_node_new(TPS_YAML_MAP, NULL, at->line, at->column);
        tps_yaml_map_set(root, tps_yaml_node_new(TPS_YAML_SCALAR, name, at->line, at->column), s);
    }
    return s;
}

/* Set `section`.`key` to `value`, the key placed at `key_at`, the value at
 * `value_at` (the word that sets it). */
static void
put(TpsYamlNode *root, const char *section, const char *key, const char *value,
    const TpsShellWord *key_at, const TpsShellWord *value_at)
{
    TpsYamlNode *s = section_of(root, section, key_at);
    tps_yaml_map_set(s, tps_yaml_node_new(TPS_YAML_SCALAR, key, key_at->line, key_at->column),
                     tps_yaml_node_new(TPS_YAML_SCALAR, value, value_at->line, value_at->column));
}

static void
put_uint(TpsYamlNode *root, const char *section, const char *key, guint64 value,
         const TpsShellWord *key_at, const TpsShellWord *value_at)
{
    g_autofree char *text = g_strdup_printf("%" G_GUINT64_FORMAT, value);
    put(root, section, key, text, key_at, value_at);
}

/* An option given with a whole-number value: put it as section.key. */
static gboolean
put_option_uint(Args *a, TpsYamlNode *root, OptId id, const char *section, const char *key,
                guint64 max, guint64 *out, GError **error)
{
    if (a->opt[id] == NULL)
        return TRUE;
    guint64 v;
    if (!value_uint(a, id, 1, max, &v, error))
        return FALSE;
    put_uint(root, section, key, v, a->opt[id], a->val[id]);
    if (out != NULL)
        *out = v;
    return TRUE;
}

/* The vocabulary of a tokenizer named in the script (--tokenizer-type,
 * --tokenizer-model, --vocab-file): the sizes of the published vocabularies,
 * GPT-2's BPE (50257 tokens), Llama 2's SentencePiece (32000) and Llama 3's
 * tiktoken (128256). 0 when nothing is recognised. */
static guint64
tokenizer_vocab(const Args *a, const TpsShellWord **from)
{
    static const struct {
        const char *needle;
        guint64 vocab;
    } hints[] = {
        {"gpt2", 50257},  {"llama-3", 128256}, {"llama3", 128256}, {"llama-2", 32000},
        {"llama2", 32000},
    };
    const OptId ids[] = {O_TOKENIZER_TYPE, O_TOKENIZER_MODEL, O_VOCAB_FILE};
    for (guint i = 0; i < G_N_ELEMENTS(ids); i++) {
        const TpsShellWord *v = a->val[ids[i]];
        if (v == NULL)
            continue;
        g_autofree char *lower = g_ascii_strdown(v->text, -1);
        for (guint j = 0; j < G_N_ELEMENTS(hints); j++)
            if (strstr(lower, hints[j].needle) != NULL) {
                *from = v;
                return hints[j].vocab;
            }
    }
    return 0;
}

/* The options Megatron requires of the model, and its shape: layers,
 * hidden, heads (`hidden`, `heads` set), seq_len, ffn_hidden, kv_heads. */
static gboolean
map_model_shape(Args *a, TpsYamlNode *root, guint64 *hidden, guint64 *heads, GError **error)
{
    const TpsShellWord *at = a->launch;
    static const OptId required[] = {O_LAYERS, O_HIDDEN, O_HEADS, O_SEQ};
    for (guint i = 0; i < G_N_ELEMENTS(required); i++) {
        if (a->opt[required[i]] != NULL)
            continue;
        const char *name = "";
        for (guint j = 0; j < G_N_ELEMENTS(options); j++)
            if (options[j].id == required[i]) {
                name = options[j].name;
                break;
            }
        return word_error(a, at, error, "the Megatron arguments have no %s (Megatron requires it)",
                          name);
    }
    if (!put_option_uint(a, root, O_LAYERS, "model", "layers", TPS_SCENARIO_MAX_LAYERS, NULL,
                         error) ||
        !put_option_uint(a, root, O_HIDDEN, "model", "hidden", TPS_SCENARIO_MAX_HIDDEN, hidden,
                         error) ||
        !put_option_uint(a, root, O_HEADS, "model", "heads", TPS_SCENARIO_MAX_HEADS, heads,
                         error) ||
        !put_option_uint(a, root, O_SEQ, "model", "seq_len", TPS_SCENARIO_MAX_SEQ, NULL, error) ||
        !put_option_uint(a, root, O_FFN, "model", "ffn_hidden", TPS_SCENARIO_MAX_FFN, NULL, error))
        return FALSE;

    /* --num-query-groups counts only with --group-query-attention. */
    if (a->opt[O_GQA] != NULL) {
        if (a->opt[O_GROUPS] == NULL)
            return word_error(a, a->opt[O_GQA], error,
                              "--group-query-attention without --num-query-groups (Megatron's "
                              "default of 1 group is multi-query attention; give it)");
        if (!put_option_uint(a, root, O_GROUPS, "model", "kv_heads", TPS_SCENARIO_MAX_HEADS, NULL,
                             error))
            return FALSE;
    } else if (a->opt[O_GROUPS] != NULL) {
        note(a, "--num-query-groups without --group-query-attention: ignored, as Megatron ignores "
                "it (multi-head attention)");
    }
    return TRUE;
}

/* The layer's kinds: MLP, norm, position embedding, bias, tied
 * embeddings, the attention's channels and kernels. */
static gboolean
map_model_layer(Args *a, TpsYamlNode *root, guint64 hidden, guint64 heads, GError **error)
{
    if (a->opt[O_SWIGLU] != NULL)
        put(root, "model", "mlp", "swiglu", a->opt[O_SWIGLU], a->opt[O_SWIGLU]);
    if (a->opt[O_NORM] != NULL) {
        static const char *const norms[] = {"LayerNorm", "RMSNorm", NULL};
        guint norm;
        if (!value_choice(a, O_NORM, norms, &norm, error))
            return FALSE;
        put(root, "model", "norm", tps_norm_names[norm], a->opt[O_NORM], a->val[O_NORM]);
    }
    /* Megatron accepts the deprecated switch with rope only, where it
     * changes nothing (no learned table is added). */
    if (a->opt[O_NO_POSITION] != NULL &&
        (a->opt[O_POSITION] == NULL || strcmp(a->val[O_POSITION]->text, "rope") != 0))
        return word_error(a, a->opt[O_NO_POSITION], error,
                          "--no-position-embedding without --position-embedding-type rope "
                          "(Megatron rejects it: deprecated, use --position-embedding-type)");
    if (a->opt[O_POSITION] != NULL) {
        static const char *const positions[] = {"learned_absolute", "rope", NULL};
        guint position;
        if (!value_choice(a, O_POSITION, positions, &position, error))
            return FALSE;
        put(root, "model", "position_embedding", tps_position_names[position], a->opt[O_POSITION],
            a->val[O_POSITION]);
    }
    if (a->opt[O_NO_BIAS] != NULL)
        put(root, "model", "bias", "false", a->opt[O_NO_BIAS], a->opt[O_NO_BIAS]);
    if (a->opt[O_UNTIE] != NULL)
        put(root, "model", "tie_embeddings", "false", a->opt[O_UNTIE], a->opt[O_UNTIE]);
    /* Its value is read (and range-checked at the script's word) as the
     * key's. */
    if (a->opt[O_HIDDEN_DROPOUT] != NULL) {
        if (a->val[O_HIDDEN_DROPOUT]->unresolved)
            return word_error(a, a->val[O_HIDDEN_DROPOUT], error,
                              "--hidden-dropout is '%s', which the script does not set",
                              a->val[O_HIDDEN_DROPOUT]->text);
        put(root, "model", "hidden_dropout", a->val[O_HIDDEN_DROPOUT]->text,
            a->opt[O_HIDDEN_DROPOUT], a->val[O_HIDDEN_DROPOUT]);
    }
    /* --kv-channels: the channels per head, model.head_dim (Megatron's
     * default is hidden / heads, which leaves the scenario as before). */
    if (a->opt[O_KV_CHANNELS] != NULL && a->opt[O_MLA] != NULL) {
        note(a, "--kv-channels with --multi-latent-attention: ignored, as Megatron's "
                "MLASelfAttention takes its heads from --qk-head-dim, --qk-pos-emb-head-dim and "
                "--v-head-dim");
    } else if (a->opt[O_KV_CHANNELS] != NULL) {
        guint64 kv;
        if (!value_uint(a, O_KV_CHANNELS, 1, TPS_SCENARIO_MAX_HEAD_DIM, &kv, error))
            return FALSE;
        if (kv * heads != hidden)
            put_uint(root, "model", "head_dim", kv, a->opt[O_KV_CHANNELS], a->val[O_KV_CHANNELS]);
    }
    if (a->opt[O_ATTN_BACKEND] != NULL) {
        static const char *const backends[] = {"auto", "flash", "fused", "unfused", "local", NULL};
        guint backend;
        if (!value_choice(a, O_ATTN_BACKEND, backends, &backend, error))
            return FALSE;
        /* unfused and local (Megatron's own) materialise the score
         * matrix; the others are fused kernels. */
        put(root, "model", "attention", backend >= 3 ? "unfused" : "flash",
            a->opt[O_ATTN_BACKEND], a->val[O_ATTN_BACKEND]);
    }
    return TRUE;
}

/* dtype: FP8 layers run under --fp8-format; the others in the
 * parameters' type. Megatron without --bf16/--fp16 trains in FP32,
 * which tpsim does not model. */
static gboolean
map_model_dtype(Args *a, TpsYamlNode *root, GError **error)
{
    const TpsShellWord *at = a->launch;
    if (a->opt[O_BF16] != NULL && a->opt[O_FP16] != NULL)
        return word_error(a, a->opt[O_FP16], error, "--bf16 and --fp16 together (Megatron "
                                                    "rejects it)");
    if (a->opt[O_FP8_FORMAT] != NULL) {
        static const char *const formats[] = {"e4m3", "hybrid", NULL};
        guint format;
        if (!value_choice(a, O_FP8_FORMAT, formats, &format, error))
            return FALSE;
        put(root, "model", "dtype", "fp8", a->opt[O_FP8_FORMAT], a->val[O_FP8_FORMAT]);
    } else if (a->opt[O_BF16] != NULL) {
        put(root, "model", "dtype", "bf16", a->opt[O_BF16], a->opt[O_BF16]);
    } else if (a->opt[O_FP16] != NULL) {
        put(root, "model", "dtype", "fp16", a->opt[O_FP16], a->opt[O_FP16]);
    } else {
        return word_error(a, at, error,
                          "neither --bf16 nor --fp16: Megatron would train in FP32, which tpsim "
                          "does not model");
    }
    if (a->opt[O_FP8_PARAM] != NULL)
        put(root, "training", "fp8_param_gather", "true", a->opt[O_FP8_PARAM], a->opt[O_FP8_PARAM]);
    /* --fp8-recipe (Megatron's choices, default delayed): the same names
     * as model.fp8_recipe, which refuses it without --fp8-format and
     * refuses mxfp8 on the models tpsim ships. */
    if (!put_option_uint(a, root, O_AMAX_HISTORY, "model", "fp8_amax_history_len", 1u << 20, NULL,
                         error))
        return FALSE;
    if (a->opt[O_FP8_RECIPE] != NULL) {
        guint recipe;
        if (!value_choice(a, O_FP8_RECIPE, tps_fp8_recipe_names, &recipe, error))
            return FALSE;
        put(root, "model", "fp8_recipe", tps_fp8_recipe_names[recipe], a->opt[O_FP8_RECIPE],
            a->val[O_FP8_RECIPE]);
    }
    return TRUE;
}

/* The vocabulary, padded as Megatron pads it: to a multiple of
 * --make-vocab-size-divisible-by (128) times tp. */
static gboolean
map_model_vocab(Args *a, TpsYamlNode *root, guint64 tp, GError **error)
{
    const TpsShellWord *vocab_at = a->val[O_VOCAB];
    guint64 vocab = 0;
    if (vocab_at != NULL) {
        if (!value_uint(a, O_VOCAB, 1, TPS_SCENARIO_MAX_VOCAB, &vocab, error))
            return FALSE;
    } else {
        vocab = tokenizer_vocab(a, &vocab_at);
    }
    if (vocab != 0) {
        guint64 divisible = 128;
        if (a->opt[O_VOCAB_DIVISIBLE] != NULL &&
            !value_uint(a, O_VOCAB_DIVISIBLE, 1, 1u << 16, &divisible, error))
            return FALSE;
        guint64 multiple = divisible * tp;
        guint64 padded = (vocab + multiple - 1) / multiple * multiple;
        if (padded > TPS_SCENARIO_MAX_VOCAB)
            return word_error(a, vocab_at, error, "the vocabulary padded to %" G_GUINT64_FORMAT
                                                  " is too large", padded);
        put_uint(root, "model", "vocab", padded, vocab_at, vocab_at);
    } else {
        note(a, "no --vocab-size and no tokenizer tpsim recognises: model.vocab is tpsim's "
                "default (51200, GPT-2's vocabulary padded)");
    }
    return TRUE;
}

/* The learned position table has --max-position-embeddings rows in
 * Megatron, seq_len in tpsim: the same when they agree, and without
 * a learned table it does not matter. */
static void
note_max_positions(Args *a)
{
    gboolean learned = a->opt[O_POSITION] == NULL ||
                       strcmp(a->val[O_POSITION]->text, "learned_absolute") == 0;
    if (a->opt[O_MAX_POS] != NULL && learned &&
        strcmp(a->val[O_MAX_POS]->text, a->val[O_SEQ]->text) != 0)
        note(a, "--max-position-embeddings %s: not modelled (tpsim sizes the learned position "
                "table as --seq-length x hidden)",
             a->val[O_MAX_POS]->text);
}

/* The model: section (the vocabulary padded for `tp`). */
static gboolean
map_model(Args *a, TpsYamlNode *root, guint64 tp, GError **error)
{
    guint64 hidden, heads;
    if (!map_model_shape(a, root, &hidden, &heads, error) ||
        !map_model_layer(a, root, hidden, heads, error) || !map_model_dtype(a, root, error) ||
        !map_model_vocab(a, root, tp, error))
        return FALSE;
    note_max_positions(a);
    return TRUE;
}

/* --cp-comm-type (one value for every layer) and, for a2a+p2p,
 * --hierarchical-context-parallel-sizes A P (A x P = cp): cp_comm and
 * cp_a2a. */
static gboolean
map_cp_comm(Args *a, TpsYamlNode *root, guint64 cp, GError **error)
{
    guint comm = TPS_CP_P2P;
    if (a->opt[O_CP_COMM] != NULL) {
        if (!value_choice(a, O_CP_COMM, tps_cp_comm_names, &comm, error))
            return FALSE;
        put(root, "parallel", "cp_comm", tps_cp_comm_names[comm], a->opt[O_CP_COMM],
            a->val[O_CP_COMM]);
    }
    if (a->opt[O_HCP] == NULL)
        return TRUE;
    guint64 a2a, p2p;
    const TpsShellWord *second = a->hcp_p2p;
    if (!value_uint(a, O_HCP, 1, TPS_SCENARIO_MAX_CP, &a2a, error))
        return FALSE;
    if (second == NULL ||
        !g_ascii_string_to_unsigned(second->text, 10, 1, TPS_SCENARIO_MAX_CP, &p2p, NULL))
        return word_error(a, second != NULL ? second : a->val[O_HCP], error,
                          "--hierarchical-context-parallel-sizes takes two whole numbers (the "
                          "a2a size and the p2p size)");
    if (a2a * p2p != cp)
        return word_error(a, a->val[O_HCP], error,
                          "--hierarchical-context-parallel-sizes %" G_GUINT64_FORMAT
                          " %" G_GUINT64_FORMAT
                          " must multiply to --context-parallel-size (%" G_GUINT64_FORMAT ")",
                          a2a, p2p, cp);
    put_uint(root, "parallel", "cp_a2a", a2a, a->opt[O_HCP], a->val[O_HCP]);
    return TRUE;
}

/* tp, pp (the layout given in place of the script's winning), cp,
 * the rank order and sp into `root`; tp, pp and cp into the outs. */
static gboolean
map_parallel_sizes(Args *a, TpsYamlNode *root, guint64 *tp_out, guint64 *pp_out, guint64 *cp_out,
                   GError **error)
{
    guint64 tp = 1, pp = 1, cp = 1;
    if (!put_option_uint(a, root, O_TP, "parallel", "tp", TPS_SCENARIO_MAX_TP, &tp, error) ||
        !put_option_uint(a, root, O_PP, "parallel", "pp", TPS_SCENARIO_MAX_PP, &pp, error))
        return FALSE;
    /* The layout given in place of the script's (the scenario file's
     * parallel:, tpsim run's options): what follows from it is derived
     * again. */
    if (a->layout.tp != 0)
        tp = a->layout.tp, put_uint(root, "parallel", "tp", tp, a->launch, a->launch);
    if (a->layout.pp != 0)
        pp = a->layout.pp, put_uint(root, "parallel", "pp", pp, a->launch, a->launch);
    if (!put_option_uint(a, root, O_CP, "parallel", "cp", TPS_SCENARIO_MAX_CP, &cp, error) ||
        !map_cp_comm(a, root, cp, error))
        return FALSE;
    /* The rank order Megatron initializes with this switch
     * (megatron/training/initialize.py: tp-cp-ep-pp-dp instead of
     * tp-cp-ep-dp-pp). */
    if (a->opt[O_TP_PP_DP] != NULL)
        put(root, "parallel", "order", "tp-cp-ep-pp-dp", a->opt[O_TP_PP_DP],
            a->opt[O_TP_PP_DP]);
    /* Megatron turns sequence parallelism off without TP. */
    const TpsShellWord *sp_at = a->opt[O_SP] != NULL ? a->opt[O_SP] : a->launch;
    put(root, "parallel", "sp", a->opt[O_SP] != NULL && tp > 1 ? "true" : "false", sp_at, sp_at);
    *tp_out = tp, *pp_out = pp, *cp_out = cp;
    return TRUE;
}

/* Virtual stages: given, or layers per stage / layers per virtual stage. */
static gboolean
map_virtual_stages(Args *a, TpsYamlNode *root, guint64 layers, guint64 pp, GError **error)
{
    if (a->opt[O_VPP_LAYERS] == NULL)
        return put_option_uint(a, root, O_VPP, "parallel", "vpp", TPS_SCENARIO_MAX_VPP, NULL,
                               error) &&
               put_option_uint(a, root, O_VSTAGES, "parallel", "vpp", TPS_SCENARIO_MAX_VPP, NULL,
                               error);
    guint64 per;
    if (!value_uint(a, O_VPP_LAYERS, 1, TPS_SCENARIO_MAX_LAYERS, &per, error))
        return FALSE;
    if (pp == 0 || layers % pp != 0 || (layers / pp) % per != 0)
        return word_error(a, a->val[O_VPP_LAYERS], error,
                          "--num-layers-per-virtual-pipeline-stage %" G_GUINT64_FORMAT
                          " does not divide the %" G_GUINT64_FORMAT " layers of each of the %"
                          G_GUINT64_FORMAT " pipeline stages",
                          per, pp != 0 ? layers / pp : 0, pp);
    put_uint(root, "parallel", "vpp", layers / pp / per, a->opt[O_VPP_LAYERS],
             a->val[O_VPP_LAYERS]);
    return TRUE;
}

/* The script's GPUS_PER_NODE= as a number: FALSE when it sets none, or one
 * tpsim cannot know, or not a whole number. */
static gboolean
script_gpus_per_node(const Args *a, guint64 *per_node)
{
    return a->gpus_per_node != NULL && !a->gpus_per_node->unresolved &&
           g_ascii_string_to_unsigned(a->gpus_per_node->text, 10, 1, 1u << 16, per_node, NULL);
}

/* The world size the script launches (0: it says none) and the word it
 * comes from: torchrun's, else a WORLD_SIZE the script sets, else its
 * GPUS_PER_NODE times its number of nodes (a launcher other than
 * torchrun: srun). */
static gboolean
script_world(Args *a, guint64 *world, const TpsShellWord **world_at, GError **error)
{
    *world = 0, *world_at = NULL;
    if (a->opt[O_NPROC] != NULL) {
        guint64 nproc, nnodes = 1;
        if (!value_uint(a, O_NPROC, 1, 1u << 16, &nproc, error))
            return FALSE;
        if (a->opt[O_NNODES] != NULL && !value_uint(a, O_NNODES, 1, 1u << 20, &nnodes, error))
            return FALSE;
        *world = nproc * nnodes;
        *world_at = a->opt[O_NNODES] != NULL ? a->val[O_NNODES] : a->val[O_NPROC];
    } else if (a->world != NULL && !a->world->unresolved) {
        if (!g_ascii_string_to_unsigned(a->world->text, 10, 1, 1u << 26, world, NULL))
            return word_error(a, a->world, error, "WORLD_SIZE takes a whole number, not '%s'",
                              a->world->text);
        *world_at = a->world;
    } else if (a->gpus_per_node != NULL && a->num_nodes != NULL && !a->gpus_per_node->unresolved &&
               !a->num_nodes->unresolved) {
        guint64 per_node, nodes;
        if (!script_gpus_per_node(a, &per_node))
            return word_error(a, a->gpus_per_node, error,
                              "GPUS_PER_NODE takes a whole number, not '%s'",
                              a->gpus_per_node->text);
        if (!g_ascii_string_to_unsigned(a->num_nodes->text, 10, 1, 1u << 20, &nodes, NULL))
            return word_error(a, a->num_nodes, error, "the number of nodes is a whole number, "
                              "not '%s'", a->num_nodes->text);
        *world = per_node * nodes, *world_at = a->num_nodes;
    }
    return TRUE;
}

/* tpsim run's --gpus N or --nodes N in place of the script's world. */
static gboolean
rescaled_world(Args *a, guint64 *world, const TpsShellWord **world_at, GError **error)
{
    if (a->layout.gpus != 0) {
        *world = a->layout.gpus, *world_at = a->launch;
    } else if (a->layout.nodes != 0) {
        guint64 per_node = 0;
        if (a->opt[O_NPROC] != NULL) {
            if (!value_uint(a, O_NPROC, 1, 1u << 16, &per_node, error))
                return FALSE;
        } else if (!script_gpus_per_node(a, &per_node)) {
            return word_error(a, a->launch, error,
                              "%" G_GUINT64_FORMAT " nodes asked, but the script says no GPUs per "
                              "node (torchrun's --nproc-per-node, or GPUS_PER_NODE=); give the "
                              "GPUs instead",
                              a->layout.nodes);
        }
        *world = a->layout.nodes * per_node, *world_at = a->launch;
    }
    return TRUE;
}

/* dp: the world size over the model-parallel size, as Megatron derives
 * it. */
static gboolean
map_data_parallel(Args *a, TpsYamlNode *root, guint64 model_parallel, GError **error)
{
    guint64 world;
    const TpsShellWord *world_at;
    if (!script_world(a, &world, &world_at, error) ||
        !rescaled_world(a, &world, &world_at, error))
        return FALSE;
    if (world == 0) {
        note(a, "no world size (torchrun's --nproc-per-node and --nnodes, or WORLD_SIZE): "
                "parallel.dp is 1");
        return TRUE;
    }
    if (world % model_parallel != 0 && (a->layout.gpus != 0 || a->layout.nodes != 0))
        return word_error(a, world_at, error,
                          "%s gives a world size of %" G_GUINT64_FORMAT ", not a multiple of tp "
                          "x pp = %" G_GUINT64_FORMAT " (Megatron's data-parallel size would not "
                          "be whole)",
                          a->layout.gpus != 0 ? "--gpus" : "--nodes", world, model_parallel);
    if (world % model_parallel != 0)
        return word_error(a, world_at, error,
                          "the world size %" G_GUINT64_FORMAT " is not a multiple of tp x pp = %"
                          G_GUINT64_FORMAT " (Megatron's data-parallel size would not be whole)",
                          world, model_parallel);
    if (world / model_parallel > TPS_SCENARIO_MAX_DP)
        return word_error(a, world_at, error, "the world size %" G_GUINT64_FORMAT " is too large",
                          world);
    put_uint(root, "parallel", "dp", world / model_parallel, world_at, world_at);
    return TRUE;
}

/* FSDP: --use-megatron-fsdp with --data-parallel-sharding-strategy
 * (Megatron's no_shard, optim, optim_grads, optim_grads_params; default
 * no_shard, which tpsim models as no FSDP: the gradients all-reduced or
 * reduce-scattered as DDP does) as training.fsdp; --use-torch-fsdp2 as
 * training.fsdp optim_grads_params with training.fsdp_impl torch. The
 * strategy without --use-megatron-fsdp is not read by Megatron. */
static gboolean
put_fsdp(Args *a, TpsYamlNode *root, GError **error)
{
    static const char *const strategies[] = {"no_shard", "optim", "optim_grads",
                                             "optim_grads_params", NULL};
    const TpsShellWord *mfsdp = a->opt[O_MEGATRON_FSDP], *torch = a->opt[O_TORCH_FSDP2];
    if (mfsdp != NULL && torch != NULL)
        return word_error(a, torch, error, "--use-torch-fsdp2 with --use-megatron-fsdp: one FSDP "
                                           "implementation at a time");
    if (torch != NULL) {
        put(root, "training", "fsdp", "optim_grads_params", torch, torch);
        put(root, "training", "fsdp_impl", "torch", torch, torch);
        return TRUE;
    }
    if (a->opt[O_SHARDING] != NULL && mfsdp == NULL) {
        note(a, "--data-parallel-sharding-strategy without --use-megatron-fsdp: ignored, as "
                "Megatron ignores it");
        return TRUE;
    }
    if (mfsdp == NULL)
        return TRUE;
    guint strategy = 0;
    if (a->opt[O_SHARDING] != NULL && !value_choice(a, O_SHARDING, strategies, &strategy, error))
        return FALSE;
    const TpsShellWord *at = a->opt[O_SHARDING] != NULL ? a->val[O_SHARDING] : mfsdp;
    put(root, "training", "fsdp", strategy == 0 ? "none" : strategies[strategy], mfsdp, at);
    put(root, "training", "fsdp_impl", "megatron", mfsdp, mfsdp);
    return TRUE;
}

/* An uneven pipeline: the first and last stages' layers, the embedding
 * and the loss counted in the split (Megatron's rules between them are
 * the scenario's, refused at these options). */
static gboolean
map_split(Args *a, TpsYamlNode *root, GError **error)
{
    if (a->opt[O_ACCOUNT_EMBEDDING] != NULL)
        put(root, "parallel", "account_for_embedding_in_pipeline_split", "true",
            a->opt[O_ACCOUNT_EMBEDDING], a->opt[O_ACCOUNT_EMBEDDING]);
    if (a->opt[O_ACCOUNT_LOSS] != NULL)
        put(root, "parallel", "account_for_loss_in_pipeline_split", "true", a->opt[O_ACCOUNT_LOSS],
            a->opt[O_ACCOUNT_LOSS]);
    return put_option_uint(a, root, O_FIRST_LAYERS, "parallel", "first_stage_layers",
                           TPS_SCENARIO_MAX_LAYERS, NULL, error) &&
           put_option_uint(a, root, O_LAST_LAYERS, "parallel", "last_stage_layers",
                           TPS_SCENARIO_MAX_LAYERS, NULL, error);
}

static gboolean
map_parallel(Args *a, TpsYamlNode *root, guint64 layers, guint64 *tp_out, GError **error)
{
    guint64 tp = 1, pp = 1, cp = 1;
    if (!map_parallel_sizes(a, root, &tp, &pp, &cp, error))
        return FALSE;
    *tp_out = tp;
    return map_virtual_stages(a, root, layers, pp, error) && map_split(a, root, error) &&
           map_data_parallel(a, root, tp * pp * cp, error);
}

static gboolean
map_training(Args *a, TpsYamlNode *root, GError **error)
{
    if (a->opt[O_MICRO] == NULL)
        return word_error(a, a->launch, error,
                          "the Megatron arguments have no --micro-batch-size (Megatron "
                          "requires it)");
    if (!put_option_uint(a, root, O_MICRO, "training", "micro_batch", TPS_SCENARIO_MAX_MICRO_BATCH,
                         NULL, error) ||
        !put_option_uint(a, root, O_GLOBAL, "training", "global_batch",
                         TPS_SCENARIO_MAX_GLOBAL_BATCH, NULL, error))
        return FALSE;
    if (a->opt[O_RAMPUP] != NULL)
        note(a, "--rampup-batch-size: ignored; tpsim simulates a step at the full "
                "--global-batch-size");

    /* Recomputation: --recompute-activations is selective. */
    const TpsShellWord *recompute_at = NULL;
    const char *recompute = NULL;
    if (a->opt[O_RECOMPUTE_ACTIVATIONS] != NULL)
        recompute = "selective", recompute_at = a->opt[O_RECOMPUTE_ACTIVATIONS];
    if (a->opt[O_RECOMPUTE_GRANULARITY] != NULL) {
        static const char *const granularities[] = {"full", "selective", NULL};
        guint g;
        if (!value_choice(a, O_RECOMPUTE_GRANULARITY, granularities, &g, error))
            return FALSE;
        recompute = granularities[g];
        recompute_at = a->val[O_RECOMPUTE_GRANULARITY];
    }
    if (recompute != NULL)
        put(root, "training", "recompute", recompute, recompute_at, recompute_at);
    if (recompute != NULL && strcmp(recompute, "full") == 0) {
        if (a->opt[O_RECOMPUTE_METHOD] == NULL)
            return word_error(a, recompute_at, error,
                              "--recompute-granularity full needs --recompute-method uniform or "
                              "block (Megatron rejects it without)");
        static const char *const methods[] = {"uniform", "block", NULL};
        guint m;
        guint64 n = 1;
        if (!value_choice(a, O_RECOMPUTE_METHOD, methods, &m, error))
            return FALSE;
        if (a->opt[O_RECOMPUTE_LAYERS] != NULL &&
            !value_uint(a, O_RECOMPUTE_LAYERS, 1, TPS_SCENARIO_MAX_LAYERS, &n, error))
            return FALSE;
        if (m == 1)
            note(a, "--recompute-method block --recompute-num-layers %" G_GUINT64_FORMAT
                    ": modelled as full recomputation of every layer (a slower step than the "
                    "script's when it recomputes fewer)",
                 n);
        else if (n != 1)
            note(a, "--recompute-method uniform --recompute-num-layers %" G_GUINT64_FORMAT
                    ": modelled as full recomputation layer by layer (the activation memory of "
                    "groups of %" G_GUINT64_FORMAT " layers is not)",
                 n, n);
    } else if (a->opt[O_RECOMPUTE_METHOD] != NULL || a->opt[O_RECOMPUTE_LAYERS] != NULL) {
        note(a, "--recompute-method / --recompute-num-layers without --recompute-granularity "
                "full: ignored, as Megatron ignores them");
    }

    /* Megatron's defaults, which are not tpsim's: without the switches, no
     * distributed optimizer and no gradient-reduce overlap. */
    const TpsShellWord *distopt = a->opt[O_DISTOPT] != NULL ? a->opt[O_DISTOPT] : a->launch;
    put(root, "training", "distributed_optimizer", a->opt[O_DISTOPT] != NULL ? "true" : "false",
        distopt, distopt);
    const TpsShellWord *ogr = a->opt[O_OVERLAP_GRAD] != NULL ? a->opt[O_OVERLAP_GRAD] : a->launch;
    put(root, "training", "overlap_grad_reduce", a->opt[O_OVERLAP_GRAD] != NULL ? "true" : "false",
        ogr, ogr);
    if (a->opt[O_GRAD_BF16] != NULL)
        put(root, "training", "grad_reduce_dtype", "bf16", a->opt[O_GRAD_BF16],
            a->opt[O_GRAD_BF16]);
    if (!put_fsdp(a, root, error))
        return FALSE;
    if (a->opt[O_OVERLAP_PARAM] != NULL)
        put(root, "training", "overlap_param_gather", "true", a->opt[O_OVERLAP_PARAM],
            a->opt[O_OVERLAP_PARAM]);
    if (!put_option_uint(a, root, O_DDP_BUCKET, "training", "ddp_bucket_size",
                         G_GUINT64_CONSTANT(1) << 40, NULL, error))
        return FALSE;
    if (a->opt[O_CUDA_GRAPH] != NULL)
        put(root, "training", "cuda_graphs", "true", a->opt[O_CUDA_GRAPH], a->opt[O_CUDA_GRAPH]);
    return TRUE;
}

/* The last of two switches that set one value, or `fallback` when neither
 * is given: TRUE for on. */
static gboolean
switch_value(const Args *a, OptId on, OptId off, gboolean fallback)
{
    const TpsShellWord *w_on = a->opt[on], *w_off = a->opt[off];
    if (w_on == NULL && w_off == NULL)
        return fallback;
    if (w_on == NULL || w_off == NULL)
        return w_on != NULL;
    return w_on->line > w_off->line || (w_on->line == w_off->line && w_on->column > w_off->column);
}

/* --tp-comm-overlap without a configuration file: Transformer Engine's
 * default methods (initialize_ub), less what Megatron's switches turn
 * off. */
static gboolean
map_tp_comm(Args *a, TpsYamlNode *root, GError **error)
{
    if (a->opt[O_TP_COMM] == NULL) {
        static const OptId flags[] = {O_TP_COMM_CFG,      O_BULK_WGRAD_ON, O_BULK_WGRAD_OFF,
                                      O_BULK_DGRAD_ON,    O_BULK_DGRAD_OFF, O_OVERLAP_AG_ON,
                                      O_OVERLAP_AG_OFF,   O_OVERLAP_RS_ON, O_OVERLAP_RS_OFF,
                                      O_OVERLAP_RS_DGRAD, O_SPLIT_AG_ON,   O_SPLIT_AG_OFF,
                                      O_SPLIT_RS_ON,      O_SPLIT_RS_OFF,  O_ATOMIC_AG,
                                      O_ATOMIC_RS};
        for (guint i = 0; i < G_N_ELEMENTS(flags); i++)
            if (a->opt[flags[i]] != NULL)
                note(a, "%s without --tp-comm-overlap: no effect, as in Megatron",
                     a->opt[flags[i]]->text);
        return TRUE;
    }
    const TpsShellWord *at = a->opt[O_TP_COMM];
    if (a->opt[O_SP] == NULL)
        return word_error(a, at, error,
                          "--tp-comm-overlap needs --sequence-parallel (Megatron asserts it)");
    gboolean ag = switch_value(a, O_OVERLAP_AG_ON, O_OVERLAP_AG_OFF, TRUE);
    gboolean rs = switch_value(a, O_OVERLAP_RS_ON, O_OVERLAP_RS_OFF, TRUE);
    gboolean bulk_dgrad = switch_value(a, O_BULK_DGRAD_ON, O_BULK_DGRAD_OFF, TRUE);
    gboolean bulk_wgrad = switch_value(a, O_BULK_WGRAD_ON, O_BULK_WGRAD_OFF, TRUE);
    if (a->opt[O_OVERLAP_RS_DGRAD] != NULL)
        return word_error(a, a->opt[O_OVERLAP_RS_DGRAD], error,
                          "--tp-comm-overlap-rs-dgrad: the overlap of the dgrad's "
                          "reduce-scatter in place of the bulk all-gather is not modelled by "
                          "this version of tpsim");
    if (a->opt[O_ATOMIC_AG] != NULL || a->opt[O_ATOMIC_RS] != NULL)
        note(a, "--tp-comm-atomic-ag/-rs: read, not modelled (atomic GEMMs are FP8-only in "
                "Transformer Engine); the split methods are used");
    static const OptId split[] = {O_SPLIT_AG_ON, O_SPLIT_AG_OFF, O_SPLIT_RS_ON, O_SPLIT_RS_OFF};
    for (guint i = 0; i < G_N_ELEMENTS(split); i++)
        if (a->opt[split[i]] != NULL)
            note(a, "%s: ignored (deprecated since Transformer Engine 1.6, which splits "
                    "according to the method)",
                 a->opt[split[i]]->text);

    const struct {
        TpsGemmSlot slot;
        const char *method;
        gboolean on;
    } table[] = {
        {TPS_GEMM_QKV_FPROP, "ring_exchange", ag}, {TPS_GEMM_FC1_FPROP, "ring_exchange", ag},
        {TPS_GEMM_PROJ_DGRAD, "ring_exchange", ag}, {TPS_GEMM_FC2_DGRAD, "ring_exchange", ag},
        {TPS_GEMM_PROJ_FPROP, "pipeline", rs},     {TPS_GEMM_FC2_FPROP, "pipeline", rs},
        {TPS_GEMM_QKV_DGRAD, "bulk", bulk_dgrad},  {TPS_GEMM_FC1_DGRAD, "bulk", bulk_dgrad},
        {TPS_GEMM_QKV_WGRAD, "bulk", bulk_wgrad},  {TPS_GEMM_FC1_WGRAD, "bulk", bulk_wgrad},
    };
    /* With --tp-comm-overlap-cfg, TE's table is the file's (the loader
     * reads it as overlap.ub_cfg, relative to the working directory as
     * Megatron opens it); the switches still turn groups off. */
    const TpsShellWord *cfg = a->val[O_TP_COMM_CFG];
    if (cfg != NULL && cfg->unresolved)
        return word_error(a, cfg, error,
                          "--tp-comm-overlap-cfg is '%s', which the script does not set",
                          cfg->text);
    TpsYamlNode *overlap = section_of(root, "overlap", at);
    if (cfg != NULL)
        put(root, "overlap", "ub_cfg", cfg->text, a->opt[O_TP_COMM_CFG], cfg);
    for (guint i = 0; i < G_N_ELEMENTS(table); i++) {
        if (!table[i].on && cfg == NULL)
            continue;
        if (table[i].on && cfg != NULL)
            continue; /* the file's method */
        TpsYamlNode *entry = tps_yaml_node_new(TPS_YAML_MAP, NULL, at->line, at->column);
        tps_yaml_map_set(entry, tps_yaml_node_new(TPS_YAML_SCALAR, "method", at->line, at->column),
                         tps_yaml_node_new(TPS_YAML_SCALAR, table[i].on ? table[i].method : "none",
                                           at->line, at->column));
        tps_yaml_map_set(overlap,
                         tps_yaml_node_new(TPS_YAML_SCALAR, tps_gemm_slot_names[table[i].slot],
                                           at->line, at->column),
                         entry);
    }
    if (overlap->keys->len == 0)
        note(a, "--tp-comm-overlap with every overlap switched off: no GEMM is overlapped");
    return TRUE;
}

/* Refuse what is no launch script: too long, or binary. */
static gboolean
check_script_text(const char *file, const char *text, gsize n, GError **error)
{
    if (n > TPS_MEGATRON_MAX_BYTES) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "%s:1:1: longer than %zu bytes (a launch script is a few kilobytes)", file,
                    TPS_MEGATRON_MAX_BYTES);
        return FALSE;
    }
    if (memchr(text, '\0', n) != NULL) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT, "%s:1:1: a NUL byte: not a launch script",
                    file);
        return FALSE;
    }
    return TRUE;
}

/* Read the options of every command of the script that carries a Megatron
 * or torchrun option, and the WORLD_SIZE it sets; an error when no command
 * does (`line`:`column`: where the script starts). */
static gboolean
read_launch_commands(Args *a, const TpsShellScript *script, guint line, guint column,
                     GError **error)
{
    const GPtrArray *commands = tps_shell_script_commands(script);
    for (guint i = 0; i < commands->len; i++) {
        GPtrArray *cmd = g_ptr_array_index(commands, i);
        if (!command_is_launch(cmd))
            continue;
        if (a->launch == NULL)
            a->launch = g_ptr_array_index(cmd, 0);
        if (!read_command(a, cmd, error))
            return FALSE;
    }
    if (a->launch == NULL) {
        g_set_error(error, TPS_ERROR, TPS_ERROR_INPUT,
                    "%s:%u:%u: no Megatron arguments (such as --num-layers, "
                    "--tensor-model-parallel-size) in it",
                    a->file, line, column);
        return FALSE;
    }
    a->world = tps_shell_script_value(script, "WORLD_SIZE");
    a->gpus_per_node = tps_shell_script_value(script, "GPUS_PER_NODE");
    a->num_nodes = tps_shell_script_value(script, "NUM_NODES");
    if (a->num_nodes == NULL)
        a->num_nodes = tps_shell_script_value(script, "NNODES");
    if (a->world != NULL && a->world->doubt != NULL)
        return tps_input_error_at(error, a->file, a->world->doubt->line, a->world->doubt->column,
                                  "%s (WORLD_SIZE)", a->world->doubt->message);
    return TRUE;
}

/* The first (in the script) of the options that change what runs and
 * that tpsim does not model: an error at it. */
static gboolean
check_refused(const Args *a, GError **error)
{
    const TpsShellWord *at = NULL;
    guint which = 0;
    for (guint i = 0; i < G_N_ELEMENTS(unmapped); i++) {
        const TpsShellWord *w = a->flag_opt[i], *v = a->flag_val[i];
        if (w == NULL)
            continue;
        if (unmapped[i].cls == F_REFUSE_OVER1) {
            guint64 n;
            if (v != NULL && !v->unresolved &&
                g_ascii_string_to_unsigned(v->text, 10, 0, G_MAXUINT32, &n, NULL) && n <= 1)
                continue;
        } else if (unmapped[i].cls == F_REFUSE_UNLESS) {
            if (v != NULL && !v->unresolved && strcmp(v->text, unmapped[i].unless) == 0)
                continue;
        }
        if (at == NULL || w->line < at->line || (w->line == at->line && w->column < at->column))
            at = w, which = i;
    }
    if (at == NULL)
        return TRUE;
    const TpsShellWord *v = a->flag_val[which];
    return word_error(a, at, error, "%s%s%s: %s", at->text, v != NULL ? " " : "",
                      v != NULL ? v->text : "", unmapped[which].why);
}

/* model.moe.KEY = value, placed at the option's words. */
static void
put_moe(TpsYamlNode *root, const char *key, const char *value, const TpsShellWord *key_at,
        const TpsShellWord *value_at)
{
    TpsYamlNode *moe = section_of(section_of(root, "model", key_at), "moe", key_at);
    tps_yaml_map_set(moe, tps_yaml_node_new(TPS_YAML_SCALAR, key, key_at->line, key_at->column),
                     tps_yaml_node_new(TPS_YAML_SCALAR, value, value_at->line, value_at->column));
}

/* A value option as its text (the scenario's reader checks it at the
 * option's word); FALSE where the script does not set it. */
static gboolean
put_moe_value(Args *a, TpsYamlNode *root, OptId id, const char *key, GError **error)
{
    if (a->opt[id] == NULL)
        return TRUE;
    if (a->val[id]->unresolved)
        return word_error(a, a->val[id], error, "%s is '%s', which the script does not set",
                          a->opt[id]->text, a->val[id]->text);
    put_moe(root, key, a->val[id]->text, a->opt[id], a->val[id]);
    return TRUE;
}

/* One term of a --moe-layer-freq list expression at `*at`: a list of 0 /
 * 1 in brackets, optionally repeated ("*N"), appended to `out`; FALSE
 * where the text is something else. */
static gboolean
layer_freq_term(const char **at, GString *out)
{
    const char *p = *at;
    if (*p != '[')
        return FALSE;
    const gsize from = out->len;
    for (p++;;) {
        while (*p == ' ')
            p++;
        if (*p != '0' && *p != '1')
            return FALSE;
        g_string_append_c(out, *p++);
        while (*p == ' ')
            p++;
        if (*p == ']')
            break;
        if (*p++ != ',')
            return FALSE;
    }
    p++;
    while (*p == ' ')
        p++;
    if (*p == '*') {
        char *end;
        const guint64 times = g_ascii_strtoull(p + 1, &end, 10);
        if (end == p + 1 || times == 0 || times > TPS_SCENARIO_MAX_LAYERS)
            return FALSE;
        const gsize len = out->len - from;
        if (len * times > TPS_SCENARIO_MAX_LAYERS)
            return FALSE;
        g_autofree char *one = g_strndup(out->str + from, len);
        for (guint64 i = 1; i < times; i++)
            g_string_append(out, one);
        p = end;
    }
    *at = p;
    return TRUE;
}

/* Megatron's list form of --moe-layer-freq (its moe_freq_type evaluates
 * the text as a Python list): terms as layer_freq_term() reads them,
 * joined by '+', optionally in parentheses ("([0]*3+[1]*58)", "[1,0,1,0]");
 * the 0 / 1 per layer, or NULL where the text is not one. */
static char *
layer_freq_list(const char *text)
{
    g_autoptr(GString) out = g_string_new(NULL);
    const char *p = text;
    while (*p == ' ')
        p++;
    const gboolean paren = *p == '(';
    p += paren;
    for (;;) {
        while (*p == ' ')
            p++;
        if (!layer_freq_term(&p, out))
            return NULL;
        while (*p == ' ')
            p++;
        if (*p != '+')
            break;
        p++;
    }
    if (paren && *p++ != ')')
        return NULL;
    while (*p == ' ')
        p++;
    return *p == '\0' && out->len > 0 ? g_strdup(out->str) : NULL;
}

/* --moe-layer-freq: a whole number N (every Nth layer), or Megatron's
 * list expression, mapped onto the scenario's model.moe.layer_freq list
 * (whose reader checks it has one entry per layer). */
static gboolean
map_moe_layer_freq(Args *a, TpsYamlNode *root, GError **error)
{
    const TpsShellWord *opt = a->opt[O_MOE_LAYER_FREQ], *val = a->val[O_MOE_LAYER_FREQ];
    if (opt == NULL)
        return TRUE;
    const char *text = val->text;
    if (!val->unresolved && (text[0] == '[' || strchr(text, '(') != NULL)) {
        g_autofree char *bits = layer_freq_list(text);
        if (bits == NULL)
            return word_error(a, val, error,
                              "%s takes a whole number or a list of 0 and 1 such as "
                              "'([0]*3+[1]*58)', not '%s'",
                              opt->text, text);
        TpsYamlNode *list = tps_yaml_node_new(TPS_YAML_SEQ, NULL, val->line, val->column);
        for (const char *b = bits; *b != '\0'; b++) {
            const char bit[2] = {*b, '\0'};
            g_ptr_array_add(list->items,
                            tps_yaml_node_new(TPS_YAML_SCALAR, bit, val->line, val->column));
        }
        TpsYamlNode *moe = section_of(section_of(root, "model", opt), "moe", opt);
        tps_yaml_map_set(
            moe, tps_yaml_node_new(TPS_YAML_SCALAR, "layer_freq", opt->line, opt->column), list);
        return TRUE;
    }
    guint64 n;
    if (!value_uint(a, O_MOE_LAYER_FREQ, 1, TPS_SCENARIO_MAX_LAYERS, &n, error))
        return FALSE;
    put_uint(section_of(root, "model", opt), "moe", "layer_freq", n, opt, val);
    return TRUE;
}

/* DeepEP under the flex dispatcher (TransformerConfig.__post_init__):
 * --moe-enable-deepep and --moe-flex-dispatcher-backend need
 * --moe-token-dispatcher-type flex; deepep is the backend tpsim models. */
static gboolean
check_flex_backend(const Args *a, GError **error)
{
    const gboolean flex =
        a->opt[O_MOE_DISPATCHER] != NULL && strcmp(a->val[O_MOE_DISPATCHER]->text, "flex") == 0;
    if (a->opt[O_MOE_DEEPEP] != NULL && !flex)
        return word_error(a, a->opt[O_MOE_DEEPEP], error,
                          "--moe-enable-deepep needs --moe-token-dispatcher-type flex (Megatron: "
                          "\"DeepEP backend is only supported with flex token dispatcher\")");
    if (a->opt[O_MOE_FLEX_BACKEND] == NULL)
        return TRUE;
    if (strcmp(a->val[O_MOE_FLEX_BACKEND]->text, "deepep") != 0)
        return word_error(a, a->val[O_MOE_FLEX_BACKEND], error,
                          "--moe-flex-dispatcher-backend %s: tpsim models the deepep backend "
                          "(DeepEP's normal kernels) only",
                          a->val[O_MOE_FLEX_BACKEND]->text);
    if (!flex)
        return word_error(a, a->opt[O_MOE_FLEX_BACKEND], error,
                          "--moe-flex-dispatcher-backend needs --moe-token-dispatcher-type flex");
    return TRUE;
}

/* Multi-head latent attention: --multi-latent-attention and its sizes
 * onto model.multi_latent_attention, q_lora_rank, kv_lora_rank,
 * qk_head_dim, qk_pos_emb_head_dim and v_head_dim (Megatron's defaults
 * are the scenario's); the sizes alone configure nothing in Megatron. */
static gboolean
map_mla(Args *a, TpsYamlNode *root, GError **error)
{
    static const struct {
        OptId id;
        const char *key;
    } sizes[] = {{O_Q_LORA, "q_lora_rank"},
                 {O_KV_LORA, "kv_lora_rank"},
                 {O_QK_HEAD, "qk_head_dim"},
                 {O_QK_POS, "qk_pos_emb_head_dim"},
                 {O_V_HEAD, "v_head_dim"}};
    if (a->opt[O_MLA] == NULL) {
        for (guint i = 0; i < G_N_ELEMENTS(sizes); i++)
            if (a->opt[sizes[i].id] != NULL)
                note(a, "%s without --multi-latent-attention: ignored, as Megatron ignores it",
                     a->opt[sizes[i].id]->text);
        return TRUE;
    }
    put(root, "model", "multi_latent_attention", "true", a->opt[O_MLA], a->opt[O_MLA]);
    for (guint i = 0; i < G_N_ELEMENTS(sizes); i++) {
        const guint64 max = i < 2 ? TPS_SCENARIO_MAX_HIDDEN : TPS_SCENARIO_MAX_HEAD_DIM;
        if (!put_option_uint(a, root, sizes[i].id, "model", sizes[i].key, max, NULL, error))
            return FALSE;
    }
    return TRUE;
}

/* The mixture of experts: --num-experts and the --moe-* options mapped
 * onto model.moe, the expert parallel sizes onto parallel.ep and etp. */
static gboolean
map_moe(Args *a, TpsYamlNode *root, GError **error)
{
    if (a->opt[O_QK_NORM] != NULL)
        put(root, "model", "qk_norm", "true", a->opt[O_QK_NORM], a->opt[O_QK_NORM]);
    if (!put_option_uint(a, root, O_EP, "parallel", "ep", TPS_SCENARIO_MAX_EP, NULL, error) ||
        !put_option_uint(a, root, O_ETP, "parallel", "etp", TPS_SCENARIO_MAX_TP, NULL, error))
        return FALSE;
    if (a->opt[O_EXPERTS] == NULL)
        return TRUE;
    if (!check_flex_backend(a, error) || !put_moe_value(a, root, O_EXPERTS, "experts", error) ||
        !put_moe_value(a, root, O_TOPK, "top_k", error) ||
        !put_moe_value(a, root, O_MOE_FFN, "ffn_hidden", error) ||
        !put_moe_value(a, root, O_MOE_SHARED_FFN, "shared_ffn_hidden", error) ||
        !map_moe_layer_freq(a, root, error) ||
        !put_moe_value(a, root, O_MOE_DISPATCHER, "dispatcher", error) ||
        !put_moe_value(a, root, O_MOE_CAPACITY, "capacity_factor", error) ||
        !put_moe_value(a, root, O_MOE_ROUTER_GROUPS, "router_groups", error) ||
        !put_moe_value(a, root, O_MOE_ROUTER_GROUP_TOPK, "router_group_topk", error))
        return FALSE;
    if (a->opt[O_MOE_GROUPED] != NULL)
        put_moe(root, "grouped_gemm", "true", a->opt[O_MOE_GROUPED], a->opt[O_MOE_GROUPED]);
    if (a->opt[O_MOE_SHARED_OVERLAP] != NULL)
        put_moe(root, "shared_expert_overlap", "true", a->opt[O_MOE_SHARED_OVERLAP],
                a->opt[O_MOE_SHARED_OVERLAP]);
    /* Where Megatron's requirements are not met, refused by the scenario's
     * rules at this word. */
    if (a->opt[O_MOE_EP_OVERLAP] != NULL)
        put_moe(root, "overlap_ep_comm", "true", a->opt[O_MOE_EP_OVERLAP],
                a->opt[O_MOE_EP_OVERLAP]);
    if (a->opt[O_MOE_EXPERT_BIAS] != NULL)
        put_moe(root, "expert_bias", "true", a->opt[O_MOE_EXPERT_BIAS], a->opt[O_MOE_EXPERT_BIAS]);
    return TRUE;
}

/* The scenario sections of the options read, placed at the launch
 * command; NULL with the error set. */
static TpsYamlNode *
map_sections(Args *a, GError **error)
{
    TpsYamlNode *root = tps_yaml_node_new(TPS_YAML_MAP, NULL, a->launch->line, a->launch->column);
    guint64 tp = 1, layers = 0;
    if (!check_refused(a, error) ||
        (a->opt[O_LAYERS] != NULL &&
         !value_uint(a, O_LAYERS, 1, TPS_SCENARIO_MAX_LAYERS, &layers, error)) ||
        !map_parallel(a, root, layers, &tp, error) || !map_model(a, root, tp, error) ||
        !map_training(a, root, error) || !map_tp_comm(a, root, error) || !map_moe(a, root, error) ||
        !map_mla(a, root, error)) {
        tps_yaml_node_free(root);
        return NULL;
    }
    if (a->ignored->len > 0)
        note(a, "ignored (no effect on the simulated step): %s", a->ignored->str);
    if (a->unknown->len > 0)
        note(a, "not known to tpsim, simulated as if absent (check that they do not change what "
                "runs): %s",
             a->unknown->str);
    return root;
}

TpsYamlNode *
tps_megatron_args_parse(const char *file, const char *text, gssize len, guint line0,
                        guint column0, GPtrArray *notes, GError **error)
{
    return tps_megatron_args_parse_layout(file, text, len, line0, column0, NULL, notes, error);
}

TpsYamlNode *
tps_megatron_args_parse_layout(const char *file, const char *text, gssize len, guint line0,
                               guint column0, const TpsMegatronLayout *layout, GPtrArray *notes,
                               GError **error)
{
    g_return_val_if_fail(file != NULL, NULL);
    g_return_val_if_fail(text != NULL || len == 0, NULL);
    g_return_val_if_fail(error == NULL || *error == NULL, NULL);

    gsize n = len < 0 ? strlen(text) : (gsize)len;
    if (!check_script_text(file, text, n, error))
        return NULL;
    guint line = line0 != 0 ? line0 : 1, column = column0 != 0 ? column0 : 1;
    g_autoptr(TpsShellScript) script = tps_shell_script_read(file, text, n, line, column, error);
    if (script == NULL)
        return NULL;

    Args a = {.file = file,
              .notes = notes,
              .owned = g_ptr_array_new_with_free_func(tps_shell_word_free),
              .ignored = g_string_new(NULL),
              .unknown = g_string_new(NULL),
              .listed = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL)};
    if (layout != NULL)
        a.layout = *layout;
    TpsYamlNode *root = NULL;
    if (read_launch_commands(&a, script, line, column, error))
        root = map_sections(&a, error);
    g_ptr_array_unref(a.owned);
    g_string_free(a.ignored, TRUE);
    g_string_free(a.unknown, TRUE);
    g_hash_table_unref(a.listed);
    return root;
}

gboolean
tps_megatron_scenario_load(const char *file, const char *text, gssize len, const char *name,
                           const char *hardware_ref, TpsScenario *scenario, GPtrArray *notes,
                           GError **error)
{
    return tps_megatron_scenario_load_layout(file, text, len, name, hardware_ref, NULL, scenario,
                                             notes, error);
}

gboolean
tps_megatron_scenario_load_layout(const char *file, const char *text, gssize len,
                                  const char *name, const char *hardware_ref,
                                  const TpsMegatronLayout *layout, TpsScenario *scenario,
                                  GPtrArray *notes, GError **error)
{
    g_return_val_if_fail(name != NULL && hardware_ref != NULL && scenario != NULL, FALSE);

    tps_scenario_init(scenario);
    TpsYamlNode *root =
        tps_megatron_args_parse_layout(file, text, len, 1, 1, layout, notes, error);
    if (root == NULL)
        return FALSE;
    tps_yaml_map_set(root, tps_yaml_node_new(TPS_YAML_SCALAR, "name", root->line, root->column),
                     tps_yaml_node_new(TPS_YAML_SCALAR, name, root->line, root->column));
    tps_yaml_map_set(root,
                     tps_yaml_node_new(TPS_YAML_SCALAR, "hardware", root->line, root->column),
                     tps_yaml_node_new(TPS_YAML_SCALAR, hardware_ref, root->line, root->column));
    g_autoptr(TpsYamlDoc) doc = tps_yaml_doc_new(file, root);
    return tps_scenario_file_load_doc(doc, NULL, FALSE, scenario, error);
}

void
tps_megatron_notes_print(const GPtrArray *notes)
{
    tps_input_notes_print("megatron args", notes);
}

void
tps_input_notes_print(const char *prefix, const GPtrArray *notes)
{
    static GMutex lock;
    static GHashTable *printed;
    if (notes == NULL)
        return;
    g_mutex_lock(&lock);
    if (printed == NULL)
        printed = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (guint i = 0; i < notes->len; i++) {
        const char *text = g_ptr_array_index(notes, i);
        if (g_hash_table_contains(printed, text))
            continue;
        g_hash_table_add(printed, g_strdup(text));
        fprintf(stderr, "%s: %s\n", prefix, text);
    }
    g_mutex_unlock(&lock);
}
