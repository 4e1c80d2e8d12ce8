#!/usr/bin/env bash
# Runs clang-tidy (.clang-tidy's checks) over every translation unit of src/ in the
# compile_commands.json of BUILD_DIR (a clang build), in parallel, and fails on any finding.
#
# A translation unit checked clean before is not checked again, like ccache for the
# compilers: the results are kept in $CLANG_TIDY_CACHE (by default
# ~/.cache/gpunex-clang-tidy) under a key of the unit's command, .clang-tidy and the
# clang-tidy version, with either
#   - the content of every file the unit includes, as the build's dependency records
#     (`ninja -t deps`, written when BUILD_DIR was built) list them: seconds for the
#     whole tree; or, where the build has no valid record of the unit,
#   - its preprocessed text (a second or so a unit).
# A unit found clean under one key is recorded under both.
#
#   scripts/clang-tidy.sh build/asan
set -euo pipefail
cd "$(dirname "$0")/.."

build=${1:?usage: scripts/clang-tidy.sh BUILD_DIR}
jobs=${JOBS:-$(nproc)}
cache=${CLANG_TIDY_CACHE:-$HOME/.cache/gpunex-clang-tidy}
mkdir -p "$cache"
[ -f "$build/compile_commands.json" ] || { echo "clang-tidy: no $build/compile_commands.json" >&2; exit 1; }

version=$(clang-tidy --version | tr '\n' ' ')
config_hash=$(sha256sum .clang-tidy | cut -d' ' -f1)
root=$PWD

# file<TAB>directory<TAB>dependency key (empty without a valid record)<TAB>preprocessor
# command, for each translation unit under src/ (generated files and the CUDA sources are
# left out).
mapfile -t units < <(python3 - "$build" "$root" "$version" "$config_hash" <<'PY'
import hashlib, json, os, shlex, subprocess, sys
build, root, version, config_hash = sys.argv[1:5]
build = os.path.abspath(build)

def rel(path):  # the checkout's folder taken out, so a fresh clone elsewhere finds the keys
    return path.replace(root + "/", "")

# Dependency records: object (as ninja names it) -> files it read, for valid records only.
deps, obj, ok = {}, None, False
try:  # a build by another generator than Ninja has no records: every unit is preprocessed
    records = subprocess.run(["ninja", "-C", build, "-t", "deps"], capture_output=True,
                             text=True).stdout
except OSError:
    records = ""
for line in records.splitlines():
    if line and not line[0].isspace():
        obj, ok = line.split(":", 1)[0], line.rstrip().endswith("(VALID)")
        if ok:
            deps[obj] = []
    elif line.strip() and ok:
        deps[obj].append(line.strip())

digests = {}
def digest(path):
    full = os.path.normpath(os.path.join(build, path))
    if full not in digests:
        try:
            with open(full, "rb") as f:
                digests[full] = hashlib.sha256(f.read()).hexdigest()
        except OSError:
            digests[full] = None
    return rel(full), digests[full]

seen = set()
for e in json.load(open(os.path.join(build, "compile_commands.json"))):
    f = e["file"]
    if not f.startswith(root + "/src/") or not f.endswith(".cc") or f in seen:
        continue
    seen.add(f)
    args = e.get("arguments") or shlex.split(e["command"])
    pre, skip, target = [], False, None
    for a in args:
        if skip:
            skip, target = False, a
        elif a == "-o":
            skip = True
        elif a != "-c" and not a.startswith("-o"):
            pre.append(a)
    key = ""
    files = deps.get(target) if target else None
    if files:
        listed = [digest(p) for p in files]
        if all(h for _, h in listed):
            text = "\n".join(["deps", rel(" ".join(args)), version, config_hash] +
                             [p + " " + h for p, h in sorted(listed)])
            key = hashlib.sha256(text.encode()).hexdigest()
    # __FILE__ relative to the checkout, so the text does not depend on where it lies.
    pre[1:1] = ["-E", "-P", "-fmacro-prefix-map=" + root + "/="]
    print(f + "\t" + e["directory"] + "\t" + key + "\t" + " ".join(shlex.quote(a) for a in pre))
PY
)
echo "clang-tidy: ${#units[@]} translation units, $jobs at a time"

export build cache version config_hash root

check_one() {
  local file dir deps_key cmd
  IFS=$'\t' read -r file dir deps_key cmd <<<"$1"
  if [ -n "$deps_key" ] && [ -f "$cache/$deps_key" ]; then return 0; fi
  # The preprocessed text: the unit with every header it includes, as this build sees it.
  local pre
  pre=$(cd "$dir" && eval "$cmd" 2>/dev/null | sha256sum | cut -d' ' -f1) || pre=""
  # The command with this checkout's folder taken out, so that a fresh clone elsewhere
  # (as CI makes) finds the results of this one.
  local key
  key=$(printf '%s\n' "$pre" "${cmd//$root\//}" "$version" "$config_hash" | sha256sum | cut -d' ' -f1)
  if [ -n "$pre" ] && [ -f "$cache/$key" ]; then
    [ -n "$deps_key" ] && touch "$cache/$deps_key"
    return 0
  fi
  local out
  if out=$(clang-tidy -p "$build" --quiet "$file" 2>&1); then
    [ -n "$pre" ] && touch "$cache/$key"
    [ -n "$deps_key" ] && touch "$cache/$deps_key"
    return 0
  fi
  printf '%s\n' "$out" | grep -v "warnings generated" >&2
  return 1
}
export -f check_one

printf '%s\n' "${units[@]}" | xargs -d '\n' -P "$jobs" -I{} bash -c 'check_one "$1"' _ {} \
  || { echo "clang-tidy: findings above (see .clang-tidy)" >&2; exit 1; }
echo "clang-tidy: clean"
