#!/usr/bin/env bash
# Quick start: installs what is missing, builds, and runs gpunexd on its embedded
# default (SQLite in .demo/) at http://127.0.0.1:8080 with a demo admin account.
# Stop with Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/release -j "$(nproc)" --target gpunexd

export GPUNEX_DATA_DIR=${GPUNEX_DATA_DIR:-$PWD/.demo/data}
export GPUNEX_LISTEN=${GPUNEX_LISTEN:-127.0.0.1:8080}
export GPUNEX_ALLOW_EMULATED_GPUS=true
admin_email=${GPUNEX_DEMO_ADMIN:-admin@gpunex.local}
admin_password=${GPUNEX_DEMO_PASSWORD:-gpunex-demo-admin}

build/release/src/platform/gpunexd admin create --email "$admin_email" \
  --password "$admin_password" --name "Demo admin"
cat <<MSG

gpunexd on http://$GPUNEX_LISTEN  (data: $GPUNEX_DATA_DIR)
  admin log-in: $admin_email / $admin_password
  try: curl -s http://$GPUNEX_LISTEN/api/v1/gpu-models
Emails wait in the outbox until GPUNEX_SMTP_URL names an SMTP server.

MSG
exec build/release/src/platform/gpunexd serve
