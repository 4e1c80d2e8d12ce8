// The week grid of a schedule: seven days of 24 hours, each hour shaded when the
// schedule's windows cover it (half-shaded when they cover part of it), in the
// schedule's own time zone. Clicking an hour (or Space/Enter on it; the arrow keys move
// between hours) switches it on or off, and the windows are rewritten to match: one
// window per run of hours, days with the same hours sharing a window. Windows that run
// past midnight spill into the next day (Sunday into Monday).
import type * as api from "../api";
import { h } from "../dom";
import { kDayNames, kDays } from "../format";

const kDayMin = 1440;
const kWeekMin = 7 * kDayMin;

function minutes(hhmm: string): number | null {
  const m = /^(\d{2}):(\d{2})$/.exec(hhmm);
  if (!m) return null;
  const v = Number(m[1]) * 60 + Number(m[2]);
  return v >= 0 && v <= kDayMin ? v : null;
}

function hhmm(min: number): string {
  return `${String(Math.floor(min / 60)).padStart(2, "0")}:${String(min % 60).padStart(2, "0")}`;
}

// One flag per minute of the week, Monday 00:00 first.
export function coverage(windows: api.Window[]): Uint8Array {
  const bits = new Uint8Array(kWeekMin);
  for (const w of windows) {
    const s = minutes(w.start);
    const e = minutes(w.end);
    if (s === null || e === null || s === e || s === kDayMin) continue;
    const len = e > s ? e - s : kDayMin - s + e;
    for (const d of w.days) {
      const day = kDays.indexOf(d as (typeof kDays)[number]);
      if (day < 0) continue;
      const from = day * kDayMin + s;
      for (let i = 0; i < len; i++) bits[(from + i) % kWeekMin] = 1;
    }
  }
  return bits;
}

// The windows that cover exactly the flagged minutes, none crossing midnight.
export function windowsOf(bits: Uint8Array): api.Window[] {
  const byRun = new Map<string, api.Window>();
  kDays.forEach((d, day) => {
    let i = 0;
    while (i < kDayMin) {
      if (!bits[day * kDayMin + i]) {
        i++;
        continue;
      }
      const s = i;
      while (i < kDayMin && bits[day * kDayMin + i]) i++;
      const key = `${s}-${i}`;
      const w = byRun.get(key);
      if (w) w.days.push(d);
      else byRun.set(key, { days: [d], start: hhmm(s), end: hhmm(i) });
    }
  });
  return [...byRun.values()];
}

export class WeekGrid {
  readonly el: HTMLElement;
  private readonly cells: HTMLButtonElement[] = [];
  private bits: Uint8Array = new Uint8Array(kWeekMin);
  private focused = 0;

  // `onEdit` gets the windows after a click on the grid.
  constructor(private readonly onEdit: (windows: api.Window[]) => void) {
    const hours = h(
      "div",
      { class: "wg-row wg-hours", "aria-hidden": "true" },
      h("span", { class: "wg-day" }),
      Array.from({ length: 24 }, (_, hr) => h("span", { class: "wg-hour" }, hr % 3 === 0 ? String(hr) : "")),
    );
    const rows = kDays.map((d, day) =>
      h(
        "div",
        { class: "wg-row" },
        h("span", { class: "wg-day", "aria-hidden": "true" }, kDayNames[d]),
        Array.from({ length: 24 }, (_, hr) => {
          const i = day * 24 + hr;
          const cell = h("button", {
            type: "button",
            class: "wg-cell",
            tabindex: i === 0 ? 0 : -1,
            "aria-pressed": "false",
            "aria-label": `${kDayNames[d]} ${hhmm(hr * 60)}–${hhmm(hr * 60 + 60)}`,
            "data-cell": `${d}-${hr}`,
            onclick: () => this.toggle(day, hr),
            onfocus: () => this.moveTo(i, false),
          });
          this.cells.push(cell);
          return cell;
        }),
      ),
    );
    this.el = h(
      "div",
      {
        class: "week-grid",
        role: "group",
        "aria-label": "Week grid: each hour of the week; press an hour to switch it on or off",
        onkeydown: (ev: Event) => this.key(ev as KeyboardEvent),
      },
      hours,
      rows,
    );
  }

  update(windows: api.Window[]): void {
    this.bits = coverage(windows);
    this.cells.forEach((cell, i) => {
      let n = 0;
      const from = i * 60;
      for (let m = 0; m < 60; m++) n += this.bits[from + m];
      cell.classList.toggle("on", n === 60);
      cell.classList.toggle("part", n > 0 && n < 60);
      cell.setAttribute("aria-pressed", n === 60 ? "true" : n > 0 ? "mixed" : "false");
    });
  }

  private toggle(day: number, hr: number): void {
    const from = (day * 24 + hr) * 60;
    let full = true;
    for (let m = 0; m < 60; m++) full = full && this.bits[from + m] === 1;
    for (let m = 0; m < 60; m++) this.bits[from + m] = full ? 0 : 1;
    this.onEdit(windowsOf(this.bits));
  }

  private moveTo(i: number, focus: boolean): void {
    this.cells[this.focused].tabIndex = -1;
    this.focused = i;
    this.cells[i].tabIndex = 0;
    if (focus) this.cells[i].focus();
  }

  private key(ev: KeyboardEvent): void {
    const steps: Record<string, number> = { ArrowLeft: -1, ArrowRight: 1, ArrowUp: -24, ArrowDown: 24 };
    const step = steps[ev.key];
    if (step === undefined) return;
    ev.preventDefault();
    const next = this.focused + step;
    if (next >= 0 && next < this.cells.length) this.moveTo(next, true);
  }
}
