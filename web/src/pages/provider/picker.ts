// The machine chooser of the tabs that show one machine at a time
// (#/provider/<tab>?machine=<id>, the form the notifications link to), and the card a tab
// shows while the provider has no machine.
import * as api from "../../api";
import type { View } from "../../app";
import { append, field, h } from "../../dom";
import { plural } from "../../format";
import { machineTitle } from "./overview";

export interface MachinePickerOptions {
  tab: string; // the tab's URL segment
  machines: api.Machine[]; // at least one
  wanted: string | null; // the ?machine= of the address
  all?: string; // the label of an option for every machine at once (the value "")
  // Shows the machine `id` (null: all of them); called once at once, then on each change.
  show: (id: string | null) => void;
}

// Appends the chooser (and a warning when the address names no machine of the provider)
// to `panel`.
export function machinePicker(panel: HTMLElement, o: MachinePickerOptions): void {
  const found = o.machines.find((m) => m.id === o.wanted);
  const chosen = found ? found.id : o.all !== undefined ? "" : o.machines[0].id;
  const select = h(
    "select",
    { "data-focus": "machine-select" },
    o.all !== undefined ? h("option", { value: "", selected: chosen === "" }, o.all) : null,
    o.machines.map((m) =>
      h("option", { value: m.id, selected: m.id === chosen }, `${machineTitle(m)} · ${plural(m.gpus.length, "GPU")}`),
    ),
  );
  select.addEventListener("change", () => {
    // Keeps the address shareable without a re-render.
    const query = select.value ? `?machine=${encodeURIComponent(select.value)}` : "";
    history.replaceState(null, "", `#/provider/${o.tab}${query}`);
    o.show(select.value || null);
  });
  append(
    panel,
    h("div", { class: "toolbar bench-toolbar" }, field("Machine", select, { className: "inline" })),
    o.wanted && !found
      ? h(
          "p",
          { class: "banner banner-warn", role: "status" },
          `The machine in the link is not one of yours or no longer exists; showing ${o.all !== undefined ? "all your machines" : "your first machine"}.`,
        )
      : null,
  );
  o.show(chosen || null);
}

export function noMachinesCard(what: string): HTMLElement {
  return h(
    "div",
    { class: "card no-machines" },
    h("h2", null, "No machines yet"),
    h(
      "p",
      null,
      `${what} Connect a machine from the `,
      h("a", { href: "#/provider/overview" }, "Overview"),
      " (create an agent token and run its install command).",
    ),
  );
}

// The provider's machines, for a tab that shows them one at a time; null, with the
// "No machines yet" card (saying `what`) in `panel`, when there are none.
export async function loadMachines(v: View, panel: HTMLElement, what: string): Promise<api.Machine[] | null> {
  const page = await api.get<api.Page<api.Machine>>("/machines?limit=500", { signal: v.signal });
  if (page.items.length) return page.items;
  panel.appendChild(noMachinesCard(what));
  return null;
}
