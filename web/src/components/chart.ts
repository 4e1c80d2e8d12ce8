// A small line chart drawn as inline SVG with createElementNS (no chart library, no
// markup parsing, no inline styles: colours come from the series-N classes in
// styles.css). The chart is an image with a title and a description for screen readers;
// each point also carries a <title> shown on hover.
import { h, uid } from "../dom";

const kSvg = "http://www.w3.org/2000/svg";

export interface ChartPoint {
  t: number; // milliseconds since the epoch
  y: number;
  label: string; // what the point's tooltip says
  hollow?: boolean; // drawn as a ring (e.g. a run that failed)
}

export interface ChartSeries {
  name: string;
  points: ChartPoint[];
}

export interface LineChartOptions {
  title: string;
  description: string;
  xLabel: string;
  yLabel: string;
  series: ChartSeries[];
  width: number; // pixels: the viewBox is the drawn size, so text stays 12 px
  height: number;
  yMax?: number; // the top of the y axis (default: from the data)
  days?: boolean; // one point per day: the x axis says dates, with a day of room each side
}

type SvgAttrs = Record<string, string | number>;

export function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: SvgAttrs = {},
  ...children: Array<SVGElement | string>
): SVGElementTagNameMap[K] {
  const el = document.createElementNS(kSvg, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  for (const c of children) el.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
  return el;
}

// A round step (1, 2 or 5 times a power of ten) giving about `count` intervals up to `max`.
function niceStep(max: number, count: number): number {
  const raw = max / Math.max(1, count);
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

const kDay = 86400000;
const kMin = 60000;
const kHour = 3600000;

// Round steps for time ticks: the x axis says 14:00, 14:15, 14:30, never 14:07:48.
const kTimeSteps = [
  1000,
  2000,
  5000,
  10000,
  15000,
  30000,
  kMin,
  2 * kMin,
  5 * kMin,
  10 * kMin,
  15 * kMin,
  30 * kMin,
  kHour,
  2 * kHour,
  3 * kHour,
  6 * kHour,
  12 * kHour,
  kDay,
  2 * kDay,
  7 * kDay,
  14 * kDay,
  30 * kDay,
  91 * kDay,
  182 * kDay,
  365 * kDay,
];

// The ticks between t0 and t1 at the smallest round step that gives at most `count`:
// multiples of the step from the local midnight (from UTC noon for days).
export function timeTicks(t0: number, t1: number, count: number, days = false): { ticks: number[]; step: number } {
  const span = Math.max(1, t1 - t0);
  const steps = days ? kTimeSteps.filter((s) => s >= kDay) : kTimeSteps;
  const step = steps.find((s) => span / s <= Math.max(1, count - 1)) ?? steps[steps.length - 1];
  let origin: number;
  if (days) {
    origin = Math.floor(t0 / kDay) * kDay + kDay / 2; // UTC noon, where the day points sit
  } else {
    const d = new Date(t0);
    d.setHours(0, 0, 0, 0);
    origin = d.getTime();
  }
  const ticks: number[] = [];
  for (let t = origin + Math.ceil((t0 - origin) / step) * step; t <= t1; t += step) ticks.push(t);
  return { ticks, step };
}

function timeFormatter(step: number, span: number, days: boolean): (t: number) => string {
  const opts: Intl.DateTimeFormatOptions =
    step < kMin
      ? { hour: "2-digit", minute: "2-digit", second: "2-digit" }
      : step < kDay
        ? span > kDay
          ? { weekday: "short", hour: "2-digit", minute: "2-digit" }
          : { hour: "2-digit", minute: "2-digit" }
        : step < 91 * kDay
          ? { month: "short", day: "numeric" }
          : { year: "numeric", month: "short" };
  const f = new Intl.DateTimeFormat(undefined, days ? { ...opts, timeZone: "UTC" } : opts);
  return (t) => f.format(new Date(t));
}

export function lineChart(o: LineChartOptions): SVGSVGElement {
  const titleId = uid("chart-title");
  const descId = uid("chart-desc");
  const W = Math.max(260, Math.round(o.width));
  const H = o.height;
  const m = { left: 52, right: 16, top: 14, bottom: 44 };
  const pw = W - m.left - m.right;
  const ph = H - m.top - m.bottom;

  const all = o.series.flatMap((s) => s.points);
  const now = Date.now();
  let t0 = Math.min(...all.map((p) => p.t));
  let t1 = Math.max(...all.map((p) => p.t));
  if (!all.length) {
    t0 = now - kDay;
    t1 = now;
  } else if (o.days) {
    // Days: a day of room on each side, so that a single day has its neighbours.
    t0 -= kDay;
    t1 += kDay;
  } else {
    // Room before the first point (an hour when there is one) and after the last, but the
    // axis never runs into the future.
    const pad = t1 === t0 ? kHour : Math.max((t1 - t0) * 0.06, 15000);
    t0 -= pad;
    t1 = Math.max(t1, Math.min(t1 + pad, now));
    if (t1 - t0 < 2000) t1 = t0 + 2000;
  }
  // The y axis scales to the data, however small (0.03 USDC a day is not a flat line at
  // the bottom of a 0–1 axis); 0–1 when every point is 0.
  const dataTop = Math.max(0, ...all.map((p) => p.y));
  const yMaxData = dataTop > 0 ? dataTop : 1;
  const yStep = niceStep(o.yMax ?? yMaxData * 1.1, ph < 140 ? 3 : 4);
  const yMax = o.yMax ?? Math.ceil((yMaxData * 1.1) / yStep) * yStep;
  // Tick labels with as many decimals as the step needs (0.005 → 3).
  const yDecimals = Math.max(0, Math.min(6, -Math.floor(Math.log10(yStep) + 1e-9)));
  const x = (t: number) => m.left + ((t - t0) / (t1 - t0)) * pw;
  const y = (v: number) => m.top + ph - (v / yMax) * ph;

  const root = svg("svg", {
    class: "chart",
    viewBox: `0 0 ${W} ${H}`,
    width: W,
    height: H,
    role: "img",
    "aria-labelledby": `${titleId} ${descId}`,
    focusable: "false",
    // The x axis' ends, for tests and tools (RFC 3339).
    "data-x-from": new Date(t0).toISOString(),
    "data-x-to": new Date(t1).toISOString(),
  });
  root.appendChild(svg("title", { id: titleId }, o.title));
  root.appendChild(svg("desc", { id: descId }, o.description));

  // Grid and y axis.
  const grid = svg("g", { class: "grid", "aria-hidden": "true" });
  for (let i = 0; i * yStep <= yMax * (1 + 1e-9); i++) {
    const v = i * yStep;
    const yy = Math.round(y(v)) + 0.5;
    grid.appendChild(svg("line", { x1: m.left, x2: W - m.right, y1: yy, y2: yy }));
    grid.appendChild(
      svg(
        "text",
        { x: m.left - 6, y: yy + 4, "text-anchor": "end", class: "tick" },
        String(Number(v.toFixed(yDecimals))),
      ),
    );
  }
  // X axis: ticks at round times, as many as fit the width.
  const xTicks = Math.max(2, Math.min(6, Math.floor(pw / 110)));
  const { ticks, step } = timeTicks(t0, t1, xTicks, o.days);
  const fmt = timeFormatter(step, t1 - t0, o.days ?? false);
  for (const t of ticks) {
    const xx = Math.round(x(t)) + 0.5;
    grid.appendChild(svg("line", { x1: xx, x2: xx, y1: m.top + ph, y2: m.top + ph + 5, class: "tick-mark" }));
    const anchor = xx - m.left < 30 ? "start" : W - m.right - xx < 30 ? "end" : "middle";
    grid.appendChild(svg("text", { x: xx, y: m.top + ph + 18, "text-anchor": anchor, class: "tick" }, fmt(t)));
  }
  grid.appendChild(
    svg("line", { x1: m.left, x2: W - m.right, y1: m.top + ph + 0.5, y2: m.top + ph + 0.5, class: "axis" }),
  );
  grid.appendChild(svg("line", { x1: m.left + 0.5, x2: m.left + 0.5, y1: m.top, y2: m.top + ph, class: "axis" }));
  grid.appendChild(
    svg("text", { x: m.left + pw / 2, y: H - 6, "text-anchor": "middle", class: "axis-label" }, o.xLabel),
  );
  grid.appendChild(
    svg(
      "text",
      {
        x: 0,
        y: 0,
        transform: `translate(14 ${m.top + ph / 2}) rotate(-90)`,
        "text-anchor": "middle",
        class: "axis-label",
      },
      o.yLabel,
    ),
  );
  root.appendChild(grid);

  // Points of several series at the same place are set side by side (a few pixels
  // apart), and each series' line has its own dash pattern: equal figures show both.
  const at = (p: ChartPoint) => `${Math.round(x(p.t))}:${Math.round(y(p.y))}`;
  const sharing = new Map<string, number>();
  for (const s of o.series) for (const k of new Set(s.points.map(at))) sharing.set(k, (sharing.get(k) ?? 0) + 1);
  const seen = new Map<string, number>();
  o.series.forEach((s, i) => {
    const g = svg("g", { class: `series series-${i % 6}`, "data-series": s.name });
    const pts = [...s.points].sort((a, b) => a.t - b.t);
    const dx = new Map<ChartPoint, number>();
    for (const p of pts) {
      const k = at(p);
      const n = sharing.get(k) ?? 1;
      if (n < 2 || dx.has(p)) continue;
      const nth = seen.get(k) ?? 0;
      seen.set(k, nth + 1);
      dx.set(p, (nth - (n - 1) / 2) * 6);
    }
    if (pts.length > 1) {
      g.appendChild(
        svg("polyline", {
          points: pts.map((p) => `${x(p.t).toFixed(1)},${y(p.y).toFixed(1)}`).join(" "),
          class: "line",
        }),
      );
    }
    for (const p of pts) {
      g.appendChild(
        svg(
          "circle",
          {
            cx: (x(p.t) + (dx.get(p) ?? 0)).toFixed(1),
            cy: y(p.y).toFixed(1),
            r: 4.5,
            class: p.hollow ? "point hollow" : "point",
          },
          svg("title", {}, p.label),
        ),
      );
    }
    root.appendChild(g);
  });
  return root;
}

// The legend for `series`, as HTML under the chart.
export function chartLegend(series: ChartSeries[], note?: string): HTMLElement {
  return h(
    "ul",
    { class: "chart-legend" },
    series.map((s, i) => h("li", null, h("span", { class: `swatch series-${i % 6}`, "aria-hidden": "true" }), s.name)),
    note ? h("li", { class: "muted" }, h("span", { class: "swatch hollow", "aria-hidden": "true" }), note) : null,
  );
}

// Draws `draw(width)` into `box` at the box's width, again whenever that width changes.
// Returns a function that stops watching.
export function fitChart(box: HTMLElement, draw: (width: number) => SVGSVGElement): () => void {
  let last = -1;
  const paint = () => {
    const w = Math.floor(box.clientWidth);
    if (w <= 0 || Math.abs(w - last) < 2) return;
    last = w;
    box.replaceChildren(draw(w));
  };
  const ro = new ResizeObserver(() => requestAnimationFrame(paint));
  ro.observe(box);
  requestAnimationFrame(paint);
  return () => ro.disconnect();
}
