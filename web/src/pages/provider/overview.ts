// The Overview tab: tier, agent tokens (create: shown once with the install command;
// revoke) and machines with their GPUs, Online/Offline and live telemetry, polled every
// few seconds without a reload. Each GPU has an "Offered" switch (PATCH .../gpus/{id}
// {enabled}) and says whether it is listed, or why not (a benchmark it failed, ...).
import * as api from "../../api";
import type { View } from "../../app";
import { confirmIn } from "../../components/confirm";
import { copy } from "../../components/copy";
import { pageThrough } from "../../components/paging";
import { endTerms, gpusText, loadModelNames, rentalStateBadge } from "../../components/rental";
import { append, busy, button, field, h, replace, replaceKeepingFocus } from "../../dom";
import { clearFieldErrors, errorBanner, StatusSlot } from "../../errors";
import { ago, bpsPercent, gib, tierName, when } from "../../format";
import { amount } from "../../money";
import type { ProviderTab } from "./tabs";

const kPollMs = 3000;

function newTokenPanel(t: api.CreatedToken, onClose: () => void): HTMLElement {
  const copied = h("span", { class: "copied", role: "status", "aria-live": "polite" });
  const command = h("code", { class: "install-command" }, t.install_command);
  const token = h("code", { class: "token-value" }, t.token);
  const panel = h(
    "div",
    { class: "banner banner-ok new-token", role: "region", "aria-label": "New agent token" },
    h("h3", null, `Agent token “${t.name}” created`),
    h(
      "p",
      null,
      h("strong", null, "Copy it now: it is shown only once."),
      " Only its hash is kept; if it is lost, create another one.",
    ),
    h(
      "p",
      { class: "label" },
      "Install the agent on a GPU machine (Docker and the NVIDIA Container Toolkit required):",
    ),
    h("pre", { class: "code" }, command),
    h(
      "div",
      { class: "actions" },
      button("Copy install command", () => void copy(t.install_command, command, copied), {
        kind: "primary",
        attrs: { "data-copy": "command" },
      }),
      button("Copy token", () => void copy(t.token, token, copied)),
      copied,
    ),
    h("details", null, h("summary", null, "Show the token alone"), h("pre", { class: "code" }, token)),
    h("div", { class: "actions" }, button("Done, I have copied it", onClose, { kind: "secondary" })),
  );
  return panel;
}

