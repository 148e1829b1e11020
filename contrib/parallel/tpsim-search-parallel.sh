#!/bin/bash
# A tpsim search in N shards with GNU parallel, on this machine or on
# several hosts over ssh, then merged (docs/scale-out.md):
#
#   contrib/parallel/tpsim-search-parallel.sh -n 8 -S 4/node1,4/node2 \
#       -o best.csv scenarios/llama2-70b.yaml --gpus 256
#
# Options:
#   -n N       shards, default 8
#   -o FILE    the merged output (.csv or .json), required
#   -S LOGINS  GNU parallel's --sshlogin: comma-separated [N/]host (N jobs
#              at once on it), `:` for this machine (the default); every
#              host needs the same tpsim build and model files, and this
#              folder at the same path (a shared file system: the shards
#              run in it, --workdir ., and write their parts there)
#   -t PATH    the tpsim to run (default: tpsim on PATH)
#   -c sweep   shard `tpsim sweep SWEEP.yaml [options]` instead of a search
# The parts go to OUTPUT.parts/part-I-of-N.csv (each with its sidecar
# part-I-of-N.csv.batch, which tpsim merge reads), the log of every shard to
# OUTPUT.parts/joblog. Run the same command again after a failure: the
# shards that ended well are kept (--resume-failed) and only the others run.
set -eu

shards=8
output=""
logins=":"
tpsim=tpsim
command=search
usage() {
    echo "usage: $0 [-n SHARDS] [-S SSHLOGINS] [-t TPSIM] [-c search|sweep] -o OUTPUT SCENARIO [options]" >&2
    exit 2
}
while getopts c:n:o:S:t: opt; do
    case $opt in
        n) shards=$OPTARG ;;
        o) output=$OPTARG ;;
        S) logins=$OPTARG ;;
        t) tpsim=$OPTARG ;;
        c) command=$OPTARG ;;
        *) usage ;;
    esac
done
shift $((OPTIND - 1))
. "$(cd "$(dirname "$0")" && pwd)/../common.sh"
check_shard_options "$shards" "$command" "$output" $#
scenario=$1
shift
parts=$output.parts
mkdir -p "$parts"

# One job per shard. GNU parallel replaces {}, {.}, {#} and the like in
# every argument of its command, whoever wrote them: the command it is
# given is fixed text, and every argument of ours (the scenario, the
# search options, the paths) reaches it through the environment (--env
# sends it to the other hosts), quoted for bash (printf %q) and expanded by
# the job itself, so that each arrives as written. The shard's index is the
# job's last argument (parallel appends it). --halt stops launching more
# once one failed (the others finish), --joblog with --resume-failed reruns
# only what did not end well.
TPSIM_SHARD_COMMAND=$(printf '%q ' "$tpsim" "$command" "$scenario" "$@")
TPSIM_SHARD_PARTS=$(printf '%q' "$parts")
TPSIM_SHARD_COUNT=$shards
TPSIM_SHARD_FORMAT=$format
export TPSIM_SHARD_COMMAND TPSIM_SHARD_PARTS TPSIM_SHARD_COUNT TPSIM_SHARD_FORMAT
# shellcheck disable=SC2016 # expanded by the job's bash, not here
job='i=$1; eval "set -- $TPSIM_SHARD_COMMAND"; eval "parts=$TPSIM_SHARD_PARTS"; '\
'exec "$@" --jobs 1 --shard "$i/$TPSIM_SHARD_COUNT" '\
'--output "$parts/part-$i-of-$TPSIM_SHARD_COUNT.$TPSIM_SHARD_FORMAT"'
seq 0 $((shards - 1)) | parallel -q --sshlogin "$logins" --workdir . \
    --env TPSIM_SHARD_COMMAND --env TPSIM_SHARD_PARTS --env TPSIM_SHARD_COUNT \
    --env TPSIM_SHARD_FORMAT \
    --joblog "$parts/joblog" --resume-failed --halt soon,fail=1 \
    bash -c "$job" tpsim-shard

list=()
for ((i = 0; i < shards; i++)); do
    list+=("$parts/part-$i-of-$shards.$format")
done
exec "$tpsim" merge "${list[@]}" --output "$output"
