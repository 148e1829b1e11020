N_DENSE=3
N_MOE=5
torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 8 --hidden-size 64 \
  --num-attention-heads 16 --seq-length 1024 --micro-batch-size 1 --bf16 \
  --num-experts 8 --moe-router-topk 2 --expert-model-parallel-size 4 \
  --moe-layer-freq "([0]*$N_DENSE+[1]*$N_MOE)"
