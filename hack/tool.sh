#!/usr/bin/env bash
# Prints the path of a pinned tool, building it first if needed, from its
# module in hack/tools/<tool>:
#
#   crossplane  the crossplane CLI, v2.2.0 (the last release with cmd/crank):
#               crossplane render and crossplane beta validate
#   egctl       Envoy Gateway's egctl, v1.9.1: its offline translator
#               (egctl x translate) checks the composed objects in
#               test/envoy_test.go
#
# The binaries are cached in XP_CACHE (default bin/), so CI and the tests
# build each once.
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-}" in
  crossplane) pkg=github.com/crossplane/crossplane/v2/cmd/crank; takes="a few minutes" ;;
  egctl) pkg=github.com/envoyproxy/gateway/cmd/egctl; takes="10 to 15 minutes" ;;
  *) echo "usage: $0 crossplane|egctl" >&2; exit 2 ;;
esac

cache=${XP_CACHE:-$PWD/bin}
bin="${cache}/$1"
if [ ! -x "${bin}" ]; then
  mkdir -p "${cache}"
  echo "building $1 into ${bin} (${takes}, once)" >&2
  # Build into a temporary file first, so that an interrupted build never
  # leaves a binary that looks complete.
  (cd "hack/tools/$1" && go build -o "${bin}.tmp" "${pkg}")
  mv "${bin}.tmp" "${bin}"
fi
echo "${bin}"
