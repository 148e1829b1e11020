torchrun --nproc_per_node 8 --nnodes 2 pretrain_gpt.py --num-layers 4 --hidden-size 64 \
  --num-attention-heads 16 --seq-length 1024 --micro-batch-size 1 --bf16 \
  --num-experts 16 --moe-router-topk 4 --moe-token-dispatcher-type flex \
  --moe-enable-deepep --moe-flex-dispatcher-backend deepep --moe-deepep-num-sms 20 \
  --expert-model-parallel-size 16 --moe-router-num-groups 4 --moe-router-group-topk 2 \
  --moe-flex-dispatcher-num-sms 24