// The tokens section, folded when the provider has machines (open while there are none:
// a token is the first step), and a function that reloads its list (the last connection
// changes when an agent connects). Revoked tokens are listed only on request.
function tokensSection(v: View): { el: HTMLElement; reload: () => void; machines: (n: number) => void } {
  const slot = new StatusSlot();
  const fresh = h("div");
  const list = h("div", { class: "table-wrap tokens-list" });
  const count = h("span", { class: "muted small token-count" });
  const showRevoked = h("input", { type: "checkbox", class: "show-revoked" });
  const revokedToggle = h("label", { class: "check small", hidden: true }, showRevoked, "");
  const name = h("input", {
    type: "text",
    maxlength: 100,
    placeholder: "e.g. rack-1",
    autocomplete: "off",
    required: true,
    "data-field": "name",
  });
  const create = h("button", { type: "submit", class: "btn btn-primary" }, "Create agent token");
  const form = h(
    "form",
    { class: "inline-form token-form", novalidate: true },
    field("Token name", name, { hint: "Required: the machine or group of machines it is for." }),
    create,
  );
  let tokens: api.AgentToken[] = [];

  const showCreated = (t: api.CreatedToken) => {
    replace(
      fresh,
      newTokenPanel(t, () => {
        replace(fresh);
        name.focus();
      }),
    );
    fresh.querySelector<HTMLButtonElement>("[data-copy]")?.focus();
  };

  const row = (t: api.AgentToken) => {
    const actions = h("td", { class: "row-action" });
    if (t.active) {
      const rotate = button(
        "Rotate",
        () =>
          confirmIn(
            actions,
            rotate,
            "A new token replaces it; agents using it stop until they get the new one.",
            `Rotate “${t.name}”`,
            "primary",
            async () => {
              try {
                const created = await api.post<api.CreatedToken>(
                  `/providers/me/agent-tokens/${encodeURIComponent(t.id)}/rotate`,
                );
                slot.ok(`Token “${t.name}” rotated: give the new one to its agents.`);
                showCreated(created);
                await load();
              } catch (e) {
                slot.error(e, "The token was not rotated");
              }
            },
          ),
        { attrs: { "aria-label": `Rotate token ${t.name}` } },
      );
      const revoke = button(
        "Revoke",
        () =>
          confirmIn(actions, revoke, "Agents using it stop.", `Revoke “${t.name}”`, "danger", async () => {
            try {
              await api.del(`/providers/me/agent-tokens/${encodeURIComponent(t.id)}`);
              slot.ok(`Token “${t.name}” revoked; agents using it are disconnected.`);
              await load();
            } catch (e) {
              slot.error(e, "The token was not revoked");
            }
          }),
        { kind: "danger", attrs: { "aria-label": `Revoke token ${t.name}` } },
      );
      append(actions, rotate, " ", revoke);
    }
    return h(
      "tr",
      { class: t.active ? null : "revoked" },
      h("td", { "data-label": "Name" }, t.name),
      h("td", { "data-label": "Token" }, h("code", null, `${t.prefix}…`)),
      h("td", { "data-label": "Created" }, when(t.created_at)),
      // The token is checked when an agent connects, not on each heartbeat.
      h("td", { "data-label": "Last connected" }, t.last_used_at ? when(t.last_used_at) : "never"),
      h(
        "td",
        { "data-label": "Status" },
        t.active
          ? h("span", { class: "badge badge-ok" }, "Active")
          : h("span", { class: "badge badge-wrap" }, `Revoked ${when(t.revoked_at)}`),
      ),
      actions,
    );
  };

  const draw = () => {
    const active = tokens.filter((t) => t.active);
    const revoked = tokens.length - active.length;
    count.textContent = `${active.length} active${revoked ? `, ${revoked} revoked` : ""}`;
    revokedToggle.hidden = revoked === 0;
    revokedToggle.lastChild!.textContent = `Show revoked tokens (${revoked})`;
    const shown = showRevoked.checked ? tokens : active;
    replace(
      list,
      shown.length
        ? h(
            "table",
            { class: "tokens" },
            h(
              "thead",
              null,
              h(
                "tr",
                null,
                ["Name", "Token", "Created", "Last connected", "Status", ""].map((x) => h("th", { scope: "col" }, x)),
              ),
            ),
            h("tbody", null, shown.map(row)),
          )
        : h("p", { class: "muted" }, tokens.length ? "No active agent tokens." : "No agent tokens yet."),
    );
  };
  showRevoked.addEventListener("change", draw);

  const load = async () => {
    const page = await api.get<api.Page<api.AgentToken>>("/providers/me/agent-tokens", { signal: v.signal });
    tokens = page.items;
    draw();
  };

  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    void busy(create, async () => {
      slot.clear();
      clearFieldErrors(form);
      if (!name.value.trim()) {
        slot.formError(
          form,
          new api.ApiError(422, "validation_failed", "", { name: "is required: name the machine it is for" }),
          "",
        );
        return;
      }
      try {
        const t = await api.post<api.CreatedToken>("/providers/me/agent-tokens", { name: name.value.trim() });
        name.value = "";
        showCreated(t);
        await load();
      } catch (e) {
        slot.formError(form, e, "The token was not created");
      }
    });
  });

  const reload = () => void load().catch((e) => slot.error(e, "Could not load your agent tokens"));
  reload();
  const el = h(
    "details",
    { class: "card tokens-card" },
    h("summary", null, h("h2", { id: "tokens-title" }, "Agent tokens"), " ", count),
    h(
      "p",
      { class: "muted" },
      "The agent on each GPU machine authenticates with a token. It connects out to the platform, so it works behind NAT.",
    ),
    slot.el,
    form,
    fresh,
    revokedToggle,
    list,
  );
  let decided = false;
  // Open while there is no machine; after that the reader's choice stands.
  const machines = (n: number) => {
    if (decided) return;
    decided = true;
    if (n === 0) el.open = true;
  };
  return { el, reload, machines };
}

