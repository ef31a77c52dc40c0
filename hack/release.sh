#!/usr/bin/env bash
# Builds the function's release artefacts without a Docker engine, per
# architecture (linux only):
#
#   function-canary-route-VERSION-linux-ARCH            the static binary
#   function-canary-route-VERSION-linux-ARCH.image.tar  its runtime image
#   function-canary-route-VERSION-linux-ARCH.xpkg       the Crossplane package,
#                                                       runtime image embedded
#
# and the kubectl plugin (cmd/kubectl-canaryroute), per platform:
#
#   kubectl-canaryroute-VERSION-OS-ARCH.tar.gz          the binary and the
#                                                       LICENSE (.zip for windows)
#   kubectl-canaryroute-VERSION-OS-ARCH.tar.gz.sha256   its sha256, as sha256sum
#                                                       writes it
#   canaryroute.yaml                                    the krew manifest of every
#                                                       archive (krew-index's
#                                                       plugins/canaryroute.yaml)
#
# The binary is built with CGO off and -trimpath, the version stamped into
# main.version. hack/image assembles the image from scratch (one layer with
# the binary, user 65532, port 9443, OCI labels) with every timestamp set to
# the commit's, so one commit always gives one digest; `crossplane xpkg
# build` packs package/ (crossplane.yaml and the Input CRD) onto it. The
# plugin is built the same way, its version stamped into its main.version
# (kubectl canaryroute --version); hack/krew checks that each binary is an
# executable of its platform, packs the archives (every timestamp the
# commit's) and writes the manifest.
#
# Environment:
#   OUTPUT      the folder to write to (default _output/, git-ignored);
#               created if missing. Runs into different folders may run at
#               the same time: everything else they share is Go's build cache.
#   ARCHS       the architectures (default "amd64 arm64"); nothing is built
#               for another.
#   PLUGIN_PLATFORMS  the plugin's platforms, OS/ARCH (default "linux/amd64
#               linux/arm64 darwin/amd64 darwin/arm64 windows/amd64"; windows/arm64
#               too if asked); "none" builds no plugin and no manifest.
#   RELEASE_URL where the plugin's archives are downloaded from, which the
#               manifest's uris start with (default: the GitHub release of
#               VERSION, SOURCE/releases/download/VERSION).
#   CROSSPLANE  the crossplane CLI (default: hack/tool.sh crossplane builds
#               the pinned one, once).
#   SOURCE_DATE_EPOCH  the Unix time of every timestamp in the image
#               (default: the commit's time).
#
# Push both packages as one multi-arch package with
#   crossplane xpkg push -f "$(echo _output/*-VERSION-linux-*.xpkg | tr ' ' ,)" REGISTRY/REPOSITORY:VERSION
set -euo pipefail

default_plugin_platforms="linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64"

usage() {
  cat >&2 <<EOF
usage: $0 VERSION

VERSION is the package's version, a semantic version with a leading v
(v0.1.0, v0.2.0-rc.1): Crossplane wants package tags that way.

Environment: OUTPUT (default _output), ARCHS (default "amd64 arm64"),
PLUGIN_PLATFORMS (default "${default_plugin_platforms}", or none),
RELEASE_URL, CROSSPLANE, SOURCE_DATE_EPOCH. See the head of $0.
EOF
  exit 2
}

