#!/bin/sh
# Install the Debian 12 packages tpsim needs to build and test, only those
# that are missing (munge, slurm-wlm and parallel are for the scale-out
# tests, tests/scaleout, which start their own daemons and stop them). Run
# as root (or with sudo available). `deps.sh format` adds clang-format,
# which only `make format` needs; `deps.sh fuzz` adds clang and its
# libFuzzer runtime, which only `make fuzz` needs.
set -eu

PKGS="build-essential make meson ninja-build pkg-config libglib2.0-dev libyaml-dev \
libjson-glib-dev check valgrind libcairo2-dev libpango1.0-dev libpng-dev fonts-dejavu-core \
munge slurm-wlm parallel"
if [ "${1:-}" = format ]; then
    PKGS="$PKGS clang-format"
fi
if [ "${1:-}" = fuzz ]; then
    PKGS="$PKGS clang libclang-rt-dev"
fi

missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
    exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
echo "installing:$missing"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
