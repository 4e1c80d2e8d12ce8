// The Performance tab (#/provider/performance, ?machine=<id> for one machine): the
// reliability score of the provider (the GPU-weighted mean over its machines) or of one
// machine, "new" with a provisional score until 24 scheduled hours; its three components
// (uptime, job completion, benchmark consistency) as bars with their formulas; uptime
// within the schedule over 24 h, 7 d and 30 d with the outages; the daily history as a
// chart; the events that moved the score, each with its effect, a page at a time; and
// what to do to raise it. Refreshed every 30 s. Formula: docs/reliability-score.md.
import * as api from "../../api";
import type { View } from "../../app";
import { chartLegend, fitChart, lineChart, svg, type ChartSeries } from "../../components/chart";
import { pageThrough } from "../../components/paging";
import { append, button, h, replace } from "../../dom";
import { errorBanner, isAbort, StatusSlot } from "../../errors";
import { ago, duration, percent, plural, when } from "../../format";
import { gpuLabel, machineTitle } from "./overview";
import { loadMachines, machinePicker } from "./picker";
import type { ProviderTab } from "./tabs";

const kPollMs = 30000;
const kEventsPage = 20;
const kNewUntilHours = 24;

const kEventKinds: Record<string, string> = {
  outage: "Outage",
  job_ended: "Job ended",
  benchmark_degraded: "Benchmark",
  throttling: "Throttling",
};

function score(n: number): string {
  return n.toFixed(2);
}

// An effect on the score in points: −0.8, +0.3, 0.0 (a true minus sign).
function impactText(points: number): string {
  const digits = points !== 0 && Math.abs(points) < 0.1 ? 2 : 1;
  const abs = Math.abs(points).toFixed(digits);
  if (Number(abs) === 0) return (0).toFixed(digits);
  return points < 0 ? `−${abs}` : `+${abs}`;
}

// Scheduled time: "25 min", "12.5 h".
function hoursText(hours: number): string {
  return hours < 1 ? `${Math.round(hours * 60)} min` : `${hours.toFixed(1)} h`;
}

function level(fraction: number): "ok" | "warn" | "bad" {
  return fraction >= 0.95 ? "ok" : fraction >= 0.8 ? "warn" : "bad";
}

// A horizontal bar for a fraction 0..1 (drawn as SVG: the CSP allows no inline styles).
function bar(fraction: number): SVGSVGElement {
  const f = Math.max(0, Math.min(1, fraction));
  return svg(
    "svg",
    {
      class: `bar bar-${level(f)}`,
      viewBox: "0 0 100 10",
      preserveAspectRatio: "none",
      "aria-hidden": "true",
      focusable: "false",
    },
    svg("rect", { class: "bar-track", x: 0, y: 0, width: 100, height: 10, rx: 2 }),
    svg("rect", { class: "bar-fill", x: 0, y: 0, width: (100 * f).toFixed(2), height: 10, rx: 2 }),
  );
}

function statusBadge(status: "new" | "scored"): HTMLElement {
  return status === "new"
    ? h("span", { class: "badge badge-warn rel-status" }, "New — provisional score")
    : h("span", { class: "badge badge-ok rel-status" }, "Scored");
}

// ---- the parts of the tab

interface Scope {
  machine: api.Machine | null; // null: every machine of the provider
  machines: api.Machine[];
}

