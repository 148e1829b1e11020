#!/bin/bash
# The shape of Megatron-LM's examples/academic_paper_scripts/sc21/run_table_1.sh
# with its CONFIG.sh inlined: one model size chosen at the top, an
# if/elif chain that sets the sizes of each, then the arguments built from
# them. Only the branch of MODEL_SIZE runs (the 1.7B one here, not the
# last). Test input of tests/unit/test-megatron-args.c.

# Sizes: 1.7B, 3.6B, 1T
MODEL_SIZE=1.7B

if [ ${MODEL_SIZE} == "1.7B" ]; then
    TP=1
    PP=1
    MBS=16
    GBS=512
    NLS=24
    HS=2304
    NAH=24
    NNODES=4
    EXTRA="--recompute-activations "
elif [ ${MODEL_SIZE} == "3.6B" ]; then
    TP=2
    PP=1
    MBS=16
    GBS=512
    NLS=30
    HS=3072
    NAH=32
    NNODES=8
    EXTRA="--recompute-activations "
elif [ ${MODEL_SIZE} == "1T" ]; then
    TP=8
    PP=64
    MBS=1
    GBS=3072
    NLS=128
    HS=25600
    NAH=160
    NNODES=384
    EXTRA="--recompute-activations "
else
    echo "Invalid configuration"
    exit 1
fi

case "$MODEL_SIZE" in
    1T|5*B) SEQ=4096 ;;
    [0-9].*B)
        SEQ=2048
        ;;
    *) SEQ=1024 ;;
esac

export JOB_NAME=results_table_1_model_size_${MODEL_SIZE}

MEGATRON_PARAMS=" ${EXTRA} \
    --tensor-model-parallel-size ${TP} \
    --pipeline-model-parallel-size ${PP} \
    --micro-batch-size ${MBS} \
    --global-batch-size ${GBS} \
    --num-layers ${NLS} \
    --hidden-size ${HS} \
    --num-attention-heads ${NAH} \
    --seq-length ${SEQ} \
    --max-position-embeddings ${SEQ} \
    --lr 0.0001 \
    --fp16 "

torchrun --nproc_per_node 8 --nnodes ${NNODES} pretrain_gpt.py ${MEGATRON_PARAMS}
