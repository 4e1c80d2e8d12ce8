// The weekly schedule editor of a GPU entry and of a machine's availability: an IANA time
// zone and windows of days with a start and an end time ({"kind": "schedule", "timezone",
// "windows": [...]}). A window whose end is earlier than its start runs past midnight into
// the next day (22:00–06:00 on Friday: Friday 22:00 to Saturday 06:00). With `grid`, a
// week grid beside the windows shows them and edits them by the hour.
import type * as api from "../api";
import { append, button, field, h, replace, uid } from "../dom";
import { kDayNames, kDays } from "../format";
import { WeekGrid } from "./weekgrid";

let zones: string[] | null = null;
function timeZones(): string[] {
  if (zones) return zones;
  const intl = Intl as unknown as { supportedValuesOf?: (k: string) => string[] };
  zones = typeof intl.supportedValuesOf === "function" ? intl.supportedValuesOf("timeZone") : [];
  if (!zones.includes("UTC")) zones = ["UTC", ...zones];
  return zones;
}

// A zone's offset from UTC now, as "UTC+01:00" ("UTC" for none); "" where the browser
// cannot tell.
function zoneOffset(zone: string, now: Date): string {
  try {
    const part = new Intl.DateTimeFormat("en-US", { timeZone: zone, timeZoneName: "longOffset" })
      .formatToParts(now)
      .find((p) => p.type === "timeZoneName")?.value;
    return part ? part.replace("GMT", "UTC") : "";
  } catch {
    return "";
  }
}

// The zones grouped by their region (the part before the first "/"), each labelled with
// its place and its offset now: "Rome (UTC+01:00)". Made once per page.
interface ZoneGroup {
  region: string;
  zones: { value: string; label: string }[];
}
let zoneGroups: ZoneGroup[] | null = null;
function groupedZones(): ZoneGroup[] {
  if (zoneGroups) return zoneGroups;
  const now = new Date();
  const byRegion = new Map<string, { value: string; label: string }[]>();
  for (const z of timeZones()) {
    const slash = z.indexOf("/");
    const region = slash > 0 ? z.slice(0, slash) : "Other";
    const place = (slash > 0 ? z.slice(slash + 1) : z).replaceAll("_", " ").replaceAll("/", " / ");
    const offset = zoneOffset(z, now);
    const list = byRegion.get(region) ?? [];
    list.push({ value: z, label: offset && offset !== place ? `${place} (${offset})` : place });
    byRegion.set(region, list);
  }
  zoneGroups = [...byRegion.entries()]
    .sort(([a], [b]) => (a === "Other" ? 1 : b === "Other" ? -1 : a.localeCompare(b)))
    .map(([region, zones]) => ({ region, zones }));
  return zoneGroups;
}

// A picker of IANA time zones by region, `selected` chosen. A saved zone this browser does
// not know stays, marked, to be replaced (the platform's list may be newer).
function zonePicker(selected: string): HTMLSelectElement {
  const known = timeZones().includes(selected);
  const select = h(
    "select",
    { autocomplete: "off" },
    selected && !known ? h("option", { value: selected }, `${selected} (not a time zone this browser knows)`) : null,
    groupedZones().map((g) =>
      h(
        "optgroup",
        { label: g.region },
        g.zones.map((z) => h("option", { value: z.value }, z.label)),
      ),
    ),
  );
  select.value = selected;
  return select;
}

export function browserTimeZone(): string {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  } catch {
    return "UTC";
  }
}

class WindowEditor {
  readonly el: HTMLFieldSetElement;
  private readonly legend = h("legend", null, "");
  private readonly daysGroup: HTMLFieldSetElement;
  private readonly dayBoxes: HTMLInputElement[] = [];
  private readonly start: HTMLInputElement;
  private readonly end: HTMLInputElement;
  private readonly removeBtn: HTMLButtonElement;
  private readonly overnight = h("p", { class: "small muted overnight", "aria-live": "polite" });

  constructor(initial: api.Window, onRemove: (w: WindowEditor) => void) {
    this.daysGroup = h("fieldset", { class: "days" }, h("legend", null, "Days"));
    const boxes = h("div", { class: "day-boxes" });
    for (const d of kDays) {
      const box = h("input", { type: "checkbox", value: d, checked: initial.days.includes(d), id: uid("day") });
      this.dayBoxes.push(box);
      append(boxes, h("label", { class: "check", for: box.id }, box, kDayNames[d]));
    }
    this.daysGroup.appendChild(boxes);
    this.start = h("input", { type: "time", value: initial.start, required: true });
    // "24:00" (end of day) cannot be typed in a time input; 23:59 is offered instead.
    this.end = h("input", { type: "time", value: initial.end === "24:00" ? "23:59" : initial.end, required: true });
    this.removeBtn = button("Remove window", () => onRemove(this), { kind: "link" });
    this.el = h(
      "fieldset",
      { class: "window" },
      this.legend,
      this.daysGroup,
      h(
        "div",
        { class: "row" },
        field("From", this.start),
        field("Until", this.end, {
          hint: "Earlier than “From”: the window runs into the next day. 23:59 means until midnight.",
        }),
      ),
      this.overnight,
      this.removeBtn,
    );
    this.el.addEventListener("input", () => this.explain());
    this.explain();
  }

