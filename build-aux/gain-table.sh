#!/bin/sh
# The gain of every preset over the reference on every shipped scenario,
# written into the generated block of docs/overlap-gains.md.
#
#   sh build-aux/gain-table.sh [TPSIM [DOC [SCENARIO_DIR]]]
#
# For each scenario of SCENARIO_DIR (default scenarios/), `tpsim run -f csv`
# with the scenario's own strategy set (its `strategies:` list, or every
# preset that applies). The reference is `megatron` (op scenarios:
# `sp-blocking`, as `tpsim run` itself uses there). A cell reads
# "time saved / throughput gain" in percent:
#
#   saved = 100 x (1 - t / t_ref)      gain = 100 x (t_ref / t - 1)
#
# with t the step time (op scenarios: the op's time). The block between the
# two marker lines of DOC is replaced; the rest of the page is kept. The
# page is written to a temporary file beside it and moved into place, so
# an interrupted run leaves the old page whole. Exit 1 when a scenario
# fails to run or the markers are missing.
set -eu

TPSIM=${1:-build/src/cli/tpsim}
DOC=${2:-docs/overlap-gains.md}
DIR=${3:-scenarios}
BEGIN='<!-- gain-table:begin (build-aux/gain-table.sh writes this block) -->'
END='<!-- gain-table:end -->'
# The columns, in the order the presets are described in docs/overlap-methods.md.
PRESETS="te-a100 te-default ring-ag ring-rs pipeline-rs bulk sp-blocking custom"

if [ ! -x "$TPSIM" ]; then
    echo "gain-table.sh: $TPSIM is not an executable (build first: ninja -C build)" >&2
    exit 1
fi
if ! grep -qF "$BEGIN" "$DOC" || ! grep -qF "$END" "$DOC"; then
    echo "gain-table.sh: $DOC: the marker lines of the generated block are missing" >&2
    exit 1
fi

tmpdir=$(mktemp -d)
trap 'rm -rf "$tmpdir"' EXIT INT TERM
table="$tmpdir/table.md"

{
    printf '| scenario | reference |'
    for p in $PRESETS; do printf ' %s |' "$p"; done
    printf '\n|---|---|'
    for p in $PRESETS; do printf -- '---|'; done
    printf '\n'
} >"$table"

for scenario in "$DIR"/*.yaml; do
    csv="$tmpdir/run.csv"
    if ! "$TPSIM" run -f csv "$scenario" >"$csv" 2>"$tmpdir/err"; then
        echo "gain-table.sh: $scenario:" >&2
        cat "$tmpdir/err" >&2
        exit 1
    fi
    awk -F, -v presets="$PRESETS" '
        NR == 1 {
            for (i = 1; i <= NF; i++) col[$i] = i
            tcol = ("step_time_s" in col) ? col["step_time_s"] : col["time_ms"]
            op = !("step_time_s" in col)
            next
        }
        { name = $1; t[$3] = $tcol }
        END {
            ref = op ? "sp-blocking" : "megatron"
            if (!(ref in t)) {
                printf "| %s | none (%s not run) |", name, ref
                n = split(presets, p, " ")
                for (i = 1; i <= n; i++) printf " |"
                printf "\n"
                exit 0
            }
            printf "| %s | %s |", name, ref
            n = split(presets, p, " ")
            for (i = 1; i <= n; i++) {
                if (!(p[i] in t) || p[i] == ref || t[p[i]] <= 0) { printf " |"; continue }
                saved = 100 * (1 - t[p[i]] / t[ref])
                gain = 100 * (t[ref] / t[p[i]] - 1)
                printf " %+.1f / %+.1f |", saved, gain
            }
            printf "\n"
        }' "$csv" >>"$table"
done

out="$DOC.tmp.$$"
trap 'rm -rf "$tmpdir" "$out"' EXIT INT TERM
awk -v begin="$BEGIN" -v end="$END" -v table="$table" '
    $0 == begin {
        print
        print ""
        while ((getline line < table) > 0) print line
        print ""
        skip = 1
        next
    }
    $0 == end { skip = 0 }
    !skip { print }
' "$DOC" >"$out"
mv "$out" "$DOC"