function scoreCard(r: api.Reliability, scope: Scope): HTMLElement {
  const below = r.status === "scored" && r.score < r.threshold;
  const name = scope.machine ? machineTitle(scope.machine) : "All your machines";
  const uptime = (label: string, value: number | null) =>
    h(
      "div",
      { class: "uptime-tile", "data-window": label },
      h("span", { class: "score-label" }, `Uptime ${label}`),
      h("span", { class: "tile-value" }, value === null ? "—" : percent(value)),
      value === null ? h("span", { class: "small muted" }, "no scheduled time") : null,
    );
  return h(
    "section",
    { class: "card rel-summary", "aria-labelledby": "rel-title" },
    h("div", { class: "bench-head-line" }, h("h2", { id: "rel-title" }, `Reliability score · ${name}`)),
    h(
      "div",
      { class: "bench-summary" },
      h(
        "div",
        {
          class: `score-box rel-score ${below ? "below" : ""}`.trim(),
          role: "group",
          "aria-label": "Reliability score",
        },
        h("span", { class: "score-label" }, "Reliability score"),
        h("span", { class: "score-value" }, score(r.score)),
        h("span", { class: "score-scale small muted" }, "out of 100"),
        statusBadge(r.status),
      ),
      h(
        "div",
        { class: "rel-facts" },
        h(
          "div",
          { class: "uptime-tiles" },
          uptime("24 h", r.uptime_24h),
          uptime("7 d", r.uptime_7d),
          uptime("30 d", r.uptime_30d),
          h(
            "div",
            { class: "uptime-tile", "data-window": "outages" },
            h("span", { class: "score-label" }, "Outages (30 d)"),
            h("span", { class: "tile-value outage-count" }, String(r.outages.count)),
            h(
              "span",
              { class: "small muted outage-total" },
              r.outages.count ? `${duration(r.outages.total_s)} in total` : "none in scheduled time",
            ),
          ),
        ),
        h(
          "p",
          { class: "small muted" },
          `Uptime within the availability schedule, over ${hoursText(r.scheduled_hours)} of scheduled time in the last 30 days. Computed ${ago(r.computed_at)}.`,
        ),
      ),
    ),
    r.status === "new"
      ? h(
          "p",
          { class: "banner banner-info rel-new" },
          `New — provisional score: ${scope.machine ? "a machine" : "your score"} counts as new until ${scope.machine ? "it has" : "a machine has"} ${kNewUntilHours} scheduled hours (${hoursText(r.scheduled_hours)} so far). Until then the score can still move a lot with each event.`,
        )
      : below
        ? h(
            "p",
            { class: "banner banner-warn rel-below" },
            `Below ${r.threshold}: customers and the marketplace ranking see a low reliability score. It recovers as recent time goes well: older events weigh less every day.`,
          )
        : null,
    scope.machine
      ? null
      : h(
          "p",
          { class: "small muted" },
          "Your score is the mean of your machines' scores, each weighted by its number of GPUs.",
        ),
  );
}

function componentsCard(r: api.Reliability, scope: Scope): HTMLElement {
  const c = r.components;
  const row = (key: string, letter: string, name: string, value: number, formula: string, words: string) =>
    h(
      "li",
      { class: "component", "data-component": key },
      h(
        "div",
        { class: "component-head" },
        h("span", { class: "component-name" }, `${name} (${letter})`),
        h("span", { class: "component-value" }, percent(value)),
      ),
      bar(value),
      h("p", { class: "formula" }, h("code", null, formula)),
      h("p", { class: "small muted" }, words),
    );
  const plugged = `= 100 · ${c.uptime.toFixed(4)}^0.5 · ${c.completion.toFixed(4)}^0.3 · ${c.benchmark.toFixed(4)}^0.2 ≈ ${score(r.score)}`;
  return h(
    "section",
    { class: "card rel-components", "aria-labelledby": "components-title" },
    h("h2", { id: "components-title" }, "What the score is made of"),
    h(
      "p",
      { class: "formula main-formula" },
      h("code", null, "R = 100 · U^0.5 · C^0.3 · B^0.2"),
      scope.machine ? h("code", { class: "plugged" }, plugged) : null,
    ),
    h(
      "ul",
      { class: "components" },
      row(
        "uptime",
        "U",
        "Uptime",
        c.uptime,
        "U = weighted online scheduled time / weighted scheduled time",
        "The share of your scheduled hours the agent was online. Planned maintenance (declared at least 24 h ahead) is left out.",
      ),
      row(
        "completion",
        "C",
        "Job completion",
        c.completion,
        "C = (Σw·ok + 5·0.95) / (Σw·ended + 5)",
        "Jobs ended by a fault of the provider count against; those ended by the platform or the customer are left out. It starts from 5 jobs at 95 %.",
      ),
      row(
        "benchmark",
        "B",
        "Benchmark consistency",
        c.benchmark,
        "B = min(1, latest/baseline) · (1 − 0.5 · throttled fraction)",
        "Each GPU's latest benchmark against its baseline (the median of its first three passing runs), less half the share of loaded time it was throttled; averaged over the GPUs.",
      ),
    ),
    h(
      "p",
      { class: "small muted" },
      "Over the last 30 days, each event weighted by w = 2^(−age in days / 7): an outage a week ago counts half as much as one today, one 29 days ago about 1/16.",
    ),
  );
}

