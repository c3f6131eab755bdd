#!/bin/bash
# Build the project's image where no Docker daemon runs (CI machines, sandboxes): a Debian
# bookworm base made by mmdebstrap (Python 3.11 with venv, this host's CA bundle so pip works
# behind a TLS-intercepting proxy), then the project's Dockerfile on top with buildah (chroot
# isolation), then a smoke test inside the image.
#
#   apt-get install -y buildah mmdebstrap && docker/build-without-daemon.sh [tag]
#
# The base is made once and reused while it exists (JET_REBUILD_BASE=1 makes it again); buildah
# keeps the Dockerfile's layers, so a rebuild after a source change skips what did not change.
# Any failure exits non-zero with a line saying which step failed.
set -Eeuo pipefail
tag=${1:-localhost/jet:dev}
base=localhost/jet-base:bookworm
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
container=
step="start"
cleanup() {
  if [ -n "$container" ]; then buildah rm "$container" >/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'echo "build-without-daemon: FAILED while ${step} (exit $?)" >&2' ERR

timed() {  # timed <what> <command...>: run it, say how long it took
  step=$1
  shift
  local started=$SECONDS
  "$@"
  echo "build-without-daemon: ${step}: $((SECONDS - started)) s"
}

make_base() {
  local mirror
  mirror=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | head -1 | awk '{print $2}' || true)
  mirror=${mirror:-$(grep -hs '^deb ' /etc/apt/sources.list | head -1 | awk '{print $2}' || true)}
  if [ -z "$mirror" ]; then echo "no Debian mirror found in this host's apt sources" >&2; return 2; fi
  mmdebstrap --variant=apt --include=python3-minimal,python3-venv,python-is-python3,ca-certificates,passwd \
    --customize-hook='cp /etc/ssl/certs/ca-certificates.crt "$1/etc/ssl/certs/ca-certificates.crt"' \
    --format=tar bookworm "$work/rootfs.tar" "$mirror"
  printf 'FROM scratch\nADD rootfs.tar /\nCMD ["python3"]\n' > "$work/Containerfile"
  buildah bud --isolation chroot -f "$work/Containerfile" -t "$base" "$work"
}

smoke_test() {
  container=$(buildah from "$tag")
  buildah run --isolation chroot "$container" -- jet-entrypoint --help > /dev/null
  buildah run --isolation chroot "$container" -- python -c "import jet, jet_operator, pyspark, kopf"
  buildah run --isolation chroot "$container" -- test -r examples/data/two-cities.txt
}

total_started=$SECONDS
if [ "${JET_REBUILD_BASE:-0}" = 1 ] || ! buildah inspect --type image "$base" >/dev/null 2>&1; then
  timed "making the Debian base (mmdebstrap)" make_base
else
  echo "build-without-daemon: reusing the base $base (JET_REBUILD_BASE=1 makes it again)"
fi
# --jobs 2: the runtime stage's JRE install runs while the build stage installs the packages.
timed "building the Dockerfile (buildah)" \
  buildah bud --isolation chroot --layers --jobs 2 --build-arg BASE="$base" -t "$tag" "$root"
timed "checking the image" smoke_test
echo "build-without-daemon: built and checked $tag in $((SECONDS - total_started)) s"
buildah images "$tag"
