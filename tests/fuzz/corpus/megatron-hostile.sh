A=( --num-layers ${B:-${C:-4}} "${A[@]}" $((1/0)) $((2*(3+4))) `date` $(echo x)
W=$(( 99999999999 * 99999999999 ))
X="--hidden-size 64" ; Y='$X' ; export Z+=1
torchrun --nnodes=0 --nproc-per-node=-1 p.py ${A[@]} $X --num-attention-heads 8 --seq-length \
  8 --micro-batch-size 1 --bf16 --tp-comm-overlap --num-query-groups --kv-channels 8 2>&1 >log
"unterminated
