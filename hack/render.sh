#!/usr/bin/env bash
# Renders the examples with the real crossplane CLI: builds the CLI (once)
# and the function, starts the function locally, and runs `crossplane render`
# on every example folder, or on the folders named as arguments.
#
#   hack/render.sh                    # every example
#   hack/render.sh example/flagger    # one
#
# Rollouts are evaluated at a fixed instant (NOW), so the output matches the
# reviewed golden files in each folder (rendered.yaml); set NOW to another
# RFC 3339 time to preview a rollout then.
set -euo pipefail
cd "$(dirname "$0")/.."

NOW=${NOW:-2026-12-02T10:07:00Z}
CROSSPLANE=${CROSSPLANE:-$(hack/tool.sh crossplane)}

mkdir -p bin
go build -o bin/function .

# A free port on loopback, so renders never collide with another function.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null || echo 19443)
bin/function --insecure --address="127.0.0.1:${port}" --metrics-address= --now="${NOW}" >/dev/null 2>&1 &
fn=$!
trap 'kill "${fn}" 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  (echo >"/dev/tcp/127.0.0.1/${port}") 2>/dev/null && break
  sleep 0.1
done

dirs=("$@")
if [ ${#dirs[@]} -eq 0 ]; then
  for d in example/*/; do [ -f "${d}xr.yaml" ] && dirs+=("${d%/}"); done
fi

for d in "${dirs[@]}"; do
  args=("${d}/xr.yaml" "${d}/composition.yaml" "${d}/functions.yaml"
    -a "render.crossplane.io/runtime-development-target=127.0.0.1:${port}"
    --include-function-results)
  [ -e "${d}/observed.yaml" ] && args+=(--observed-resources "${d}/observed.yaml")
  [ -e "${d}/required.yaml" ] && args+=(--required-resources "${d}/required.yaml")
  # The CRD schemas a cluster would hand over (required schemas).
  [ -d "${d}/schemas" ] && args+=(--required-schemas "${d}/schemas")
  # The XRD applies its defaults to the XR, as the API server would.
  if grep -q '^kind: XCanaryRoute' "${d}/xr.yaml"; then
    args+=(--xrd example/definitions/canaryroute-cluster.yaml)
  else
    args+=(--xrd example/definitions/canaryroute-namespaced.yaml)
  fi
  echo "# ${d}"
  "${CROSSPLANE}" render "${args[@]}"
done
