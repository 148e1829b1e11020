torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 8 --hidden-size 64 \
  --num-attention-heads 16 --seq-length 1024 --micro-batch-size 1 --bf16 \
  --num-experts 8 --moe-layer-freq '(([1]*8)+[0]*99999999999999999999+[,]*0+[1]*18446744073709551615)'
