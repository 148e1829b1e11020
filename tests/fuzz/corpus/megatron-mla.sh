torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 2 --hidden-size 7168 \
  --num-attention-heads 128 --seq-length 512 --micro-batch-size 1 --bf16 \
  --tensor-model-parallel-size 2 --sequence-parallel --position-embedding-type rope \
  --disable-bias-linear --qk-layernorm --multi-latent-attention --q-lora-rank 1536 \
  --kv-lora-rank 512 --qk-head-dim 128 --qk-pos-emb-head-dim 64 --v-head-dim 128 \
  --kv-channels 128