function telemetryCells(g: api.MachineGpu, online: boolean): HTMLElement[] {
  const t = online ? g.telemetry : null;
  const cell = (label: string, text: string, cls = "") => h("td", { "data-label": label, class: cls || null }, text);
  if (!t) return ["Utilization", "Memory used", "Temperature", "Power", "SM clock"].map((l) => cell(l, "—", "muted"));
  return [
    cell("Utilization", `${Math.round(t.utilization_pct)} %`, "num"),
    cell("Memory used", `${gib(t.memory_used_mb)} / ${gib(g.vram_mb)}`, "num"),
    cell("Temperature", `${Math.round(t.temperature_c)} °C`, t.temperature_c >= 85 ? "num hot" : "num"),
    cell("Power", `${Math.round(t.power_w)} W`, "num"),
    cell("SM clock", `${Math.round(t.sm_clock_mhz)} MHz`, "num"),
  ];
}

// A performance score with its scale: 100 is an A100-SXM-80GB at its datasheet peaks
// (docs/performance-score.md; faster GPUs score above 100).
export function scoreText(score: number): string {
  return `${score.toFixed(2)} (A100 = 100)`;
}

export function machineTitle(m: api.Machine): string {
  return m.name || m.host?.hostname || m.id;
}

export function gpuLabel(g: { index: number; name: string }): string {
  return `GPU ${g.index} · ${g.name}`;
}

// Whether a GPU is offered to customers, and why not, from the platform's listing
// decision: the state decides the wording where the dashboard says it in its own words,
// the platform's note says the rest ("awaiting its first benchmark", "benchmark: ...").
export function listingText(g: api.MachineGpu): { text: string; ok: boolean } {
  switch (g.listing_state) {
    case "listed":
      return { text: "Listed for customers", ok: true };
    case "rented":
      return { text: "Listed for customers, rented now", ok: true };
    case "benchmarking":
      return { text: "Listed for customers, being benchmarked now", ok: true };
    case "disabled_by_provider":
      return { text: "Not listed: not offered by you", ok: false };
    case "missing_from_machine":
      return { text: "Not listed: the GPU is missing from the machine", ok: false };
    case "engine_down":
      return { text: "Not listed: Docker is not running on the machine", ok: false };
    case "outside_schedule": {
      const again = g.listing_note?.match(kRfc3339)?.[0];
      return {
        text: `Not listed: outside its availability schedule${again ? `; listed again ${when(again)}` : ""}`,
        ok: false,
      };
    }
    case "in_maintenance": {
      const until = g.listing_note?.match(kRfc3339)?.[0];
      return { text: `Not listed: in maintenance${until ? ` until ${when(until)}` : ""}`, ok: false };
    }
    default:
      return { text: `Not listed: ${withLocalTimes(g.listing_note ?? "not available")}`, ok: false };
  }
}

// The notes of "outside_schedule" and "in_maintenance" name the time the state ends.
const kRfc3339 = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})/g;

// The platform's notes carry times as RFC 3339: shown in the reader's time zone.
function withLocalTimes(note: string): string {
  return note.replace(kRfc3339, (t) => when(t));
}

// The GPUs whose "Offered" switch was changed and not yet answered, with the state asked
// for; and what to call when it changes.
interface OfferState {
  pending: Map<string, boolean>;
  toggle(m: api.Machine, g: api.MachineGpu, offered: boolean): void;
}

function offeredCell(m: api.Machine, g: api.MachineGpu, offers: OfferState): HTMLElement {
  const listing = listingText(g);
  const statusId = `listing-${g.id}`;
  const pending = offers.pending.get(g.id);
  const box = h("input", {
    type: "checkbox",
    checked: pending ?? g.enabled,
    disabled: !g.present,
    "aria-busy": pending !== undefined ? "true" : null,
    "aria-label": `Offered: ${gpuLabel(g)}`,
    "aria-describedby": statusId,
    "data-focus": `offer-${g.id}`,
    onchange: (ev: Event) => offers.toggle(m, g, (ev.target as HTMLInputElement).checked),
  });
  return h(
    "td",
    { "data-label": "Listing", class: "offered" },
    h("label", { class: "check switch" }, box, "Offered"),
    h(
      "div",
      { id: statusId, class: `small listing ${listing.ok ? "listed" : "not-listed"}` },
      pending !== undefined ? "Saving…" : listing.text,
      g.performance_score !== null && g.present ? ` · score ${scoreText(g.performance_score)}` : null,
    ),
    g.listing_state === "no_price_set"
      ? h("a", { class: "small", href: "#/provider/pricing", "data-focus": `price-${g.id}` }, "Set a price")
      : null,
  );
}

