#!/usr/bin/env bash
# Builds the gpunex-agent image without pulling any base image (AGT-1): a root file
# system made of the agent binary, the shared libraries it loads (from ldd), CA
# certificates and a minimal /etc, imported into Docker with the agent as entrypoint.
# NVML is not included: on a GPU host the NVIDIA Container Toolkit mounts the host's
# libnvidia-ml into the container (--gpus all).
#
#   deploy/agent/build-image.sh AGENT_BINARY TAG [IMAGE_TAR]
#
# Docker is reached as the docker CLI does (DOCKER_HOST). With IMAGE_TAR the image is also
# saved there (docker save) for offline installs (GPUNEX_AGENT_IMAGE_FILE).
set -euo pipefail
bin=${1:?agent binary}
tag=${2:?image tag}
out=${3:-}
[ -x "$bin" ] || { echo "build-image: $bin is not an executable" >&2; exit 1; }

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/usr/local/bin" "$root/etc/ssl/certs" "$root/tmp" "$root/var/lib/gpunex-agent"
chmod 1777 "$root/tmp"
install -m 0755 "$bin" "$root/usr/local/bin/gpunex-agent"

# Shared libraries, at the paths the dynamic loader looks for them (none for a static
# binary: ldd then fails, which is fine).
{ ldd "$bin" 2>/dev/null || true; } | awk '/=>/ {print $3} /^\t\// {print $1}' | sort -u | while read -r lib; do
  [ -n "$lib" ] && [ -e "$lib" ] || continue
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
# Loader path on merged-/usr systems.
if [ -e /lib64/ld-linux-x86-64.so.2 ] && [ ! -e "$root/lib64/ld-linux-x86-64.so.2" ]; then
  mkdir -p "$root/lib64"
  cp -L /lib64/ld-linux-x86-64.so.2 "$root/lib64/"
fi

cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/" 2>/dev/null || true
printf 'root:x:0:0:root:/root:/usr/sbin/nologin\n' >"$root/etc/passwd"
printf 'root:x:0:\n' >"$root/etc/group"
printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"
printf 'ID=gpunex-agent\nPRETTY_NAME="gpunex agent image"\n' >"$root/etc/os-release"

tar -C "$root" --numeric-owner --owner=0 --group=0 -c . |
  docker import \
    --change 'ENTRYPOINT ["/usr/local/bin/gpunex-agent"]' \
    --change 'CMD ["run"]' \
    --change 'ENV GPUNEX_STATE_DIR=/var/lib/gpunex-agent' \
    --change 'LABEL org.opencontainers.image.title=gpunex-agent' \
    - "$tag" >/dev/null
echo "built $tag"
if [ -n "$out" ]; then
  docker save -o "$out" "$tag"
  echo "saved $out"
fi
