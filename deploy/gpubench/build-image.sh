#!/usr/bin/env bash
# Builds the gpunex-gpubench image without pulling any base image, as the agent's is built
# (deploy/agent/build-image.sh): a root file system of the benchmark binary and the shared
# libraries it loads (from ldd), imported into Docker with the benchmark as entrypoint.
#
#   deploy/gpubench/build-image.sh GPUBENCH_BINARY [VERSION] [IMAGE_TAR]
#
# The tag is gpunex/gpubench:VERSION (default: the output format version the binary
# reports, `gpunex-gpubench --version`). With IMAGE_TAR the image is also saved there
# (docker save). Docker is reached as the docker CLI does (DOCKER_HOST).
#
# The CUDA runtime is linked statically; cuBLASLt (libcublasLt, about 0.5 GB) is shipped
# in /usr/local/lib/gpunex-gpubench, on LD_LIBRARY_PATH. The driver's libraries (libcuda,
# libnvidia-ml) are not: the NVIDIA Container Toolkit mounts the host's into the container
# when it is started with the GPU (--gpus device=GPU-..., which the image's
# NVIDIA_DRIVER_CAPABILITIES=compute,utility lets load CUDA and NVML).
set -euo pipefail
bin=${1:?gpunex-gpubench binary}
[ -x "$bin" ] || { echo "build-image: $bin is not an executable" >&2; exit 1; }
version=${2:-$("$bin" --version | awk '{print $2}')}
out=${3:-}
tag=gpunex/gpubench:$version
libdir=/usr/local/lib/gpunex-gpubench

if ldd "$bin" 2>/dev/null | grep -q 'not found'; then
  echo "build-image: $bin needs libraries this machine lacks:" >&2
  ldd "$bin" | grep 'not found' >&2
  exit 1
fi

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/usr/local/bin" "$root$libdir" "$root/tmp" "$root/etc"
chmod 1777 "$root/tmp"
install -m 0755 "$bin" "$root/usr/local/bin/gpunex-gpubench"

# System libraries at the paths the dynamic loader searches by default; the rest (the CUDA
# toolkit's) in $libdir under their sonames. Never the driver's own libraries.
{ ldd "$bin" 2>/dev/null || true; } | awk '/=>/ {print $1, $3} /^\t\// {print $1, $1}' | sort -u |
  while read -r soname lib; do
    [ -n "$lib" ] && [ -e "$lib" ] || continue
    case "$(basename "$soname")" in
      libcuda.so* | libnvidia-* | libcudadebugger.so*) continue ;;
    esac
    case "$lib" in
      /lib/* | /lib64/* | /usr/lib/* | /usr/lib64/*)
        mkdir -p "$root$(dirname "$lib")"
        cp -L "$lib" "$root$lib"
        ;;
      *) cp -L "$lib" "$root$libdir/$(basename "$soname")" ;;
    esac
  done
# Loader path on merged-/usr systems.
if [ -e /lib64/ld-linux-x86-64.so.2 ] && [ ! -e "$root/lib64/ld-linux-x86-64.so.2" ]; then
  mkdir -p "$root/lib64"
  cp -L /lib64/ld-linux-x86-64.so.2 "$root/lib64/"
fi

printf 'root:x:0:0:root:/root:/usr/sbin/nologin\n' >"$root/etc/passwd"
printf 'root:x:0:\n' >"$root/etc/group"
printf 'ID=gpunex-gpubench\nPRETTY_NAME="gpunex GPU benchmark image"\n' >"$root/etc/os-release"

tar -C "$root" --numeric-owner --owner=0 --group=0 -c . |
  docker import \
    --change 'ENTRYPOINT ["/usr/local/bin/gpunex-gpubench"]' \
    --change "ENV LD_LIBRARY_PATH=$libdir" \
    --change 'ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility' \
    --change 'LABEL org.opencontainers.image.title=gpunex-gpubench' \
    --change "LABEL org.opencontainers.image.version=$version" \
    - "$tag" >/dev/null
echo "built $tag"
if [ -n "$out" ]; then
  docker save -o "$out" "$tag"
  echo "saved $out"
fi
