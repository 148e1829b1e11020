torchrun --nproc_per_node 16 pretrain_gpt.py --num-layers 4 --hidden-size 64 \
  --num-attention-heads 16 --seq-length 1024 --micro-batch-size 1 --bf16 \
  --tensor-model-parallel-size 2 --sequence-parallel --num-experts 8 --moe-router-topk 2 \
  --moe-ffn-hidden-size 128 --moe-shared-expert-intermediate-size 64 --moe-layer-freq 1 \
  --moe-token-dispatcher-type alltoall --moe-grouped-gemm --moe-expert-capacity-factor 1.25 \
  --moe-shared-expert-overlap --expert-model-parallel-size 4 --expert-tensor-parallel-size 1 \
  --kv-channels 8 --qk-layernorm --overlap-moe-expert-parallel-comm
