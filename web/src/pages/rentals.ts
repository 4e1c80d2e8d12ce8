// The customer's rentals (#/rentals?state=active|ended, newest first; admins see every
// rental) and one rental (#/rentals/ID): its state, how it ended and who ended it, rate,
// billed time and cost so far, how long the balance lasts, its output followed every 2 s
// while it is active, and Stop (asked for first). The pages update without a reload.
import * as api from "../api";
import { hasRole, pageHeader, takeFlash, type View } from "../app";
import { pageThrough } from "../components/paging";
import {
  endPartyText,
  endReasonText,
  gpusText,
  isActive,
  loadModelNames,
  lowBalanceBanner,
  rateText,
  rentalStateBadge,
} from "../components/rental";
import { facts } from "../components/details";
import { filesSection } from "../components/files";
import { argvList } from "../components/workload";
import { portsSection } from "../components/ports";
import { sshSection } from "../components/ssh";
import { terminalSection } from "../components/terminal";
import { append, busy, button, type Child, h, replace } from "../dom";
import { errorBanner, isAbort, noticeBanner, StatusSlot } from "../errors";
import { duration, when } from "../format";
import { amount } from "../money";

const kListPollMs = 5000;
const kDetailPollMs = 2000;
const kPageSize = 20;
const kLogPage = 500;
// The most output lines kept on the page; older ones are dropped from view.
const kMaxLogLines = 5000;

const kFilters: Array<[string, string]> = [
  ["", "All"],
  ["active", "Active"],
  ["ended", "Ended"],
];

function rentalHref(r: api.Rental): string {
  return `#/rentals/${encodeURIComponent(r.id)}`;
}

function rentalRow(r: api.Rental): HTMLTableRowElement {
  return h(
    "tr",
    { "data-rental-id": r.id, class: isActive(r) ? "active-rental" : null },
    h(
      "td",
      { "data-label": "Rental" },
      h("a", { href: rentalHref(r), "data-focus": `rental-${r.id}` }, gpusText(r)),
      h("div", { class: "small muted mono" }, r.id),
    ),
    h("td", { "data-label": "State" }, rentalStateBadge(r.state)),
    h("td", { "data-label": "Rate", class: "num" }, amount(r.cost_per_hour_micro, { unit: "USDC/h" })),
    h("td", { "data-label": "Billed time", class: "num" }, duration(r.billed_seconds)),
    h("td", { "data-label": "Cost so far", class: "num" }, amount(r.charged_micro)),
    h("td", { "data-label": "Started" }, when(r.started_at)),
  );
}

