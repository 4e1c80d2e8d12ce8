// The Availability tab (#/provider/availability?machine=<id>): per machine, when its GPUs
// are offered (its availability schedule: always, or weekly windows in a time zone, edited
// on a week grid; saved for the machine or for all the provider's machines), whether it is
// inside its schedule now and when that changes, the scheduled hours of the next 7 days,
// and its maintenance windows: declared ahead with a category and a reason, cancellable
// until they start. Outside the schedule and during maintenance the GPUs are not listed.
// What counts against uptime: docs/reliability-score.md.
import * as api from "../../api";
import type { View } from "../../app";
import { pageThrough } from "../../components/paging";
import { browserTimeZone, ScheduleEditor } from "../../components/schedule";
import { append, busy, button, field, h, replace, uid } from "../../dom";
import { clearFieldErrors, errorBanner, isAbort, StatusSlot } from "../../errors";
import { duration, plural, timeRange, when } from "../../format";
import { gpuLabel, listingText, machineTitle } from "./overview";
import { loadMachines, machinePicker } from "./picker";
import type { ProviderTab } from "./tabs";

const kPollMs = 5000;
const kMaintenancePage = 20;
const kPlannedAheadMs = 24 * 3600 * 1000;

const kCategories: Array<[api.MaintenanceCategory, string]> = [
  ["power", "Power"],
  ["internet", "Internet connection"],
  ["disk", "Disk"],
  ["gpu", "GPU"],
  ["software", "Software or drivers"],
  ["other", "Other"],
];

const kStateNames: Record<api.MaintenanceState, { text: string; cls: string }> = {
  upcoming: { text: "Upcoming", cls: "badge status-submitted" },
  active: { text: "In progress", cls: "badge badge-warn" },
  ended: { text: "Ended", cls: "badge badge-off" },
  cancelled: { text: "Cancelled", cls: "badge badge-off" },
};

function categoryName(c: string): string {
  return kCategories.find(([k]) => k === c)?.[1] ?? c;
}

// A datetime-local value (the browser's time zone) as RFC 3339 UTC, to the minute; the
// value itself when it is not a time (the API names the field).
function toUtc(local: string): string {
  const d = new Date(local);
  return Number.isNaN(d.getTime()) ? local : d.toISOString().replace(/:\d{2}\.\d{3}Z$/, ":00Z");
}

