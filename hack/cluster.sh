#!/usr/bin/env bash
# A local control plane to try the function live, without a cluster, Docker
# or downloads of prebuilt binaries: the one the live tests use
# (test/live/controlplane), in the background.
#
#   hack/cluster.sh up      build what is missing, start, print the KUBECONFIG,
#                           GATEWAY_URL and PATH lines (PATH: the kubectl
#                           plugin, built into <dir>/bin), and how to use the
#                           plugin
#   hack/cluster.sh down    stop everything and remove its files
#   hack/cluster.sh status  say whether it runs, and where its logs are
#
# Everything listens on loopback (Crossplane's metrics and health probes on
# fresh ports of every interface: its flags take a port, not an address):
# the real gateway (Traefik) on a fresh port that <dir>/gateway names, and a
# demo backend on every Service's clusterIP (the Service range is
# 127.77.0.0/16) that answers with the Service's name.
# Files, logs included, are under CLUSTER_DIR (default .cache/cluster). The
# tools are built once into XP_CACHE (default bin/) by hack/tool.sh: the
# first `up` on a new machine takes 30 minutes or more on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${CLUSTER_DIR:-$PWD/.cache/cluster}
mkdir -p "$(dirname "${dir}")"
dir=$(cd "$(dirname "${dir}")" && pwd)/$(basename "${dir}")

running() {
  [ -f "${dir}/pid" ] && kill -0 "$(cat "${dir}/pid")" 2>/dev/null
}

# exports prints the lines to eval: the kubeconfig, the gateway's listener,
# and the plugin on the PATH.
exports() {
  echo "export KUBECONFIG=${dir}/kubeconfig"
  echo "export GATEWAY_URL=http://$(cat "${dir}/gateway")"
  echo "export PATH=${dir}/bin:\$PATH"
}

# plugin_usage says how to steer the demo's rollout with the plugin.
plugin_usage() {
  cat >&2 <<EOF
kubectl canaryroute (the plugin, ${dir}/bin/kubectl-canaryroute; see
docs/kubectl-plugin.md; without kubectl, run kubectl-canaryroute itself), on
the demo (kubectl apply -f hack/cluster/demo.yaml):
  kubectl canaryroute get web -n demo --watch      # the rollout, redrawn on change
  kubectl canaryroute list -A                      # every CanaryRoute
  kubectl canaryroute promote web -n demo          # to the last step now
  kubectl canaryroute abort web -n demo            # every request to the primary
  kubectl canaryroute retry web -n demo            # the aborted revision again, from step 0
  kubectl canaryroute set-revision web v3 -n demo  # restart as v3 (no spec.release: the sides stay)
  kubectl canaryroute approve web -n demo          # let a step with approval: true move on
rollback, and a set-revision that deploys, need spec.release: see
docs/kubectl-plugin.md ("To try it") for example/release on this cluster.
EOF
}

case "${1:-}" in
  up)
    if running; then
      echo "already running (hack/cluster.sh down stops it)" >&2
      exports
      plugin_usage
      exit 0
    fi
    rm -rf "${dir}"
    mkdir -p "${dir}"
    export ETCD KUBE_APISERVER KUBE_CONTROLLER_MANAGER CROSSPLANE_CORE GATEWAY
    ETCD=${ETCD:-$(hack/tool.sh etcd)}
    KUBE_APISERVER=${KUBE_APISERVER:-$(hack/tool.sh kube-apiserver)}
    KUBE_CONTROLLER_MANAGER=${KUBE_CONTROLLER_MANAGER:-$(hack/tool.sh kube-controller-manager)}
    CROSSPLANE_CORE=${CROSSPLANE_CORE:-$(hack/tool.sh crossplane-core)}
    GATEWAY=${GATEWAY:-$(hack/tool.sh gateway)}

    echo "building the function's package (hack/release.sh, linux/amd64)" >&2
    version=v0.0.0-live
    if ! OUTPUT="${dir}/release" ARCHS=amd64 PLUGIN_PLATFORMS=none hack/release.sh "${version}" >"${dir}/release.log" 2>&1; then
      cat "${dir}/release.log" >&2
      exit 1
    fi
    xpkg=$(find "${dir}/release" -name "function-canary-route-${version}-linux-amd64.xpkg" | head -n 1)
    go build -o "${dir}/cluster" ./hack/cluster
    echo "building the kubectl plugin into ${dir}/bin" >&2
    go build -ldflags="-X main.version=${version}" -o "${dir}/bin/kubectl-canaryroute" ./cmd/kubectl-canaryroute

    echo "starting (log: ${dir}/cluster.log)" >&2
    setsid nohup "${dir}/cluster" -dir "${dir}" -package "${xpkg}" >"${dir}/cluster.log" 2>&1 </dev/null &
    echo $! >"${dir}/pid"
    for _ in $(seq 600); do
      if [ -f "${dir}/ready" ]; then
        echo "ready; logs of every process are in ${dir}/controlplane/logs" >&2
        exports
        plugin_usage
        exit 0
      fi
      if ! running; then
        cat "${dir}/cluster.log" >&2
        echo "the control plane did not start" >&2
        exit 1
      fi
      sleep 0.5
    done
    echo "the control plane was not ready within 5 minutes (log: ${dir}/cluster.log)" >&2
    exit 1
    ;;
  down)
    if running; then
      pid=$(cat "${dir}/pid")
      kill -TERM "${pid}"
      for _ in $(seq 120); do
        kill -0 "${pid}" 2>/dev/null || break
        sleep 0.5
      done
      if kill -0 "${pid}" 2>/dev/null; then
        kill -KILL "${pid}"
      fi
    fi
    rm -rf "${dir}"
    echo "stopped; removed ${dir}" >&2
    ;;
  status)
    if running; then
      echo "running: export KUBECONFIG=${dir}/kubeconfig GATEWAY_URL=http://$(cat "${dir}/gateway") PATH=${dir}/bin:\$PATH; logs in ${dir}/controlplane/logs"
    else
      echo "not running"
      exit 1
    fi
    ;;
  *)
    echo "usage: $0 up|down|status" >&2
    exit 2
    ;;
esac
