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
#   gateway                  the real gateway of the live tests and
#                            hack/cluster.sh: Traefik v3.7.13's Kubernetes
#                            Gateway API provider and server, run as a
#                            library by hack/tools/traefik/gateway
#   prometheus               Prometheus (v0.316.0 of its module), without
#                            service discovery (-tags remove_all_sd): the
#                            live tests scrape the gateway's metrics with it
#   go-templating            function-go-templating v0.4.1 (the only version
#                            the module proxy serves): the release example's
#                            second function, which composes each revision's
#                            Deployment (example/release, test/, test/live)
#   all                      every tool above, with the time each build took
#
# The binaries are cached in XP_CACHE (default bin/), so CI and the tests
# build each once. The end-to-end and the live tests run in parallel under
# `go test ./...` and both ask for tools: a lock per tool in the cache makes
# the second caller wait for the first build instead of starting another.
set -euo pipefail
cd "$(dirname "$0")/.."

tools="crossplane crossplane-core egctl kube-apiserver kube-controller-manager etcd gateway prometheus go-templating"

usage() {
  echo "usage: $0 ${tools// /|}|all" >&2
  exit 2
}

# modversion prints the version of a module that a tools module requires.
modversion() {
  (cd "hack/tools/$1" && go list -m -f '{{.Version}}' "$2")
}

# describe sets module, pkg, ldflags, tags and takes (the cold build time on
# the 2-core development machine, see docs/testing.md) for a tool.
describe() {
  ldflags="" tags=""
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
    gateway)
      # Stripped (a 148 MB binary), and stamped with Traefik's version,
      # which it logs. Its replace directives name folders that prepare
      # makes: the version comes from go.mod, not go list.
      module=traefik pkg=./gateway takes="about 10 minutes, 2 GB of module cache and 2.5 GB of build cache"
      ldflags="-s -w -X github.com/traefik/traefik/v3/pkg/version.Version=$(required hack/tools/traefik/go.mod github.com/traefik/traefik/v3)" ;;
    prometheus)
      # A static scrape configuration needs no service discovery: without
      # its cloud SDKs the build takes a quarter of the time. Prometheus
      # 3.X.Y is the module's v0.3XX.Y: stamped as Prometheus names itself.
      module=prometheus pkg=github.com/prometheus/prometheus/cmd/prometheus tags=remove_all_sd takes="about 3 minutes"
      local pv
      pv=$(modversion prometheus github.com/prometheus/prometheus)
      pv=${pv#v0.3}
      ldflags="-s -w -X github.com/prometheus/common/version.Version=3.$((10#${pv%%.*})).${pv#*.}" ;;
    go-templating)
      module=go-templating pkg=github.com/crossplane-contrib/function-go-templating takes="about 2 minutes" ;;
    *) usage ;;
  esac
}

# download prints the folder of a module version in the module cache,
# downloading it first if needed (outside any module: a tools module whose
# replace directives name folders still missing cannot load).
download() {
  local tmp
  tmp=$(mktemp -d)
  (cd "${tmp}" && GOWORK=off GOFLAGS=-mod=mod go mod download -json "$1@$2") |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p'
  rmdir "${tmp}"
}

# required prints the version of a module that a go.mod requires.
required() {
  awk -v m="$2" '$1 == m { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' "$1"
}

# dropproviders removes lego DNS providers from its generated registry
# (providers/dns/zz_gen_dns_providers.go): their imports, and each case
# whose next line returns one of them.
dropproviders() {
  local file=$1
  shift
  awk -v drop="$*" '
    BEGIN { n = split(drop, d, " "); for (i = 1; i <= n; i++) gone[d[i]] = 1 }
    {
      line = $0
      if (match(line, /"github.com\/go-acme\/lego\/v5\/providers\/dns\/[a-z0-9]+"/)) {
        p = substr(line, RSTART, RLENGTH); sub(/.*\//, "", p); sub(/"$/, "", p)
        if (p in gone) next
      }
      if (held != "") {
        q = line; sub(/^[ \t]*return /, "", q); sub(/\..*/, "", q)
        if (line ~ /^[ \t]*return / && (q in gone)) { held = ""; next }
        print held; held = ""
      }
      if (line ~ /^[ \t]*case .*:[ \t]*$/) { held = line; next }
      print line
    }
    END { if (held != "") print held }' "${file}" >"${file}.new"
  mv "${file}.new" "${file}"
  for p in "$@"; do
    if grep -q "providers/dns/${p}\"" "${file}"; then
      echo "cannot drop the lego provider ${p} from ${file}" >&2
      exit 1
    fi
  done
}

# prepare makes the folders that a tools module's replace directives name,
# copies of modules the proxy does not serve as Traefik needs them (see
# hack/tools/traefik/go.mod), made from the module cache at build time and
# never committed.
prepare() {
  case "$1" in
    traefik)
      local dir=hack/tools/traefik/.build src
      rm -rf "${dir}"
      mkdir -p "${dir}"
      # lego without the two DNS providers whose SDKs the proxy refuses at
      # every version: nothing here asks for a certificate.
      src=$(download github.com/go-acme/lego/v5 "$(required hack/tools/traefik/go.mod github.com/go-acme/lego/v5)")
      cp -R "${src}" "${dir}/lego"
      chmod -R u+w "${dir}/lego"
      rm -rf "${dir}/lego/providers/dns/oraclecloud" "${dir}/lego/providers/dns/edgedns"
      dropproviders "${dir}/lego/providers/dns/zz_gen_dns_providers.go" oraclecloud edgedns
      # go-http-auth v0.4.0 (it has no go.mod) with the go.mod and the two
      # functions of Traefik's fork, from overlay/go-http-auth.
      src=$(download github.com/abbot/go-http-auth v0.4.0)
      cp -R "${src}" "${dir}/go-http-auth"
      chmod -R u+w "${dir}/go-http-auth"
      cp hack/tools/traefik/overlay/go-http-auth/* "${dir}/go-http-auth/" ;;
  esac
}

# build prints the path of a tool, building it first unless it is cached.
build() {
  local tool=$1 bin="${cache}/$1" lock modlock="" start
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
    # The folders that prepare makes are the worktree's, whatever the
    # cache: one build of such a module at a time.
    if [ "${module}" = traefik ]; then
      exec {modlock}>"hack/tools/${module}/.build.lock"
      flock "${modlock}"
      prepare "${module}"
    fi
    (cd "hack/tools/${module}" && go build -tags "${tags}" -ldflags "${ldflags}" -o "${tmp}" "${pkg}")
    if [ -n "${modlock}" ]; then
      flock -u "${modlock}"
      exec {modlock}>&-
    fi
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
