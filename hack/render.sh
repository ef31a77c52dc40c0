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
#
# An example whose functions.yaml lists a second function (example/release:
# function-go-templating, built once by hack/tool.sh go-templating) gets it
# started beside this one, each on a port of its own. crossplane render's -a
# sets an annotation on every Function alike, so each Function's
# render.crossplane.io/runtime-development-target is written into a copy of
# functions.yaml instead.
set -euo pipefail
cd "$(dirname "$0")/.."

NOW=${NOW:-2026-12-02T10:07:00Z}
CROSSPLANE=${CROSSPLANE:-$(hack/tool.sh crossplane)}

dirs=("$@")
if [ ${#dirs[@]} -eq 0 ]; then
  for d in example/*/; do [ -f "${d}xr.yaml" ] && dirs+=("${d%/}"); done
fi

# functions prints the names of the Functions of a functions.yaml.
functions() {
  awk '/^---/ { meta = 0 } /^metadata:/ { meta = 1; next } meta && /^  name:/ { print $2; meta = 0 } /^[^ ]/ { meta = 0 }' "$1"
}

mkdir -p bin
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "${p}" 2>/dev/null || true; done
  rm -rf "${tmp}"
}
trap cleanup EXIT

# freeport prints a free port on loopback, so renders never collide with
# another function.
freeport() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null || echo "$1"
}

# start runs a function with --insecure on a free port and records its
# address as the target of the Function of that name.
declare -A targets
start() {
  local name=$1 port
  port=$(freeport "$2")
  shift 2
  "$@" --insecure --address="127.0.0.1:${port}" >/dev/null 2>&1 &
  pids+=($!)
  for _ in $(seq 50); do
    (echo >"/dev/tcp/127.0.0.1/${port}") 2>/dev/null && break
    sleep 0.1
  done
  targets[${name}]="127.0.0.1:${port}"
}

go build -o bin/function .
start function-canary-route 19443 bin/function --metrics-address= --now="${NOW}"
needed=$(for d in "${dirs[@]}"; do functions "${d}/functions.yaml"; done | sort -u)
if grep -qx function-go-templating <<<"${needed}"; then
  start function-go-templating 19444 "$(hack/tool.sh go-templating)"
fi

for d in "${dirs[@]}"; do
  # Each Function of the example connects to the function of its name.
  fns="${tmp}/$(basename "${d}")-functions.yaml"
  : >"${fns}"
  for name in $(functions "${d}/functions.yaml"); do
    if [ -z "${targets[${name}]:-}" ]; then
      echo "${d}/functions.yaml: no function ${name} runs here" >&2
      exit 1
    fi
  done
  awk -v map="$(for n in "${!targets[@]}"; do printf '%s=%s ' "${n}" "${targets[${n}]}"; done)" '
    BEGIN { n = split(map, kv, " "); for (i = 1; i <= n; i++) { split(kv[i], p, "="); target[p[1]] = p[2] } }
    /^---/ { meta = 0 }
    /^metadata:/ { meta = 1 }
    /^[^ ]/ && !/^metadata:/ { meta = 0 }
    meta && /^  name:/ { name = $2 }
    { print }
    /^    render\.crossplane\.io\/runtime: Development/ {
      print "    render.crossplane.io/runtime-development-target: " target[name]
    }' "${d}/functions.yaml" >"${fns}"
  args=("${d}/xr.yaml" "${d}/composition.yaml" "${fns}" --include-function-results)
  # With a second step, the pipeline context is what passes between them:
  # the output shows it (a document of kind Context).
  [ "$(functions "${d}/functions.yaml" | wc -l)" -gt 1 ] && args+=(--include-context)
  [ -e "${d}/observed.yaml" ] && args+=(--observed-resources "${d}/observed.yaml")
  [ -e "${d}/credentials.yaml" ] && args+=(--function-credentials "${d}/credentials.yaml")
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
