#!/usr/bin/env bash
# Prints the path of Envoy Gateway's egctl, building it first if needed:
# v1.9.1 from the pinned module in hack/tools/egctl. Its offline translator
# (egctl x translate) checks the composed objects against a real gateway in
# test/envoy_test.go. The binary is cached in XP_CACHE (default bin/), so CI
# and the tests build it once.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=${XP_CACHE:-$PWD/bin}
bin="${cache}/egctl"
if [ ! -x "${bin}" ]; then
  mkdir -p "${cache}"
  echo "building egctl into ${bin} (about ten minutes, once)" >&2
  # Build into a temporary file first, so that an interrupted build never
  # leaves a binary that looks complete.
  (cd hack/tools/egctl && go build -o "${bin}.tmp" github.com/envoyproxy/gateway/cmd/egctl)
  mv "${bin}.tmp" "${bin}"
fi
echo "${bin}"
