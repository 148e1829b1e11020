#!/bin/sh
# CI: fail when a dataset's p90 |error| has grown by more than one point
# over the figure recorded in the repository (docs/validation.json, written
# by `make validate`), or when a recorded dataset is gone; and when the
# model's error bands (its `uncertainty:` section) are not the residual
# quantiles the validation gives now (the "uncertainty" lines: rounding to
# the file's one decimal is all that may differ).
#
#   sh build-aux/check-validation.sh TPSIM [BASELINE.json [MODEL]]
#
# MODEL (default: tpsim validate's, a100-sxm4-80gb) is the model validated.
# Both JSON files are `tpsim validate --format json`: one dataset per line,
# so awk reads them without a JSON parser. A dataset new since the baseline
# is reported and passes (record it with `make validate`).
set -eu
tpsim=$1
baseline=${2:-docs/validation.json}
tolerance=1.0

current=$(mktemp)
trap 'rm -f "$current"' EXIT
if [ $# -ge 3 ]; then
    "$tpsim" validate --format json --model "$3" > "$current"
else
    "$tpsim" validate --format json > "$current"
fi

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
    # a number member of a line; "null" when absent
    function member(line, key,    v) {
        if (!match(line, "\"" key "\": [-0-9.e+]+"))
            return "null"
        return substr(line, RSTART + length(key) + 4, RLENGTH - length(key) - 4)
    }
    # an uncertainty line of the current figures: the class quantiles
    # against the values of the model
    function band(line,    klass, model, q, v, m) {
        if (!match(line, /"class": "[^"]*"/))
            return
        klass = substr(line, RSTART + 10, RLENGTH - 11)
        match(line, /"model": "[^"]*"/)
        model = substr(line, RSTART + 10, RLENGTH - 11)
        split("p10_pct p90_pct", qs, " ")
        for (q = 1; q <= 2; q++) {
            v = member(line, qs[q])
            m = member(line, "model_" qs[q])
            if (v == "null" || m == "null")
                continue
            if (v - m > 0.0501 || m - v > 0.0501) {
                printf "validation: models/%s.yaml uncertainty.%s.%s is %s, the residuals give %.1f\n", model, qs[q], klass, m, v
                band_bad = 1
            }
            bands++
        }
    }
    FNR == NR { if (parse($0)) { base[PARSED_NAME] = PARSED_P90; order[++n] = PARSED_NAME }; next }
    { if (parse($0)) cur[PARSED_NAME] = PARSED_P90; else band($0) }
    END {
        bad = band_bad
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
        if (!bad) {
            printf "validation: %d datasets within %.1f point of the recorded p90\n", n, tol
            printf "validation: %d error-band quantiles as in the model\n", bands
        }
        exit bad
    }
' "$baseline" "$current"
