#!/usr/bin/env python3
"""PyTorch's side of bench/gpubench_vs_torch.sh, and the comparison.

  gpubench_vs_torch.py torch [--device 0] [--sizes 4096,8192,16384] [--copy-mib 1024]
                             [--target-ms 200]          > torch.json
  gpubench_vs_torch.py report OURS.json TORCH.json [TORCH.json ...]

`torch` measures, on one GPU, what gpunex-gpubench measures and the same way:
torch.mm at M = N = K = each size in BF16, FP16 (both FP32 accumulate, FP16/BF16 out) and
FP32 with TF32 tensor cores, inputs uniform in [-1, 1) like ours; and tensor.copy_ between
two FP32 buffers of --copy-mib MiB, counting bytes read plus bytes written. Each figure is
timed with CUDA events over back-to-back runs filling --target-ms, after a warm-up and a
two-run estimate. It prints one JSON object.

`report` prints our figures, PyTorch's (the best over the sizes and over the given runs,
so PyTorch gets every benefit of the doubt) and the ratios, with the targets: BF16 GEMM
and device copy each at least 95% of PyTorch's.
"""
import argparse
import json
import math
import sys

TARGET_RATIO = 0.95


def measure_torch(args):
    import torch

    if not torch.cuda.is_available():
        sys.exit("torch sees no CUDA device")
    dev = torch.device("cuda", args.device)
    torch.cuda.set_device(dev)

    def ms_per_run(fn):
        fn()
        torch.cuda.synchronize(dev)
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        fn()
        stop.record()
        stop.synchronize()
        estimate = max(start.elapsed_time(stop) / 2, 1e-3)
        count = max(1, min(1_000_000, math.ceil(args.target_ms / estimate)))
        start.record()
        for _ in range(count):
            fn()
        stop.record()
        stop.synchronize()
        return start.elapsed_time(stop) / count

    out = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device": torch.cuda.get_device_name(dev),
        "matmul_tflops": {},
        "copy_gbps": None,
    }
    sizes = [int(s) for s in args.sizes.split(",") if s]
    kinds = [("bf16_tensor", torch.bfloat16, False), ("fp16_tensor", torch.float16, False),
             ("tf32_tensor", torch.float32, True)]
    free, _ = torch.cuda.mem_get_info(dev)
    for name, dtype, tf32 in kinds:
        # PyTorch's defaults otherwise (reduced-precision reductions allowed): its product
        # as users get it.
        torch.backends.cuda.matmul.allow_tf32 = tf32
        figures = {}
        for n in sizes:
            elem = torch.empty((), dtype=dtype).element_size()
            if 3 * n * n * elem + (512 << 20) > free:
                continue
            a = torch.rand(n, n, device=dev, dtype=dtype) * 2 - 1
            b = torch.rand(n, n, device=dev, dtype=dtype) * 2 - 1
            c = torch.empty(n, n, device=dev, dtype=dtype)
            ms = ms_per_run(lambda: torch.mm(a, b, out=c))
            figures[str(n)] = 2 * n ** 3 / (ms * 1e-3) / 1e12
            print(f"torch {name} n={n}: {figures[str(n)]:.1f} TFLOPS ({ms:.3f} ms)", file=sys.stderr)
            del a, b, c
            torch.cuda.empty_cache()
        out["matmul_tflops"][name] = figures
    torch.backends.cuda.matmul.allow_tf32 = False

    floats = (args.copy_mib << 20) // 4
    src = torch.empty(floats, device=dev, dtype=torch.float32).uniform_()
    dst = torch.empty_like(src)
    ms = ms_per_run(lambda: dst.copy_(src))
    out["copy_gbps"] = 2 * floats * 4 / (ms * 1e-3) / 1e9
    out["copy_mib"] = args.copy_mib
    print(f"torch copy_ {args.copy_mib} MiB: {out['copy_gbps']:.1f} GB/s ({ms:.3f} ms)",
          file=sys.stderr)
    if not torch.equal(dst, src):
        sys.exit("torch copy_ produced a wrong copy")
    json.dump(out, sys.stdout)
    print()


def best_torch(runs, name):
    values = [v for r in runs for v in r["matmul_tflops"].get(name, {}).values()]
    return max(values) if values else None