function adviceCard(r: api.Reliability): HTMLElement {
  return h(
    "section",
    { class: "card rel-advice", "aria-labelledby": "advice-title" },
    h("h2", { id: "advice-title" }, "How to raise your score"),
    r.advice.length
      ? h(
          "ul",
          { class: "advice" },
          r.advice.map((a) => h("li", null, a)),
        )
      : h(
          "p",
          { class: "muted" },
          "Nothing to fix: keep the agent online during your scheduled hours and declare maintenance at least 24 h ahead.",
        ),
  );
}

function historyCard(r: api.Reliability, scope: Scope, stops: Array<() => void>): HTMLElement {
  const points = r.history.map((d) => ({
    t: new Date(`${d.day}T12:00:00Z`).getTime(),
    y: d.score,
    label: `${d.day}: ${score(d.score)}${d.status === "new" ? " (provisional)" : ""}`,
    hollow: d.status === "new",
  }));
  const series: ChartSeries[] = [{ name: "Reliability score", points }];
  if (points.length > 1) {
    series.push({
      name: `Threshold (${r.threshold})`,
      points: [points[0], points[points.length - 1]].map((p) => ({
        t: p.t,
        y: r.threshold,
        label: `Threshold: ${r.threshold}`,
      })),
    });
  }
  let body: HTMLElement;
  if (points.length) {
    const ys = points.map((p) => p.y);
    const description = `${plural(points.length, "day")}, from ${r.history[0].day} to ${r.history[r.history.length - 1].day}; score from ${score(Math.min(...ys))} to ${score(Math.max(...ys))}, today ${score(ys[ys.length - 1])}.`;
    const box = h("div", { class: "chart-box" });
    stops.push(
      fitChart(box, (width) =>
        lineChart({
          title: `Reliability score per day of ${scope.machine ? machineTitle(scope.machine) : "your machines"}`,
          description,
          xLabel: "Day",
          yLabel: "Score",
          series,
          width,
          height: 220,
          yMax: 100,
          days: true,
        }),
      ),
    );
    body = h(
      "figure",
      { class: "bench-chart rel-chart" },
      box,
      h(
        "figcaption",
        null,
        chartLegend(series, points.some((p) => p.hollow) ? "ring: provisional (new)" : undefined),
        points.length === 1
          ? h("p", { class: "small muted" }, "The history starts today; a point is kept for every day.")
          : null,
      ),
    );
  } else {
    body = h("p", { class: "muted" }, "No history yet: a point is kept for every day.");
  }
  return h(
    "section",
    { class: "card rel-history", "aria-labelledby": "rel-history-title" },
    h("h2", { id: "rel-history-title" }, "History (30 days)"),
    body,
  );
}

