/* Megatron-LM launch scripts read as scenarios (io/input/megatron-args.h):
 * the argument sets of Megatron's examples in tests/data/megatron/, each
 * mapped onto the scenario values derived here by hand from the script;
 * the shell the scripts are written in (variables, arrays, continuations),
 * also through the shell reader's own API;
 * located errors; the notes of what is ignored; megatron_args: in a
 * scenario file; tpsim run --megatron-args. */
#include <check.h>

#include "test-util.h"
#include <string.h>

#include "io/input/megatron-args.h"
#include "io/input/scenario-file.h"
#include "io/input/shell-script.h"

static char *
data_path(const char *name)
{
    return g_build_filename(g_getenv("TPSIM_SOURCE_DIR"), "tests", "data", "megatron", name, NULL);
}

/* Load `text` (or the file `name` when text is NULL) on an A100 80 GB, or
 * on an H100 with `h100` (FP8). */
static gboolean
load_on(const char *name, const char *text, gboolean h100, TpsScenario *sc, GPtrArray *notes,
        GError **error)
{
    g_autofree char *contents = NULL;
    g_autofree char *path = NULL;
    if (text == NULL) {
        path = data_path(name);
        ck_assert(g_file_get_contents(path, &contents, NULL, NULL));
        text = contents;
    }
    return tps_megatron_scenario_load(path != NULL ? path : name, text, -1, "t",
                                      h100 ? "h100-sxm" : "a100-sxm4-80gb", sc, notes, error);
}

static gboolean
load(const char *name, const char *text, TpsScenario *sc, GPtrArray *notes, GError **error)
{
    return load_on(name, text, FALSE, sc, notes, error);
}

/* ---- the example scripts ---- */

typedef struct {
    const char *file;
    guint64 layers, hidden, heads, kv_heads, ffn, seq, vocab;
    TpsDtype dtype;
    TpsMlp mlp;
    TpsNorm norm;
    TpsPosition position;
    gboolean bias, tie;
    guint64 micro, global;
    TpsRecompute recompute;
    gboolean distopt, overlap_grad;
    guint tp, pp, vpp, dp;
    gboolean sp;
    /* The method of each GEMM slot (none where the script sets none). */
    TpsMethod methods[TPS_GEMM_OP];
} ScriptCase;

#define RE TPS_METHOD_RING_EXCHANGE
#define PI TPS_METHOD_PIPELINE
#define BU TPS_METHOD_BULK
#define NO TPS_METHOD_NONE

static const ScriptCase script_cases[] = {
    /* GPT-3 175B: ffn 4 x 12288; GPT-2's 50257 tokens padded to a
     * multiple of 128 x tp 8 = 1024: 50 x 1024 = 51200; dp = 16 nodes x 8
     * GPUs / (8 x 16) = 1; --fp16; no --sequence-parallel, no distributed
     * optimizer, no --overlap-grad-reduce (Megatron's defaults: off). */
    {"gpt3-175b.sh", 96, 12288, 96, 96, 49152, 2048, 51200, TPS_DTYPE_FP16, TPS_MLP_GELU,
     TPS_NORM_LAYERNORM, TPS_POSITION_LEARNED, TRUE, TRUE, 1, 1536, TPS_RECOMPUTE_NONE, FALSE,
     FALSE, 8, 16, 1, 1, FALSE, {NO}},
    /* Llama 3 8B: 8 query groups, ffn 14336 given, vocab 128256 (already a
     * multiple of 128 x tp 1), FP8 from --fp8-format (inside the if block),
     * sp off because tp is 1 (Megatron turns it off), dp = 8 / 1; no
     * --normalization: LayerNorm (with --apply-layernorm-1p). */
    {"llama3-8b-fp8.sh", 32, 4096, 32, 8, 14336, 8192, 128256, TPS_DTYPE_FP8, TPS_MLP_SWIGLU,
     TPS_NORM_LAYERNORM, TPS_POSITION_ROPE, FALSE, FALSE, 1, 128, TPS_RECOMPUTE_NONE, TRUE, TRUE,
     1, 1, 1, 8, FALSE, {NO}},
    /* 1.3B on 16 GPUs: dp = 16 / (8 x 2) = 1; vpp = 24 / 2 / 6 = 2; vocab
     * 51200 as above; TE's default table without the bulk wgrad overlap. */
    {"gpt-1p3b-tp-overlap.sh", 24, 2048, 16, 16, 8192, 2048, 51200, TPS_DTYPE_BF16, TPS_MLP_GELU,
     TPS_NORM_LAYERNORM, TPS_POSITION_LEARNED, TRUE, TRUE, 2, 64, TPS_RECOMPUTE_FULL, TRUE, FALSE,
     8, 2, 2, 1, TRUE,
     /* qkv_fprop fc1_fprop proj_fprop fc2_fprop proj_dgrad fc2_dgrad qkv_dgrad fc1_dgrad
      * qkv_wgrad fc1_wgrad */
     {RE, RE, PI, PI, RE, RE, BU, BU, NO, NO}},
    /* The shape of sc21/run_table_1.sh: only the branch of MODEL_SIZE=1.7B
     * runs (not the last, 1T), and the case's glob [0-9].*B gives seq
     * 2048; dp = 4 nodes x 8 GPUs / 1. */
    {"sc21-table1.sh", 24, 2304, 24, 24, 9216, 2048, 51200, TPS_DTYPE_FP16, TPS_MLP_GELU,
     TPS_NORM_LAYERNORM, TPS_POSITION_LEARNED, TRUE, TRUE, 16, 512, TPS_RECOMPUTE_SELECTIVE,
     FALSE, FALSE, 1, 1, 1, 32, FALSE, {NO}},
};

START_TEST(test_example_scripts)
{
    const ScriptCase *c = &script_cases[_i];
    g_auto(TpsScenario) sc = {0};
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
    ck_assert_msg(load_on(c->file, NULL, c->dtype == TPS_DTYPE_FP8, &sc, notes, &error), "%s: %s",
                  c->file,
                  error ? error->message : "");
    ck_assert_uint_eq(sc.layers, c->layers);
    ck_assert_uint_eq(sc.hidden, c->hidden);
    ck_assert_uint_eq(sc.heads, c->heads);
    ck_assert_uint_eq(tps_scenario_kv_heads(&sc), c->kv_heads);
    ck_assert_uint_eq(sc.ffn_hidden, c->ffn);
    ck_assert_uint_eq(sc.seq_len, c->seq);
    ck_assert_uint_eq(sc.vocab, c->vocab);
    ck_assert_int_eq(sc.dtype, c->dtype);
    ck_assert_int_eq(sc.mlp, c->mlp);
    ck_assert_int_eq(sc.norm, c->norm);
    ck_assert_int_eq(sc.position, c->position);
    ck_assert_int_eq(sc.bias, c->bias);
    ck_assert_int_eq(sc.tie_embeddings, c->tie);
    ck_assert_uint_eq(sc.micro_batch, c->micro);
    ck_assert_uint_eq(sc.global_batch, c->global);
    ck_assert_int_eq(sc.recompute, c->recompute);
    ck_assert_int_eq(sc.distributed_optimizer, c->distopt);
    ck_assert_int_eq(sc.overlap_grad_reduce, c->overlap_grad);
    ck_assert_uint_eq(sc.tp, c->tp);
    ck_assert_uint_eq(sc.pp, c->pp);
    ck_assert_uint_eq(sc.vpp, c->vpp);
    ck_assert_uint_eq(sc.dp, c->dp);
    ck_assert_int_eq(sc.sp, c->sp);
    for (guint s = 0; s < TPS_GEMM_OP; s++)
        ck_assert_msg(sc.overlap[s].method == c->methods[s], "%s: %s is %s", c->file,
                      tps_gemm_slot_names[s], tps_method_names[sc.overlap[s].method]);
}
END_TEST

