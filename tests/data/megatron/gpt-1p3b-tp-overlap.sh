# One command line, as typed: a 1.3B GPT on 2 nodes of 8 GPUs with TP 8,
# SP, userbuffers overlap less the bulk wgrad overlap, 2 pipeline stages of
# 2 virtual stages, full recomputation. Test input of
# tests/unit/test-megatron-args.c.
torchrun --nproc-per-node=8 --nnodes=2 pretrain_gpt.py --num-layers 24 --hidden-size 2048 \
  --num-attention-heads 16 --seq-length 2048 --max-position-embeddings 2048 \
  --tokenizer-type GPT2BPETokenizer --micro-batch-size 2 --global-batch-size 64 \
  --tensor-model-parallel-size 8 --pipeline-model-parallel-size 2 \
  --num-layers-per-virtual-pipeline-stage 6 --sequence-parallel --tp-comm-overlap \
  --disable-tp-comm-bulk-wgrad --recompute-granularity full --recompute-method uniform \
  --recompute-num-layers 1 --use-distributed-optimizer --bf16 --lr 1e-4