// "In maintenance" or "Outside schedule" when the machine's GPUs are hidden for that.
export function machineHiddenBadge(m: api.Machine): HTMLElement | null {
  const states = new Set(m.gpus.filter((g) => g.present).map((g) => g.listing_state));
  if (states.has("engine_down")) return h("span", { class: "badge badge-warn machine-hidden" }, "Docker not running");
  if (states.has("in_maintenance")) return h("span", { class: "badge badge-warn machine-hidden" }, "In maintenance");
  if (states.has("outside_schedule")) return h("span", { class: "badge badge-off machine-hidden" }, "Outside schedule");
  return null;
}

// What the agent found of the machine's network isolation, when it keeps the machine off
// the marketplace (docs/trust.md): the check's own words; each GPU's listing note says the
// fix. Nothing while it passes or while it runs. Without a Docker engine, the platform's
// note on what to start (the machine is off the marketplace until the engine answers).
export function networkIsolationNotice(m: api.Machine): HTMLElement | null {
  if (m.status !== "online") return null;
  const n = m.host?.network_isolation;
  const down = m.gpus.find((g) => g.listing_state === "engine_down");
  let text: string;
  if (down) text = `${down.listing_note ?? "Docker is not running on this machine"}.`;
  else if (!n) text = "Network isolation not checked: this gpunex-agent is older than the check; update it.";
  else if (n.state === "not_isolated") text = `Workloads here are not network-isolated: ${n.detail}.`;
  else if (n.state === "unverified") text = `Network isolation could not be checked: ${n.detail}.`;
  else return null;
  return h("p", { class: "small warn network-isolation", role: "status" }, text);
}

// The machines whose rename form is open, with the form: the same element goes back into
// each redrawn card, so that what is typed and the focus survive the refresh.
type Renames = Map<string, HTMLFormElement>;

function renameForm(m: api.Machine, renames: Renames, done: (text?: string) => void): HTMLFormElement {
  const slot = new StatusSlot();
  const input = h("input", {
    type: "text",
    value: machineTitle(m),
    maxlength: 100,
    autocomplete: "off",
    "data-field": "name",
    "data-focus": `rename-${m.id}`,
  });
  const save = h(
    "button",
    { type: "submit", class: "btn btn-primary", "data-focus": `rename-save-${m.id}` },
    "Save name",
  );
  const close = () => {
    renames.delete(m.id);
    done();
  };
  const form = h(
    "form",
    { class: "inline-form rename-form", novalidate: true, "aria-label": `Rename ${machineTitle(m)}` },
    slot.el,
    field("Machine name", input, { hint: "Your name for it; the agent's host name does not replace it." }),
    h("div", { class: "actions" }, save, button("Cancel", close, { attrs: { "data-focus": `rename-cancel-${m.id}` } })),
  );
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    void busy(save, async () => {
      slot.clear();
      clearFieldErrors(form);
      try {
        const d = await api.patch<api.Machine>(`/machines/${encodeURIComponent(m.id)}`, { name: input.value });
        renames.delete(m.id);
        done(`Machine renamed “${machineTitle(d)}”.`);
      } catch (e) {
        slot.formError(form, e, "The machine was not renamed");
      }
    });
  });
  return form;
}