function machinesCard(p: api.ProviderReliability): HTMLElement {
  const rows = [...p.machines]
    .sort((a, b) => a.score - b.score)
    .map((m) =>
      h(
        "tr",
        { "data-machine-id": m.machine_id },
        h(
          "td",
          { "data-label": "Machine" },
          h(
            "a",
            { href: `#/provider/performance?machine=${encodeURIComponent(m.machine_id)}` },
            m.name || m.machine_id,
          ),
        ),
        h("td", { "data-label": "GPUs", class: "num" }, String(m.gpus)),
        h(
          "td",
          { "data-label": "Score", class: "num" },
          h("strong", null, score(m.score)),
          m.status === "new" ? h("span", { class: "badge badge-warn" }, "New") : null,
        ),
        h("td", { "data-label": "Uptime", class: "num" }, percent(m.components.uptime)),
        h("td", { "data-label": "Completion", class: "num" }, percent(m.components.completion)),
        h("td", { "data-label": "Benchmark", class: "num" }, percent(m.components.benchmark)),
        h("td", { "data-label": "Uptime 30 d", class: "num" }, percent(m.uptime_30d)),
      ),
    );
  return h(
    "section",
    { class: "card rel-machines", "aria-labelledby": "rel-machines-title" },
    h("h2", { id: "rel-machines-title" }, "Machines"),
    rows.length
      ? h(
          "div",
          { class: "table-wrap" },
          h(
            "table",
            { class: "rel-machine-table" },
            h(
              "thead",
              null,
              h(
                "tr",
                null,
                ["Machine", "GPUs", "Score", "Uptime", "Completion", "Benchmark", "Uptime 30 d"].map((x) =>
                  h("th", { scope: "col" }, x),
                ),
              ),
            ),
            h("tbody", null, rows),
          ),
        )
      : h("p", { class: "muted" }, "No machine has a score yet."),
  );
}

function eventItem(e: api.ReliabilityEvent, scope: Scope): HTMLElement {
  const m = scope.machines.find((x) => x.id === e.machine_id);
  const g = e.gpu_id ? m?.gpus.find((x) => x.id === e.gpu_id) : undefined;
  const where = [scope.machine ? null : m ? machineTitle(m) : e.machine_id, g ? gpuLabel(g) : null].filter(Boolean);
  const cls = e.impact < 0 ? "impact down" : e.impact > 0 ? "impact up" : "impact";
  return h(
    "li",
    { class: `rel-event event-${e.kind}` },
    h(
      "div",
      { class: "rel-event-head" },
      h("span", { class: "badge" }, kEventKinds[e.kind] ?? e.kind),
      h("time", { datetime: e.at, class: "small muted" }, when(e.at)),
      where.length ? h("span", { class: "small muted" }, where.join(" · ")) : null,
    ),
    h(
      "p",
      { class: "rel-event-text" },
      h("span", { class: "description" }, e.description),
      ": ",
      h("strong", { class: cls, title: "Points of the score" }, impactText(e.impact)),
    ),
    h(
      "p",
      { class: "small muted" },
      [e.duration_s !== null ? duration(e.duration_s) : null, `weight ${e.weight.toFixed(2)}`]
        .filter(Boolean)
        .join(" · "),
    ),
  );
}

// ---- the tab's content for one scope, kept fresh

