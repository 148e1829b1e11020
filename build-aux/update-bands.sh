#!/bin/sh
# Write the error bands that `tpsim validate` computes into the hardware
# models' `uncertainty:` sections (docs/validation.md, "Error bands"), so
# that `make validate-check` agrees with them after a change of the cost
# models:
#   - a100-sxm4-80gb, a100-sxm4-40gb and vidur-a100-dgx take the validated
#     figures (the last two share the 80 GB model's cost parameters);
#   - h100-sxm takes its own validated figures (`tpsim validate --model
#     h100-sxm`: vidur's H100 profiles; its classes without an H100 dataset
#     take the envelope of its measured ones);
#   - h20, h200-sxm, b200 and gb200-nvl72, without measurements, take the widest of the A100 figures: the
#     lowest p10 and the highest p90 over every class.
# Only the numbers change; the comments beside them stay.
#
#   sh build-aux/update-bands.sh TPSIM
set -eu
tpsim=$1
bands=$(mktemp)
h100=$(mktemp)
trap 'rm -f "$bands" "$bands.yaml" "$h100"' EXIT
# the error bands of `tpsim validate ARGS...` into file $1
bands_of() {
    out=$1
    shift
    "$tpsim" validate --format json "$@" | awk '
    /"class": / {
        match($0, /"class": "[^"]*"/); c = substr($0, RSTART + 10, RLENGTH - 11)
        match($0, /"p10_pct": [-0-9.e+]+/); lo = substr($0, RSTART + 11, RLENGTH - 11)
        match($0, /"p90_pct": [-0-9.e+]+/); hi = substr($0, RSTART + 11, RLENGTH - 11)
        printf "%s %.1f %.1f\n", c, lo, hi
    }' > "$out"
    [ -s "$out" ] || { echo "update-bands: tpsim validate $* gave no error bands" >&2; exit 1; }
}
bands_of "$bands"

# rewrite one model: mode "own" (the figures) or "widest", of band file $3
rewrite() {
    awk -v mode="$2" -v bandfile="$3" '
        BEGIN {
            minlo = 1e9; maxhi = -1e9
            while ((getline line < bandfile) > 0) {
                split(line, f, " ")
                lo[f[1]] = f[2]; hi[f[1]] = f[3]
                if (f[2] + 0 < minlo) minlo = f[2] + 0
                if (f[3] + 0 > maxhi) maxhi = f[3] + 0
            }
        }
        /^[^ #]/ { section = $1 }
        section == "uncertainty:" && /^  p10_pct:/ { q = "lo" }
        section == "uncertainty:" && /^  p90_pct:/ { q = "hi" }
        section == "uncertainty:" && q != "" && match($0, /^    [a-z_]+: *-?[0-9.]+/) {
            split(substr($0, 5), kv, ":")
            k = kv[1]
            if (mode == "widest")
                v = (q == "lo") ? sprintf("%.1f", minlo) : sprintf("%.1f", maxhi)
            else
                v = (q == "lo") ? lo[k] : hi[k]
            if (v != "") {
                rest = substr($0, RLENGTH + 1)
                old = substr($0, 1, RLENGTH)
                sub(/-?[0-9.]+$/, v, old)
                $0 = old rest
            }
        }
        { print }' "$1" > "$bands.yaml"
    cat "$bands.yaml" > "$1"
}
for m in a100-sxm4-80gb a100-sxm4-40gb vidur-a100-dgx; do
    rewrite "models/$m.yaml" own "$bands"
done
bands_of "$h100" --model h100-sxm
rewrite models/h100-sxm.yaml own "$h100"
for m in h20 h200-sxm b200 gb200-nvl72; do
    rewrite "models/$m.yaml" widest "$bands"
done
