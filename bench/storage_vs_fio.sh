#!/usr/bin/env bash
# The agent's storage benchmark next to fio with the same parameters, in the same
# directory (so on the same file system and device), in the same run: prints both
# figures and the ratio ours / fio for each metric.
#
#   bench/storage_vs_fio.sh [AGENT_BINARY] [DIR]
#
# Environment: FILE_MB (test file size, default 1024), SECONDS_PER_PHASE (default 8),
# QUEUE_DEPTH (random reads in flight, default 32), ROUNDS (default 10). Each round runs
# both, ours first in odd rounds and fio first in even ones: whichever runs second on a
# virtual disk pays for the host still writing back what the first one wrote, so a fixed
# order would favour one side. Before each run the disk settles: sync, then wait until
# its statistics show nothing written, discarded or in flight for 2 s (the discards of a
# deleted test file on a file system mounted with `discard` go on after sync returns), at
# most SETTLE_MAX_SECONDS (default 60; 0: sync only).
# Each figure is the median over the rounds, and the ratio of those medians is printed
# beside the median of the rounds' own ratios.
#
# What fio runs, phase by phase, as `gpunex-agent bench storage` does (storage.h):
#   seq write  rw=write     bs=1M  direct=1 ioengine=psync  iodepth=1, a new file
#              (fallocate=none, as ours extends it), end_fsync=1; MB/s = bytes / the
#              job's time including the fsync; fio's default scramble_buffers=1 makes
#              each block differ, as ours stamps each 4 KiB sector with its offset
#   seq read   rw=read      bs=1M  direct=1 ioengine=psync  iodepth=1
#   rand read  rw=randread  bs=4k  direct=1 ioengine=io_uring iodepth=QUEUE_DEPTH
#              norandommap, time_based; p50/p99 of the total latency (submission to
#              completion, lat_percentiles=1)
# Each phase is bounded by SECONDS_PER_PHASE (runtime=). fio's I/O buffer is set up as
# ours is (storage.cc, SequentialBuffer): 2 MiB-aligned (iomem_align=2m) inside memory that
# malloc asks to be backed by transparent huge pages (GLIBC_TUNABLES=glibc.malloc.hugetlb=1),
# so that a 1 MiB block is one physically contiguous request for both; over scattered 4 KiB
# pages the kernel splits it (a virtio disk takes 254 segments per request) and the figure
# depends on where the pages lie.
set -euo pipefail
cd "$(dirname "$0")/.."
agent_bin=${1:-build/release/src/agent/gpunex-agent}
dir=${2:-}
file_mb=${FILE_MB:-1024}
secs=${SECONDS_PER_PHASE:-8}
qd=${QUEUE_DEPTH:-32}
rounds=${ROUNDS:-10}
settle_max=${SETTLE_MAX_SECONDS:-60}
runtime_ms=$(awk -v s="$secs" 'BEGIN { printf "%d", s * 1000 }')
command -v fio >/dev/null || { echo "fio is not installed (scripts/install-deps.sh)" >&2; exit 1; }

own_dir=""
if [ -z "$dir" ]; then
  dir=$(mktemp -d "${TMPDIR:-/tmp}/gpunex-storage-bench.XXXXXX")
  own_dir=$dir
fi
work=$(mktemp -d)
cleanup() {
  rm -f "$dir/gpunex-fio-test"
  rm -rf "$work"
  [ -z "$own_dir" ] || rm -rf "$own_dir"
}
trap cleanup EXIT

# Two invocations, so that the write job creates the file as ours does: in one job file
# fio would lay the file out for the read jobs first and the write job would only overwrite
# blocks already allocated.
global="[global]
directory=$dir
filename=gpunex-fio-test
size=${file_mb}M
direct=1
iomem_align=2m
runtime=${runtime_ms}ms
randrepeat=0"
cat >"$work/fio-write.job" <<JOB
$global
[seqwrite]
rw=write
bs=1M
ioengine=psync
iodepth=1
fallocate=none
end_fsync=1
JOB
cat >"$work/fio-read.job" <<JOB
$global
[seqread]
rw=read
bs=1M
ioengine=psync
iodepth=1
[randread]
stonewall
rw=randread
bs=4k
ioengine=io_uring
iodepth=$qd
norandommap
time_based
lat_percentiles=1
JOB