export async function rentalsPage(v: View): Promise<void> {
  const state = v.query.get("state") ?? "";
  const slot = new StatusSlot();
  const filters = h(
    "nav",
    { class: "filter-tabs", "aria-label": "Show rentals" },
    h(
      "ul",
      null,
      kFilters.map(([value, label]) =>
        h(
          "li",
          null,
          h(
            "a",
            {
              href: value ? `#/rentals?state=${value}` : "#/rentals",
              class: value === state ? "active" : null,
              "aria-current": value === state ? "page" : null,
            },
            label,
          ),
        ),
      ),
    ),
  );
  const tbody = h("tbody");
  const table = h(
    "table",
    { class: "rentals" },
    h(
      "thead",
      null,
      h(
        "tr",
        null,
        ["Rental", "State", "Rate", "Billed time", "Cost so far", "Started"].map((x) => h("th", { scope: "col" }, x)),
      ),
    ),
    tbody,
  );
  const empty = h(
    "p",
    { class: "muted empty-rentals", hidden: true },
    state === "ended" ? "No ended rentals." : "No rentals yet. Rent GPUs from an offer in the ",
    state === "ended" ? null : [h("a", { href: "#/marketplace" }, "Marketplace"), " or submit a job."],
  );
  const wrap = h("div", { class: "table-wrap rentals-list", "aria-live": "off" }, table);
  const more = button("More", () => {}, { attrs: { hidden: true, class: "btn btn-secondary more-btn" } });
  const low = h("div");
  const flashText = takeFlash();
  append(
    v.main,
    pageHeader(
      "Rentals",
      hasRole("admin")
        ? "Every rental on the platform, newest first (you are an admin)."
        : "Your GPU rentals, newest first.",
      h(
        "div",
        { class: "actions" },
        h("a", { class: "btn btn-primary", href: "#/marketplace" }, "Rent GPUs"),
        h("a", { class: "btn btn-secondary", href: "#/jobs/new" }, "Submit a job"),
      ),
    ),
    flashText ? noticeBanner(flashText) : null,
    low,
    filters,
    slot.el,
    wrap,
    empty,
    more,
  );

  await loadModelNames(v.signal);
  const rows = new Map<string, HTMLTableRowElement>();
  const query = (cursor: string | null) => {
    const q = new URLSearchParams({ limit: String(kPageSize) });
    if (state) q.set("state", state);
    if (cursor) q.set("cursor", cursor);
    return `/rentals?${q}`;
  };
  const show = (items: api.Rental[], atTop: boolean) => {
    const fresh: HTMLTableRowElement[] = [];
    for (const r of items) {
      const row = rentalRow(r);
      const old = rows.get(r.id);
      if (old) {
        // A row keeps its place; the focus stays on its link.
        const focused = old.contains(document.activeElement);
        old.replaceWith(row);
        if (focused) row.querySelector<HTMLElement>("a")?.focus({ preventScroll: true });
      } else {
        fresh.push(row);
      }
      rows.set(r.id, row);
    }
    if (atTop) tbody.prepend(...fresh);
    else tbody.append(...fresh);
    empty.hidden = rows.size > 0;
    table.hidden = rows.size === 0;
  };
  await pageThrough(
    more,
    slot,
    async (cursor) => {
      const page = await api.get<api.Page<api.Rental>>(query(cursor), { signal: v.signal });
      show(page.items, false);
      return page.next_cursor;
    },
    "Could not load your rentals",
    "Could not load more rentals",
  );
  const refreshBalance = async () => {
    if (!hasRole("customer")) return;
    try {
      replace(low, lowBalanceBanner(await api.get<api.Balance>("/me/balance", { signal: v.signal })));
    } catch {
      // the Balance page reports it
    }
  };
  // New rentals appear at the top, and those shown follow their state and cost.
  let failing = false;
  const refresh = async () => {
    try {
      const page = await api.get<api.Page<api.Rental>>(query(null), { signal: v.signal });
      show(page.items, true);
      if (failing) slot.clear();
      failing = false;
    } catch (e) {
      if (isAbort(e) || v.signal.aborted) return;
      failing = true;
      slot.error(e, "Live updates paused (retrying)");
    }
    await refreshBalance();
  };
  void refreshBalance();
  v.every(kListPollMs, refresh);
}

// ---- one rental

function limitsText(r: api.Rental): Child {
  const parts: Child[] = [];
  if (r.max_duration_s) parts.push(`at most ${duration(r.max_duration_s)}`);
  if (r.max_cost_micro) parts.push(["at most ", amount(r.max_cost_micro)]);
  return parts.length ? parts.map((p, i) => (i ? [", ", p] : p)) : "None";
}

// The argument list that runs, each argument apart.
function commandView(r: api.Rental): Node {
  return r.command?.length ? argvList(r.command) : document.createTextNode("The image's own command");
}

// What a running rental has cost by `nowMs`: what was billed, plus what accrued since the
// last meter tick at its rate (floor(rate × gpus × s / 3600), docs/billing.md), within its
// own limits; an ended rental's figures as they are.
export function liveCost(r: api.Rental, nowMs: number): { seconds: number; micro: number } {
  if (r.state !== "running" || !r.running_at) return { seconds: r.billed_seconds, micro: r.charged_micro };
  let seconds = Math.max(r.billed_seconds, Math.floor((nowMs - Date.parse(r.running_at)) / 1000));
  if (r.max_duration_s) seconds = Math.min(seconds, r.max_duration_s);
  let micro = Math.max(r.charged_micro, Math.floor((r.cost_per_hour_micro * seconds) / 3600));
  if (r.max_cost_micro) micro = Math.min(micro, r.max_cost_micro);
  return { seconds, micro };
}

