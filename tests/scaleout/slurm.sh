#!/bin/bash
# The Slurm recipe of docs/scale-out.md, for real: a single-node Slurm
# cluster (slurm-cluster.sh) runs contrib/slurm/submit.sh's job array of
# search shards and its dependent merge; the merged file must be exactly
# the unsharded search's. Shard 1 fails on its first run: the merge must
# then be cancelled, not run on missing parts, and `submit.sh -r 1` (the
# failed shard again, with a new merge) must complete the result.
# Skipped (exit 77) only when munge or Slurm is not installed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/common.sh"
. "$here/slurm-cluster.sh"

reason=$(cluster_missing) && skip "$reason"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/tpsim-slurm.XXXXXX")
cleanup() {
    cluster_stop
    [ -n "${KEEP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

t0=$(date +%s)
cluster_start "$tmp/cluster" || fail "the Slurm cluster did not start"
echo "# cluster up in $(($(date +%s) - t0)) s"
unsharded "$tmp/full.csv"
flaky_tpsim "$tmp"

# Wait until none of the jobs $@ is pending or running (60 s at most).
jobs_done() {
    [ -z "$(squeue -h -j "$(echo "$@" | tr ' ' ,)" -o %i 2>/dev/null)" ]
}
wait_jobs() {
    wait_for 60 jobs_done "$@" || {
        squeue
        cluster_logs
        fail "jobs $* still queued after 60 s"
    }
}
job_state() {
    scontrol show job "$1" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'
}

# Issue 24, 11: a count with a leading zero (octal to bash, decimal to
# tpsim) is refused before anything is made or submitted.
for n in 010 08; do
    "$SRC/contrib/slurm/submit.sh" -n "$n" -t "$tmp/tpsim" -c "$COMMAND" \
        -o "$tmp/zero.csv" "$INPUT" "${ARGS[@]}" >/dev/null 2>&1
    status=$?
    [ "$status" = 2 ] || fail "submit.sh -n $n: exit $status, not 2"
    [ ! -e "$tmp/zero.csv.parts" ] || fail "submit.sh -n $n made $tmp/zero.csv.parts"
done

# The parts' folder has a `%` in its name, which sbatch's --output patterns
# must keep (issue 24, 11): the Slurm logs go there too.
out=$tmp/out%j
mkdir "$out"
cd "$out" || exit 1
read -r array merge < <("$SRC/contrib/slurm/submit.sh" -n "$SHARDS" -t "$tmp/tpsim" \
    -c "$COMMAND" -o "$out/merged.csv" "$INPUT" "${ARGS[@]}") ||
    fail "submit.sh failed"
echo "# array job $array, merge job $merge"
wait_jobs "$array" "$merge"
[ -e "$tmp/failed-once" ] || fail "shard 1 did not run"
state=$(job_state "$merge")
[ "$state" = CANCELLED ] || fail "the merge after a failed shard is $state, not CANCELLED"
[ ! -e "$out/merged.csv" ] || fail "a merged file after a failed shard"

read -r array merge < <("$SRC/contrib/slurm/submit.sh" -n "$SHARDS" -t "$tmp/tpsim" -r 1 \
    -c "$COMMAND" -o "$out/merged.csv" "$INPUT" "${ARGS[@]}") ||
    fail "submit.sh -r 1 failed"
echo "# shard 1 again: array job $array, merge job $merge"
wait_jobs "$array" "$merge"
state=$(job_state "$merge")
[ "$state" = COMPLETED ] || {
    cat "$out/merged.csv.parts"/slurm-*.out
    fail "the merge is $state"
}
same_result "$tmp/full.csv" "$out/merged.csv" || fail "merged != unsharded"
echo "ok: $SHARDS Slurm shards merged = the unsharded $COMMAND ($(($(date +%s) - t0)) s)"