[ $# -eq 1 ] || usage
version=$1
# SemVer 2.0 with a leading v and no build metadata: an OCI tag cannot
# carry the '+'.
semver='^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$'
if ! [[ ${version} =~ ${semver} ]]; then
  echo "$0: VERSION ${version} is not a semantic version with a leading v, such as v0.1.0" >&2
  usage
fi

# A relative OUTPUT is relative to where the script was called from.
output=${OUTPUT:-}
if [ -n "${output}" ]; then
  mkdir -p "${output}"
  output=$(cd "${output}" && pwd)
fi
cd "$(dirname "$0")/.."
output=${output:-${PWD}/_output}
mkdir -p "${output}"

archs=${ARCHS:-amd64 arm64}
read -r -a archs <<<"${archs}"
[ ${#archs[@]} -gt 0 ] || { echo "$0: ARCHS names no architecture" >&2; exit 2; }
# The list is read whole first: with pipefail, grep -q closing the pipe early
# would fail the pipeline at random (SIGPIPE in go tool dist list).
platforms=$(go tool dist list)
for arch in "${archs[@]}"; do
  if ! grep -qx "linux/${arch}" <<<"${platforms}"; then
    echo "$0: ARCHS: Go does not build linux/${arch}" >&2
    exit 2
  fi
done

plugin_platforms=${PLUGIN_PLATFORMS:-${default_plugin_platforms}}
read -r -a plugin_platforms <<<"${plugin_platforms}"
[ ${#plugin_platforms[@]} -gt 0 ] || { echo "$0: PLUGIN_PLATFORMS names no platform (none builds no plugin)" >&2; exit 2; }
if [ "${plugin_platforms[*]}" = none ]; then
  plugin_platforms=()
fi
# ${a[@]+"${a[@]}"}: an empty array under set -u, in bash before 4.4 too.
for p in ${plugin_platforms[@]+"${plugin_platforms[@]}"}; do
  # The platforms whose binaries hack/krew checks, and krew installs on.
  case "${p}" in
    linux/amd64 | linux/arm64 | darwin/amd64 | darwin/arm64 | windows/amd64 | windows/arm64) ;;
    *)
      echo "$0: PLUGIN_PLATFORMS: the plugin is not released for ${p} (one of linux, darwin, windows on amd64 or arm64; or none)" >&2
      exit 2
      ;;
  esac
done

CROSSPLANE=${CROSSPLANE:-$(hack/tool.sh crossplane)}
revision=$(git rev-parse HEAD)
created=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
# package/crossplane.yaml's meta.crossplane.io/source, as a URL.
source="https://$(sed -n 's/^ *meta.crossplane.io\/source: *//p' package/crossplane.yaml)"
if [ "${source}" = "https://" ]; then
  echo "$0: package/crossplane.yaml has no meta.crossplane.io/source annotation" >&2
  exit 1
fi
release_url=${RELEASE_URL:-${source}/releases/download/${version}}
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  echo "warning: the work tree has uncommitted changes: the artefacts are labelled ${revision} but are not that commit" >&2
fi

# Work in a private folder inside OUTPUT and move each finished artefact into
# place, so an interrupted run never leaves a file that looks complete, and
# two runs into different folders share nothing.
work=$(mktemp -d "${output}/.release.XXXXXX")
trap 'rm -rf "${work}"' EXIT

go build -o "${work}/image" ./hack/image

for arch in "${archs[@]}"; do
  name="function-canary-route-${version}-linux-${arch}"
  echo "--- ${name}" >&2
  CGO_ENABLED=0 GOOS=linux GOARCH="${arch}" \
    go build -trimpath -ldflags="-s -w -X main.version=${version}" -o "${work}/${name}" .
  digest=$("${work}/image" -binary="${work}/${name}" -arch="${arch}" -version="${version}" \
    -revision="${revision}" -created="${created}" -source="${source}" \
    -output="${work}/${name}.image.tar")
  echo "runtime image ${name}.image.tar: ${digest}" >&2
  "${CROSSPLANE}" xpkg build --package-root=package \
    --embed-runtime-image-tarball="${work}/${name}.image.tar" \
    --package-file="${work}/${name}.xpkg" >&2
  mv -f "${work}/${name}" "${work}/${name}.image.tar" "${work}/${name}.xpkg" "${output}/"
  echo "${output}/${name}.xpkg"
done

[ ${#plugin_platforms[@]} -gt 0 ] || exit 0
go build -o "${work}/krew" ./hack/krew
builds=()
for p in ${plugin_platforms[@]+"${plugin_platforms[@]}"}; do
  os=${p%/*}
  arch=${p#*/}
  bin="${work}/plugin/${os}-${arch}/kubectl-canaryroute"
  [ "${os}" != windows ] || bin="${bin}.exe"
  echo "--- kubectl-canaryroute ${os}/${arch}" >&2
  CGO_ENABLED=0 GOOS="${os}" GOARCH="${arch}" \
    go build -trimpath -ldflags="-s -w -X main.version=${version}" -o "${bin}" ./cmd/kubectl-canaryroute
  builds+=("${p}=${bin}")
done
mkdir -p "${work}/krew-out"
"${work}/krew" -version="${version}" -url="${release_url}" -homepage="${source}" \
  -created="${created}" -license=LICENSE -output="${work}/krew-out" "${builds[@]}" >/dev/null
# The archives and their sums first, the manifest that names them last.
for f in "${work}"/krew-out/kubectl-canaryroute-*; do
  mv -f "${f}" "${output}/"
  echo "${output}/${f##*/}" >&2
done
mv -f "${work}/krew-out/canaryroute.yaml" "${output}/"
echo "${output}/canaryroute.yaml"