/* What the script sets and tpsim does not use is listed, values included. */
START_TEST(test_ignored_listed)
{
    g_auto(TpsScenario) sc = {0};
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
    ck_assert_msg(load("gpt3-175b.sh", NULL, &sc, notes, &error), "%s", error->message);
    gboolean ignored = FALSE;
    for (guint i = 0; i < notes->len; i++) {
        const char *n = g_ptr_array_index(notes, i);
        if (strstr(n, "ignored") != NULL) {
            ignored = TRUE;
            ck_assert_msg(strstr(n, "--lr 6.0e-5") != NULL, "%s", n);
            ck_assert_msg(strstr(n, "--master_addr localhost") != NULL, "%s", n);
            ck_assert_msg(strstr(n, "--split 949,50,1") != NULL, "%s", n);
            /* Known options are not in the list. */
            ck_assert_msg(strstr(n, "--num-layers") == NULL, "%s", n);
        }
    }
    ck_assert(ignored);

    /* The descriptor of `2>&1` is no value of the option before it. */
    g_auto(TpsScenario) llama = {0};
    g_autoptr(GPtrArray) llama_notes = g_ptr_array_new_with_free_func(g_free);
    ck_assert_msg(load_on("llama3-8b-fp8.sh", NULL, TRUE, &llama, llama_notes, &error), "%s",
                  error->message);
    ignored = FALSE;
    for (guint i = 0; i < llama_notes->len; i++) {
        const char *n = g_ptr_array_index(llama_notes, i);
        if (strstr(n, "ignored") != NULL) {
            ignored = TRUE;
            ck_assert_msg(g_str_has_suffix(n, "--split '99,1,0'"), "%s", n);
            ck_assert_msg(strstr(n, "--fp8-amax-compute-algo max") != NULL, "%s", n);
            /* The history's length is read (model.fp8_amax_history_len). */
            ck_assert_msg(strstr(n, "--fp8-amax-history-len") == NULL, "%s", n);
        }
    }
    ck_assert(ignored);
    ck_assert_uint_eq(llama.fp8_amax_history_len, 1024);
}
END_TEST

/* ---- the shell ---- */

typedef struct {
    const char *text;
    guint64 hidden, layers;
    guint tp, dp;
} ShellCase;

#define TAIL " --num-attention-heads 16 --seq-length 1024 --micro-batch-size 1 --bf16"

static const ShellCase shell_cases[] = {
    /* Plain command line. */
    {"python pretrain_gpt.py --num-layers 4 --hidden-size 1024" TAIL, 1024, 4, 1, 1},
    /* --key=value, continuations, a comment line between. */
    {"pretrain_gpt.py \\\n  --num-layers=6 \\\n  --hidden-size 2048" TAIL, 2048, 6, 1, 1},
    /* Variables, braces, default values, arithmetic, WORLD_SIZE. */
    {"H=512\nL=${LAYERS:-3}\nN=2; G=4\nWORLD_SIZE=$((N * G))\nexport TP=2\n"
     "python x.py --num-layers $L --hidden-size ${H} --tensor-model-parallel-size \"$TP\"" TAIL,
     512, 3, 2, 4},
    /* Arrays appended to and expanded quoted or not; torchrun's world. */
    {"A=(\n --num-layers 2 # two\n)\nA+=(--hidden-size 256)\nB=(--nnodes 3)\n"
     "torchrun --nproc_per_node 2 ${B[@]} p.py \"${A[@]}\"" TAIL,
     256, 2, 1, 6},
    /* Single quotes keep $ as it is; the last of a repeated option wins. */
    {"x.py --num-layers 8 --num-layers 5 --hidden-size 64 --data-path '$HOME/d'" TAIL, 64, 5, 1,
     1},
    /* Without torchrun nor WORLD_SIZE: GPUS_PER_NODE x NUM_NODES (or
     * NNODES), as an srun launch. */
    {"GPUS_PER_NODE=4\nNNODES=3\nsrun python x.py --num-layers 2 --hidden-size 32" TAIL, 32, 2, 1,
     12},
    /* if, elif and else: only the branch whose test holds runs. */
    {"N=2\nif [ $N -eq 1 ]; then H=128\nelif [ \"$N\" -ge 2 ] && [ -n \"$N\" ]\nthen\n"
     "  H=256\n  if test $H != 256; then H=1; fi\nelse H=512; fi\nx.py --num-layers 2 "
     "--hidden-size $H" TAIL,
     256, 2, 1, 1},
    /* [[ == ]] with a glob, !, -z of an empty value, the else. */
    {"M=llama-8b; E=\nif [[ $M == llama* && ! -z $M ]]; then L=3; else L=4; fi\n"
     "if [ -z \"$E\" ]; then H=64; fi\nif ! [ \"$M\" = x ]; then :; else H=1; fi\n"
     "x.py --num-layers $L --hidden-size $H" TAIL,
     64, 3, 1, 1},
    /* case: literal and glob patterns, the first match wins; a command
     * inside a branch that does not run is not read. */
    {"S=7.5B\ncase $S in\n  1T) L=9 ;;\n  ( [0-9].*B | 99 )\n    L=5\n    ;;\n  *) L=1 ;;\n"
     "esac\ncase x in y) z.py --num-layers 7 ;; esac\n"
     "x.py --num-layers $L --hidden-size 32" TAIL,
     32, 5, 1, 1},
    /* A test of what the script does not set, around nothing that
     * matters (a usage message), is no error. */
    {"if [ -z \"$1\" ]; then\n  echo usage; exit 1\nfi\nx.py --num-layers 1 --hidden-size 16" TAIL,
     16, 1, 1, 1},
    /* ... nor around what only ignored options use (Mixtral's example
     * logs to W&B when the environment has a key). */
    {"LOG=(--log-interval 1)\nif [ -n \"${WANDB_API_KEY}\" ]; then\n  LOG+=(--wandb-project p)\n"
     "  N=3\nfi\nx.py --num-layers 1 --hidden-size 16 ${LOG[@]}" TAIL,
     16, 1, 1, 1},
};

START_TEST(test_shell)
{
    const ShellCase *c = &shell_cases[_i];
    g_auto(TpsScenario) sc = {0};
    g_autoptr(GError) error = NULL;
    ck_assert_msg(load("s.sh", c->text, &sc, NULL, &error), "case %d: %s", _i,
                  error ? error->message : "");
    ck_assert_uint_eq(sc.hidden, c->hidden);
    ck_assert_uint_eq(sc.layers, c->layers);
    ck_assert_uint_eq(sc.tp, c->tp);
    ck_assert_uint_eq(sc.dp, c->dp);
}
END_TEST

/* Options are classed by a table: what cannot change a step is listed as
 * ignored, once; what tpsim does not know is listed apart; what changes
 * what runs but is read approximately is noted on its own; Megatron's
 * default values of the refused options are no refusal. */
START_TEST(test_flag_classes)
{
    g_auto(TpsScenario) sc = {0};
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
    const char *text = "A=(--lr 1 --save ckpt --frobnicate 3)\n"
                       "p.py --num-layers 4 --hidden-size 64 ${A[@]}" TAIL "\n"
                       "p.py --expert-model-parallel-size 1 --optimizer adam "
                       "--data-parallel-sharding-strategy no_shard --grad-reduce-in-bf16 "
                       "--use-distributed-optimizer --overlap-grad-reduce "
                       "--overlap-param-gather --position-embedding-type rope "
                       "--no-position-embedding ${A[@]}\n";
    ck_assert_msg(load("f.sh", text, &sc, notes, &error), "%s", error ? error->message : "");
    gboolean ignored = FALSE, unknown = FALSE;
    for (guint i = 0; i < notes->len; i++) {
        const char *n = g_ptr_array_index(notes, i);
        if (g_str_has_prefix(n, "ignored")) {
            ignored = TRUE;
            ck_assert_str_eq(n, "ignored (no effect on the simulated step): --lr 1, --save ckpt");
        } else if (g_str_has_prefix(n, "not known to tpsim")) {
            unknown = TRUE;
            ck_assert_msg(g_str_has_suffix(n, ": --frobnicate 3"), "%s", n);
        }
        ck_assert_msg(strstr(n, "--expert-model") == NULL && strstr(n, "--optimizer") == NULL,
                      "%s", n);
    }
    ck_assert(ignored && unknown);
    ck_assert_int_eq(sc.position, TPS_POSITION_ROPE);
    /* Modelled, so mapped (not noted). */
    ck_assert_int_eq(sc.grad_reduce_dtype, TPS_GRAD_REDUCE_BF16);
    ck_assert(sc.overlap_param_gather);
}
END_TEST