def report(args):
    with open(args.ours) as f:
        ours = json.load(f)
    runs = []
    for path in args.torch:
        with open(path) as f:
            runs.append(json.load(f))
    if "error" in ours:
        sys.exit(f"gpunex-gpubench failed: {ours['error']}")

    d = ours["device"]
    print(f"GPU: {d['name']} ({d['uuid']}), catalog {d['catalog_id']}, {d['sm_count']} SMs, "
          f"{d['memory_mb']} MiB, PCIe gen {d['pcie_gen']} x{d['pcie_width']}")
    print(f"PyTorch {runs[0]['torch']} (CUDA {runs[0]['cuda']}) on {runs[0]['device']}, "
          f"{len(runs)} run(s), best taken")
    print()
    c, m, s = ours["compute"], ours["memory"], ours["sustained"]
    rf = ours.get("reference_fraction") or {}

    def frac(key):
        v = rf.get(key)
        return f"{v:6.1%}" if isinstance(v, (int, float)) else "     -"

    rows = [
        ("FP32 (no tensor cores)", c["fp32_tflops"], "TFLOPS", None, frac("fp32")),
        ("FP16 (no tensor cores)", c["fp16_tflops"], "TFLOPS", None, frac("fp16")),
        ("BF16 tensor GEMM", c["bf16_tensor_tflops"], "TFLOPS", best_torch(runs, "bf16_tensor"),
         frac("bf16_tensor")),
        ("FP16 tensor GEMM", c["fp16_tensor_tflops"], "TFLOPS", best_torch(runs, "fp16_tensor"),
         frac("fp16_tensor")),
        ("TF32 tensor GEMM", c["tf32_tensor_tflops"], "TFLOPS", best_torch(runs, "tf32_tensor"),
         frac("tf32_tensor")),
        ("memory read", m["read_gbps"], "GB/s", None, "     -"),
        ("memory write", m["write_gbps"], "GB/s", None, "     -"),
        ("memory copy", m["copy_gbps"], "GB/s", max(r["copy_gbps"] for r in runs), "     -"),
        ("memory triad", m["triad_gbps"], "GB/s", None, frac("memory")),
    ]
    print(f"{'figure':<24}{'gpunex-gpubench':>16}{'PyTorch':>12}{'ratio':>8}  {'of peak':>7}")
    ratios = {}
    for label, value, unit, theirs, of_peak in rows:
        if value is None:  # a figure gpunex-gpubench could not give (null)
            value = float("nan")
        t = f"{theirs:12.1f}" if theirs else f"{'':12}"
        r = f"{value / theirs:8.3f}" if theirs else f"{'':8}"
        if theirs:
            ratios[label] = value / theirs
        print(f"{label:<24}{value:10.1f} {unit:<5}{t}{r}  {of_peak:>7}")
    print()
    print(f"sustained {s['seconds']} s: mean {s['mean_tflops']} TFLOPS (min {s['min_tflops']}, "
          f"max {s['max_tflops']}), cv {s['cv']}, min/median {s['min_over_median']}")
    print(f"  thermal throttling {s['thermal_throttle_fraction']}, power throttling "
          f"{s['power_throttle_fraction']}, max {s['max_temperature_c']} C, mean "
          f"{s['mean_power_w']} W, mean SM clock {s['mean_sm_clock_mhz']} MHz, reasons "
          f"{', '.join(s['throttle_reasons']) or 'none'}")
    sanity = ours["sanity"]
    print(f"sanity: {'ok' if sanity['ok'] else 'FAILED: ' + '; '.join(sanity['failures'])}")
    print(f"gpunex-gpubench ran {ours['duration_s']} s")
    print()
    met = True
    for label in ("BF16 tensor GEMM", "memory copy"):
        ratio = ratios.get(label)
        ok = ratio is not None and ratio >= TARGET_RATIO
        met = met and ok
        shown = f"{ratio:.3f}" if ratio is not None else "n/a"
        print(f"target {label} >= {TARGET_RATIO:.0%} of PyTorch: {shown} "
              f"{'met' if ok else 'NOT MET'}")
    print(f"targets {'met' if met else 'NOT MET'}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("torch")
    t.add_argument("--device", type=int, default=0)
    t.add_argument("--sizes", default="4096,8192,16384")
    t.add_argument("--copy-mib", type=int, default=1024)
    t.add_argument("--target-ms", type=float, default=200)
    r = sub.add_parser("report")
    r.add_argument("ours")
    r.add_argument("torch", nargs="+")
    args = p.parse_args()
    if args.command == "torch":
        measure_torch(args)
    else:
        report(args)


if __name__ == "__main__":
    main()