// How long the rental runs on: the nearest of the balance's end (as of the last load, less
// the time since), its max. duration and its max. cost.
export function timeLeft(
  r: api.Rental,
  b: api.Balance,
  now: { seconds: number; micro: number },
  sinceLoadS: number,
): Child {
  const ends: Array<[number, Child]> = [];
  if (b.seconds_left !== null) {
    ends.push([b.seconds_left - sinceLoadS, [" at your balance of ", amount(b.balance_micro)]]);
  }
  if (r.max_duration_s) ends.push([r.max_duration_s - now.seconds, ", then it reaches its max. duration"]);
  if (r.max_cost_micro && r.cost_per_hour_micro > 0) {
    ends.push([((r.max_cost_micro - now.micro) * 3600) / r.cost_per_hour_micro, ", then it reaches its max. cost"]);
  }
  if (!ends.length) return ["Balance ", amount(b.balance_micro)];
  const [seconds, why] = ends.reduce((a, e) => (e[0] < a[0] ? e : a));
  return [duration(Math.max(0, seconds)), why];
}

export async function rentalPage(v: View): Promise<void> {
  const id = v.params.id;
  await loadModelNames(v.signal);
  let rental: api.Rental;
  try {
    rental = await api.get<api.Rental>(`/rentals/${encodeURIComponent(id)}`, { signal: v.signal });
  } catch (e) {
    if (e instanceof api.ApiError && e.status === 404) {
      append(
        v.main,
        pageHeader("Rental not found"),
        h(
          "div",
          { class: "card" },
          h("p", null, "There is no rental with this address that you may see."),
          h("a", { class: "btn btn-secondary", href: "#/rentals" }, "Your rentals"),
        ),
      );
      return;
    }
    throw e;
  }
  // Its provider sees the machine and the customer's pseudonym; the customer sees neither.
  const providerView = !!rental.customer && !!rental.machine_id && !hasRole("admin");
  // An admin may be looking at anyone's rental: the third person.
  const viewer = providerView || hasRole("admin") ? "other" : "customer";
  const mayStop = !providerView;

  const header = h("div");
  const slot = new StatusSlot();
  const low = h("div");
  const status = h("section", { class: "card rental-status", "aria-labelledby": "status-title" });
  const cost = h("section", { class: "card rental-cost", "aria-labelledby": "cost-title" });
  const workload = h("section", { class: "card rental-workload", "aria-labelledby": "workload-title" });
  // The Ports card, rebuilt only when the rental's state changes (a token shown once stays).
  const portsArea = h("div");
  let portsState = "";
  const logLines = h("pre", {
    class: "log-view",
    tabindex: 0,
    "aria-label": "Output of the workload",
    "aria-live": "off",
  });
  const logNote = h("p", { class: "small muted log-note" });
  const logs = h(
    "section",
    { class: "card rental-logs", "aria-labelledby": "logs-title" },
    h("div", { class: "section-head" }, h("h2", { id: "logs-title" }, "Output"), logNote),
    logLines,
  );
  const flashText = takeFlash();
  append(
    v.main,
    h(
      "p",
      { class: "back" },
      h("a", { href: providerView ? "#/provider" : "#/rentals" }, providerView ? "← Provider Dashboard" : "← Rentals"),
    ),
    header,
    flashText ? noticeBanner(flashText) : null,
    slot.el,
    low,
    h("div", { class: "rental-grid" }, status, cost),
    workload,
    portsArea,
    logs,
  );

  let balance: api.Balance | null = null;
  // The Stop button or its question; rebuilt only when that changes, so that the focus
  // stays on it across updates.
  const stopArea = h("div", { class: "stop-area" });
  let stopShown: "none" | "button" | "confirm" = "none";

  const renderStop = () => {
    const wanted = mayStop && isActive(rental) && rental.state !== "ending";
    if (!wanted) {
      if (stopShown !== "none") replace(stopArea);
      stopShown = "none";
      return;
    }
    if (stopShown !== "none") return;
    stopShown = "button";
    const start = button(
      "Stop the rental",
      () => {
        stopShown = "confirm";
        const yes = button(
          "Stop it now",
          () =>
            void busy(yes, async () => {
              try {
                rental = await api.post<api.Rental>(`/rentals/${encodeURIComponent(rental.id)}/stop`);
                stopping = isActive(rental);
                slot.ok(
                  rental.state === "ended"
                    ? "The rental is stopped; it never ran, so nothing is billed."
                    : "Stopping: the workload is being ended, and billing stops now.",
                );
              } catch (e) {
                if (e instanceof api.ApiError && e.status === 409) slot.ok("The rental had ended already.");
                else slot.error(e, "The rental was not stopped");
              }
              replace(stopArea);
              stopShown = "none";
              render();
              title.focus();
            }),
          { kind: "danger" },
        );
        const no = button("Keep it running", () => {
          replace(stopArea);
          stopShown = "none";
          renderStop();
          stopArea.querySelector("button")?.focus();
        });
        replace(
          stopArea,
          h(
            "div",
            { class: "confirm", role: "group", "aria-label": "Confirm stopping the rental" },
            h("span", null, "Stop this rental? Its workload is ended and cannot be resumed."),
            yes,
            no,
          ),
        );
        yes.focus();
      },
      { kind: "danger" },
    );
    replace(stopArea, start);
  };

  // Stop was answered and the rental is still ending: its end is said once it comes.
  let stopping = false;
  const stateSlot = h("span");
  const head = pageHeader(
    `Rental: ${gpusText(rental)}`,
    h("span", { class: "rental-sub" }, stateSlot, " ", h("span", { class: "mono small" }, rental.id)),
    stopArea,
  );
  const title = head.querySelector("h1")!;
  title.tabIndex = -1;
  replace(header, head);

  // The cost part, again every second while the rental runs: what accrued since the last
  // meter tick is added as it accrues, and the time left counts down.
  let loadedAt = Date.now();
  const renderCost = () => {
    const active = isActive(rental);
    const now = liveCost(rental, Date.now());
    const showLeft = active && !providerView && balance;
    const left = showLeft && balance ? timeLeft(rental, balance, now, (Date.now() - loadedAt) / 1000) : null;
    replace(
      cost,
      h("h2", { id: "cost-title" }, "Cost"),
      facts([
        ["Rate", rateText(rental), "rate"],
        ["Billed time", duration(now.seconds), "billed"],
        [active ? "Cost so far" : "Total cost", amount(now.micro), "charged"],
        ["Refunded", rental.refunded_micro ? amount(rental.refunded_micro) : null, "refunded"],
        ["Limits", limitsText(rental)],
        ["Time left", left, "time-left"],
        ["Provider's share", providerView ? amount(rental.provider_micro) : null],
      ]),
      showLeft && balance && balance.running_rentals > 1
        ? h(
            "p",
            { class: "small muted" },
            `Your balance pays for ${balance.running_rentals} running rentals at `,
            amount(balance.running_cost_per_hour_micro, { unit: "USDC/h" }),
            " together.",
          )
        : null,
    );
  };

  const render = () => {
    replace(stateSlot, rentalStateBadge(rental.state));
    renderStop();
    const active = isActive(rental);
    replace(
      status,
      h("h2", { id: "status-title" }, "Status"),
      facts([
        ["State", rentalStateBadge(rental.state)],
        ["Started", when(rental.started_at)],
        ["Running since", rental.running_at ? when(rental.running_at) : active ? "Not yet" : null],
        ["Ended", rental.ended_at ? when(rental.ended_at) : null],
        ["End", endReasonText(rental, viewer), "end-reason"],
        ["Ended by", endPartyText(rental)?.replace(/^Ended by /, ""), "end-party"],
        ["Exit code", rental.exit_code === null ? null : String(rental.exit_code)],
        // The platform's sentence on the end, unless it says what End says.
        [
          "Detail",
          rental.detail && rental.detail.toLowerCase() !== endReasonText(rental, "other")?.toLowerCase()
            ? rental.detail
            : null,
          "detail",
        ],
        ["Customer", providerView ? h("span", { class: "pseudonym" }, rental.customer ?? "") : null],
      ]),
    );
    renderCost();
    replace(
      workload,
      h("h2", { id: "workload-title" }, "Workload"),
      facts([
        ["Image", h("code", null, rental.image)],
        ["Command", commandView(rental), "command"],
        ["Location", [rental.country, rental.region].filter(Boolean).join(" · ") || "—"],
        ["Machine", providerView || hasRole("admin") ? rental.machine_id : null, "mono"],
      ]),
    );
    if (portsState !== rental.state) {
      portsState = rental.state;
      replace(
        portsArea,
        portsSection(rental, viewer === "customer"),
        viewer === "customer" ? terminalSection(rental) : null,
        viewer === "customer" ? sshSection(rental) : null,
        viewer === "customer" ? filesSection(rental) : null,
      );
    }
    if (!providerView) replace(low, active && balance ? lowBalanceBanner(balance) : null);
  };

  // The output: followed from the cursor while the rental is active, read to its end once
  // more after it ended.
  let cursor: string | null = null;
  let lineCount = 0;
  let logsDone = false;
  const readLogs = async () => {
    for (let pages = 0; pages < 20; pages++) {
      const q = new URLSearchParams({ limit: String(kLogPage) });
      if (cursor) q.set("cursor", cursor);
      const page = await api.get<api.Page<api.RentalLog>>(`/rentals/${encodeURIComponent(rental.id)}/logs?${q}`, {
        signal: v.signal,
      });
      if (page.items.length) {
        const atEnd = logLines.scrollTop + logLines.clientHeight >= logLines.scrollHeight - 8;
        append(
          logLines,
          page.items.map((l) =>
            h("span", { class: `log-line ${l.stream === "stderr" ? "stderr" : "stdout"}`, title: when(l.at) }, l.data),
          ),
        );
        lineCount += page.items.length;
        while (lineCount > kMaxLogLines && logLines.firstChild) {
          logLines.removeChild(logLines.firstChild);
          lineCount -= 1;
        }
        if (atEnd) logLines.scrollTop = logLines.scrollHeight;
      }
      if (page.next_cursor) cursor = page.next_cursor;
      if (page.items.length < kLogPage) break;
    }
  };
  const renderLogNote = () => {
    const empty = lineCount === 0;
    logLines.hidden = empty && !isActive(rental);
    logNote.textContent = isActive(rental)
      ? `${empty ? "No output yet. " : ""}Follows the output every ${kDetailPollMs / 1000} s.`
      : empty
        ? "The workload wrote no output."
        : "The rental has ended: this is all of its output.";
  };

  const reload = async () => {
    const [r, b] = await Promise.all([
      api.get<api.Rental>(`/rentals/${encodeURIComponent(rental.id)}`, { signal: v.signal }),
      !providerView && hasRole("customer")
        ? api.get<api.Balance>("/me/balance", { signal: v.signal }).catch(() => null)
        : Promise.resolve(null),
    ]);
    rental = r;
    balance = b;
    loadedAt = Date.now();
    if (stopping && !isActive(rental)) {
      stopping = false;
      slot.ok(["The rental is stopped. It cost ", amount(rental.charged_micro), " in all."]);
    }
    render();
  };

  let logsHidden = false;
  const tick = async () => {
    if (logsDone) return;
    try {
      if (isActive(rental)) await reload();
    } catch (e) {
      if (isAbort(e) || v.signal.aborted) return;
      replace(logNote, errorBanner(e, "Updates paused (retrying)"));
      return;
    }
    if (!logsHidden) {
      try {
        await readLogs();
      } catch (e) {
        if (isAbort(e) || v.signal.aborted) return;
        if (!(e instanceof api.ApiError && (e.status === 403 || e.status === 404) && lineCount === 0)) {
          replace(logNote, errorBanner(e, "Updates paused (retrying)"));
          return;
        }
        logsHidden = true; // the output is its customer's: the provider is not shown it
      }
    }
    if (!isActive(rental)) logsDone = true;
    if (logsHidden) logNote.textContent = "The workload's output is shown to its customer only.";
    else renderLogNote();
  };

  if (!providerView && hasRole("customer")) {
    balance = await api.get<api.Balance>("/me/balance", { signal: v.signal }).catch(() => null);
  }
  render();
  await tick();
  v.every(kDetailPollMs, tick);
  v.every(1000, () => {
    if (rental.state === "running") renderCost();
  });
}
