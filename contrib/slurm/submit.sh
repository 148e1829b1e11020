#!/bin/bash
# Submit a tpsim search to Slurm as a job array of N shards and a merge job
# that runs once all of them ended well (docs/scale-out.md):
#
#   contrib/slurm/submit.sh -n 16 -o best.csv scenarios/llama2-70b.yaml --gpus 256
#
# The parts go to OUTPUT.parts/ (part-I-of-N.csv and its sidecar
# part-I-of-N.csv.batch, which tpsim merge reads, with each task's Slurm
# log), the merged result to OUTPUT (and OUTPUT.batch). Options:
#   -n N       shards (array tasks), default 8
#   -o FILE    the merged output (.csv or .json), required
#   -r LIST    submit again only these shards (Slurm's array syntax, e.g.
#              3,5 or 2-4) of an earlier submission with the same -n, -o and
#              search arguments, and a new merge after them
#   -t PATH    the tpsim to run on the nodes (default: tpsim on PATH here)
#   -c sweep   shard `tpsim sweep SWEEP.yaml [options]` instead of a search
# Further sbatch options (partition, account, time limit, CPUs per task)
# through SBATCH_* environment variables (sbatch(1)), e.g.
# SBATCH_PARTITION=cpu SBATCH_TIMELIMIT=30 or, for --cpus-per-task, the
# #SBATCH lines of tpsim-search.sbatch.
# Prints the array job's id and the merge job's id on one line.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
shards=8
output=""
rerun=""
tpsim=$(command -v tpsim || true)
command=search
usage() {
    echo "usage: $0 [-n SHARDS] [-r LIST] [-t TPSIM] [-c search|sweep] -o OUTPUT SCENARIO [options]" >&2
    exit 2
}
while getopts c:n:o:r:t: opt; do
    case $opt in
        n) shards=$OPTARG ;;
        o) output=$OPTARG ;;
        r) rerun=$OPTARG ;;
        t) tpsim=$OPTARG ;;
        c) command=$OPTARG ;;
        *) usage ;;
    esac
done
shift $((OPTIND - 1))
. "$here/../common.sh"
check_shard_options "$shards" "$command" "$output" $#
[ -n "$tpsim" ] || {
    echo "$0: no tpsim on PATH: give its path with -t" >&2
    exit 2
}
# Absolute paths: the jobs may start in another folder.
tpsim=$(cd "$(dirname "$tpsim")" && pwd)/$(basename "$tpsim")
mkdir -p "$output.parts"
parts=$(cd "$output.parts" && pwd)
output=$(cd "$(dirname "$output")" && pwd)/$(basename "$output")
scenario=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift

# The jobs get this environment (sbatch's default --export=ALL), with the
# tpsim to run and the shard count. Not through --export=ALL,VAR=...: that
# makes slurmd read root's login environment first (seconds per job).
export TPSIM=$tpsim TPSIM_SHARDS=$shards TPSIM_COMMAND=$command
# sbatch's --output is a pattern: a `%` of the folder's name is `%%` there.
logs=${parts//%/%%}
array=$(sbatch --parsable --array="${rerun:-0-$((shards - 1))}" --output="$logs/slurm-%A_%a.out" \
    "$here/tpsim-search.sbatch" "$parts" "$format" "$scenario" "$@")
array=${array%%;*}
merge=$(sbatch --parsable --dependency="afterok:$array" --kill-on-invalid-dep=yes \
    --output="$logs/slurm-%j-merge.out" \
    "$here/tpsim-merge.sbatch" "$parts" "$format" "$output")
echo "${array} ${merge%%;*}"
