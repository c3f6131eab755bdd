#!/bin/bash
# Build the project's image where no Docker daemon runs (CI machines, sandboxes): a Debian
# bookworm base made by mmdebstrap (Python 3.11 with venv, this host's CA bundle so pip works
# behind a TLS-intercepting proxy), then the project's Dockerfile on top with buildah (chroot
# isolation), then a smoke test inside the image.
#
#   apt-get install -y buildah mmdebstrap && docker/build-without-daemon.sh [tag]
set -euo pipefail
tag=${1:-localhost/jet:dev}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mirror=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | head -1 | awk '{print $2}')
mirror=${mirror:-$(grep -hs '^deb ' /etc/apt/sources.list | head -1 | awk '{print $2}')}
if [ -z "$mirror" ]; then echo "no Debian mirror found in this host's apt sources" >&2; exit 2; fi

mmdebstrap --variant=apt --include=python3-minimal,python3-venv,python-is-python3,ca-certificates,passwd \
  --customize-hook='cp /etc/ssl/certs/ca-certificates.crt "$1/etc/ssl/certs/ca-certificates.crt"' \
  --format=tar bookworm "$work/rootfs.tar" "$mirror"
printf 'FROM scratch\nADD rootfs.tar /\nCMD ["python3"]\n' > "$work/Containerfile"
buildah bud --isolation chroot -f "$work/Containerfile" -t localhost/jet-base:bookworm "$work"
buildah bud --isolation chroot --build-arg BASE=localhost/jet-base:bookworm -t "$tag" "$root"

container=$(buildah from "$tag")
trap 'buildah rm "$container" >/dev/null; rm -rf "$work"' EXIT
buildah run --isolation chroot "$container" -- jet-entrypoint --help > /dev/null
buildah run --isolation chroot "$container" -- python -c "import jet, jet_operator, pyspark, kopf"
echo "built and checked $tag"
buildah images "$tag"
