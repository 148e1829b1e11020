#!/bin/sh
# src/calib/gpu/cublaslt-ids.inc against the cuBLASLt header of the CUDA
# toolkit installed: the tile and cluster ids tpsim-gpubench names must be
# the library's. Without a toolkit header: a skip (77).
# Usage: sh tests/cublaslt-ids.sh SOURCE_DIR
set -u
src=${1:?usage: cublaslt-ids.sh SOURCE_DIR}
header=
for dir in ${CUDA_PATH:+"$CUDA_PATH/include"} /usr/local/cuda/include /usr/include; do
    if [ -r "$dir/cublasLt.h" ]; then
        header=$dir/cublasLt.h
        break
    fi
done
if [ -z "$header" ] && command -v nvcc >/dev/null 2>&1; then
    dir=$(dirname "$(command -v nvcc)")/../include
    [ -r "$dir/cublasLt.h" ] && header=$dir/cublasLt.h
fi
if [ -z "$header" ]; then
    echo "skip: no cublasLt.h (no CUDA toolkit)"
    exit 77
fi
tmp=$(mktemp) || exit 1
trap 'rm -f "$tmp"' EXIT
sh "$src/build-aux/cublaslt-ids.sh" "$header" >"$tmp" || {
    echo "FAIL: build-aux/cublaslt-ids.sh failed on $header"
    exit 1
}
if ! grep -q '^    {23, 128, 256},$' "$tmp"; then
    echo "FAIL: $header does not give CUBLASLT_MATMUL_TILE_128x256 = 23 as read"
    exit 1
fi
if ! diff -u "$src/src/calib/gpu/cublaslt-ids.inc" "$tmp"; then
    echo "FAIL: src/calib/gpu/cublaslt-ids.inc differs from $header's ids:"
    echo "      sh build-aux/cublaslt-ids.sh $header > src/calib/gpu/cublaslt-ids.inc"
    exit 1
fi
echo "ok: the tile and cluster ids are $header's"
