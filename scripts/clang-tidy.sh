#!/usr/bin/env bash
# Runs clang-tidy (.clang-tidy's checks) over every translation unit of src/ in the
# compile_commands.json of BUILD_DIR (a clang build), in parallel, and fails on any finding.
#
# A translation unit whose preprocessed text, flags, .clang-tidy and clang-tidy version
# were checked clean before is not checked again (the results are kept in
# $CLANG_TIDY_CACHE, by default ~/.cache/gpunex-clang-tidy), so a run on an unchanged tree
# takes seconds, like ccache for the compilers.
#
#   scripts/clang-tidy.sh build/asan
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:?usage: scripts/clang-tidy.sh BUILD_DIR}
jobs=${JOBS:-$(nproc)}
cache=${CLANG_TIDY_CACHE:-$HOME/.cache/gpunex-clang-tidy}
mkdir -p "$cache"
[ -f "$build/compile_commands.json" ] || { echo "clang-tidy: no $build/compile_commands.json" >&2; exit 1; }

# file<TAB>directory<TAB>preprocessor command for each translation unit under src/
# (generated files and the CUDA sources are left out).
mapfile -t units < <(python3 - "$build/compile_commands.json" "$PWD" <<'PY'
import json, shlex, sys
db, root = sys.argv[1], sys.argv[2]
seen = set()
for e in json.load(open(db)):
    f = e["file"]
    if not f.startswith(root + "/src/") or not f.endswith(".cc") or f in seen:
        continue
    seen.add(f)
    args = e.get("arguments") or shlex.split(e["command"])
    pre, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a == "-o":
            skip = True
        elif a != "-c" and not a.startswith("-o"):
            pre.append(a)
    # __FILE__ relative to the checkout, so the text does not depend on where it lies.
    pre[1:1] = ["-E", "-P", "-fmacro-prefix-map=" + root + "/="]
    print(f + "\t" + e["directory"] + "\t" + " ".join(shlex.quote(a) for a in pre))
PY
)
echo "clang-tidy: ${#units[@]} translation units, $jobs at a time"

version=$(clang-tidy --version | tr '\n' ' ')
config_hash=$(sha256sum .clang-tidy | cut -d' ' -f1)
root=$PWD
export build cache version config_hash root

check_one() {
  local file dir cmd
  IFS=$'\t' read -r file dir cmd <<<"$1"
  # The preprocessed text: the unit with every header it includes, as this build sees it.
  local pre
  pre=$(cd "$dir" && eval "$cmd" 2>/dev/null | sha256sum | cut -d' ' -f1) || pre=""
  # The command with this checkout's folder taken out, so that a fresh clone elsewhere
  # (as CI makes) finds the results of this one.
  local key
  key=$(printf '%s\n' "$pre" "${cmd//$root\//}" "$version" "$config_hash" | sha256sum | cut -d' ' -f1)
  if [ -n "$pre" ] && [ -f "$cache/$key" ]; then return 0; fi
  local out
  if out=$(clang-tidy -p "$build" --quiet "$file" 2>&1); then
    [ -n "$pre" ] && touch "$cache/$key"
    return 0
  fi
  printf '%s\n' "$out" | grep -v "warnings generated" >&2
  return 1
}
export -f check_one

printf '%s\n' "${units[@]}" | xargs -d '\n' -P "$jobs" -I{} bash -c 'check_one "$1"' _ {} \
  || { echo "clang-tidy: findings above (see .clang-tidy)" >&2; exit 1; }
echo "clang-tidy: clean"