/* Issue 23 item 2: the data-parallel and precision flags of NVIDIA's
 * Llama 3 8B FP8 script change the step, and are modelled: mapped onto
 * their scenario keys, and in no note (neither "ignored" nor "not
 * modelled"). --ddp-bucket-size is read as its key too. */
START_TEST(test_fsdp_flags)
{
    /* NVIDIA's Megatron FSDP script: --use-megatron-fsdp with
     * --data-parallel-sharding-strategy optim_grads_params as training.fsdp,
     * neither listed in the notes; --use-torch-fsdp2 as optim_grads_params
     * under fsdp_impl torch; --use-megatron-fsdp alone is Megatron's
     * no_shard (no FSDP); a strategy without it is ignored, as Megatron
     * ignores it, and says so. */
    g_auto(TpsScenario) sc = {0};
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
    ck_assert_msg(load_on("llama3-8b-fsdp-fp8.sh", NULL, TRUE, &sc, notes, &error), "%s",
                  error->message);
    ck_assert_int_eq(sc.fsdp, TPS_FSDP_OPTIM_GRADS_PARAMS);
    ck_assert_int_eq(sc.fsdp_impl, TPS_FSDP_IMPL_MEGATRON);
    ck_assert(sc.fp8_param_gather && sc.overlap_param_gather);
    for (guint i = 0; i < notes->len; i++) {
        const char *n = g_ptr_array_index(notes, i);
        ck_assert_msg(strstr(n, "--use-megatron-fsdp") == NULL &&
                          strstr(n, "--data-parallel-sharding-strategy") == NULL,
                      "%s", n);
    }
    static const struct {
        const char *flags;
        TpsFsdp fsdp;
        TpsFsdpImpl impl;
        const char *note;
    } cases[] = {
        {"--use-torch-fsdp2", TPS_FSDP_OPTIM_GRADS_PARAMS, TPS_FSDP_IMPL_TORCH, NULL},
        {"--use-megatron-fsdp", TPS_FSDP_NONE, TPS_FSDP_IMPL_MEGATRON, NULL},
        {"--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads", TPS_FSDP_OPTIM_GRADS,
         TPS_FSDP_IMPL_MEGATRON, NULL},
        {"--data-parallel-sharding-strategy optim", TPS_FSDP_NONE, TPS_FSDP_IMPL_MEGATRON,
         "without --use-megatron-fsdp: ignored"},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_auto(TpsScenario) c = {0};
        g_autoptr(GPtrArray) said = g_ptr_array_new_with_free_func(g_free);
        g_autofree char *text =
            g_strdup_printf("p.py --num-layers 4 --hidden-size 64 %s" TAIL "\n", cases[i].flags);
        ck_assert_msg(load("f.sh", text, &c, said, &error), "%s", error->message);
        ck_assert_int_eq(c.fsdp, cases[i].fsdp);
        ck_assert_int_eq(c.fsdp_impl, cases[i].impl);
        gboolean noted = FALSE;
        for (guint k = 0; k < said->len; k++)
            noted = noted || (cases[i].note != NULL &&
                              strstr(g_ptr_array_index(said, k), cases[i].note) != NULL);
        ck_assert_int_eq(noted, cases[i].note != NULL);
    }
}
END_TEST

START_TEST(test_dp_flags_modelled)
{
    g_auto(TpsScenario) sc = {0};
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
    ck_assert_msg(load_on("llama3-8b-fp8.sh", NULL, TRUE, &sc, notes, &error), "%s",
                  error->message);
    ck_assert(sc.overlap_param_gather);
    ck_assert_int_eq(sc.grad_reduce_dtype, TPS_GRAD_REDUCE_BF16);
    static const char *const flags[] = {"--grad-reduce-in-bf16", "--overlap-param-gather",
                                        "--fp8-param-gather", "--ddp-bucket-size"};
    const char *text = "p.py --num-layers 4 --hidden-size 64" TAIL " --fp8-format hybrid "
                       "--use-distributed-optimizer --overlap-grad-reduce --fp8-param-gather "
                       "--grad-reduce-in-bf16 --overlap-param-gather --ddp-bucket-size 1000 "
                       "--hidden-dropout 0.0\n";
    g_auto(TpsScenario) all = {0};
    g_autoptr(GPtrArray) all_notes = g_ptr_array_new_with_free_func(g_free);
    ck_assert_msg(load_on("d.sh", text, TRUE, &all, all_notes, &error), "%s", error->message);
    ck_assert(all.fp8_param_gather && all.overlap_param_gather);
    ck_assert_int_eq(all.grad_reduce_dtype, TPS_GRAD_REDUCE_BF16);
    ck_assert_uint_eq(all.ddp_bucket_size, 1000);
    /* --hidden-dropout 0.0 (NVIDIA's script's): no dropout masks kept. */
    ck_assert_double_eq(all.hidden_dropout, 0.0);
    ck_assert_double_eq(sc.hidden_dropout, 0.0); /* the script's own --hidden-dropout 0.0 */
    ck_assert(sc.fp8_param_gather);
    g_auto(TpsScenario) plain = {0};
    ck_assert_msg(load_on("p.sh", "p.py --num-layers 4 --hidden-size 64" TAIL "\n", TRUE, &plain,
                          NULL, &error),
                  "%s", error->message);
    ck_assert_double_eq(plain.hidden_dropout, 0.1); /* Megatron's default */
    for (guint k = 0; k < 2; k++) {
        const GPtrArray *list = k == 0 ? notes : all_notes;
        for (guint i = 0; i < list->len; i++)
            for (guint f = 0; f < G_N_ELEMENTS(flags); f++)
                ck_assert_msg(strstr(g_ptr_array_index(list, i), flags[f]) == NULL, "%s",
                              (const char *)g_ptr_array_index(list, i));
    }
    /* Megatron's rule, refused where the flag is: the FP8 gather needs the
     * distributed optimizer. */
    g_auto(TpsScenario) bad = {0};
    g_clear_error(&error);
    ck_assert(!load_on("b.sh",
                       "p.py --num-layers 4 --hidden-size 64" TAIL
                       " --fp8-format hybrid --fp8-param-gather\n",
                       TRUE, &bad, NULL, &error));
    ck_assert_msg(g_str_has_prefix(error->message, "b.sh:1:") &&
                      strstr(error->message, "fp8_param_gather") != NULL,
                  "%s", error->message);
}
END_TEST

/* --fp8-recipe (Megatron's delayed, tensorwise, blockwise, mxfp8) onto
 * model.fp8_recipe; mxfp8 refused on the H100 at its value, a recipe
 * without --fp8-format at the flag. */