fs_type=$(stat -f -c %T "$dir")
echo "storage: gpunex-agent bench storage vs fio $(fio --version | sed 's/^fio-//')"
echo "directory $dir ($fs_type), file ${file_mb} MiB, ${secs} s per phase, queue depth $qd, $rounds round(s)"
# The block device under the directory, whose statistics tell when it has settled; none
# (tmpfs, overlay) falls back to a fixed pause.
dev_stat=/sys/dev/block/$(stat -c '%Hd:%Ld' "$dir")/stat
settle() {
  sync
  [ "$settle_max" -gt 0 ] || return 0
  if [ ! -r "$dev_stat" ]; then sleep 3; return; fi
  # Fields 7, 9 and 14: sectors written, I/Os in flight, sectors discarded.
  local prev="" cur quiet=0
  for _ in $(seq $((settle_max * 2))); do
    sleep 0.5
    cur=$(awk '{ print $7, $9, $14 }' "$dev_stat")
    if [ "$cur" = "$prev" ] && [ "$(echo "$cur" | cut -d' ' -f2)" = 0 ]; then
      quiet=$((quiet + 1))
      [ "$quiet" -ge 4 ] && return
    else
      quiet=0
    fi
    prev=$cur
  done
}
run_ours() {
  settle
  "$agent_bin" bench storage --dir "$dir" --file-mb "$file_mb" --seconds "$secs" --queue-depth "$qd" \
    --keep-free-mb 0 --json >"$work/ours.$1.json"
}
run_fio() {
  settle
  GLIBC_TUNABLES=glibc.malloc.hugetlb=1 fio --output-format=json "$work/fio-write.job" >"$work/fio-write.$1.json"
  GLIBC_TUNABLES=glibc.malloc.hugetlb=1 fio --output-format=json "$work/fio-read.job" >"$work/fio-read.$1.json"
  rm -f "$dir/gpunex-fio-test"
}
for r in $(seq "$rounds"); do
  if [ $((r % 2)) = 1 ]; then run_ours "$r"; run_fio "$r"; else run_fio "$r"; run_ours "$r"; fi
done

/usr/bin/python3 - "$work" "$rounds" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
ours, fio = [], []
for r in range(1, rounds + 1):
    o = json.load(open(f"{work}/ours.{r}.json"))
    if not o["direct_io"]:
        print("NOTE: the file system refused O_DIRECT; ours fell back to buffered I/O")
    if not o["io_uring"]:
        print("NOTE: io_uring was refused; ours used threads for the random reads")
    ours.append({"write": o["seq_write_mb_s"], "read": o["seq_read_mb_s"], "iops": o["rand_read_iops"],
                 "p50": o["rand_read_p50_us"], "p99": o["rand_read_p99_us"]})
    jobs = {j["jobname"]: j for part in ("write", "read")
            for j in json.load(open(f"{work}/fio-{part}.{r}.json"))["jobs"]}
    w, rd, rr = jobs["seqwrite"], jobs["seqread"], jobs["randread"]
    # job_runtime (ms) covers the whole job, end_fsync included, as ours does.
    pct = rr["read"]["lat_ns"]["percentile"]
    fio.append({"write": w["write"]["io_bytes"] / (w["job_runtime"] / 1e3) / 1e6,
                "read": rd["read"]["io_bytes"] / (rd["job_runtime"] / 1e3) / 1e6,
                "iops": rr["read"]["iops"],
                "p50": pct["50.000000"] / 1e3, "p99": pct["99.000000"] / 1e3})
rows = [("seq write MB/s (1 MiB, O_DIRECT)", "write", 1), ("seq read MB/s (1 MiB, O_DIRECT)", "read", 1),
        ("rand read 4 KiB IOPS", "iops", 0), ("rand read p50 latency us", "p50", 1),
        ("rand read p99 latency us", "p99", 1)]
print(f"{'metric':36} {'gpunex':>12} {'fio':>12} {'ratio':>7} {'rounds':>7}")
for label, k, d in rows:
    a = statistics.median(x[k] for x in ours)
    b = statistics.median(x[k] for x in fio)
    per_round = statistics.median(x[k] / y[k] if y[k] else float("nan") for x, y in zip(ours, fio))
    print(f"{label:36} {a:12.{d}f} {b:12.{d}f} {a / b if b else float('nan'):7.3f} {per_round:7.3f}")
if rounds > 1:
    print("rounds (gpunex / fio; odd rounds ran ours first):")
    for i, (a, b) in enumerate(zip(ours, fio), 1):
        print(f"  {i}: " + "  ".join(f"{k} {a[k]:.0f}/{b[k]:.0f}" for _, k, _ in rows))
PY