function utcText(local: string): string {
  const d = new Date(local);
  return Number.isNaN(d.getTime()) ? "" : `${d.toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

// ---- the state now, and the next 7 days

function stateLine(a: api.MachineAvailability): HTMLElement {
  if (a.in_maintenance) {
    return h(
      "p",
      { class: "avail-state" },
      h("span", { class: "badge badge-warn" }, "In maintenance"),
      " Its GPUs are not listed until the maintenance window ends.",
    );
  }
  if (a.inside_schedule) {
    return h(
      "p",
      { class: "avail-state" },
      h("span", { class: "badge badge-ok" }, "Inside schedule"),
      a.next_change_at
        ? ` Its GPUs are offered until ${when(a.next_change_at)}.`
        : " Its GPUs are offered at all hours.",
    );
  }
  return h(
    "p",
    { class: "avail-state" },
    h("span", { class: "badge badge-off" }, "Outside schedule"),
    a.next_change_at
      ? ` Its GPUs are not listed now; listed again ${when(a.next_change_at)}.`
      : " Its GPUs are not listed: the schedule has no hours.",
  );
}

function statusContent(m: api.Machine, a: api.MachineAvailability): Array<HTMLElement | null> {
  const online = m.status === "online";
  const gpus = [...m.gpus].sort((x, y) => x.index - y.index);
  const upcoming = a.upcoming ?? [];
  return [
    h(
      "div",
      { class: "bench-head-line" },
      h("h2", { id: "avail-machine-name" }, machineTitle(m)),
      h(
        "span",
        { class: `badge machine-status ${online ? "badge-ok" : "badge-off"}` },
        h("span", { class: "dot", "aria-hidden": "true" }),
        online ? "Online" : "Offline",
      ),
    ),
    stateLine(a),
    gpus.length
      ? h(
          "ul",
          { class: "avail-gpus small" },
          gpus.map((g) => {
            const l = listingText(g);
            return h(
              "li",
              { "data-gpu-id": g.id },
              h("span", null, gpuLabel(g)),
              ": ",
              h("span", { class: `listing ${l.ok ? "listed" : "not-listed"}` }, l.text),
            );
          }),
        )
      : null,
    h("h3", null, "Scheduled in the next 7 days"),
    a.schedule.kind === "always"
      ? h("p", { class: "muted" }, "Always available: every hour of every day.")
      : upcoming.length
        ? h(
            "div",
            null,
            h("p", { class: "small muted" }, `In your time zone (${browserTimeZone()}).`),
            h(
              "ul",
              { class: "intervals" },
              upcoming.map((i) =>
                h(
                  "li",
                  null,
                  h("time", { datetime: i.start }, timeRange(i.start, i.end)),
                  h(
                    "span",
                    { class: "muted small" },
                    ` · ${duration((new Date(i.end).getTime() - new Date(i.start).getTime()) / 1000)}`,
                  ),
                ),
              ),
            ),
          )
        : h("p", { class: "muted" }, "No scheduled hours in the next 7 days."),
  ];
}

// ---- the schedule editor

function scheduleForm(
  m: api.Machine,
  machines: api.Machine[],
  first: api.MachineAvailability,
  onSaved: () => void,
): HTMLElement {
  const slot = new StatusSlot();
  const name = uid("kind");
  const isSchedule = first.schedule.kind === "schedule";
  const always = h("input", { type: "radio", name, value: "always", checked: !isSchedule, id: uid("r") });
  const weekly = h("input", { type: "radio", name, value: "schedule", checked: isSchedule, id: uid("r") });
  const editor = new ScheduleEditor(first.schedule.kind === "schedule" ? first.schedule : null, { grid: true });
  editor.renumber("schedule");
  const sync = () => {
    editor.el.hidden = !weekly.checked;
  };
  always.addEventListener("change", sync);
  weekly.addEventListener("change", sync);
  sync();
  const source = h("p", { class: "small muted schedule-source" });
  const showSource = (a: api.MachineAvailability) => {
    source.textContent =
      a.source === "application"
        ? "This is the availability of your approved application; change it here for this machine."
        : `Set by you, ${when(a.updated_at)}.`;
  };
  showSource(first);

  const group = h(
    "fieldset",
    { class: "group", "data-field": "schedule" },
    h("legend", null, "When this machine's GPUs are offered"),
    h(
      "div",
      { class: "choices" },
      h("label", { class: "check", for: always.id }, always, "Always available (24/7)"),
      h("label", { class: "check", for: weekly.id }, weekly, "Weekly schedule"),
    ),
    editor.el,
  );
  const body = (): { schedule: api.Schedule } => ({
    schedule: weekly.checked ? editor.value() : { kind: "always" },
  });
  const form = h("form", { class: "schedule-form", novalidate: true, "aria-labelledby": "schedule-title" });

  const save = h("button", { type: "submit", class: "btn btn-primary" }, "Save for this machine");
  const actions = h("div", { class: "actions form-actions" });
  const applyAll = button("Apply to all my machines", () => confirmAll(), {
    attrs: { "aria-describedby": "apply-all-hint" },
  });
  const resetActions = () => replace(actions, save, applyAll);
  resetActions();

  const submit = async (btn: HTMLButtonElement | null, all: boolean) => {
    await busy(btn, async () => {
      slot.clear();
      clearFieldErrors(form);
      try {
        if (all) {
          const r = await api.put<{ updated: number }>("/providers/me/availability", body());
          slot.ok(`Schedule saved for all your machines (${plural(r.updated, "machine")}).`);
          onSaved();
        } else {
          const a = await api.put<api.MachineAvailability>(
            `/machines/${encodeURIComponent(m.id)}/availability`,
            body(),
          );
          showSource(a);
          slot.ok(`Schedule saved for ${machineTitle(m)}.`);
          onSaved();
        }
      } catch (e) {
        slot.formError(form, e, "The schedule was not saved", "The schedule was not saved");
      }
    });
  };
  const confirmAll = () => {
    const yes = button(
      "Yes, apply to every machine",
      () =>
        void submit(yes, true).then(() => {
          resetActions();
          applyAll.focus();
        }),
      { kind: "primary" },
    );
    const no = button("Cancel", () => {
      resetActions();
      applyAll.focus();
    });
    replace(
      actions,
      h(
        "span",
        { class: "confirm" },
        `This replaces the schedule of every one of your machines (${plural(machines.length, "machine")}). `,
      ),
      yes,
      no,
    );
    yes.focus();
  };
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    void submit(save, false);
  });
  append(
    form,
    group,
    actions,
    h(
      "p",
      { class: "small muted", id: "apply-all-hint" },
      "“Apply to all my machines” gives every machine of yours this schedule; machines you connect later start from your application's.",
    ),
    slot.el,
  );
  return h(
    "section",
    { class: "card schedule-card", "aria-labelledby": "schedule-title" },
    h("h2", { id: "schedule-title" }, "Availability schedule"),
    h(
      "p",
      { class: "muted" },
      "Outside these hours the machine's GPUs are not listed, and only these hours count for your uptime. A window whose end is earlier than its start runs past midnight into the next day.",
    ),
    source,
    form,
  );
}

// ---- maintenance windows

// `slot` reports the declaration's outcome (and that of the list below the form).
function declareForm(m: api.Machine, slot: StatusSlot, onDeclared: (w: api.MaintenanceWindow) => void): HTMLElement {
  const start = h("input", { type: "datetime-local", required: true });
  const end = h("input", { type: "datetime-local", required: true });
  const category = h(
    "select",
    { required: true },
    h("option", { value: "" }, "Choose a category…"),
    kCategories.map(([k, label]) => h("option", { value: k }, label)),
  );
  const reason = h("textarea", { rows: 3, required: true });
  const startUtc = h("div", { class: "hint utc", "aria-live": "polite" });
  const endUtc = h("div", { class: "hint utc", "aria-live": "polite" });
  const count = h("div", { class: "hint count" });
  const notice = h("p", { class: "small notice-kind", "aria-live": "polite" });
  const zone = browserTimeZone();
  const update = () => {
    startUtc.textContent = utcText(start.value);
    endUtc.textContent = utcText(end.value);
    const n = reason.value.trim().length;
    count.textContent = `${n} / 300 characters (at least 10)`;
    const t = new Date(start.value).getTime();
    if (Number.isNaN(t)) {
      notice.textContent = "";
      notice.className = "small notice-kind";
    } else if (t - Date.now() >= kPlannedAheadMs) {
      notice.textContent =
        "Planned: declared at least 24 h ahead, its time does not count against your uptime (up to 8 h of planned maintenance in 30 days; beyond that it counts again).";
      notice.className = "small notice-kind banner banner-ok";
    } else {
      notice.textContent =
        "Short notice: declared less than 24 h ahead. Its GPUs are hidden during the window, but its time still counts against your uptime.";
      notice.className = "small notice-kind banner banner-warn";
    }
  };
  for (const el of [start, end, reason]) el.addEventListener("input", update);
  update();

  const submitBtn = h("button", { type: "submit", class: "btn btn-primary" }, "Declare maintenance");
  const form = h(
    "form",
    { class: "declare-form", novalidate: true, "aria-labelledby": "declare-title" },
    h("h3", { id: "declare-title" }, "Declare maintenance"),
    h(
      "div",
      { class: "row" },
      h("div", null, field("Start", start, { field: "start", hint: `Your time zone: ${zone}.` }), startUtc),
      h("div", null, field("End", end, { field: "end", hint: "At most 7 days after the start." }), endUtc),
      field("Category", category, { field: "category" }),
    ),
    field("Reason", reason, {
      field: "reason",
      hint: "What you will do, for your records and for customers with rentals on the machine.",
    }),
    count,
    notice,
    h("div", { class: "actions" }, submitBtn),
  );
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    void busy(submitBtn, async () => {
      slot.clear();
      clearFieldErrors(form);
      const body: Record<string, string> = { reason: reason.value.trim() };
      if (start.value) body.start = toUtc(start.value);
      if (end.value) body.end = toUtc(end.value);
      if (category.value) body.category = category.value;
      try {
        const w = await api.post<api.MaintenanceWindow>(`/machines/${encodeURIComponent(m.id)}/maintenance`, body);
        slot.ok(
          `Maintenance declared: ${timeRange(w.start, w.end)}, ${w.planned ? "planned" : "short notice: its time counts against uptime"}.`,
        );
        start.value = "";
        end.value = "";
        category.value = "";
        reason.value = "";
        update();
        onDeclared(w);
      } catch (e) {
        slot.formError(form, e, "The maintenance was not declared", "The maintenance was not declared");
      }
    });
  });
  return form;
}

function windowItem(m: api.Machine, w: api.MaintenanceWindow, onChanged: (text: string) => void, slot: StatusSlot) {
  const state = kStateNames[w.state] ?? { text: w.state, cls: "badge" };
  const actions = h("div", { class: "maint-actions" });
  const range = timeRange(w.start, w.end);
  if (w.state === "upcoming") {
    const cancel = button(
      "Cancel",
      () => {
        const yes = button(
          "Cancel the maintenance",
          () =>
            void busy(yes, async () => {
              try {
                await api.del(`/machines/${encodeURIComponent(m.id)}/maintenance/${encodeURIComponent(w.id)}`);
                onChanged(`Maintenance of ${range} cancelled.`);
              } catch (e) {
                slot.error(e, "The maintenance was not cancelled");
                replace(actions, cancel);
              }
            }),
          { kind: "danger" },
        );
        const keep = button("Keep it", () => {
          replace(actions, cancel);
          cancel.focus();
        });
        replace(actions, yes, keep);
        yes.focus();
      },
      { kind: "danger", attrs: { "aria-label": `Cancel the maintenance of ${range}` } },
    );
    actions.appendChild(cancel);
  }
  return h(
    "li",
    { class: `maint maint-${w.state}`, "data-maintenance-id": w.id },
    h(
      "div",
      { class: "maint-head" },
      h("span", { class: state.cls }, state.text),
      h("time", { datetime: w.start, class: "maint-range" }, range),
      h("span", { class: "muted small" }, duration((new Date(w.end).getTime() - new Date(w.start).getTime()) / 1000)),
      h("span", { class: "badge" }, categoryName(w.category)),
      w.planned
        ? h("span", { class: "badge badge-ok", title: "Declared at least 24 h ahead" }, "Planned")
        : h(
            "span",
            { class: "badge badge-warn", title: "Declared less than 24 h ahead: its time counts against uptime" },
            "Short notice",
          ),
    ),
    h("p", { class: "maint-reason" }, w.reason),
    h(
      "p",
      { class: "small muted" },
      `Declared ${when(w.declared_at)}`,
      w.cancelled_at ? ` · cancelled ${when(w.cancelled_at)}` : "",
      !w.planned && w.state !== "cancelled"
        ? " · declared less than 24 h ahead: its time still counts against uptime"
        : "",
    ),
    actions,
  );
}

function maintenanceSection(v: View, m: api.Machine, onChange: () => void): HTMLElement {
  const slot = new StatusSlot();
  const lists = h("div", { class: "maint-lists" });
  const load = () => {
    const current = h("ul", { class: "maint-list current", "aria-label": "Upcoming and in progress" });
    const past = h("ul", { class: "maint-list past", "aria-label": "Ended and cancelled" });
    const currentBox = h("div", null, h("h3", null, "Upcoming and in progress"), current);
    const pastBox = h("div", null, h("h3", null, "Ended and cancelled"), past);
    const more = button("Show older windows", () => {}, { attrs: { hidden: true } });
    const none = h("p", { class: "muted empty-maint" }, "No maintenance declared for this machine.");
    replace(lists, currentBox, pastBox, more);
    const changed = (text: string) => {
      slot.ok(text);
      load();
      onChange();
    };
    void pageThrough(
      more,
      slot,
      async (cursor) => {
        const q = `limit=${kMaintenancePage}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
        const page = await api.get<api.Page<api.MaintenanceWindow>>(
          `/machines/${encodeURIComponent(m.id)}/maintenance?${q}`,
          { signal: v.signal },
        );
        for (const w of page.items) {
          const item = windowItem(m, w, changed, slot);
          (w.state === "upcoming" || w.state === "active" ? current : past).appendChild(item);
        }
        currentBox.hidden = current.childElementCount === 0;
        pastBox.hidden = past.childElementCount === 0;
        if (!current.childElementCount && !past.childElementCount) lists.prepend(none);
        else none.remove();
        return page.next_cursor;
      },
      "Could not load the maintenance windows",
      "Could not load more maintenance windows",
    );
  };
  load();
  const form = declareForm(m, slot, () => {
    load();
    onChange();
  });
  return h(
    "section",
    { class: "card maintenance-card", "aria-labelledby": "maintenance-title" },
    h("h2", { id: "maintenance-title" }, "Maintenance windows"),
    h(
      "p",
      { class: "muted" },
      "During a maintenance window the machine's GPUs are not listed. Declared at least 24 h ahead it is planned: its time does not count against your uptime (up to 8 h in 30 days). Declared less than 24 h ahead its time still counts against uptime. A window can be cancelled until it starts.",
    ),
    form,
    slot.el,
    lists,
  );
}