START_TEST(test_fp8_recipe)
{
    static const char *const names[] = {"delayed", "tensorwise", "blockwise"};
    static const TpsFp8Recipe recipes[] = {TPS_FP8_DELAYED, TPS_FP8_TENSORWISE, TPS_FP8_BLOCKWISE};
    for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
        g_autofree char *text = g_strdup_printf("p.py --num-layers 4 --hidden-size 64" TAIL
                                                " --fp8-format hybrid --fp8-recipe %s\n",
                                                names[i]);
        g_auto(TpsScenario) sc = {0};
        g_autoptr(GError) error = NULL;
        g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func(g_free);
        ck_assert_msg(load_on("r.sh", text, TRUE, &sc, notes, &error), "%s", error->message);
        ck_assert_int_eq(sc.fp8_recipe, recipes[i]);
        for (guint n = 0; n < notes->len; n++)
            ck_assert_msg(strstr(g_ptr_array_index(notes, n), "--fp8-recipe") == NULL, "%s",
                          (const char *)g_ptr_array_index(notes, n));
    }
    /* On a Blackwell model (b200: gpu.peak_tflops_mxfp8 4500) mxfp8 loads. */
    {
        g_autofree char *text = g_strdup_printf("p.py --num-layers 4 --hidden-size 64" TAIL
                                                " --fp8-format hybrid --fp8-recipe mxfp8\n");
        g_auto(TpsScenario) sc = {0};
        g_autoptr(GError) error = NULL;
        ck_assert_msg(tps_megatron_scenario_load("m.sh", text, -1, "t", "b200", &sc, NULL, &error),
                      "%s", error ? error->message : "");
        ck_assert_int_eq(sc.fp8_recipe, TPS_FP8_MXFP8);
    }
    /* The script's first line: p.py (1-5) ... --fp8-recipe VALUE. */
    static const char *const bad[] = {" --fp8-format hybrid --fp8-recipe mxfp8\n",
                                      " --fp8-recipe tensorwise\n"};
    static const char *const what[] = {"MXFP8 tensor cores", "needs model.dtype fp8"};
    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree char *text =
            g_strdup_printf("p.py --num-layers 4 --hidden-size 64" TAIL "%s", bad[i]);
        g_auto(TpsScenario) sc = {0};
        g_autoptr(GError) error = NULL;
        ck_assert(!load_on("b.sh", text, TRUE, &sc, NULL, &error));
        ck_assert_msg(g_str_has_prefix(error->message, "b.sh:1:") &&
                          strstr(error->message, what[i]) != NULL,
                      "%s", error->message);
    }
}
END_TEST

/* Megatron's uneven pipelines read: the first and last stages' layers,
 * the embedding and the loss counted in the split. */
START_TEST(test_uneven_split)
{
    g_auto(TpsScenario) sc = {0};
    g_autoptr(GError) error = NULL;
    /* 126 layers on 16 stages (Llama 3 405B's count): first and last 7,
     * the 14 middle stages (126 - 14) / 14 = 8 each. */
    ck_assert_msg(load("u.sh",
                       "p.py --num-layers 126 --hidden-size 64 --pipeline-model-parallel-size 16 "
                       "--decoder-first-pipeline-num-layers 7 "
                       "--decoder-last-pipeline-num-layers 7" TAIL,
                       &sc, NULL, &error),
                  "%s", error ? error->message : "");
    ck_assert_uint_eq(sc.first_stage_layers, 7);
    ck_assert_uint_eq(sc.last_stage_layers, 7);
    ck_assert_uint_eq(tps_scenario_stage_layers(&sc, 0), 7);
    ck_assert_uint_eq(tps_scenario_stage_layers(&sc, 1), 8);
    ck_assert_uint_eq(tps_scenario_stage_layers(&sc, 15), 7);
    g_auto(TpsScenario) acc = {0};
    /* 30 layers + the embedding + the loss = 32 on 4 stages: 8 a stage, the
     * first and the last one holding 7 transformer layers. */
    ck_assert_msg(load("a.sh",
                       "p.py --num-layers 30 --hidden-size 64 --pipeline-model-parallel-size 4 "
                       "--account-for-embedding-in-pipeline-split "
                       "--account-for-loss-in-pipeline-split" TAIL,
                       &acc, NULL, &error),
                  "%s", error ? error->message : "");
    ck_assert(acc.account_for_embedding && acc.account_for_loss);
    ck_assert_uint_eq(tps_scenario_stage_layers(&acc, 0), 7);
    ck_assert_uint_eq(tps_scenario_stage_layers(&acc, 1), 8);
    ck_assert_uint_eq(tps_scenario_stage_layers(&acc, 3), 7);
}
END_TEST

/* ---- the shell reader on its own (io/input/shell-script.h) ---- */

START_TEST(test_shell_script_api)
{
    g_autoptr(GError) error = NULL;
    const char *text = "TP=8\n"
                       "ARGS=(--a \"x y\")\n"
                       "export N=$((TP * 2))\n"
                       "run --tp $TP \\\n"
                       "  ${ARGS[@]} $UNSET 2>&1 > log; echo `date`\n";
    g_autoptr(TpsShellScript) script =
        tps_shell_script_read("s.sh", text, strlen(text), 1, 1, &error);
    ck_assert_msg(script != NULL, "%s", error ? error->message : "");
    const GPtrArray *commands = tps_shell_script_commands(script);
    ck_assert_uint_eq(commands->len, 2);
    const GPtrArray *run = g_ptr_array_index(commands, 0);
    static const char *const words[] = {"run", "--tp", "8", "--a", "x y", "$UNSET"};
    ck_assert_uint_eq(run->len, G_N_ELEMENTS(words));
    for (guint i = 0; i < run->len; i++) {
        const TpsShellWord *w = g_ptr_array_index(run, i);
        ck_assert_str_eq(w->text, words[i]);
        ck_assert_int_eq(w->unresolved, i == 5);
    }
    /* $TP alone is placed at its value; an array's elements where the
     * array gives them; a word that continues a line where it starts. */
    const TpsShellWord *tp = g_ptr_array_index(run, 2);
    ck_assert_uint_eq(tp->line, 1);
    ck_assert_uint_eq(tp->column, 4);
    const TpsShellWord *quoted = g_ptr_array_index(run, 4);
    ck_assert_uint_eq(quoted->line, 2);
    ck_assert_uint_eq(quoted->column, 11);
    const TpsShellWord *unset = g_ptr_array_index(run, 5);
    ck_assert_uint_eq(unset->line, 5);
    const GPtrArray *echo = g_ptr_array_index(commands, 1);
    ck_assert_uint_eq(echo->len, 2);
    ck_assert(((const TpsShellWord *)g_ptr_array_index(echo, 1))->unresolved);

    ck_assert_str_eq(tps_shell_script_value(script, "N")->text, "16");
    ck_assert_str_eq(tps_shell_script_value(script, "ARGS")->text, "--a");
    ck_assert_ptr_null(tps_shell_script_value(script, "UNSET"));

    /* Positions start where the caller says; an error leaves no script. */
    ck_assert_ptr_null(tps_shell_script_read("s.sh", "a 'b", 4, 3, 7, &error));
    ck_assert_msg(g_str_has_prefix(error->message, "s.sh:3:9: "), "%s", error->message);
}
END_TEST

/* ---- located errors ---- */

typedef struct {
    const char *text;
    const char *where; /* "FILE:LINE:COLUMN: " */
    const char *says;
} ErrorCase;

