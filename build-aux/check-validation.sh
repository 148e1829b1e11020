#!/bin/sh
# CI: fail when a dataset's p90 |error| has grown by more than one point
# over the figure recorded in the repository (docs/validation.json, written
# by `make validate`), or when a recorded dataset is gone.
#
#   sh build-aux/check-validation.sh TPSIM [BASELINE.json]
#
# Both JSON files are `tpsim validate --format json`: one dataset per line,
# so awk reads them without a JSON parser. A dataset new since the baseline
# is reported and passes (record it with `make validate`).
set -eu
tpsim=$1
baseline=${2:-docs/validation.json}
tolerance=1.0

current=$(mktemp)
trap 'rm -f "$current"' EXIT
"$tpsim" validate --format json > "$current"

awk -v tol="$tolerance" '
    # name and p90 of a dataset line; p90 is null for a set without points
    function parse(line,    name, p90) {
        if (!match(line, /"name": "[^"]*"/))
            return 0
        name = substr(line, RSTART + 9, RLENGTH - 10)
        p90 = "null"
        if (match(line, /"p90_abs_pct": [-0-9.e+]+/))
            p90 = substr(line, RSTART + 15, RLENGTH - 15)
        PARSED_NAME = name
        PARSED_P90 = p90
        return 1
    }
    FNR == NR { if (parse($0)) { base[PARSED_NAME] = PARSED_P90; order[++n] = PARSED_NAME }; next }
    { if (parse($0)) cur[PARSED_NAME] = PARSED_P90 }
    END {
        bad = 0
        for (i = 1; i <= n; i++) {
            name = order[i]
            if (!(name in cur)) {
                printf "validation: %s is in the baseline but no longer validated\n", name
                bad = 1
                continue
            }
            if (base[name] == "null" || cur[name] == "null")
                continue
            if (cur[name] + 0 > base[name] + tol) {
                printf "validation: %s: p90 |error| %.2f%% > %.2f%% recorded + %.1f\n", name, cur[name], base[name], tol
                bad = 1
            }
        }
        for (name in cur)
            if (!(name in base))
                printf "validation: %s is new (p90 %s%%): record it with make validate\n", name, cur[name]
        if (!bad)
            printf "validation: %d datasets within %.1f point of the recorded p90\n", n, tol
        exit bad
    }
' "$baseline" "$current"
