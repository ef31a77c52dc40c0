#!/usr/bin/env bash
# Prints the path of a pinned tool, building it first if needed, from its
# module in hack/tools/:
#
#   crossplane               the crossplane CLI (cmd/crank), v2.2.0, the last
#                            release with it: crossplane render and crossplane
#                            beta validate (test/)
#   crossplane-core          Crossplane itself (cmd/crossplane), v2.2.0, from
#                            the same module: crossplane core init/start, run
#                            out of cluster by the live tests (test/live)
#   egctl                    Envoy Gateway's egctl, v1.9.1: its offline
#                            translator checks the composed objects
#                            (test/envoy_test.go)
#   kube-apiserver           from k8s.io/kubernetes (hack/tools/kubernetes)
#   kube-controller-manager  from the same module, for the garbage collector
#                            and namespace controllers (test/live)
#   etcd                     etcd's server at the version k8s.io/kubernetes
#                            requires (hack/tools/kubernetes/etcd)
#   all                      every tool above, with the time each build took
#
# The binaries are cached in XP_CACHE (default bin/), so CI and the tests
# build each once. The end-to-end and the live tests run in parallel under
# `go test ./...` and both ask for tools: a lock per tool in the cache makes
# the second caller wait for the first build instead of starting another.
set -euo pipefail
cd "$(dirname "$0")/.."

tools="crossplane crossplane-core egctl kube-apiserver kube-controller-manager etcd"

usage() {
  echo "usage: $0 ${tools// /|}|all" >&2
  exit 2
}

# modversion prints the version of a module that a tools module requires.
modversion() {
  (cd "hack/tools/$1" && go list -m -f '{{.Version}}' "$2")
}

# describe sets module, pkg, ldflags and takes (the cold build time on the
# 2-core development machine, see docs/testing.md) for a tool.
describe() {
  ldflags=""
  case "$1" in
    crossplane)
      module=crossplane pkg=github.com/crossplane/crossplane/v2/cmd/crank takes="about 6 minutes" ;;
    crossplane-core)
      module=crossplane pkg=github.com/crossplane/crossplane/v2/cmd/crossplane takes="about 6 minutes"
      # The package manager checks a package's spec.crossplane.version
      # constraint against this version: unstamped, Crossplane has none and
      # refuses every package that names one.
      ldflags="-X github.com/crossplane/crossplane/v2/internal/version.version=$(modversion crossplane github.com/crossplane/crossplane/v2)" ;;
    egctl)
      module=egctl pkg=github.com/envoyproxy/gateway/cmd/egctl takes="10 to 15 minutes" ;;
    kube-apiserver | kube-controller-manager)
      module=kubernetes pkg="k8s.io/kubernetes/cmd/$1" takes="about 8 minutes"
      # Stamped like a release build, so clients see the real version.
      local v minor
      v=$(modversion kubernetes k8s.io/kubernetes)
      minor=${v#v*.}
      minor=${minor%%.*}
      for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        ldflags+=" -X ${p}.gitVersion=${v} -X ${p}.gitMajor=1 -X ${p}.gitMinor=${minor} -X ${p}.gitTreeState=clean"
      done ;;
    etcd)
      module=kubernetes pkg=./etcd takes="about 2 minutes" ;;
    *) usage ;;
  esac
}

# build prints the path of a tool, building it first unless it is cached.
build() {
  local tool=$1 bin="${cache}/$1" lock start
  case " ${tools} " in *" ${tool} "*) ;; *) usage ;; esac
  if [ -x "${bin}" ]; then
    echo "${bin}"
    return
  fi
  mkdir -p "${cache}"
  # One build per tool at a time: another caller waits here, then finds
  # the binary.
  exec {lock}>"${cache}/.${tool}.lock"
  flock "${lock}"
  if [ ! -x "${bin}" ]; then
    describe "${tool}"
    echo "building ${tool} into ${bin} (${takes}, once)" >&2
    start=${SECONDS}
    # Build into a temporary file first, so that an interrupted build never
    # leaves a binary that looks complete.
    tmp="${bin}.tmp.$$"
    trap 'rm -f "${tmp}"' EXIT
    (cd "hack/tools/${module}" && go build -ldflags "${ldflags}" -o "${tmp}" "${pkg}")
    mv "${tmp}" "${bin}"
    trap - EXIT
    built="${built}${tool} $((SECONDS - start))s"$'\n'
    echo "built ${tool} in $((SECONDS - start))s" >&2
  fi
  flock -u "${lock}"
  exec {lock}>&-
  echo "${bin}"
}

cache=${XP_CACHE:-$PWD/bin}
built=""
case "${1:-}" in
  all)
    for t in ${tools}; do build "${t}"; done
    if [ -n "${built}" ]; then
      printf 'build times:\n%s' "${built}" >&2
    fi ;;
  "") usage ;;
  *) build "$1" ;;
esac
