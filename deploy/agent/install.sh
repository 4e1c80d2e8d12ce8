#!/usr/bin/env bash
# gpunex agent installer (AGT-1), served by gpunexd at /agent/install.sh:
#
#   curl -fsSL @GPUNEX_PUBLIC_URL@/agent/install.sh | GPUNEX_TOKEN=gpx_a_... bash
#
# It checks Docker and the NVIDIA Container Toolkit, stores the agent token in the
# agent's state volume (never in the container's environment), gets the agent image
# (registry pull, or an image file for offline installs), starts the gpunex-agent
# container with a restart policy, the Docker socket and the state volume and nothing
# else from the host, and verifies that it is up. It changes no firewall: the agent checks
# that workloads reach neither each other nor the host's services before the machine is
# listed, and says what to fix (docs/trust.md).
#
# Settings (environment):
#   GPUNEX_TOKEN             the agent token (asked for when unset and a terminal is there)
#   GPUNEX_PLATFORM_URL      default @GPUNEX_PUBLIC_URL@
#   GPUNEX_AGENT_IMAGE       default @GPUNEX_AGENT_IMAGE@
#   GPUNEX_AGENT_IMAGE_FILE  an image tar (docker save) to load instead of pulling
#   GPUNEX_EMULATE_GPUS      EMULATED GPUs for tests and demos, e.g. "l4-24gb:1";
#                            implies GPUNEX_SKIP_GPU_CHECK=1
#   GPUNEX_SKIP_GPU_CHECK    1: skip the NVIDIA checks (hosts without GPUs: tests, demos)
#   GPUNEX_AGENT_NETWORK     docker network for the agent container (default: bridge)
#   GPUNEX_DOCKER_SOCKET     the host's Docker socket (default /var/run/docker.sock)
set -euo pipefail

PLATFORM_URL=${GPUNEX_PLATFORM_URL:-@GPUNEX_PUBLIC_URL@}
IMAGE=${GPUNEX_AGENT_IMAGE:-@GPUNEX_AGENT_IMAGE@}
IMAGE_FILE=${GPUNEX_AGENT_IMAGE_FILE:-}
EMULATE=${GPUNEX_EMULATE_GPUS:-}
SKIP_GPU=${GPUNEX_SKIP_GPU_CHECK:-0}
NETWORK=${GPUNEX_AGENT_NETWORK:-}
SOCKET=${GPUNEX_DOCKER_SOCKET:-/var/run/docker.sock}
NAME=gpunex-agent
VOLUME=gpunex-agent-state
STATE_DIR=/var/lib/gpunex-agent
[ -n "$EMULATE" ] && SKIP_GPU=1

say() { printf '==> %s\n' "$*"; }
die() { printf 'gpunex install: %s\n' "$*" >&2; exit 1; }

docker_cmd() { docker -H "unix://$SOCKET" "$@"; }

say "checking Docker"
command -v docker >/dev/null || die "Docker is not installed: see https://docs.docker.com/engine/install/ and run this again"
[ -S "$SOCKET" ] || die "no Docker socket at $SOCKET: is the Docker daemon running? (set GPUNEX_DOCKER_SOCKET if it lives elsewhere)"
docker_cmd version --format '{{.Server.Version}}' >/dev/null 2>&1 ||
  die "cannot talk to Docker at $SOCKET: run as root or a member of the docker group"
say "Docker $(docker_cmd version --format '{{.Server.Version}}')"

GPU_ARGS=()
if [ "$SKIP_GPU" = 1 ]; then
  say "skipping the NVIDIA checks${EMULATE:+ (EMULATED GPUs: $EMULATE)}"
else
  say "checking the NVIDIA driver and Container Toolkit"
  command -v nvidia-smi >/dev/null || die "nvidia-smi not found: install the NVIDIA driver"
  nvidia-smi -L >/dev/null || die "nvidia-smi cannot see a GPU: check the driver (dmesg, nvidia-smi)"
  docker_cmd info --format '{{json .Runtimes}}' | grep -q nvidia ||
    die "Docker has no nvidia runtime: install the NVIDIA Container Toolkit and run 'nvidia-ctk runtime configure --runtime=docker', then restart Docker"
  GPU_ARGS=(--gpus all)
