// The Benchmark tab (#/provider/benchmark?machine=<id>): per machine of the provider, the
// latest benchmark results of each GPU against its model's reference figures, the
// performance score, pass/fail with what failed and what to check, the machine's network
// and storage figures, the score history as a chart and the past runs; and a "Re-run
// benchmark" button. While a run is running the tab checks every 3 s and shows the
// results when it ends, without a reload. Formulas: docs/performance-score.md.
import * as api from "../../api";
import type { View } from "../../app";
import { chartLegend, fitChart, lineChart, type ChartSeries } from "../../components/chart";
import { busy, button, h, replace, replaceKeepingFocus } from "../../dom";
import { errorBanner, isAbort, StatusSlot } from "../../errors";
import { ago, bitRate, byteRate, plural, when } from "../../format";
import { gpuLabel, listingText, machineTitle } from "./overview";
import { loadMachines, machinePicker } from "./picker";
import type { ProviderTab } from "./tabs";

const kFastPollMs = 3000; // while a run is running (or the first one is awaited)
const kSlowPollMs = 10000; // otherwise: the machine may go offline, a periodic run start
const kHistoryRuns = 50;

const kReasonNames: Record<string, string> = {
  first_connect: "first connection",
  hardware_change: "hardware or driver change",
  periodic: "periodic check",
  retry: "retry",
  requested: "asked for by you",
  new_gpu: "new GPU",
};

function reasonName(reason: string): string {
  return kReasonNames[reason] ?? reason;
}

const kStateBadges: Record<api.BenchmarkState, { text: string; cls: string }> = {
  running: { text: "RUNNING", cls: "badge status-submitted" },
  passed: { text: "PASSED", cls: "badge badge-ok" },
  failed: { text: "FAILED", cls: "badge badge-danger" },
  error: { text: "ERROR", cls: "badge badge-warn" },
};

function stateBadge(state: api.BenchmarkState, extra = ""): HTMLElement {
  const b = kStateBadges[state] ?? { text: String(state).toUpperCase(), cls: "badge" };
  return h("span", { class: `${b.cls} bench-state ${extra}`.trim() }, b.text);
}

function emulatedBadge(): HTMLElement {
  return h(
    "span",
    {
      class: "badge badge-warn",
      title: "Emulated GPU: figures derived from the model's reference figures, not measured",
    },
    "EMULATED",
  );
}

