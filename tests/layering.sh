#!/bin/sh
# The layering of src/ (docs/style.md, "Shape of the code"), held by a test:
# every `#include "LAYER/..."` under SRC_DIR must name a header of the
# includer's own layer or of a lower one:
#
#   core < engine < cost < sched < io < render < plan < cli
#
# calib includes core, engine and cost only, and only io and above include
# it (sched does not link it). calib/gpu, the tpsim-gpubench driver that
# reads scenarios, counts as cli. Includes without a folder ("version.h",
# generated) are not layered.
#
# Usage errors (TPS_ERROR_USAGE, exit 2) belong to the command line: only
# the cli level names them (core/error.h defines them). A lower layer
# reports an input error, and the command that passed it the option decides.
#
# Prints FILE:LINE: for each line that breaks these rules and exits 1.
# Usage: sh tests/layering.sh SRC_DIR
set -eu

src=${1:?usage: layering.sh SRC_DIR}
src=${src%/}

# Sorted, so that the messages come in a stable order.
files=$(find "$src" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' \) | LC_ALL=C sort)
if [ -z "$files" ]; then
    echo "layering.sh: no sources under $src" >&2
    exit 1
fi

# shellcheck disable=SC2086 # one word per file name: src/ has no spaces
exec awk -v src="$src" '
# The layer of a path relative to src/.
function layer(rel,   parts) {
    if (rel ~ /^calib\/gpu\//)
        return "cli"
    split(rel, parts, "/")
    return parts[1]
}
# Whether layer `from` may include a header of layer `to`.
function allowed(from, to) {
    if (from == to)
        return 1
    if (to == "calib")
        return rank[from] >= rank["io"]
    if (from == "calib")
        return rank[to] <= rank["cost"]
    return rank[to] <= rank[from]
}
BEGIN {
    n = split("core engine cost sched io render plan cli", order, " ")
    for (i = 1; i <= n; i++)
        rank[order[i]] = i
    rank["calib"] = 0 # handled apart in allowed()
    bad = 0
}
FNR == 1 {
    rel = substr(FILENAME, length(src) + 2)
    from = layer(rel)
    if (!(from in rank)) {
        printf "%s:1: %s is in no layer (tests/layering.sh lists them)\n", FILENAME, from
        bad++
    }
}
/^[ \t]*#[ \t]*include[ \t]*"[^"]*\/[^"]*"/ {
    header = $0
    sub(/^[^"]*"/, "", header)
    sub(/".*$/, "", header)
    to = layer(header)
    if (!(to in rank)) {
        printf "%s:%d: includes \"%s\" of no layer\n", FILENAME, FNR, header
        bad++
    } else if ((from in rank) && !allowed(from, to)) {
        printf "%s:%d: %s includes \"%s\" of the higher layer %s\n", FILENAME, FNR, from, header, to
        bad++
    }
}
/TPS_ERROR_USAGE/ && from != "cli" && rel != "core/error.h" {
    printf "%s:%d: %s names TPS_ERROR_USAGE, which only the command line raises\n", FILENAME, FNR, from
    bad++
}
END {
    if (bad) {
        printf "%d line(s) break the layering core < engine < cost < sched < io < render < plan < cli\n", bad
        exit 1
    }
}
' $files