static const ErrorCase error_cases[] = {
    /* The world size comes from NUM_NODES, so the message points there. */
    {"NUM_NODES=1\nW=(--nnodes $NUM_NODES)\ntorchrun --nproc_per_node 8 ${W[@]} p.py "
     "--num-layers 4 --hidden-size 64 --tensor-model-parallel-size 8 "
     "--pipeline-model-parallel-size 2" TAIL,
     "e.sh:1:11: ", "not a multiple of tp x pp = 16"},
    {"p.py --num-layers four --hidden-size 64" TAIL, "e.sh:1:19: ", "whole number"},
    {"p.py --num-layers $L --hidden-size 64" TAIL, "e.sh:1:19: ", "does not set"},
    /* Hierarchical CP sizes that do not make cp: at the first of them
     * (line 2: 1 + 13 + 3 + 1 + 23 + 2 + 1 + 37 + 1 = column 82 ends the
     * option; its value at 83). */
    {"p.py --num-layers 4\\\n --hidden-size 64 --context-parallel-size 4 "
     "--hierarchical-context-parallel-sizes 2 3" TAIL,
     "e.sh:2:83: ", "must multiply to --context-parallel-size (4)"},
    /* An unknown --cp-comm-type: at its value (5 + 15 + 17 + 26 + 15 = 78). */
    {"p.py --num-layers 4 --hidden-size 64 --context-parallel-size 2 --cp-comm-type ring" TAIL,
     "e.sh:1:79: ", "takes one of p2p, a2a, allgather, a2a+p2p"},
    /* The loader's rule on the sequence, placed at the script's value:
     * 1024 is not divisible by 2 x 3 (column of 1024 in TAIL: 5 + 15 + 17
     * + 26 (--context-parallel-size 3) + 25 (--num-attention-heads 16)
     * + 13 (--seq-length) = 101). */
    {"p.py --num-layers 4 --hidden-size 64 --context-parallel-size 3" TAIL,
     "e.sh:1:102: ", "must be divisible by 2 * parallel.cp (6)"},
    {"p.py --num-layers 4 --hidden-size 64 --num-attention-heads 16 --seq-length 8 --bf16",
     "e.sh:1:1: ", "--micro-batch-size"},
    {"p.py --num-layers 4 --hidden-size \"64" TAIL, "e.sh:1:35: ", "closing quote"},
    {"echo hello\n", "e.sh:1:1: ", "no Megatron arguments"},
    /* The loader's rules, placed at the script's value: heads by tp. */
    {"p.py --num-layers 4 --hidden-size 96 --num-attention-heads 6 --seq-length 8 "
     "--micro-batch-size 1 --bf16 --tensor-model-parallel-size 4",
     "e.sh:1:60: ", "heads"},
    {"p.py --num-layers 4 --hidden-size 64 --tp-comm-overlap --tensor-model-parallel-size 2" TAIL,
     "e.sh:1:38: ", "--sequence-parallel"},
    /* A test of the script's argument with branches that set values: at
     * the operand, the branches listed. */
    {"if [ \"$1\" = big ]; then H=2048\nelif [ \"$1\" = mid ]; then H=1024\nelse H=512\nfi\n"
     "p.py --num-layers 4 --hidden-size $H" TAIL,
     "e.sh:1:6: ", "branches: if (1:1), elif (2:1), else (3:1)"},
    {"case $SIZE in\n  big) H=2048 ;;\n  *) H=64 ;;\nesac\np.py --num-layers 4 --hidden-size "
     "$H" TAIL,
     "e.sh:1:6: ", "branches: big) (2:3), *) (3:3)"},
    /* A branch that may run empties what the launch uses. */
    {"SP=(--sequence-parallel)\nif [ \"$1\" = x ]; then SP=(); fi\n"
     "p.py --num-layers 4 --hidden-size 64 --tensor-model-parallel-size 2 ${SP[@]}" TAIL,
     "e.sh:2:6: ", "the branches: if (2:1)"},
    /* A test of a value set in such a branch cannot be evaluated either. */
    {"L=4\nif [ \"$1\" = x ]; then L=8; fi\nif [ $L = 8 ]; then H=128; else H=64; fi\n"
     "p.py --num-layers 4 --hidden-size $H" TAIL,
     "e.sh:2:25: ", "'8' is set in a branch that may not run (2:6)"},
    /* A command not evaluated decides the branch of a launch. */
    {"if grep -q x f; then\n  p.py --num-layers 4 --hidden-size 64" TAIL "\nfi\n",
     "e.sh:1:4: ", "'grep' is not a test tpsim evaluates"},
    {"if [ 1 = 1 ]; then\np.py --num-layers 4 --hidden-size 64" TAIL "\n",
     "e.sh:1:1: ", "if without its fi"},
    /* What changes what runs and is not modelled is refused at the option:
     * a router other than Megatron's default, the EP overlap of two
     * micro-batches without expert parallelism (Megatron's rule),
     * DeepEP's dispatcher, expert parallelism without experts; FSDP, an
     * uneven pipeline. */
    {"p.py --num-layers 4 --hidden-size 64" TAIL "\\\n  --num-experts 8 "
     "--moe-router-load-balancing-type sinkhorn",
     "e.sh:2:19: ",
     "--moe-router-load-balancing-type sinkhorn: tpsim models Megatron-Core's "
     "default MoE router"},
    {"p.py --num-layers 4 --hidden-size 64" TAIL " --num-experts 8 "
     "--overlap-moe-expert-parallel-comm",
     "e.sh:1:125: ", "model.moe.overlap_ep_comm"},
    {"p.py --num-layers 4 --hidden-size 64" TAIL " --num-experts 8 "
     "--moe-token-dispatcher-type flex",
     "e.sh:1:153: ", "model.moe.dispatcher flex needs parallel.ep > 1"},
    /* DeepEP's switches: flex only, the deepep backend only, its 20 SMs
     * (the options at column 125, after the 124 characters before them;
     * the backend's value at 219). */
    {"p.py --num-layers 4 --hidden-size 64" TAIL " --num-experts 8 "
     "--moe-enable-deepep",
     "e.sh:1:125: ", "--moe-enable-deepep needs --moe-token-dispatcher-type flex"},
    {"p.py --num-layers 4 --hidden-size 64" TAIL " --num-experts 8 "
     "--expert-model-parallel-size 8 --moe-token-dispatcher-type flex "
     "--moe-flex-dispatcher-backend hybridep",
     "e.sh:1:219: ", "--moe-flex-dispatcher-backend hybridep: tpsim models the deepep backend"},
    {"p.py --num-layers 4 --hidden-size 64" TAIL " --num-experts 8 "
     "--moe-flex-dispatcher-num-sms 24",
     "e.sh:1:125: ", "--moe-flex-dispatcher-num-sms 24: tpsim models DeepEP's default of 20 SMs"},
    {"p.py --num-layers 4 --hidden-size 64 --expert-model-parallel-size 2" TAIL,
     "e.sh:1:67: ", "parallel.ep needs a mixture of experts"},
    /* FSDP: one implementation, Megatron's strategies, FSDP2's rules. */
    {"p.py --num-layers 4 --hidden-size 64 --use-torch-fsdp2 --use-megatron-fsdp" TAIL,
     "e.sh:1:38: ", "one FSDP implementation"},
    {"p.py --num-layers 4 --hidden-size 64 --use-megatron-fsdp "
     "--data-parallel-sharding-strategy zero3" TAIL,
     "e.sh:1:92: ", "takes one of no_shard, optim, optim_grads, optim_grads_params"},
    {"p.py --num-layers 4 --hidden-size 64 --use-torch-fsdp2 --use-distributed-optimizer" TAIL,
     "e.sh:1:38: ", "not supported with the distributed optimizer"},
    {"p.py --num-layers 4 --hidden-size 64 --hidden-dropout 1.5" TAIL,
     "e.sh:1:55: ", "model.hidden_dropout"},
    {"p.py --num-layers 4 --hidden-size 64 --pipeline-model-parallel-layout Et|tL" TAIL,
     "e.sh:1:38: ", "custom layout"},
    /* An uneven split is read, and Megatron's rules refuse it where it is
     * wrong: no stages to be uneven, layers left that do not split. */
    {"p.py --num-layers 4 --hidden-size 64 --decoder-first-pipeline-num-layers 1" TAIL,
     "e.sh:1:74: ", "parallel.first_stage_layers needs pipeline stages"},
    {"p.py --num-layers 10 --hidden-size 64 --pipeline-model-parallel-size 4 "
     "--decoder-last-pipeline-num-layers 3" TAIL,
     "e.sh:1:107: ", "leaves 7 of model.layers (10) for 3 middle pipeline stages"},
    /* --no-position-embedding: Megatron accepts it with rope only. */
    {"p.py --num-layers 4 --hidden-size 64 --no-position-embedding" TAIL,
     "e.sh:1:38: ", "--position-embedding-type rope"},
    /* --moe-layer-freq: a list expression that is not 0 / 1 lists, at its
     * value (1 + 4 + 16 + 16 + 14 + 2 + 18 = column 71, in quotes: the
     * word starts at its quote); one of the wrong length there too (the
     * scenario's model.moe.layer_freq list, placed at the value). */
    {"p.py --num-layers 4 --hidden-size 64 --num-experts 4 --moe-layer-freq '[0]*2+[2]*2'" TAIL,
     "e.sh:1:71: ", "--moe-layer-freq takes a whole number or a list of 0 and 1"},
    {"p.py --num-layers 4 --hidden-size 64 --num-experts 4 --moe-layer-freq '([0]*1+[1]*2)'" TAIL,
     "e.sh:1:71: ", "model.moe.layer_freq lists 3 layers; model.layers is 4"},
    /* An unterminated backquote is refused as an open quote is. */
    {"p.py --num-layers 4 --hidden-size 64" TAIL " --save `date\n--lr 1\n",
     "e.sh:1:116: ", "backquote"},
};

