# Sourced by contrib/slurm/submit.sh and contrib/parallel/tpsim-search-parallel.sh
# (docs/scale-out.md): the checks of the options they share, after getopts.
#
#   check_shard_options SHARDS COMMAND OUTPUT ARGC
#
# SHARDS a positive decimal integer without leading zeros (bash's
# arithmetic reads 010 as octal 8 and refuses 08, tpsim reads both as
# decimal: the two would disagree on the count), COMMAND `search` or `sweep`, OUTPUT given and
# ending in .csv or .json, at least one operand (ARGC, the scenario or
# sweep file); sets `format` (csv or json) from OUTPUT's extension. On a
# bad value it calls the caller's `usage` (exit 2), or says why and exits 2.
check_shard_options() {
    [ -n "$3" ] && [ "$4" -ge 1 ] || usage
    case $1 in
        '' | *[!0-9]* | 0*) usage ;;
    esac
    case $2 in
        search | sweep) ;;
        *) usage ;;
    esac
    case $3 in
        *.json) format=json ;;
        *.csv) format=csv ;;
        *)
            echo "$0: $3: the output must end in .csv or .json" >&2
            exit 2
            ;;
    esac
}