function scopePanel(v: View, host: HTMLElement, scope: Scope): () => void {
  const ctrl = new AbortController();
  const onAbort = () => ctrl.abort();
  v.signal.addEventListener("abort", onAbort);
  let timer = 0;
  let stops: Array<() => void> = [];
  const stopCharts = () => {
    stops.forEach((s) => s());
    stops = [];
  };
  ctrl.signal.addEventListener("abort", () => {
    window.clearTimeout(timer);
    stopCharts();
    v.signal.removeEventListener("abort", onAbort);
  });
  const problem = h("div");
  const summary = h(
    "div",
    { class: "rel-content", "aria-busy": "true" },
    h("p", { class: "muted" }, "Loading the reliability score…"),
  );
  const events = h("div");
  const stamp = h("p", { class: "muted small updated" });
  replace(host, problem, summary, events, stamp);
  const path = scope.machine
    ? `/machines/${encodeURIComponent(scope.machine.id)}/reliability`
    : "/providers/me/reliability";
  const fetchPage = (cursor: string | null) =>
    api.get<api.Reliability | api.ProviderReliability>(
      `${path}?limit=${kEventsPage}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
      { signal: ctrl.signal },
    );

  let shape = "";
  let eventsShape = "";
  let paged = false;

  function renderSummary(r: api.Reliability): void {
    stopCharts();
    summary.removeAttribute("aria-busy");
    replace(
      summary,
      scoreCard(r, scope),
      componentsCard(r, scope),
      adviceCard(r),
      historyCard(r, scope, stops),
      "machines" in r ? machinesCard(r as api.ProviderReliability) : null,
    );
  }

  function renderEvents(first: api.Reliability): void {
    const slot = new StatusSlot();
    const list = h("ol", { class: "rel-events", "aria-label": "Events, newest first" });
    const more = button("Show older events", () => {}, { attrs: { hidden: true } });
    const empty = h(
      "p",
      { class: "muted empty-events" },
      "No events in the last 30 days: outages during scheduled time, jobs ended by a fault of the provider, benchmark degradations and throttling appear here with what they took from the score.",
    );
    replace(
      events,
      h(
        "section",
        { class: "card rel-events-card", "aria-labelledby": "rel-events-title" },
        h("h2", { id: "rel-events-title" }, "What moved the score"),
        slot.el,
        first.events.length ? list : empty,
        more,
      ),
    );
    paged = false;
    void pageThrough(
      more,
      slot,
      async (cursor) => {
        const r = cursor === null ? first : await fetchPage(cursor);
        if (cursor !== null) paged = true;
        append(
          list,
          r.events.map((e) => eventItem(e, scope)),
        );
        return r.events_next_cursor;
      },
      "Could not show the events",
      "Could not load older events",
    );
  }

  const load = async () => {
    const r = await fetchPage(null);
    const now = JSON.stringify([
      r.score,
      r.status,
      r.components,
      r.uptime_24h,
      r.uptime_7d,
      r.uptime_30d,
      r.outages,
      r.history,
      r.advice,
      "machines" in r ? r.machines : null,
      r.scheduled_hours,
    ]);
    if (now !== shape) {
      shape = now;
      renderSummary(r);
    }
    const evNow = JSON.stringify(r.events.map((e) => [e.at, e.kind, e.impact, e.description]));
    // Older pages a reader has opened stay as they are until the next change of scope.
    if (evNow !== eventsShape && !paged) {
      eventsShape = evNow;
      renderEvents(r);
    }
    stamp.textContent = `Updated ${new Date().toLocaleTimeString()} · refreshes every ${kPollMs / 1000} s`;
    replace(problem);
  };
  const tick = async () => {
    try {
      await load();
    } catch (e) {
      if (isAbort(e) || ctrl.signal.aborted) return;
      replace(problem, errorBanner(e, "Could not load the reliability score (retrying)"));
    }
    window.clearTimeout(timer);
    if (!ctrl.signal.aborted) timer = window.setTimeout(() => void tick(), kPollMs);
  };
  void tick();
  return () => ctrl.abort();
}

export const performanceTab: ProviderTab = {
  id: "performance",
  label: "Performance",
  async render(v, panel) {
    const machines = await loadMachines(
      v,
      panel,
      "Your reliability score starts with your first machine: uptime during its availability schedule, the jobs it completes and its benchmark consistency.",
    );
    if (!machines) return;
    const host = h("div", { class: "rel-scope" });
    let stop: (() => void) | null = null;
    machinePicker(panel, {
      tab: "performance",
      machines,
      wanted: v.query.get("machine"),
      all: "All my machines",
      show: (id) => {
        stop?.();
        stop = scopePanel(v, host, { machine: machines.find((x) => x.id === id) ?? null, machines });
      },
    });
    panel.appendChild(host);
  },
};