START_TEST(test_errors)
{
    const ErrorCase *c = &error_cases[_i];
    g_auto(TpsScenario) sc = {0};
    g_autoptr(GError) error = NULL;
    ck_assert_msg(!load("e.sh", c->text, &sc, NULL, &error), "case %d loaded", _i);
    ck_assert_msg(g_str_has_prefix(error->message, c->where), "case %d: %s", _i, error->message);
    ck_assert_msg(strstr(error->message, c->says) != NULL, "case %d: %s", _i, error->message);
}
END_TEST

/* --moe-layer-freq's forms (Megatron's moe_freq_type: a whole number, or
 * a Python list expression): every Nth layer; a list of 0 / 1; DeepSeek-V3's
 * first dense layers as "([0]*k+[1]*n)"; a list of lists joined by '+'. */
START_TEST(test_moe_layer_freq)
{
    static const struct {
        const char *freq;
        guint layer_freq;
        const char *pattern;
    } cases[] = {
        {"2", 2, NULL},
        {"[1,0,1,0]", 0, "1010"},
        {"'([0]*1+[1]*3)'", 0, "0111"},
        {"\"[0] * 2 + [1, 1]\"", 0, "0011"},
        {"'[1]*4'", 1, NULL}, /* every layer MoE: read as the list, kept as it */
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_auto(TpsScenario) sc = {0};
        g_autoptr(GError) error = NULL;
        g_autofree char *text = g_strdup_printf(
            "p.py --num-layers 4 --hidden-size 64 --num-experts 4 --moe-layer-freq %s" TAIL,
            cases[i].freq);
        ck_assert_msg(load("f.sh", text, &sc, NULL, &error), "case %u: %s", i,
                      error ? error->message : "");
        if (cases[i].pattern == NULL && cases[i].layer_freq != 1) {
            ck_assert_uint_eq(sc.moe.layer_freq, cases[i].layer_freq);
            continue;
        }
        if (cases[i].pattern == NULL) {
            ck_assert_uint_eq(tps_scenario_moe_layers(&sc), 4);
            ck_assert(!tps_scenario_mixes_layers(&sc));
            continue;
        }
        ck_assert_uint_eq(sc.moe.layer_freq, 0);
        ck_assert_str_eq(sc.moe.pattern, cases[i].pattern);
        ck_assert(tps_scenario_mixes_layers(&sc));
    }
}
END_TEST

/* --context-parallel-size, --cp-comm-type and
 * --hierarchical-context-parallel-sizes into parallel.cp, cp_comm and
 * cp_a2a; the world is tp x cp x pp x dp (8 GPUs: dp = 8 / (2 x 2) = 2). */
START_TEST(test_context_parallel)
{
    g_auto(TpsScenario) sc = {0};
    g_autoptr(GError) error = NULL;
    ck_assert_msg(load("c.sh",
                       "torchrun --nproc_per_node 8 p.py --num-layers 4 --hidden-size 64 "
                       "--tensor-model-parallel-size 2 --context-parallel-size 2 "
                       "--cp-comm-type p2p" TAIL,
                       &sc, NULL, &error),
                  "%s", error ? error->message : "");
    ck_assert_uint_eq(sc.cp, 2);
    ck_assert_int_eq(sc.cp_comm, TPS_CP_P2P);
    ck_assert_uint_eq(sc.dp, 2);
    /* a2a+p2p with its sizes is read: an a2a group of 2, a ring of 2. */
    g_auto(TpsScenario) h = {0};
    g_autoptr(GError) herror = NULL;
    ck_assert_msg(load("h.sh",
                       "p.py --num-layers 4 --hidden-size 64 --context-parallel-size 4 "
                       "--cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes 2 2" TAIL,
                       &h, NULL, &herror),
                  "%s", herror ? herror->message : "");
    ck_assert_int_eq(h.cp_comm, TPS_CP_A2A_P2P);
    ck_assert_uint_eq(h.cp, 4);
    ck_assert_uint_eq(h.cp_a2a, 2);
}
END_TEST

/* Megatron's MoE options onto model.moe and parallel.ep / etp (Mixtral's
 * example script's), --kv-channels onto model.head_dim where it is not
 * hidden / heads, --qk-layernorm onto model.qk_norm; 16 GPUs: tp 2 x dp 8,
 * the expert grid etp 2 x ep 4 x edp 2. */
START_TEST(test_moe)
{
    g_auto(TpsScenario) sc = {0};
    g_autoptr(GError) error = NULL;
    ck_assert_msg(load("m.sh",
                       "torchrun --nproc_per_node 16 p.py --num-layers 4 --hidden-size 64 "
                       "--tensor-model-parallel-size 2 --sequence-parallel --num-experts 8 "
                       "--moe-router-topk 2 --moe-ffn-hidden-size 128 "
                       "--moe-shared-expert-intermediate-size 64 --moe-layer-freq 1 "
                       "--moe-token-dispatcher-type alltoall --moe-grouped-gemm "
                       "--moe-expert-capacity-factor 1.25 --moe-shared-expert-overlap "
                       "--moe-aux-loss-coeff 1e-2 --moe-router-load-balancing-type aux_loss "
                       "--expert-model-parallel-size 4 --kv-channels 8 --qk-layernorm" TAIL,
                       &sc, NULL, &error),
                  "%s", error ? error->message : "");
    ck_assert_uint_eq(sc.moe.experts, 8);
    ck_assert_uint_eq(sc.moe.top_k, 2);
    ck_assert_uint_eq(sc.moe.ffn_hidden, 128);
    ck_assert_uint_eq(sc.moe.shared_ffn_hidden, 64);
    ck_assert_uint_eq(sc.moe.layer_freq, 1);
    ck_assert_int_eq(sc.moe.dispatcher, TPS_MOE_ALLTOALL);
    ck_assert(sc.moe.grouped_gemm);
    ck_assert(sc.moe.shared_expert_overlap);
    ck_assert_double_eq_tol(sc.moe.capacity_factor, 1.25, 1e-12);
    ck_assert_uint_eq(sc.ep, 4);
    ck_assert_uint_eq(tps_scenario_etp(&sc), 2);
    ck_assert_uint_eq(sc.dp, 8);
    /* 64 / 16 heads = 4 channels a head by default; 8 given. */
    ck_assert_uint_eq(sc.head_dim, 8);
    ck_assert(sc.qk_norm);
    ck_assert(!sc.moe.overlap_ep_comm);
    /* Without --moe-router-enable-expert-bias: the auxiliary loss's
     * measured skew (sched/scenario.h). */
    ck_assert(!sc.moe.expert_bias);
    ck_assert_double_eq(sc.moe.load_imbalance, 1.72);
}
END_TEST

