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

function timeFormatter(span: number): (t: number) => string {
  const opts: Intl.DateTimeFormatOptions =
    span < 600000
      ? { hour: "2-digit", minute: "2-digit", second: "2-digit" }
      : span < 2 * kDay
        ? { hour: "2-digit", minute: "2-digit" }
        : span < 60 * kDay
          ? { month: "short", day: "numeric" }
          : { year: "numeric", month: "short" };
  const f = new Intl.DateTimeFormat(undefined, opts);
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
  let t0 = Math.min(...all.map((p) => p.t));
  let t1 = Math.max(...all.map((p) => p.t));
  if (!all.length) {
    t0 = Date.now() - kDay;
    t1 = Date.now();
  } else if (o.days) {
    // Days: a day of room on each side, so that a single day has its neighbours.
    t0 -= kDay;
    t1 += kDay;
  } else if (t1 === t0) {
    // One point: centred on a one-hour axis.
    t0 -= 1800000;
    t1 += 1800000;
  } else {
    // Room around the first and last points.
    const pad = Math.max((t1 - t0) * 0.06, 15000);
    t0 -= pad;
    t1 += pad;
  }
  const yMaxData = Math.max(1, ...all.map((p) => p.y));
  const yStep = niceStep(o.yMax ?? yMaxData * 1.1, ph < 140 ? 3 : 4);
  const yMax = o.yMax ?? Math.ceil((yMaxData * 1.1) / yStep) * yStep;
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
  });
  root.appendChild(svg("title", { id: titleId }, o.title));
  root.appendChild(svg("desc", { id: descId }, o.description));

  // Grid and y axis.
  const grid = svg("g", { class: "grid", "aria-hidden": "true" });
  for (let v = 0; v <= yMax + 1e-9; v += yStep) {
    const yy = Math.round(y(v)) + 0.5;
    grid.appendChild(svg("line", { x1: m.left, x2: W - m.right, y1: yy, y2: yy }));
    grid.appendChild(
      svg("text", { x: m.left - 6, y: yy + 4, "text-anchor": "end", class: "tick" }, String(Math.round(v * 100) / 100)),
    );
  }
  // X axis: ticks that fit the width.
  const fmt = o.days ? timeFormatter(60 * kDay - 1) : timeFormatter(t1 - t0);
  let xTicks = Math.max(2, Math.min(6, Math.floor(pw / 110)));
  if (o.days) xTicks = Math.max(2, Math.min(xTicks, Math.floor((t1 - t0) / kDay) + 1));
  for (let i = 0; i < xTicks; i++) {
    const t = t0 + ((t1 - t0) * i) / (xTicks - 1);
    const xx = Math.round(x(t)) + 0.5;
    grid.appendChild(svg("line", { x1: xx, x2: xx, y1: m.top + ph, y2: m.top + ph + 5, class: "tick-mark" }));
    const anchor = i === 0 ? "start" : i === xTicks - 1 ? "end" : "middle";
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

  o.series.forEach((s, i) => {
    const g = svg("g", { class: `series series-${i % 6}` });
    const pts = [...s.points].sort((a, b) => a.t - b.t);
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
          { cx: x(p.t).toFixed(1), cy: y(p.y).toFixed(1), r: 4.5, class: p.hollow ? "point hollow" : "point" },
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