function machineCard(
  m: api.Machine,
  offers: OfferState,
  renames: Renames,
  onRename: (m: api.Machine) => void,
): HTMLElement {
  const online = m.status === "online";
  const host = m.host ?? {};
  const title = machineTitle(m);
  const gpus = [...m.gpus].sort((a, b) => a.index - b.index);
  const renaming = renames.get(m.id) ?? null;
  return h(
    "article",
    {
      class: `card machine ${online ? "is-online" : "is-offline"}`,
      "data-machine-id": m.id,
      "aria-label": `Machine ${title}`,
    },
    h(
      "header",
      { class: "machine-head" },
      h("h3", null, title),
      h(
        "span",
        { class: `badge machine-status ${online ? "badge-ok" : "badge-off"}` },
        h("span", { class: "dot", "aria-hidden": "true" }),
        online ? "Online" : "Offline",
      ),
      machineHiddenBadge(m),
      m.emulated
        ? h("span", { class: "badge badge-warn", title: "Emulated GPUs, for tests and demos" }, "EMULATED")
        : null,
      h(
        "span",
        { class: "muted small" },
        online ? `last heartbeat ${ago(m.last_seen)}` : `Offline since ${when(m.status_since)}`,
      ),
      h(
        "a",
        {
          class: "machine-bench-link small",
          href: `#/provider/benchmark?machine=${encodeURIComponent(m.id)}`,
          "data-focus": `bench-${m.id}`,
          "aria-label": `Benchmark results of ${title}`,
        },
        "Benchmark results",
      ),
      h(
        "a",
        {
          class: "machine-avail-link small",
          href: `#/provider/availability?machine=${encodeURIComponent(m.id)}`,
          "data-focus": `avail-${m.id}`,
          "aria-label": `Availability and maintenance of ${title}`,
        },
        "Availability",
      ),
      renaming
        ? null
        : h(
            "button",
            {
              type: "button",
              class: "btn btn-link small rename-btn",
              "data-focus": `rename-btn-${m.id}`,
              "aria-label": `Rename ${title}`,
              onclick: () => onRename(m),
            },
            "Rename",
          ),
    ),
    renaming,
    h(
      "p",
      { class: "muted small host" },
      [
        host.cpu_model,
        host.cpu_cores ? `${host.cpu_cores} cores` : null,
        host.ram_mb ? `${gib(host.ram_mb)} RAM` : null,
        host.os,
        m.agent_version ? `agent ${m.agent_version}` : null,
      ]
        .filter(Boolean)
        .join(" · "),
    ),
    networkIsolationNotice(m),
    gpus.length === 0
      ? h("p", { class: "muted" }, "No GPUs reported.")
      : h(
          "div",
          { class: "table-wrap" },
          h(
            "table",
            { class: "gpus" },
            h(
              "thead",
              null,
              h(
                "tr",
                null,
                ["#", "GPU", "VRAM", "Utilization", "Memory used", "Temperature", "Power", "SM clock", "Listing"].map(
                  (x) => h("th", { scope: "col" }, x),
                ),
              ),
            ),
            h(
              "tbody",
              null,
              gpus.map((g) =>
                h(
                  "tr",
                  { "data-gpu-id": g.id, class: g.present ? null : "absent" },
                  h("td", { "data-label": "#" }, String(g.index)),
                  h(
                    "td",
                    { "data-label": "GPU", class: "gpu-name" },
                    g.name,
                    g.emulated ? h("span", { class: "badge badge-warn" }, "EMULATED") : null,
                    g.telemetry?.throttle_reasons?.length && online
                      ? h("div", { class: "small warn" }, `Throttled: ${g.telemetry.throttle_reasons.join(", ")}`)
                      : null,
                  ),
                  h("td", { "data-label": "VRAM", class: "num" }, gib(g.vram_mb)),
                  telemetryCells(g, online),
                  offeredCell(m, g, offers),
                ),
              ),
            ),
          ),
        ),
  );
}