/* --moe-router-enable-expert-bias onto model.moe.expert_bias: the
 * loss-free balancing's measured skew, 1.04, by default. */
START_TEST(test_moe_expert_bias)
{
    g_auto(TpsScenario) sc = {0};
    g_autoptr(GError) error = NULL;
    ck_assert_msg(load("m.sh",
                       "torchrun --nproc_per_node 8 p.py --num-layers 4 --hidden-size 64 "
                       "--num-experts 8 --moe-router-enable-expert-bias "
                       "--expert-model-parallel-size 4" TAIL,
                       &sc, NULL, &error),
                  "%s", error ? error->message : "");
    ck_assert(sc.moe.expert_bias);
    ck_assert_double_eq(sc.moe.load_imbalance, 1.04);
}
END_TEST

/* --overlap-moe-expert-parallel-comm onto model.moe.overlap_ep_comm
 * (with expert parallelism and one stage, as tpsim models it). */
START_TEST(test_moe_ep_overlap)
{
    g_auto(TpsScenario) sc = {0};
    g_autoptr(GError) error = NULL;
    ck_assert_msg(load("m.sh",
                       "torchrun --nproc_per_node 16 p.py --num-layers 4 --hidden-size 64 "
                       "--tensor-model-parallel-size 2 --sequence-parallel --num-experts 8 "
                       "--expert-model-parallel-size 4 --overlap-moe-expert-parallel-comm" TAIL,
                       &sc, NULL, &error),
                  "%s", error ? error->message : "");
    ck_assert(sc.moe.overlap_ep_comm);
    ck_assert_uint_eq(sc.ep, 4);
}
END_TEST

/* Megatron's flex dispatcher with DeepEP (--moe-enable-deepep, or its
 * successor --moe-flex-dispatcher-backend deepep) onto model.moe.dispatcher
 * flex; DeepEP's default SM count accepted as given; node-limited routing
 * onto model.moe.router_groups and router_group_topk. */
START_TEST(test_moe_flex)
{
    g_auto(TpsScenario) sc = {0};
    g_autoptr(GError) error = NULL;
    ck_assert_msg(load("f.sh",
                       "torchrun --nproc_per_node 16 p.py --num-layers 4 --hidden-size 64 "
                       "--num-experts 16 --moe-router-topk 2 --moe-token-dispatcher-type flex "
                       "--moe-enable-deepep --moe-flex-dispatcher-backend deepep "
                       "--moe-deepep-num-sms 20 --expert-model-parallel-size 16 "
                       "--moe-router-num-groups 4 --moe-router-group-topk 2" TAIL,
                       &sc, NULL, &error),
                  "%s", error ? error->message : "");
    ck_assert_int_eq(sc.moe.dispatcher, TPS_MOE_FLEX);
    ck_assert_uint_eq(sc.ep, 16);
    ck_assert_uint_eq(sc.moe.router_groups, 4);
    ck_assert_uint_eq(sc.moe.router_group_topk, 2);
}
END_TEST

/* --multi-latent-attention and its sizes onto model.multi_latent_attention
 * and its keys (DeepSeek-V3's sizes, 128 heads of a 7168 hidden);
 * --kv-channels does not apply to it; what is not given keeps Megatron's
 * default (--qk-head-dim 128). */
START_TEST(test_mla)
{
    g_auto(TpsScenario) sc = {0};
    g_autoptr(GError) error = NULL;
    ck_assert_msg(load("d.sh",
                       "p.py --num-layers 4 --hidden-size 7168 --num-attention-heads 128 "
                       "--tensor-model-parallel-size 2 --sequence-parallel "
                       "--position-embedding-type rope --disable-bias-linear --qk-layernorm "
                       "--multi-latent-attention --q-lora-rank 1536 --kv-lora-rank 512 "
                       "--qk-pos-emb-head-dim 64 --v-head-dim 128 --kv-channels 128" TAIL,
                       &sc, NULL, &error),
                  "%s", error ? error->message : "");
    ck_assert(sc.mla);
    ck_assert_uint_eq(sc.q_lora_rank, 1536);
    ck_assert_uint_eq(sc.kv_lora_rank, 512);
    ck_assert_uint_eq(sc.qk_head_dim, 128);
    ck_assert_uint_eq(sc.qk_pos_emb_head_dim, 64);
    ck_assert_uint_eq(sc.v_head_dim, 128);
    ck_assert_uint_eq(sc.head_dim, 0);
    ck_assert(sc.qk_norm);
    /* Without --multi-latent-attention the sizes configure nothing. */
    g_auto(TpsScenario) plain = {0};
    g_autoptr(GError) perror = NULL;
    ck_assert_msg(load("p.sh", "p.py --num-layers 4 --hidden-size 64 --q-lora-rank 32" TAIL, &plain,
                       NULL, &perror),
                  "%s", perror ? perror->message : "");
    ck_assert(!plain.mla);
    ck_assert_uint_eq(plain.q_lora_rank, 0);
}
END_TEST

START_TEST(test_rank_order)
{
    /* --use-tp-pp-dp-mapping is Megatron's order tp-cp-ep-pp-dp; without
     * it, the default tp-cp-ep-dp-pp. */
    static const char *const want[] = {"tp-cp-ep-dp-pp", "tp-cp-ep-pp-dp"};
    for (guint mapped = 0; mapped < 2; mapped++) {
        g_auto(TpsScenario) sc = {0};
        g_autoptr(GError) error = NULL;
        g_autofree char *text = g_strdup_printf(
            "x.py --num-layers 8 --hidden-size 64 --num-attention-heads 8 --seq-length 128 "
            "--bf16 --micro-batch-size 1 --global-batch-size 8 --tensor-model-parallel-size 2 "
            "--pipeline-model-parallel-size 2%s",
            mapped ? " --use-tp-pp-dp-mapping" : "");
        ck_assert_msg(load("o.sh", text, &sc, NULL, &error), "%s", error ? error->message : "");
        TpsDim order[TPS_DIM_COUNT];
        tps_scenario_order(&sc, order);
        g_autofree char *got = tps_grid_order_text(order);
        ck_assert_str_eq(got, want[mapped]);
    }
}
END_TEST

/* ---- megatron_args: in a scenario file ---- */

START_TEST(test_scenario_key)
{
    g_auto(TpsScenario) sc = {0};
    g_autoptr(GError) error = NULL;
    /* The file's own keys replace the script's values. */
    const char *text = "name: t\nhardware: a100-sxm4-80gb\n"
                       "megatron_args: \"--num-layers 4 --hidden-size 1024 --num-attention-heads "
                       "16 --seq-length 1024 --micro-batch-size 2 --bf16 "
                       "--tensor-model-parallel-size 2\"\n"
                       "training:\n  micro_batch: 1\n";
    ck_assert_msg(tps_scenario_file_load_string("t.yaml", text, -1, &sc, &error), "%s",
                  error ? error->message : "");
    ck_assert_uint_eq(sc.hidden, 1024);
    ck_assert_uint_eq(sc.tp, 2);
    ck_assert_uint_eq(sc.micro_batch, 1);
    ck_assert_int_eq(sc.overlap_grad_reduce, FALSE);
    tps_scenario_clear(&sc);

    /* An error inside the string points into the scenario file. */
    const char *bad = "name: t\nhardware: a100-sxm4-80gb\n"
                      "megatron_args: \"--num-layers x\"\n";
    ck_assert(!tps_scenario_file_load_string("t.yaml", bad, -1, &sc, &error));
    ck_assert_msg(g_str_has_prefix(error->message, "t.yaml:3:30: "), "%s", error->message);
}
END_TEST