// ---- one machine

function machinePanel(v: View, host: HTMLElement, m: api.Machine, machines: api.Machine[]): () => void {
  const ctrl = new AbortController();
  const onAbort = () => ctrl.abort();
  v.signal.addEventListener("abort", onAbort);
  let timer = 0;
  ctrl.signal.addEventListener("abort", () => {
    window.clearTimeout(timer);
    v.signal.removeEventListener("abort", onAbort);
  });
  const status = h(
    "section",
    { class: "card avail-status", "aria-labelledby": "avail-machine-name", "aria-live": "off" },
    h("p", { class: "muted" }, "Loading…"),
  );
  const problem = h("div");
  replace(host, problem, status);
  const id = encodeURIComponent(m.id);
  let shape = "";

  const load = async (): Promise<api.MachineAvailability> => {
    const [machine, a] = await Promise.all([
      api.get<api.Machine>(`/machines/${id}`, { signal: ctrl.signal }),
      api.get<api.MachineAvailability>(`/machines/${id}/availability`, { signal: ctrl.signal }),
    ]);
    const now = JSON.stringify({
      s: machine.status,
      g: machine.gpus.map((g) => [g.id, g.listing_state, g.listing_note]),
      a: [a.inside_schedule, a.in_maintenance, a.next_change_at, a.upcoming, a.schedule.kind],
    });
    if (now !== shape) {
      shape = now;
      replace(status, ...statusContent(machine, a));
    }
    replace(problem);
    return a;
  };
  const schedule = () => {
    window.clearTimeout(timer);
    if (!ctrl.signal.aborted) timer = window.setTimeout(() => void tick(), kPollMs);
  };
  const tick = async () => {
    try {
      await load();
    } catch (e) {
      if (isAbort(e) || ctrl.signal.aborted) return;
      replace(problem, errorBanner(e, "Could not refresh the machine's availability (retrying)"));
    }
    schedule();
  };
  const refreshNow = () => {
    window.clearTimeout(timer);
    void tick();
  };

  void (async () => {
    let first: api.MachineAvailability;
    try {
      first = await load();
    } catch (e) {
      if (isAbort(e) || ctrl.signal.aborted) return;
      replace(problem, errorBanner(e, "Could not load the machine's availability"));
      schedule();
      return;
    }
    append(host, scheduleForm(m, machines, first, refreshNow), maintenanceSection(v, m, refreshNow));
    schedule();
  })();
  return () => ctrl.abort();
}

export const availabilityTab: ProviderTab = {
  id: "availability",
  label: "Availability",
  async render(v, panel) {
    const machines = await loadMachines(
      v,
      panel,
      "Each machine has its availability schedule and its maintenance windows; a new machine starts from the availability of your application.",
    );
    if (!machines) return;
    const host = h("div", { class: "avail-machine" });
    let stop: (() => void) | null = null;
    machinePicker(panel, {
      tab: "availability",
      machines,
      wanted: v.query.get("machine"),
      show: (id) => {
        const m = machines.find((x) => x.id === id) ?? machines[0];
        stop?.();
        stop = machinePanel(v, host, m, machines);
      },
    });
    panel.appendChild(host);
  },
};
