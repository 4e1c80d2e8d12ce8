#!/usr/bin/env bash
# Fails when a C++ file of the project is not formatted as .clang-format says
# (clang-format --dry-run -Werror), or a TypeScript file of the dashboard or its browser
# tests as Prettier says (web/node_modules: scripts/build-web.sh installs it); with --fix,
# formats them in place instead.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=(--dry-run -Werror)
if [ "${1:-}" = "--fix" ]; then mode=(-i); fi
mapfile -t files < <(git ls-files -- 'src/*.cc' 'src/*.h' 'src/*.cu' 'src/*.cuh' 'bench/*.cc' 'bench/*.h')
if ((${#files[@]} == 0)); then
  echo "check-format: no files" >&2
  exit 1
fi
clang-format --style=file "${mode[@]}" "${files[@]}"
if [ "${1:-}" = "--fix" ]; then echo "check-format: ${#files[@]} files formatted"; else echo "check-format: ${#files[@]} files as .clang-format says"; fi

if [ -x web/node_modules/.bin/prettier ]; then
  if [ "${1:-}" = "--fix" ]; then
    (cd web && node_modules/.bin/prettier --log-level warn --write src ../tests/browser)
  else
    (cd web && node_modules/.bin/prettier --log-level warn --check src ../tests/browser)
  fi
  echo "check-format: the dashboard's TypeScript as Prettier says"
else
  echo "check-format: web/node_modules is missing (scripts/build-web.sh): Prettier not run" >&2
  exit 1
fi