// `onChange` runs when a machine comes, goes, or changes between Online and Offline;
// `onList` with every list read.
function machinesSection(v: View, onChange: () => void, onList: (items: api.Machine[]) => void): HTMLElement {
  const slot = new StatusSlot();
  const offers: OfferState = {
    pending: new Map(),
    toggle(m, g, offered) {
      if (offers.pending.has(g.id)) {
        render(); // one change at a time: shows the state asked for first
        return;
      }
      offers.pending.set(g.id, offered);
      render();
      void (async () => {
        try {
          await api.patch(`/machines/${encodeURIComponent(m.id)}/gpus/${encodeURIComponent(g.id)}`, {
            enabled: offered,
          });
          slot.ok(
            offered
              ? `${machineTitle(m)}, ${gpuLabel(g)}: offered again; it is listed once its benchmark has passed.`
              : `${machineTitle(m)}, ${gpuLabel(g)}: no longer offered to customers.`,
          );
        } catch (e) {
          slot.error(e, `${machineTitle(m)}, ${gpuLabel(g)}: not ${offered ? "offered" : "withdrawn"}`);
        } finally {
          offers.pending.delete(g.id);
          await refresh();
        }
      })();
    },
  };
  const renames: Renames = new Map();
  const onRename = (m: api.Machine) => {
    renames.set(
      m.id,
      renameForm(m, renames, (text) => {
        if (text) slot.ok(text);
        void refresh().then(() => {
          const again = list.querySelector<HTMLElement>(`[data-focus="rename-btn-${m.id}"]`);
          again?.focus();
        });
        render();
      }),
    );
    render();
    const input = renames.get(m.id)!.querySelector<HTMLInputElement>("input");
    input?.focus();
    input?.select();
  };
  let items: api.Machine[] | null = null;
  const list = h(
    "div",
    { class: "machines", "aria-live": "polite", "aria-busy": "true" },
    h("p", { class: "muted" }, "Loading machines…"),
  );
  const stamp = h("span", { class: "muted small updated" });
  const problem = h("div");
  let failing = false;
  let shape: string | null = null;
  const refresh = async () => {
    try {
      const page = await api.get<api.Page<api.Machine>>("/machines?limit=500", { signal: v.signal });
      const now = page.items.map((m) => `${m.id}:${m.status}`).join();
      if (shape !== null && now !== shape) onChange();
      shape = now;
      items = page.items;
      onList(items);
      render();
      stamp.textContent = `Updated ${new Date().toLocaleTimeString()} · refreshes every ${kPollMs / 1000} s`;
      if (failing) replace(problem);
      failing = false;
    } catch (e) {
      if (v.signal.aborted) return;
      failing = true;
      if (items === null) {
        // Nothing was read yet: the error replaces the loading line.
        list.removeAttribute("aria-busy");
        replace(list);
        replace(problem, errorBanner(e, "Could not load your machines (retrying)"));
      } else {
        replace(problem, errorBanner(e, "Live updates paused (retrying)"));
      }
    }
  };
  function render(): void {
    if (items === null) return;
    list.removeAttribute("aria-busy");
    // Screen readers should not re-read the whole list every few seconds.
    list.setAttribute("aria-live", "off");
    replaceKeepingFocus(
      list,
      items.length
        ? items.map((m) => machineCard(m, offers, renames, onRename))
        : h(
            "p",
            { class: "muted empty-machines" },
            "No machines yet. Create an agent token and run its install command on a GPU machine: it appears here, Online, within seconds.",
          ),
    );
  }
  void refresh();
  v.every(kPollMs, refresh);
  return h(
    "section",
    { class: "machines-section", "aria-labelledby": "machines-title" },
    h("div", { class: "section-head" }, h("h2", { id: "machines-title" }, "Machines"), stamp),
    problem,
    slot.el,
    list,
  );
}

const kRentalsPollMs = 5000;

