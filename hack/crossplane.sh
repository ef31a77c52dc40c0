#!/usr/bin/env bash
# Prints the path of the crossplane CLI, building it first if needed: v2.2.0
# (the last release with cmd/crank) from the pinned module in
# hack/tools/crossplane. The binary is cached in XP_CACHE (default bin/), so
# CI and the tests build it once.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${XP_CACHE:-$PWD/bin}
bin="${cache}/crossplane"
if [ ! -x "${bin}" ]; then
  mkdir -p "${cache}"
  echo "building the crossplane CLI into ${bin} (a few minutes, once)" >&2
  (cd hack/tools/crossplane && go build -o "${bin}" github.com/crossplane/crossplane/v2/cmd/crank)
fi
echo "${bin}"