// 1234.5 → "1,235"; 60.5 → "60.5"; 3.25 → "3.25".
function num(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return "—";
  const digits = Math.abs(n) >= 100 ? 0 : Math.abs(n) >= 10 ? 1 : 2;
  return n.toLocaleString(undefined, { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

function pct(fraction: number): string {
  return `${num(100 * fraction)} %`;
}

function score(n: number): string {
  return n.toFixed(2);
}

// ---- the figures of one GPU

const kMetricNames: Record<string, string> = {
  fp32_tflops: "FP32",
  fp16_tflops: "FP16 (no tensor cores)",
  fp16_tensor_tflops: "FP16 tensor cores",
  bf16_tensor_tflops: "BF16 tensor cores",
  tf32_tensor_tflops: "TF32 tensor cores",
  memory_triad_gbps: "Memory bandwidth (triad)",
  sustained_min_over_median: "Steadiness under sustained load",
  thermal_throttle_fraction: "Thermal throttling",
  pcie_width: "PCIe link width",
  sanity: "Correct results",
  "network.download_mbit_s": "Download",
  "network.upload_mbit_s": "Upload",
  "network.rtt_p50_ms": "Round trip (median)",
  "storage.seq_read_mb_s": "Disk sequential read",
  "storage.seq_write_mb_s": "Disk sequential write",
  "storage.rand_read_iops": "Disk random reads",
};

const kMetricUnits: Record<string, string> = {
  fp32_tflops: "TFLOPS",
  fp16_tflops: "TFLOPS",
  fp16_tensor_tflops: "TFLOPS",
  bf16_tensor_tflops: "TFLOPS",
  tf32_tensor_tflops: "TFLOPS",
  memory_triad_gbps: "GB/s",
  "network.download_mbit_s": "Mbit/s",
  "network.upload_mbit_s": "Mbit/s",
  "network.rtt_p50_ms": "ms",
  "storage.seq_read_mb_s": "MB/s",
  "storage.seq_write_mb_s": "MB/s",
  "storage.rand_read_iops": "IOPS",
};

// A figure of `metric` with its unit; rates as the rest of the dashboard writes them.
function metricValue(metric: string, n: number): string {
  if (metric.endsWith("_mbit_s")) return bitRate(n);
  if (metric.endsWith("_mb_s")) return byteRate(n);
  return `${num(n)}${kMetricUnits[metric] ? ` ${kMetricUnits[metric]}` : ""}`;
}

// "BF16 tensor cores: 60.5 TFLOPS, at least 72.6 required".
function failureText(f: api.BenchmarkFailure): string {
  const name = kMetricNames[f.metric] ?? f.metric;
  const unit = kMetricUnits[f.metric] ? ` ${kMetricUnits[f.metric]}` : "";
  switch (f.metric) {
    case "sanity":
      return "Wrong results: the GPU computed wrong answers";
    case "pcie_width":
      return `${name}: x${f.measured} of x${f.required}`;
    case "sustained_min_over_median":
      return `${name}: fell to ${pct(f.measured)} of its median, at least ${pct(f.required)} required`;
    case "thermal_throttle_fraction":
      return `${name}: ${pct(f.measured)} of the time, at most ${pct(f.required)} allowed`;
    case "network.rtt_p50_ms":
      return `${name}: ${num(f.measured)}${unit}, at most ${num(f.required)}${unit} allowed`;
    default:
      return `${name}: ${metricValue(f.metric, f.measured)}, at least ${metricValue(f.metric, f.required)} required`;
  }
}

// The failures and, once per distinct piece of advice, what to check.
function failuresBlock(failures: api.BenchmarkFailure[], title: string): HTMLElement {
  const guidance = [...new Set(failures.map((f) => f.guidance).filter(Boolean))];
  return h(
    "div",
    { class: "banner banner-error bench-failures" },
    h("p", { class: "error-title" }, title),
    h(
      "ul",
      { class: "failure-list" },
      failures.map((f) => h("li", { "data-metric": f.metric }, failureText(f))),
    ),
    guidance.length
      ? [
          h("p", { class: "guidance-title" }, "What to check:"),
          h(
            "ul",
            { class: "guidance" },
            guidance.map((g) => h("li", null, g)),
          ),
        ]
      : null,
  );
}

interface FigureRow {
  label: string;
  unit: string;
  measured: number | string | null;
  reference?: number | null;
  min?: string | null; // what is required, as shown
  metric?: string; // the failure metric that checks this row; absent: not checked
  checked?: boolean; // checked even though no minimum is shown
}

function mark(row: FigureRow, failed: Set<string>): HTMLElement {
  if (row.metric && failed.has(row.metric)) return h("span", { class: "mark fail" }, "✗ Fail");
  if (row.metric && (row.checked || row.min)) return h("span", { class: "mark pass" }, "✓ Pass");
  return h("span", { class: "mark muted" }, "not checked");
}

function figureRows(g: api.BenchmarkGpu, f: api.GpuFigures): FigureRow[] {
  const ref = g.reference;
  const t = g.thresholds;
  const min = (v: number | undefined, unit: string) => (v === undefined ? null : `${num(v)} ${unit}`);
  const rows: FigureRow[] = [
    {
      label: "FP32",
      unit: "TFLOPS",
      measured: f.compute.fp32_tflops,
      reference: ref?.fp32_tflops,
      min: min(t.fp32_tflops, "TFLOPS"),
      metric: "fp32_tflops",
    },
    {
      label: "FP16 (no tensor cores)",
      unit: "TFLOPS",
      measured: f.compute.fp16_tflops,
      reference: ref?.fp16_tflops,
      min: min(t.fp16_tflops, "TFLOPS"),
      metric: "fp16_tflops",
    },
    {
      label: "FP16 tensor cores",
      unit: "TFLOPS",
      measured: f.compute.fp16_tensor_tflops,
      reference: ref?.fp16_tensor_tflops,
      min: min(t.fp16_tensor_tflops, "TFLOPS"),
      metric: "fp16_tensor_tflops",
    },
    {
      label: "BF16 tensor cores",
      unit: "TFLOPS",
      measured: f.compute.bf16_tensor_tflops,
      reference: ref?.bf16_tensor_tflops,
      min: min(t.bf16_tensor_tflops, "TFLOPS"),
      metric: "bf16_tensor_tflops",
    },
    {
      label: "TF32 tensor cores",
      unit: "TFLOPS",
      measured: f.compute.tf32_tensor_tflops,
      reference: ref?.tf32_tensor_tflops,
      min: min(t.tf32_tensor_tflops, "TFLOPS"),
      metric: "tf32_tensor_tflops",
    },
    {
      label: "Memory bandwidth (triad)",
      unit: "GB/s",
      measured: f.memory.triad_gbps,
      reference: ref?.memory_gbps,
      min: min(t.memory_triad_gbps, "GB/s"),
      metric: "memory_triad_gbps",
    },
    { label: "Memory read", unit: "GB/s", measured: f.memory.read_gbps, reference: ref?.memory_gbps },
    { label: "Memory write", unit: "GB/s", measured: f.memory.write_gbps, reference: ref?.memory_gbps },
    { label: "Memory copy", unit: "GB/s", measured: f.memory.copy_gbps, reference: ref?.memory_gbps },
  ];
  const s = f.sustained;
  if (s.seconds > 0) {
    rows.push({
      label: `Steadiness over ${s.seconds} s of load (min / median)`,
      unit: "",
      measured: pct(s.min_over_median),
      min: pct(t.min_over_median),
      metric: "sustained_min_over_median",
    });
  } else {
    rows.push({ label: "Steadiness under sustained load", unit: "", measured: "not measured in this run" });
  }
  rows.push({
    label: "Thermal throttling",
    unit: "",
    measured: `${pct(s.thermal_throttle_fraction)} of the time${s.max_temperature_c ? `, max ${num(s.max_temperature_c)} °C` : ""}`,
    min: `at most ${pct(t.max_thermal_throttle_fraction)}`,
    metric: "thermal_throttle_fraction",
  });
  const pcieFail = g.failures.find((x) => x.metric === "pcie_width");
  rows.push({
    label: "PCIe link",
    unit: "",
    measured: f.device.pcie_width
      ? `x${f.device.pcie_width}${f.device.pcie_gen ? ` Gen ${f.device.pcie_gen}` : ""}`
      : "—",
    min: pcieFail ? `x${pcieFail.required}` : "the GPU's full width",
    metric: "pcie_width",
  });
  rows.push({
    label: "Correct results",
    unit: "",
    measured: f.sanity.ok ? "yes" : `no: ${f.sanity.failures.join("; ") || "wrong results"}`,
    min: "yes",
    metric: "sanity",
  });
  return rows;
}

function figuresTable(g: api.BenchmarkGpu, f: api.GpuFigures): HTMLElement {
  const failed = new Set(g.failures.map((x) => x.metric));
  const rows = figureRows(g, f).map((r) => {
    const measured = typeof r.measured === "number" ? `${num(r.measured)} ${r.unit}` : (r.measured ?? "—");
    const ofRef =
      typeof r.measured === "number" && r.reference ? `${Math.round((100 * r.measured) / r.reference)} %` : "—";
    const bad = r.metric !== undefined && failed.has(r.metric);
    return h(
      "tr",
      { class: bad ? "row-fail" : null, "data-metric": r.metric ?? null },
      h(
        "th",
        { scope: "row", "data-label": "Figure" },
        r.label,
        // On phones the Result column is off to the side: the mark is repeated here.
        r.metric && (bad || r.min)
          ? h("span", { class: `mark-inline ${bad ? "fail" : "pass"}`, "aria-hidden": "true" }, bad ? " ✗" : " ✓")
          : null,
      ),
      h("td", { "data-label": "Measured", class: "num" }, measured),
      h("td", { "data-label": "Reference", class: "num" }, r.reference ? `${num(r.reference)} ${r.unit}` : "—"),
      h("td", { "data-label": "% of reference", class: "num" }, ofRef),
      h("td", { "data-label": "Minimum required", class: "num" }, r.min ?? "—"),
      h("td", { "data-label": "Result" }, mark(r, failed)),
    );
  });
  const label = `Benchmark figures of ${gpuLabel(g)}`;
  return h(
    "div",
    { class: "figures-block" },
    h(
      "p",
      { class: "scroll-hint small muted", "aria-hidden": "true" },
      "Swipe the table sideways for the reference, the minimum and the result →",
    ),
    h(
      "div",
      {
        class: "table-wrap table-scroll",
        role: "region",
        "aria-label": label,
        tabindex: 0,
        "data-focus": `figures-${g.gpu_id}`,
      },
      h(
        "table",
        { class: "bench-table bench-figures" },
        h("caption", { class: "visually-hidden" }, label),
        h(
          "thead",
          null,
          h(
            "tr",
            null,
            ["Figure", "Measured", "Reference", "% of reference", "Minimum required", "Result"].map((x) =>
              h("th", { scope: "col" }, x),
            ),
          ),
        ),
        h("tbody", null, rows),
      ),
    ),
  );
}

// ---- what the tab knows about one machine

interface Snapshot {
  machine: api.Machine;
  runs: api.BenchmarkRun[]; // newest first
}

interface GpuResult {
  run: api.BenchmarkRun;
  gpu: api.BenchmarkGpu;
}

// The GPU's latest finished result, and the running run that includes it, if any.
function latestFor(gpuId: string, runs: api.BenchmarkRun[]): { done: GpuResult | null; running: GpuResult | null } {
  let done: GpuResult | null = null;
  let running: GpuResult | null = null;
  for (const run of runs) {
    const gpu = run.gpus.find((g) => g.gpu_id === gpuId);
    if (!gpu) continue;
    if (run.state === "running" || gpu.state === "running") {
      running = running ?? { run, gpu };
      continue;
    }
    done = { run, gpu };
    break;
  }
  return { done, running };
}

function gpuCard(mg: api.MachineGpu, snap: Snapshot): HTMLElement {
  const { done, running } = latestFor(mg.id, snap.runs);
  const g = done?.gpu ?? null;
  const f = g?.figures ?? null;
  const listing = listingText(mg);
  const titleId = `bench-gpu-${mg.id}`;
  const scoreValue = g?.performance_score ?? mg.performance_score;

  let verdict: HTMLElement | null = null;
  if (g?.state === "failed") {
    verdict = failuresBlock(g.failures, `Failed: ${plural(g.failures.length, "figure")} below the minimum`);
  } else if (g?.state === "error") {
    verdict = h(
      "div",
      { class: "banner banner-warn bench-error" },
      h("p", { class: "error-title" }, "The benchmark could not measure this GPU"),
      h("p", null, g.error ?? done?.run.error ?? "no result"),
      h("p", { class: "small" }, "Its listing is unchanged; it is tried again later, or re-run it now."),
    );
  } else if (g?.state === "passed") {
    verdict = h(
      "p",
      { class: "banner banner-ok bench-pass" },
      "Passed: every figure is at or above its minimum for this model.",
    );
  }

  return h(
    "article",
    { class: "card bench-gpu", "data-gpu-id": mg.id, "aria-labelledby": titleId },
    h(
      "header",
      { class: "bench-gpu-head" },
      h("h3", { id: titleId }, `GPU ${mg.index} · ${mg.name}`),
      g ? stateBadge(g.state) : h("span", { class: "badge" }, "NOT BENCHMARKED YET"),
      running ? stateBadge("running", "now") : null,
      (f?.emulated ?? mg.emulated) ? emulatedBadge() : null,
    ),
    h(
      "div",
      { class: "bench-summary" },
      h(
        "div",
        { class: "score-box", role: "group", "aria-label": "Performance score" },
        h("span", { class: "score-label" }, "Performance score"),
        h("span", { class: "score-value" }, scoreValue === null || scoreValue === undefined ? "—" : score(scoreValue)),
        h("span", { class: "score-scale small muted" }, "100 = A100-SXM-80GB at its peaks"),
      ),
      h(
        "dl",
        { class: "facts bench-facts" },
        h("dt", null, "Listing"),
        h(
          "dd",
          { class: `listing ${listing.ok ? "listed" : "not-listed"}` },
          listing.ok ? h("span", { class: "badge badge-ok" }, "Listed") : h("span", { class: "badge" }, "Not listed"),
          " ",
          listing.ok ? "Offered to customers" : listing.text.replace(/^Not listed: /, ""),
        ),
        h("dt", null, "Last benchmarked"),
        h("dd", null, mg.last_benchmark_at ? `${when(mg.last_benchmark_at)} (${ago(mg.last_benchmark_at)})` : "never"),
        done
          ? [
              h("dt", null, "Results from"),
              h(
                "dd",
                null,
                `the run of ${when(done.run.finished_at ?? done.run.created_at)} (${reasonName(done.run.reason)})`,
              ),
            ]
          : null,
        g?.reference
          ? null
          : g
            ? [
                h("dt", null, "Reference"),
                h("dd", null, "none for this model: only steadiness, link and sanity are checked"),
              ]
            : null,
      ),
    ),
    running
      ? h(
          "p",
          { class: "small muted running-note" },
          `A benchmark of this GPU is running (started ${ago(running.run.created_at)}).`,
        )
      : null,
    verdict,
    f
      ? figuresTable(g!, f)
      : g
        ? null
        : h(
            "p",
            { class: "muted" },
            running
              ? "Its first results appear here when the running benchmark ends."
              : "No results yet: GPUs are benchmarked when the machine connects, and never while rented.",
          ),
  );
}

// ---- network and storage

interface MachineRow {
  label: string;
  value: string;
  metric?: string;
}

function machineFiguresTable(caption: string, rows: MachineRow[], failures: api.BenchmarkFailure[]): HTMLElement {
  const byMetric = new Map(failures.map((f) => [f.metric, f]));
  return h(
    "div",
    { class: "table-wrap table-scroll", role: "region", "aria-label": caption, tabindex: 0, "data-focus": caption },
    h(
      "table",
      { class: "bench-table bench-machine" },
      h("caption", { class: "visually-hidden" }, caption),
      h(
        "thead",
        null,
        h(
          "tr",
          null,
          ["Figure", "Measured", "Result"].map((x) => h("th", { scope: "col" }, x)),
        ),
      ),
      h(
        "tbody",
        null,
        rows.map((r) => {
          const fail = r.metric ? byMetric.get(r.metric) : undefined;
          const result = fail
            ? h(
                "span",
                { class: "mark fail" },
                `✗ Fail: ${r.metric === "network.rtt_p50_ms" ? "at most" : "at least"} ${metricValue(fail.metric, fail.required)}`,
              )
            : r.metric
              ? h("span", { class: "mark pass" }, "✓ Pass")
              : h("span", { class: "mark muted" }, "not checked");
          return h(
            "tr",
            { class: fail ? "row-fail" : null, "data-metric": r.metric ?? null },
            h("th", { scope: "row", "data-label": "Figure" }, r.label),
            h("td", { "data-label": "Measured", class: "num" }, r.value),
            h("td", { "data-label": "Result" }, result),
          );
        }),
      ),
    ),
  );
}

function machineSection(snap: Snapshot): HTMLElement {
  const withNet = snap.runs.find((r) => r.network);
  const withDisk = snap.runs.find((r) => r.storage);
  const parts: HTMLElement[] = [];
  if (withNet?.network) {
    const n = withNet.network;
    const fails = withNet.machine_failures.filter((f) => f.metric.startsWith("network."));
    parts.push(
      h(
        "div",
        { class: "bench-machine-part" },
        h("h3", null, "Network"),
        h(
          "p",
          { class: "small muted" },
          `To this platform; run of ${when(withNet.finished_at ?? withNet.created_at)}.`,
        ),
        machineFiguresTable(
          "Network figures",
          [
            { label: "Download", value: bitRate(n.download_mbit_s), metric: "network.download_mbit_s" },
            { label: "Upload", value: bitRate(n.upload_mbit_s), metric: "network.upload_mbit_s" },
            { label: "Round trip (median)", value: `${num(n.rtt_p50_ms)} ms`, metric: "network.rtt_p50_ms" },
            { label: "Round trip (99th percentile)", value: `${num(n.rtt_p99_ms)} ms` },
          ],
          fails,
        ),
        fails.length ? failuresBlock(fails, "The network is below the minimum") : null,
      ),
    );
  }
  if (withDisk?.storage) {
    const s = withDisk.storage;
    const fails = withDisk.machine_failures.filter((f) => f.metric.startsWith("storage."));
    parts.push(
      h(
        "div",
        { class: "bench-machine-part" },
        h("h3", null, "Storage"),
        h(
          "p",
          { class: "small muted" },
          `The agent's work area, where datasets live; run of ${when(withDisk.finished_at ?? withDisk.created_at)}.`,
        ),
        machineFiguresTable(
          "Storage figures",
          [
            {
              label: "Sequential read (1 MiB blocks)",
              value: byteRate(s.seq_read_mb_s),
              metric: "storage.seq_read_mb_s",
            },
            {
              label: "Sequential write (1 MiB blocks)",
              value: byteRate(s.seq_write_mb_s),
              metric: "storage.seq_write_mb_s",
            },
            { label: "Random reads (4 KiB)", value: `${num(s.rand_read_iops)} IOPS`, metric: "storage.rand_read_iops" },
            {
              label: "Random read latency (median / 99th percentile)",
              value: `${num(s.rand_read_p50_us)} / ${num(s.rand_read_p99_us)} µs`,
            },
            {
              label: "Direct I/O (page cache bypassed)",
              value: s.direct_io ? "yes" : "no: figures may include the page cache",
            },
          ],
          fails,
        ),
        fails.length ? failuresBlock(fails, "The disk is below the minimum") : null,
      ),
    );
  }
  return h(
    "section",
    { class: "card bench-machine-card", "aria-labelledby": "bench-machine-title" },
    h("h2", { id: "bench-machine-title" }, "Network and storage"),
    parts.length
      ? h("div", { class: "bench-machine-parts" }, parts)
      : h(
          "p",
          { class: "muted" },
          "Not measured yet: the network and storage tests run with the machine's first benchmark and after hardware changes.",
        ),
    parts.length
      ? h(
          "p",
          { class: "small muted" },
          "A machine below a network or storage minimum has all the GPUs of that run delisted until a re-run passes.",
        )
      : null,
  );
}

// ---- history

function historySection(snap: Snapshot, stops: Array<() => void>): HTMLElement {
  const byGpu = new Map<string, ChartSeries>();
  const order = [...snap.machine.gpus].sort((a, b) => a.index - b.index);
  for (const g of order) byGpu.set(g.id, { name: `GPU ${g.index} · ${g.name}`, points: [] });
  for (const run of snap.runs) {
    for (const g of run.gpus) {
      if (g.performance_score === null) continue;
      let s = byGpu.get(g.gpu_id);
      if (!s) {
        s = { name: `GPU ${g.index} · ${g.name}`, points: [] };
        byGpu.set(g.gpu_id, s);
      }
      const at = run.finished_at ?? run.created_at;
      s.points.push({
        t: new Date(at).getTime(),
        y: g.performance_score,
        label: `GPU ${g.index}: ${score(g.performance_score)} (${g.state}, ${reasonName(run.reason)}), ${when(at)}`,
        hollow: g.state !== "passed",
      });
    }
  }
  const series = [...byGpu.values()].filter((s) => s.points.length);
  const description = series.length
    ? series
        .map((s) => {
          const pts = [...s.points].sort((a, b) => a.t - b.t);
          const ys = pts.map((p) => p.y);
          return `${s.name}: ${plural(pts.length, "run")}, score from ${score(Math.min(...ys))} to ${score(Math.max(...ys))}, latest ${score(pts[pts.length - 1].y)}.`;
        })
        .join(" ")
    : "No scores yet.";

  let chart: HTMLElement;
  if (series.length) {
    const box = h("div", { class: "chart-box" });
    stops.push(
      fitChart(box, (width) =>
        lineChart({
          title: `Performance score per run of ${machineTitle(snap.machine)}`,
          description,
          xLabel: "Run finished",
          yLabel: "Score (A100 = 100)",
          series,
          width,
          height: 240,
        }),
      ),
    );
    chart = h(
      "figure",
      { class: "bench-chart" },
      box,
      h(
        "figcaption",
        null,
        chartLegend(
          series,
          series.some((s) => s.points.some((p) => p.hollow)) ? "ring: the run failed or erred" : undefined,
        ),
      ),
    );
  } else {
    chart = h("p", { class: "muted" }, "No scores yet: the chart starts with the first finished benchmark.");
  }
  const runs = h(
    "ol",
    { class: "run-list", "aria-label": "Past runs, newest first" },
    snap.runs.map((r) =>
      h(
        "li",
        { class: `run run-${r.state}`, "data-run-id": r.id },
        h("time", { datetime: r.created_at }, when(r.created_at)),
        h("span", { class: "run-reason" }, reasonName(r.reason)),
        stateBadge(r.state),
        r.emulated ? h("span", { class: "badge badge-warn" }, "EMULATED") : null,
        h(
          "span",
          { class: "run-scores small" },
          r.gpus
            .map(
              (g) =>
                `GPU ${g.index}: ${g.performance_score === null ? g.state : `score ${score(g.performance_score)}`}`,
            )
            .join(" · "),
        ),
        r.error ? h("span", { class: "run-error small" }, r.error) : null,
      ),
    ),
  );

  return h(
    "section",
    { class: "card bench-history", "aria-labelledby": "bench-history-title" },
    h("h2", { id: "bench-history-title" }, "History"),
    chart,
    h("h3", null, "Past runs"),
    snap.runs.length ? runs : h("p", { class: "muted" }, "No runs yet."),
  );
}

// ---- one machine: header with the re-run button, then its content, kept fresh

function scoreExplainer(): HTMLElement {
  return h(
    "details",
    { class: "card score-explainer" },
    h("summary", null, "About the performance score: 100 = an A100-SXM-80GB at its datasheet peaks"),
    h(
      "p",
      null,
      "The score makes GPUs of different models comparable. It is a weighted geometric mean of the measured figures, each relative to the A100-SXM-80GB's datasheet peak: FP32 (weight 0.15), FP16 without tensor cores (0.05), FP16 and BF16 tensor cores (0.15 and 0.20), TF32 tensor cores (0.10) and memory bandwidth (triad, 0.35).",
    ),
    h(
      "p",
      null,
      "Healthy hardware reaches about 80–90 % of its own model's peaks: an L4 at its peaks scores about 34, an H100 SXM about 247. Customers see the score. Pass or fail does not depend on it: a GPU fails when a figure is below the minimum for its model (the table's last columns), and is then not offered until a re-run passes.",
    ),
  );
}

// Shows `first` in `host` until the returned function is called or the view ends.
function machinePanel(v: View, host: HTMLElement, first: api.Machine): () => void {
  const ctrl = new AbortController();
  const onAbort = () => ctrl.abort();
  v.signal.addEventListener("abort", onAbort);
  const slot = new StatusSlot();
  const problem = h("div");
  const head = h("div", { class: "bench-head-line" });
  const running = h("div", { class: "bench-running", role: "status", "aria-live": "polite" });
  const content = h(
    "div",
    { class: "bench-content", "aria-busy": "true" },
    h("p", { class: "muted" }, "Loading benchmark results…"),
  );
  const rerun = button("Re-run benchmark", () => void start(), {
    kind: "primary",
    attrs: { "aria-describedby": "rerun-hint" },
  });
  const card = h(
    "section",
    { class: "card bench-machine-head", "aria-labelledby": "bench-machine-name" },
    head,
    h(
      "p",
      { class: "small muted", id: "rerun-hint" },
      "GPUs are benchmarked when the machine first connects, after a driver or hardware change, weekly, and when you ask. Rented GPUs are left out; a run takes a few minutes.",
    ),
    h("div", { class: "actions" }, rerun),
    slot.el,
  );
  // The explainer stays put across refreshes (a reader may have opened it).
  replace(host, card, running, problem, scoreExplainer(), content);

  let snap: Snapshot | null = null;
  let shape = "";
  let timer = 0;
  let stops: Array<() => void> = [];
  let wasRunning = false;
  const stopCharts = () => {
    stops.forEach((s) => s());
    stops = [];
  };
  ctrl.signal.addEventListener("abort", () => {
    window.clearTimeout(timer);
    stopCharts();
    v.signal.removeEventListener("abort", onAbort);
  });

  const runningRun = () => snap?.runs.find((r) => r.state === "running") ?? null;

  function renderHead(m: api.Machine): void {
    const online = m.status === "online";
    replace(
      head,
      h("h2", { id: "bench-machine-name" }, machineTitle(m)),
      h(
        "span",
        { class: `badge machine-status ${online ? "badge-ok" : "badge-off"}` },
        h("span", { class: "dot", "aria-hidden": "true" }),
        online ? "Online" : "Offline",
      ),
      m.emulated ? emulatedBadge() : null,
      h("span", { class: "muted small" }, plural(m.gpus.length, "GPU")),
    );
  }

  function renderRunning(): void {
    const r = runningRun();
    // aria-disabled, not disabled: the button keeps the keyboard focus and says why.
    if (r) rerun.setAttribute("aria-disabled", "true");
    else rerun.removeAttribute("aria-disabled");
    replace(
      running,
      r
        ? h(
            "div",
            { class: "banner banner-info running-banner" },
            h("span", { class: "spinner", "aria-hidden": "true" }),
            h(
              "span",
              null,
              h("strong", null, "Benchmark running"),
              ` since ${when(r.created_at)} (${reasonName(r.reason)}) on ${r.gpus.map((g) => `GPU ${g.index}`).join(", ")}${r.machine_phases ? ", plus network and storage" : ""}. The results appear here when it ends.`,
            ),
          )
        : null,
    );
  }

  function render(): void {
    if (!snap) return;
    stopCharts();
    renderHead(snap.machine);
    renderRunning();
    const gpus = [...snap.machine.gpus].sort((a, b) => a.index - b.index);
    content.removeAttribute("aria-busy");
    replaceKeepingFocus(
      content,
      h(
        "section",
        { class: "bench-gpus", "aria-labelledby": "bench-gpus-title" },
        h("h2", { id: "bench-gpus-title", class: "section-title" }, "GPUs"),
        gpus.length
          ? gpus.map((g) => gpuCard(g, snap!))
          : h("p", { class: "muted card" }, "This machine reports no GPUs."),
      ),
      machineSection(snap),
      historySection(snap, stops),
    );
  }

  const load = async (): Promise<void> => {
    const id = encodeURIComponent(first.id);
    const [machine, page] = await Promise.all([
      api.get<api.Machine>(`/machines/${id}`, { signal: ctrl.signal }),
      api.get<api.Page<api.BenchmarkRun>>(`/machines/${id}/benchmarks?limit=${kHistoryRuns}`, { signal: ctrl.signal }),
    ]);
    snap = { machine, runs: page.items };
    // Re-render only when something a person sees changed (telemetry does not count), so
    // that the page does not jump under the reader every few seconds.
    const now = JSON.stringify({
      s: machine.status,
      g: machine.gpus.map((g) => [g.id, g.listing_state, g.listing_note, g.performance_score, g.last_benchmark_at]),
      r: page.items.map((r) => [r.id, r.state, r.finished_at]),
    });
    const r = runningRun();
    if (wasRunning && !r) {
      const last = snap.runs[0];
      if (last) {
        slot.ok(
          `The benchmark finished: ${kStateBadges[last.state]?.text ?? last.state}${last.gpus.length ? ` (${last.gpus.map((g) => `GPU ${g.index} ${g.state}${g.performance_score !== null ? `, score ${score(g.performance_score)}` : ""}`).join("; ")})` : ""}.`,
        );
      }
    }
    wasRunning = r !== null;
    if (now !== shape) {
      shape = now;
      render();
    } else {
      renderHead(machine); // "Online" may change without the shape changing
    }
    replace(problem);
  };

  // Polls fast while a run is running or the first one is awaited, slowly otherwise.
  const schedule = () => {
    window.clearTimeout(timer);
    if (ctrl.signal.aborted) return;
    const awaiting =
      snap !== null &&
      snap.machine.status === "online" &&
      snap.machine.gpus.some((g) => g.listing_state === "awaiting_first_benchmark");
    timer = window.setTimeout(() => void tick(), runningRun() || awaiting ? kFastPollMs : kSlowPollMs);
  };
  const tick = async () => {
    try {
      await load();
    } catch (e) {
      if (isAbort(e) || ctrl.signal.aborted) return;
      replace(problem, errorBanner(e, "Could not refresh the benchmark results (retrying)"));
    }
    schedule();
  };

  async function start(): Promise<void> {
    if (runningRun()) {
      slot.ok("A benchmark is already running on this machine: its results appear here when it ends.");
      return;
    }
    await busy(rerun, async () => {
      slot.clear();
      try {
        const run = await api.post<api.BenchmarkRun>(`/machines/${encodeURIComponent(first.id)}/benchmarks`, {});
        slot.ok(
          `Benchmark started on ${run.gpus.map((g) => `GPU ${g.index}`).join(", ") || "the machine"}. Results appear here when it ends.`,
        );
      } catch (e) {
        if (e instanceof api.ApiError && e.status === 409) {
          slot.error(e, "The benchmark cannot start now");
        } else {
          slot.error(e, "The benchmark was not started");
        }
      }
    });
    window.clearTimeout(timer);
    await tick();
  }

  void tick();
  return () => ctrl.abort();
}

export const benchmarkTab: ProviderTab = {
  id: "benchmark",
  label: "Benchmark",
  async render(v, panel) {
    const machines = await loadMachines(
      v,
      panel,
      "Benchmarks run by themselves when a machine's agent first connects; its results appear here.",
    );
    if (!machines) return;
    const host = h("div", { class: "bench-machine" });
    let stop: (() => void) | null = null;
    machinePicker(panel, {
      tab: "benchmark",
      machines,
      wanted: v.query.get("machine"),
      show: (id) => {
        const m = machines.find((x) => x.id === id) ?? machines[0];
        stop?.();
        stop = machinePanel(v, host, m);
      },
    });
    panel.appendChild(host);
  },
};