// The rentals on the provider's machines (GET /providers/me/rentals), newest first; the
// first page follows their state. `names`: machine titles by id, as the machines list
// last read them.
function rentalsSection(v: View, names: Map<string, string>): { el: HTMLElement; rerender: () => void } {
  const slot = new StatusSlot();
  const tbody = h("tbody");
  const table = h(
    "table",
    { class: "provider-rentals" },
    h(
      "thead",
      null,
      h(
        "tr",
        null,
        ["Machine", "GPUs", "Price per GPU", "Started", "Customer", "State", "End", "Your share"].map((x) =>
          h("th", { scope: "col" }, x),
        ),
      ),
    ),
    tbody,
  );
  const empty = h("p", { class: "muted", hidden: true }, "No rentals on your machines yet.");
  const more = button("More", () => {}, { attrs: { hidden: true, class: "btn btn-secondary more-btn" } });
  const byId = new Map<string, api.Rental>();
  const order: string[] = [];
  const row = (r: api.Rental) =>
    h(
      "tr",
      { "data-rental-id": r.id },
      h("td", { "data-label": "Machine" }, r.machine_id ? (names.get(r.machine_id) ?? r.machine_id) : "—"),
      h(
        "td",
        { "data-label": "GPUs", class: "nowrap" },
        h("a", { href: `#/rentals/${encodeURIComponent(r.id)}`, "data-focus": `prental-${r.id}` }, gpusText(r)),
      ),
      h("td", { "data-label": "Price per GPU", class: "num" }, amount(r.price_micro, { unit: "USDC/h" })),
      h("td", { "data-label": "Started" }, when(r.started_at)),
      h("td", { "data-label": "Customer" }, h("span", { class: "pseudonym" }, r.customer ?? "—")),
      h("td", { "data-label": "State" }, rentalStateBadge(r.state)),
      h("td", { "data-label": "End" }, endTerms(r, "other")),
      h("td", { "data-label": "Your share", class: "num" }, amount(r.provider_micro)),
    );
  const rerender = () => {
    replaceKeepingFocus(
      tbody,
      order.map((id) => row(byId.get(id)!)),
    );
    empty.hidden = order.length > 0;
    table.hidden = order.length === 0;
  };
  const take = (items: api.Rental[], atTop: boolean) => {
    const fresh = items.filter((r) => !byId.has(r.id)).map((r) => r.id);
    for (const r of items) byId.set(r.id, r);
    if (atTop) order.unshift(...fresh);
    else order.push(...fresh);
    rerender();
  };
  const url = (cursor: string | null) => {
    const q = new URLSearchParams({ limit: "20" });
    if (cursor) q.set("cursor", cursor);
    return `/providers/me/rentals?${q}`;
  };
  void pageThrough(
    more,
    slot,
    async (cursor) => {
      await loadModelNames(v.signal);
      const page = await api.get<api.Page<api.Rental>>(url(cursor), { signal: v.signal });
      take(page.items, false);
      return page.next_cursor;
    },
    "Could not load the rentals on your machines",
    "Could not load more rentals",
  );
  v.every(kRentalsPollMs, async () => {
    try {
      take((await api.get<api.Page<api.Rental>>(url(null), { signal: v.signal })).items, true);
    } catch {
      // the next round tries again
    }
  });
  const el = h(
    "section",
    { class: "card rentals-section", "aria-labelledby": "prentals-title" },
    h("h2", { id: "prentals-title" }, "Rentals on your machines"),
    h("p", { class: "muted" }, "Customers are shown by pseudonym only."),
    slot.el,
    h("div", { class: "table-wrap", "aria-live": "off" }, table),
    empty,
    more,
  );
  return { el, rerender };
}

export const overviewTab: ProviderTab = {
  id: "overview",
  label: "Overview",
  render(v, panel, provider) {
    const tokens = tokensSection(v);
    const names = new Map<string, string>();
    const rentals = rentalsSection(v, names);
    const onList = (items: api.Machine[]) => {
      tokens.machines(items.length);
      const before = [...names].join();
      for (const m of items) names.set(m.id, machineTitle(m));
      if ([...names].join() !== before) rentals.rerender();
    };
    // Machines first (what a provider comes to see), then the rentals on them, the tier
    // and the tokens (folded once there are machines).
    append(
      panel,
      machinesSection(v, tokens.reload, onList),
      rentals.el,
      h(
        "section",
        { class: "card tier-card", "aria-labelledby": "tier-title" },
        h("h2", { id: "tier-title" }, "Your tier"),
        h(
          "p",
          { class: "tier-line" },
          h("span", { class: `badge tier-${provider.tier}` }, tierName(provider.tier)),
          ` provider since ${when(provider.approved_at)}`,
        ),
        h(
          "p",
          { class: "muted" },
          provider.tier === "enterprise"
            ? "Your offers rank with the Enterprise factor, 1.10 (Community: 1.00), in the marketplace's ranking."
            : "Your priced GPUs are listed in the marketplace, ranked with the Community factor, 1.00 (Enterprise: 1.10).",
        ),
        provider.commission_bps !== undefined
          ? h(
              "p",
              { class: "commission" },
              h("strong", null, `Commission ${bpsPercent(provider.commission_bps)}`),
              ` · the platform keeps ${bpsPercent(provider.commission_bps)} of what each rental on your machines costs; you earn the rest.`,
            )
          : null,
      ),
      tokens.el,
    );
  },
};