/* parallel: beside megatron_args: replaces the script's tp and pp before
 * it is mapped: the GPUs stay the script's (dp derived again), sp follows
 * the final tp as in Megatron, the vocabulary is padded for it. */
START_TEST(test_layout_override)
{
    g_autofree char *path = data_path("llama3-8b-fp8.sh");
    g_autofree char *script = NULL;
    ck_assert(g_file_get_contents(path, &script, NULL, NULL));
    g_auto(GStrv) lines = g_strsplit(script, "\n", -1);
    g_autofree char *indented = g_strjoinv("\n  ", lines);
    static const struct {
        const char *parallel;
        guint tp, pp, dp;
        gboolean sp;
    } cases[] = {
        /* The 8 GPUs of the script: tp 2 leaves dp 4, --sequence-parallel on. */
        {"  tp: 2\n", 2, 1, 4, TRUE},
        {"  tp: 2\n  pp: 2\n", 2, 2, 2, TRUE},
        {"  pp: 4\n", 1, 4, 2, FALSE},
        /* What the file sets itself stays. */
        {"  tp: 2\n  dp: 1\n  sp: false\n", 2, 1, 1, FALSE},
    };
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *text = g_strdup_printf("name: t\nhardware: h100-sxm\nmegatron_args: |\n"
                                                "  %s\nparallel:\n%s",
                                                indented, cases[i].parallel);
        g_auto(TpsScenario) sc = {0};
        g_autoptr(GError) error = NULL;
        ck_assert_msg(tps_scenario_file_load_string("t.yaml", text, -1, &sc, &error), "%u: %s", i,
                      error ? error->message : "");
        ck_assert_uint_eq(sc.tp, cases[i].tp);
        ck_assert_uint_eq(sc.pp, cases[i].pp);
        ck_assert_msg(sc.dp == cases[i].dp, "%u: dp %u", i, sc.dp);
        ck_assert_int_eq(sc.sp, cases[i].sp);
    }

    /* The vocabulary padded for the file's tp: 50257 to a multiple of
     * 128 x 4. */
    const char *vocab = "name: t\nhardware: a100-sxm4-80gb\n"
                        "megatron_args: \"--num-layers 4 --hidden-size 1024 --num-attention-heads "
                        "16 --seq-length 1024 --micro-batch-size 2 --bf16 --vocab-size 50257\"\n"
                        "parallel:\n  tp: 4\n";
    g_auto(TpsScenario) sc = {0};
    g_autoptr(GError) error = NULL;
    ck_assert_msg(tps_scenario_file_load_string("t.yaml", vocab, -1, &sc, &error), "%s",
                  error ? error->message : "");
    ck_assert_uint_eq(sc.vocab, 50688);
}
END_TEST

/* ---- tpsim run --megatron-args ---- */

START_TEST(test_cli)
{
    g_autofree char *path = data_path("gpt-1p3b-tp-overlap.sh");
    g_autofree char *out = NULL, *err = NULL;
    const char *args[] = {"run", "--megatron-args", path, "--strategy", "megatron",
                          "--strategy", "custom", "--format", "csv", NULL};
    int status = tps_test_spawn("TPSIM_BIN", NULL, args, &out, &err);
    ck_assert_msg(status == 0, "%s", err);
    ck_assert_msg(strstr(out, "custom") != NULL, "%s", out);
    ck_assert_msg(strstr(err, "ignored") != NULL && strstr(err, "--lr 1e-4") != NULL, "%s", err);

    /* --nodes and --gpus rescale the world: 16 nodes x 8 / (8 x 16) = 1
     * in the script; 32 nodes or 256 GPUs give dp 2. */
    g_autofree char *gpt3 = data_path("gpt3-175b.sh");
    const char *const sizes[][2] = {{"--nodes", "32"}, {"--gpus", "256"}};
    for (guint i = 0; i < G_N_ELEMENTS(sizes); i++) {
        g_autofree char *o = NULL, *e = NULL;
        const char *rescaled[] = {"run", "--megatron-args", gpt3, sizes[i][0], sizes[i][1],
                                  "--strategy", "tp-allreduce", NULL};
        ck_assert_msg(tps_test_spawn("TPSIM_BIN", NULL, rescaled, &o, &e) == 0, "%s", e);
        ck_assert_msg(strstr(o, "dp=2 (256 GPUs)") != NULL, "%s", o);
    }
    const char *odd[] = {"run", "--megatron-args", gpt3, "--gpus", "100", NULL};
    g_autofree char *odd_err = NULL;
    ck_assert_int_eq(tps_test_spawn("TPSIM_BIN", NULL, odd, NULL, &odd_err), 1);
    ck_assert_msg(strstr(odd_err, "--gpus gives a world size of 100") != NULL, "%s", odd_err);
    const char *bad_nodes[] = {"run", "--megatron-args", gpt3, "--nodes", "0", NULL};
    ck_assert_int_eq(tps_test_spawn("TPSIM_BIN", NULL, bad_nodes, NULL, NULL), 2);
    const char *nodes_alone[] = {"run", "scenarios/default.yaml", "--nodes", "2", NULL};
    ck_assert_int_eq(tps_test_spawn("TPSIM_BIN", NULL, nodes_alone, NULL, NULL), 2);

    const char *usage[] = {"run", "--model", "h100-sxm", "x.yaml", NULL};
    ck_assert_int_eq(tps_test_spawn("TPSIM_BIN", NULL, usage, NULL, NULL), 2);
    const char *both[] = {"run", "--megatron-args", path, "x.yaml", NULL};
    ck_assert_int_eq(tps_test_spawn("TPSIM_BIN", NULL, both, NULL, NULL), 2);

    g_autofree char *dir = tps_test_tmpdir("megatron");
    g_autofree char *bad = g_build_filename(dir, "bad.sh", NULL);
    ck_assert(g_file_set_contents(bad, "p.py --num-layers 0\n", -1, NULL));
    const char *input[] = {"run", "--megatron-args", bad, NULL};
    ck_assert_int_eq(tps_test_spawn("TPSIM_BIN", NULL, input, NULL, &err), 1);
    g_autofree char *where = g_strdup_printf("%s:1:19: ", bad);
    ck_assert_msg(strstr(err, where) != NULL, "%s", err);
    tps_test_remove_dir(dir);
}
END_TEST

static Suite *
suite(void)
{
    Suite *s = suite_create("megatron-args");
    TCase *tc = tcase_create("core");
    tcase_add_loop_test(tc, test_example_scripts, 0, G_N_ELEMENTS(script_cases));
    tcase_add_test(tc, test_ignored_listed);
    tcase_add_test(tc, test_flag_classes);
    tcase_add_test(tc, test_dp_flags_modelled);
    tcase_add_test(tc, test_fsdp_flags);
    tcase_add_test(tc, test_fp8_recipe);
    tcase_add_test(tc, test_uneven_split);
    tcase_add_loop_test(tc, test_shell, 0, G_N_ELEMENTS(shell_cases));
    tcase_add_test(tc, test_rank_order);
    tcase_add_test(tc, test_shell_script_api);
    tcase_add_loop_test(tc, test_errors, 0, G_N_ELEMENTS(error_cases));
    tcase_add_test(tc, test_context_parallel);
    tcase_add_test(tc, test_moe);
    tcase_add_test(tc, test_moe_expert_bias);
    tcase_add_test(tc, test_moe_flex);
    tcase_add_test(tc, test_mla);
    tcase_add_test(tc, test_moe_layer_freq);
    tcase_add_test(tc, test_moe_ep_overlap);
    tcase_add_test(tc, test_scenario_key);
    tcase_add_test(tc, test_layout_override);
    tcase_add_test(tc, test_cli);
    suite_add_tcase(s, tc);
    return s;
}

int
main(void)
{
    return tps_test_run(suite());
}