fi

TOKEN=${GPUNEX_TOKEN:-}
if [ -z "$TOKEN" ]; then
  if [ -r /dev/tty ]; then
    read -rsp "Agent token (from your Provider Dashboard): " TOKEN </dev/tty
    echo
  fi
fi
[ -n "$TOKEN" ] || die "no agent token: set GPUNEX_TOKEN or run this in a terminal"
case "$TOKEN" in gpx_a_*) ;; *) die "that is not an agent token (they start with gpx_a_)" ;; esac

if [ -n "$IMAGE_FILE" ]; then
  say "loading the agent image from $IMAGE_FILE"
  [ -r "$IMAGE_FILE" ] || die "cannot read $IMAGE_FILE"
  LOADED=$(docker_cmd load -i "$IMAGE_FILE") || die "cannot load $IMAGE_FILE"
  # Unless GPUNEX_AGENT_IMAGE names one, run the image the file holds: the platform's
  # default name may be on a registry this (offline) host cannot reach.
  if [ -z "${GPUNEX_AGENT_IMAGE:-}" ]; then
    ref=$(printf '%s\n' "$LOADED" | awk '/^Loaded image: / { print $3; exit }')
    [ -n "$ref" ] || ref=$(printf '%s\n' "$LOADED" | awk '/^Loaded image ID: / { print $4; exit }')
    if [ -n "$ref" ]; then IMAGE=$ref; fi
  fi
  docker_cmd image inspect "$IMAGE" >/dev/null 2>&1 ||
    die "$IMAGE_FILE does not hold the image $IMAGE (it has: $(printf '%s' "$LOADED" | tr '\n' ' '))"
  say "agent image $IMAGE"
else
  say "pulling $IMAGE"
  docker_cmd pull "$IMAGE" >/dev/null || die "cannot pull $IMAGE: check the name and your network"
fi

say "storing the token in the volume $VOLUME"
docker_cmd volume create "$VOLUME" >/dev/null
printf '%s\n' "$TOKEN" | docker_cmd run --rm -i --network none -v "$VOLUME:$STATE_DIR" \
  -e GPUNEX_STATE_DIR="$STATE_DIR" "$IMAGE" store-token >/dev/null || die "cannot store the token"

if docker_cmd inspect "$NAME" >/dev/null 2>&1; then
  say "replacing the existing $NAME container"
  docker_cmd rm -f "$NAME" >/dev/null
fi

RUN_ARGS=(run)
[ -n "$EMULATE" ] && RUN_ARGS+=(--emulate-gpus "$EMULATE")
say "starting $NAME"
# The host's process namespace and SYS_ADMIN (with SYS_PTRACE to open another process's
# namespace files) let the agent reach a rental's declared ports inside that container's own
# network namespace, without joining its network (docs/access.md).
docker_cmd run -d --name "$NAME" --restart unless-stopped \
  ${NETWORK:+--network "$NETWORK"} ${GPU_ARGS[@]+"${GPU_ARGS[@]}"} \
  --pid host --cap-add SYS_ADMIN --cap-add SYS_PTRACE \
  -v "$SOCKET:/var/run/docker.sock" -v "$VOLUME:$STATE_DIR" \
  -e GPUNEX_PLATFORM_URL="$PLATFORM_URL" -e GPUNEX_STATE_DIR="$STATE_DIR" \
  --label io.gpunex.agent=true \
  "$IMAGE" "${RUN_ARGS[@]}" >/dev/null || die "cannot start the agent container"

for _ in $(seq 30); do
  if docker_cmd ps --filter "name=^/$NAME\$" --filter status=running --format '{{.Names}}' | grep -qx "$NAME"; then
    say "gpunex-agent is up. The machine appears Online in your Provider Dashboard within seconds."
    say "It is listed once the agent has checked that workloads reach neither each other nor this host's services (Docker's iptables on, and: iptables -I INPUT -i gpxwl+ -j REJECT)."
    say "logs: docker logs -f $NAME   checks: docker exec $NAME gpunex-agent self-test"
    exit 0
  fi
  sleep 1
done
docker_cmd logs --tail 20 "$NAME" >&2 || true
die "the agent container is not running; see the logs above"