  // Says where a window that crosses midnight ends.
  private explain(): void {
    const w = this.value();
    const crosses = w.end !== "24:00" && w.start !== "" && w.end !== "" && w.end < w.start;
    if (!crosses) {
      this.overnight.hidden = true;
      this.overnight.textContent = "";
      return;
    }
    const next = (d: string) => kDays[(kDays.indexOf(d as (typeof kDays)[number]) + 1) % 7];
    const example = w.days[0] ? `${kDayNames[w.days[0]]} ${w.start} → ${kDayNames[next(w.days[0])]} ${w.end}` : "";
    this.overnight.hidden = false;
    this.overnight.textContent = `Runs past midnight into the next day${example ? ` (${example})` : ""}.`;
  }

  renumber(prefix: string, index: number, total: number): void {
    this.legend.textContent = `Window ${index + 1}`;
    this.el.dataset.field = prefix;
    this.daysGroup.dataset.field = `${prefix}.days`;
    this.start.dataset.field = `${prefix}.start`;
    this.end.dataset.field = `${prefix}.end`;
    this.removeBtn.hidden = total <= 1;
    this.removeBtn.setAttribute("aria-label", `Remove window ${index + 1}`);
  }

  value(): api.Window {
    return {
      days: this.dayBoxes.filter((b) => b.checked).map((b) => b.value),
      start: this.start.value,
      // 23:59 and 00:00 as an end both mean midnight: the end of the day.
      end: this.end.value === "23:59" || this.end.value === "00:00" ? "24:00" : this.end.value,
    };
  }
}

export interface ScheduleEditorOptions {
  grid?: boolean; // a week grid beside the windows
  onChange?: () => void; // after any edit
}

export class ScheduleEditor {
  readonly el: HTMLDivElement;
  private readonly zone: HTMLSelectElement;
  private readonly windowsGroup: HTMLDivElement;
  private readonly none = h("p", { class: "muted small" }, "No windows: add one, or switch hours on in the grid.");
  private readonly grid: WeekGrid | null;
  private windows: WindowEditor[] = [];
  private prefix = "";

  constructor(
    initial: { timezone: string; windows: api.Window[] } | null,
    private readonly opts: ScheduleEditorOptions = {},
  ) {
    this.zone = zonePicker(initial?.timezone || browserTimeZone());
    this.windowsGroup = h("div", { class: "windows", role: "group", "aria-label": "Weekly windows" });
    const windows = initial?.windows.length
      ? initial.windows
      : [{ days: ["mon", "tue", "wed", "thu", "fri"], start: "08:00", end: "20:00" }];
    for (const w of windows) this.addWindow(w);
    this.grid = opts.grid ? new WeekGrid((ws) => this.setWindows(ws)) : null;
    const add = button("Add a window", () => {
      this.addWindow({ days: ["sat", "sun"], start: "10:00", end: "18:00" });
      this.renumber(this.prefix);
      this.changed();
    });
    const zoneField = field("Time zone", this.zone, {
      hint: "By region and place; the hours below are in this zone.",
    });
    this.el = this.grid
      ? h(
          "div",
          { class: "schedule with-grid" },
          zoneField,
          h(
            "div",
            { class: "schedule-grid" },
            h(
              "p",
              { class: "small muted" },
              "Hours in the schedule's time zone. Press an hour to switch it on or off; the windows follow.",
            ),
            this.grid.el,
          ),
          h("div", { class: "schedule-windows" }, this.windowsGroup, add),
        )
      : h("div", { class: "schedule" }, zoneField, this.windowsGroup, add);
    this.el.addEventListener("input", () => this.changed());
    this.el.addEventListener("change", () => this.changed());
    this.grid?.update(this.value().windows);
  }

  private addWindow(w: api.Window): void {
    const editor = new WindowEditor(w, (gone) => {
      this.windows = this.windows.filter((x) => x !== gone);
      gone.el.remove();
      this.renumber(this.prefix);
      this.changed();
    });
    this.windows.push(editor);
    this.windowsGroup.appendChild(editor.el);
    this.none.remove();
  }

  // Replaces every window (the grid was edited).
  setWindows(windows: api.Window[]): void {
    this.windows = [];
    replace(this.windowsGroup, windows.length ? null : this.none);
    for (const w of windows) this.addWindow(w);
    this.renumber(this.prefix);
    this.changed();
  }

  private changed(): void {
    this.grid?.update(this.value().windows);
    this.opts.onChange?.();
  }

  // `prefix` is the availability's path: "gpus[0].availability".
  renumber(prefix: string): void {
    this.prefix = prefix;
    this.zone.dataset.field = `${prefix}.timezone`;
    this.windowsGroup.dataset.field = `${prefix}.windows`;
    this.windows.forEach((w, i) => w.renumber(`${prefix}.windows[${i}]`, i, this.windows.length));
  }

  value(): { kind: "schedule"; timezone: string; windows: api.Window[] } {
    return { kind: "schedule", timezone: this.zone.value.trim(), windows: this.windows.map((w) => w.value()) };
  }
}
