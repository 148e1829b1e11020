#!/bin/bash
# The argument set of Megatron-LM's
# examples/megatron_fsdp/train_llama3_8b_fsdp_h100_fp8.sh (Llama 3 8B, FP8,
# Megatron FSDP optim_grads_params on one node of 8 GPUs), with its
# switch USE_MEGATRON_FSDP and its if block. Test input of
# tests/unit/test-megatron-args.c.
GPUS_PER_NODE=8
NUM_NODES=1
USE_MEGATRON_FSDP=${USE_MEGATRON_FSDP:-1}
SHARDING_STRATEGY=${SHARDING_STRATEGY:-"optim_grads_params"}
TP_SIZE=1
CP_SIZE=1
MICRO_BATCH_SIZE=1
GLOBAL_BATCH_SIZE=128
NUM_LAYERS=32
SEQ_LENGTH=8192

MODEL_ARGS=(
    --num-layers $NUM_LAYERS --hidden-size 4096 --ffn-hidden-size 14336
    --num-attention-heads 32 --group-query-attention --num-query-groups 8
    --kv-channels 128 --seq-length $SEQ_LENGTH --max-position-embeddings $SEQ_LENGTH
    --position-embedding-type rope --hidden-dropout 0.0 --swiglu --normalization RMSNorm
    --untie-embeddings-and-output-weights --disable-bias-linear
)
TRAINING_ARGS=(
    --micro-batch-size $MICRO_BATCH_SIZE --global-batch-size $GLOBAL_BATCH_SIZE --bf16
)
if [ "${USE_MEGATRON_FSDP}" = 1 ]; then
    TRAINING_ARGS=(
        "${TRAINING_ARGS[@]}"
        --use-megatron-fsdp
        --data-parallel-sharding-strategy ${SHARDING_STRATEGY}
        --fsdp-double-buffer
    )
fi
DTYPE_ARGS=(--fp8-format hybrid --fp8-param-gather)
MODEL_PARALLEL_ARGS=(
    --tensor-model-parallel-size $TP_SIZE --context-parallel-size $CP_SIZE --sequence-parallel
)
TRAINING_ARGS+=(--use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather)
DATA_ARGS=(--mock-data --tokenizer-type NullTokenizer --vocab-size 128256)

python -m torch.distributed.run --nproc_per_node $GPUS_PER_NODE --nnodes $NUM_NODES \
    pretrain_gpt.py ${MODEL_ARGS[@]} ${TRAINING_ARGS[@]} ${DTYPE_ARGS[@]} \
    ${MODEL_PARALLEL_ARGS[@]} ${DATA_ARGS[@]}
