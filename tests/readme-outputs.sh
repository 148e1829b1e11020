#!/bin/sh
# The README's example commands write into a scratch folder (build/), not
# into the checkout (issue 23, 9): every file an option names as an output
# (--output/-o, --plot, --timeline, --timeline-step, --trace, --emit-ub-cfg)
# is under build/, under models/ (a fitted model, found there by NAME), a
# placeholder in capitals (FILE, OUTPUT) or standard output (-).
#
# Prints README:LINE: for each output elsewhere and exits 1.
# Usage: sh tests/readme-outputs.sh README.md
set -eu
readme=${1:?usage: readme-outputs.sh README.md}
exec awk '
{
    line = $0
    # An option quoted alone is prose ("`--timeline` draws"), not a command.
    gsub(/`-[-a-z]+`/, "", line)
    gsub(/`/, " ", line)
    n = split(line, w, /[ \t]+/)
    for (i = 1; i < n; i++) {
        if (w[i] !~ /^(-o|--output|--plot|--timeline|--timeline-step|--trace|--emit-ub-cfg)$/)
            continue
        path = w[i + 1]
        if (path ~ /^(build|models)\// || path ~ /^[A-Z][A-Z_.]*$/ || path == "-" || path == "")
            continue
        # An option named in prose ("--output, --resume"), not a command.
        if (path ~ /^-/ || path ~ /[,)]$/)
            continue
        printf "%s:%d: %s %s writes into the checkout; use build/\n", FILENAME, NR, w[i], path
        bad = 1
    }
}
END { exit bad }
' "$readme"
