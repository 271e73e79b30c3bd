#!/usr/bin/env bash
# Installs the build tree into a temporary prefix, then configures, builds and runs a program
# that uses find_package(Kindle) from that prefix.
set -euo pipefail
build_dir=$1
src=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build_dir" --prefix "$tmp/prefix" >/dev/null
cmake -S "$src" -B "$tmp/build" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/build" >/dev/null
"$tmp/build/consumer"
"$tmp/build/consumer_torch"
echo "find_package(Kindle) from an install prefix: ok"
