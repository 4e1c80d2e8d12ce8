// The operator's pages (admins): users (#/admin/users, found by part of their email or
// name; one user's roles, balance and rentals at #/admin/users/ID), providers
// (#/admin/providers: every provider with its tier, commission and machines' counts),
// machines (#/admin/machines, every machine with its status, or one provider's) and
// rentals (#/admin/rentals, every rental filtered by state; one rental with the refund
// form at #/admin/rentals/ID). The lists page through the API 50 rows at a time (a More
// button), filtered there. A tab bar links them with Credits & ledger and Payouts.
import * as api from "../api";
import { askBelow } from "../components/confirm";
import { pageHeader, type View } from "../app";
import { facts } from "../components/details";
import { gpusText, loadModelNames, rentalStateBadge } from "../components/rental";
import { IdempotentSubmit } from "../components/workload";
import { append, busy, button, dataTable as table, field, h, replace } from "../dom";
import { clearFieldErrors, errorBanner, isAbort, StatusSlot } from "../errors";
import { ago, duration, tierName, when } from "../format";
import { amount as amountOf, exactText, exactUsdc, parseUsdc, usdc } from "../money";

interface AdminUser {
  id: string;
  email: string;
  name: string;
  created_at: string;
  disabled: boolean;
  roles: string[];
  balance_micro: number;
  provider: { tier: string; status: string; application_id: string; approved_at: string } | null;
}

interface UserFound {
  id: string;
  email: string;
  name: string;
  created_at: string;
  disabled: boolean;
}

type AdminRental = api.Rental & { customer_id?: string; provider_id?: string };
type AdminMachine = api.Machine & { provider_id: string; provider_name: string; created_at?: string };

interface RefundAnswer {
  rental: AdminRental;
  transfers: Array<{ id: string; kind: string; from: string; amount_micro: number; reference: string; at: string }>;
}

const kTabs: Array<[string, string]> = [
  ["/admin/users", "Users"],
  ["/admin/providers", "Providers"],
  ["/admin/machines", "Machines"],
  ["/admin/rentals", "Rentals"],
  ["/admin/billing", "Credits & ledger"],
  ["/admin/payouts", "Payouts"],
];

// A row of links that choose what a page shows, the current one marked: [href, label, current].
function filterNav(cls: string, label: string, links: Array<[string, string, boolean]>): HTMLElement {
  return h(
    "nav",
    { class: `filter-tabs ${cls}`.trim(), "aria-label": label },
    h(
      "ul",
      null,
      links.map(([href, text, current]) =>
        h(
          "li",
          null,
          h("a", { href, class: current ? "active" : null, "aria-current": current ? "page" : null }, text),
        ),
      ),
    ),
  );
}

// The operator's sections, `current` marked.
export function adminTabs(current: string): HTMLElement {
  return filterNav(
    "admin-tabs",
    "Admin sections",
    kTabs.map(([path, label]) => [`#${path}`, label, path === current]),
  );
}

function userHref(id: string): string {
  return `#/admin/users/${encodeURIComponent(id)}`;
}

function rentalHref(id: string): string {
  return `#/admin/rentals/${encodeURIComponent(id)}`;
}

function machineBadge(status: string): HTMLElement {
  return h(
    "span",
    { class: `badge ${status === "online" ? "badge-ok" : "badge-off"} machine-status` },
    status === "online" ? "Online" : status === "offline" ? "Offline" : status,
  );
}

function roleBadges(roles: string[]): Node[] {
  return roles.map((r) => h("span", { class: `badge role-${r}` }, r));
}

// --- users

export async function adminUsersPage(v: View): Promise<void> {
  const q = v.query.get("q") ?? "";
  const slot = new StatusSlot();
  const text = h("input", {
    type: "search",
    autocomplete: "off",
    spellcheck: false,
    maxlength: 254,
    value: q,
  });
  const results = h("div", { class: "user-results-list", "aria-live": "polite" });
  const form = h(
    "form",
    { class: "user-search admin-user-search", novalidate: true, role: "search", "aria-label": "User search" },
    field("Find a user", text, { field: "q", hint: "Part of their email address or name (2 characters or more)." }),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "btn btn-primary" }, "Find")),
  );
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const next = text.value.trim();
    location.hash = `#/admin/users?q=${encodeURIComponent(next)}`;
  });
  append(
    v.main,
    pageHeader("Users", "Find an account by email or name, then read its roles, balance and rentals."),
    adminTabs("/admin/users"),
    h("section", { class: "card" }, form, slot.el, results),
  );
  if (!q) {
    text.focus();
    return;
  }
  try {
    const page = await api.get<api.Page<UserFound>>(`/admin/users?${new URLSearchParams({ q, limit: "50" })}`, {
      signal: v.signal,
    });
    replace(
      results,
      page.items.length
        ? table(
            "admin-users",
            ["Name", "Email", "Signed up", ""],
            page.items.map((u) =>
              h(
                "tr",
                { "data-user-id": u.id },
                h("td", { "data-label": "Name" }, h("a", { href: userHref(u.id) }, u.name || "(no name)")),
                h("td", { "data-label": "Email", class: "mono small" }, u.email),
                h("td", { "data-label": "Signed up" }, when(u.created_at)),
                h("td", { "data-label": "" }, u.disabled ? h("span", { class: "badge badge-off" }, "Disabled") : null),
              ),
            ),
          )
        : h("p", { class: "muted" }, `No user has “${q}” in their email or name.`),
    );
  } catch (e) {
    if (!isAbort(e)) slot.formError(form, e, "The search failed");
  }
}

function rentalRows(items: AdminRental[], withCustomer: boolean): Node[] {
  return items.map((r) =>
    h(
      "tr",
      { "data-rental-id": r.id },
      h(
        "td",
        { "data-label": "Rental" },
        h("a", { href: rentalHref(r.id) }, gpusText(r)),
        h("div", { class: "small muted mono" }, r.id),
      ),
      h("td", { "data-label": "State" }, rentalStateBadge(r.state)),
      withCustomer
        ? h(
            "td",
            { "data-label": "Customer" },
            r.customer_id
              ? h("a", { href: userHref(r.customer_id), class: "mono small" }, r.customer ?? r.customer_id)
              : "—",
          )
        : null,
      h("td", { "data-label": "Billed time", class: "num" }, duration(r.billed_seconds)),
      h("td", { "data-label": "Charged", class: "num" }, amountOf(r.charged_micro)),
      h("td", { "data-label": "Refunded", class: "num" }, r.refunded_micro ? amountOf(r.refunded_micro) : "—"),
      h("td", { "data-label": "Started" }, when(r.started_at)),
    ),
  );
}

export async function adminUserPage(v: View): Promise<void> {
  const id = v.params.id;
  append(v.main, h("p", null, h("a", { href: "#/admin/users" }, "← Users")));
  let u: AdminUser;
  let rentals: api.Page<AdminRental>;
  let served: api.Page<AdminRental>;
  const list = (by: string) =>
    api.get<api.Page<AdminRental>>(`/rentals?${new URLSearchParams({ [by]: id, limit: "50" })}`, {
      signal: v.signal,
    });
  try {
    await loadModelNames(v.signal);
    [u, rentals, served] = await Promise.all([
      api.get<AdminUser>(`/admin/users/${encodeURIComponent(id)}`, { signal: v.signal }),
      list("customer_id"),
      list("provider_id"),
    ]);
  } catch (e) {
    if (!isAbort(e)) append(v.main, errorBanner(e, "The user could not be loaded"));
    return;
  }
  append(
    v.main,
    pageHeader(u.name || u.email, u.email),
    adminTabs("/admin/users"),
    h(
      "section",
      { class: "card admin-user", "data-user-id": u.id },
      h("h2", null, "Account"),
      facts([
        ["Id", u.id, "mono"],
        ["Email", u.email],
        ["Roles", h("span", { class: "roles" }, roleBadges(u.roles))],
        ["Balance", amountOf(u.balance_micro), "balance num"],
        ["Signed up", when(u.created_at)],
        ["Status", u.disabled ? h("span", { class: "badge badge-off" }, "Disabled") : "Active"],
        [
          "Provider",
          u.provider
            ? `${tierName(u.provider.tier)}, ${u.provider.status}, approved ${when(u.provider.approved_at)}`
            : "Not a provider",
        ],
      ]),
      h(
        "div",
        { class: "actions" },
        h(
          "a",
          { class: "btn btn-secondary", href: `#/admin/billing?email=${encodeURIComponent(u.email)}` },
          "Credit this user…",
        ),
        u.provider
          ? h(
              "a",
              { class: "btn btn-secondary", href: `#/admin/machines?provider=${encodeURIComponent(u.id)}` },
              "Their machines",
            )
          : null,
      ),
    ),
    h(
      "section",
      { class: "card" },
      h("h2", null, u.provider ? "Their own rentals" : "Rentals"),
      rentals.items.length
        ? table(
            "admin-rentals user-rentals",
            ["Rental", "State", "Billed time", "Charged", "Refunded", "Started"],
            rentalRows(rentals.items, false),
          )
        : h("p", { class: "muted" }, "No rentals."),
      rentals.next_cursor ? h("p", { class: "small muted" }, "The 50 newest are shown.") : null,
    ),
    u.provider
      ? h(
          "section",
          { class: "card" },
          h("h2", null, "Rentals on their machines"),
          served.items.length
            ? table(
                "admin-rentals provider-rentals",
                ["Rental", "State", "Customer", "Billed time", "Charged", "Refunded", "Started"],
                rentalRows(served.items, true),
              )
            : h("p", { class: "muted" }, "None yet."),
          served.next_cursor ? h("p", { class: "small muted" }, "The 50 newest are shown.") : null,
        )
      : null,
  );
}

// --- providers and machines

interface AdminProvider {
  user_id: string;
  email: string;
  name: string;
  tier: string;
  status: string;
  application_id: string;
  approved_at: string;
  commission_bps: number;
  machines: number;
  machines_online: number;
  gpus: number;
}

// A table whose rows come a page at a time from the API, with a "More" button while
// there are more; `rows` turns a page's items into rows.
function pagedTable<T>(
  v: View,
  cls: string,
  heads: string[],
  url: (cursor: string | null) => string,
  rows: (items: T[]) => Node[],
  opts: { empty: string; failed: string },
): { el: HTMLElement; load: () => Promise<void> } {
  const slot = new StatusSlot();
  const tbody = h("tbody");
  const more = button("More", () => {}, { attrs: { hidden: true, class: "btn btn-secondary more-btn" } });
  const empty = h("p", { class: "muted", hidden: true }, opts.empty);
  let cursor: string | null = null;
  const load = async () => {
    try {
      const page = await api.get<api.Page<T>>(url(cursor), { signal: v.signal });
      append(tbody, rows(page.items));
      cursor = page.next_cursor;
      more.hidden = !cursor;
      empty.hidden = tbody.childElementCount > 0;
    } catch (e) {
      if (!isAbort(e)) slot.error(e, opts.failed);
    }
  };
  more.addEventListener("click", () => void busy(more, load));
  const el = h(
    "div",
    null,
    slot.el,
    h(
      "div",
      { class: "table-wrap" },
      h(
        "table",
        { class: cls },
        h(
          "thead",
          null,
          h(
            "tr",
            null,
            heads.map((x) => h("th", { scope: "col" }, x)),
          ),
        ),
        tbody,
      ),
    ),
    empty,
    h("div", { class: "actions" }, more),
  );
  return { el, load };
}

function providerRow(p: AdminProvider): HTMLElement {
  return h(
    "tr",
    { "data-provider-id": p.user_id },
    h(
      "td",
      { "data-label": "Provider" },
      h("a", { href: userHref(p.user_id) }, p.name || p.email || p.user_id),
      h("div", { class: "small muted mono" }, p.email),
    ),
    h(
      "td",
      { "data-label": "Tier" },
      tierName(p.tier),
      p.status !== "active" ? [" ", h("span", { class: "badge badge-warn" }, p.status)] : null,
    ),
    h(
      "td",
      { "data-label": "Commission", class: "num" },
      `${(p.commission_bps / 100).toFixed(2).replace(/\.?0+$/, "")} %`,
    ),
    h("td", { "data-label": "Approved" }, when(p.approved_at)),
    h(
      "td",
      { "data-label": "Machines", class: "num" },
      p.machines
        ? h(
            "a",
            { href: `#/admin/machines?provider=${encodeURIComponent(p.user_id)}` },
            `${p.machines_online} of ${p.machines} online`,
          )
        : "none yet",
    ),
    h("td", { "data-label": "GPUs", class: "num" }, String(p.gpus)),
  );
}

export async function adminProvidersPage(v: View): Promise<void> {
  const list = pagedTable<AdminProvider>(
    v,
    "admin-providers",
    ["Provider", "Tier", "Commission", "Approved", "Machines", "GPUs"],
    (cursor) => `/admin/providers?${new URLSearchParams({ limit: "50", ...(cursor ? { cursor } : {}) })}`,
    (items) => items.map(providerRow),
    { empty: "No provider has been approved yet.", failed: "The providers could not be loaded" },
  );
  append(
    v.main,
    pageHeader("Providers", "Every approved provider, oldest approval first, with their tier and machines."),
    adminTabs("/admin/providers"),
    h("section", { class: "card" }, list.el),
  );
  await list.load();
}

const kMachineFilters: Array<[string, string]> = [
  ["", "All"],
  ["online", "Online"],
  ["offline", "Offline"],
];

export async function adminMachinesPage(v: View): Promise<void> {
  const status = v.query.get("status") ?? "";
  const provider = v.query.get("provider") ?? "";
  const link = (s: string) => {
    const q = new URLSearchParams();
    if (s) q.set("status", s);
    if (provider) q.set("provider", provider);
    const qs = q.toString();
    return qs ? `#/admin/machines?${qs}` : "#/admin/machines";
  };
  const list = pagedTable<AdminMachine>(
    v,
    "admin-machines",
    ["Machine", "Status", "Provider", "GPUs", "Agent", "Last seen"],
    (cursor) => {
      const q = new URLSearchParams({ limit: "50" });
      if (status) q.set("status", status);
      if (provider) q.set("provider_id", provider);
      if (cursor) q.set("cursor", cursor);
      return `/machines?${q}`;
    },
    (items) =>
      items.map((m) =>
        h(
          "tr",
          { "data-machine-id": m.id },
          h(
            "td",
            { "data-label": "Machine" },
            m.name || m.id,
            m.emulated ? [" ", h("span", { class: "badge badge-warn" }, "emulated")] : null,
            h("div", { class: "small muted mono" }, m.id),
          ),
          h("td", { "data-label": "Status" }, machineBadge(m.status)),
          h(
            "td",
            { "data-label": "Provider" },
            h("a", { href: userHref(m.provider_id) }, m.provider_name || m.provider_id),
          ),
          h("td", { "data-label": "GPUs", class: "num" }, String(m.gpus.length)),
          h("td", { "data-label": "Agent", class: "mono small" }, m.agent_version || "—"),
          h("td", { "data-label": "Last seen" }, m.last_seen ? ago(m.last_seen) : "—"),
        ),
      ),
    { empty: "No machine matches.", failed: "The machines could not be loaded" },
  );
  append(
    v.main,
    pageHeader(
      "Machines",
      provider ? "The machines of one provider, with their status." : "Every machine on the platform, with its status.",
    ),
    adminTabs("/admin/machines"),
    h(
      "section",
      { class: "card" },
      filterNav(
        "",
        "Show machines",
        kMachineFilters.map(([value, label]) => [link(value), label, value === status]),
      ),
      provider
        ? h(
            "p",
            { class: "small" },
            h(
              "a",
              { href: status ? `#/admin/machines?status=${status}` : "#/admin/machines" },
              "Show every provider's",
            ),
          )
        : null,
      list.el,
    ),
  );
  await list.load();
}

// --- rentals

const kRentalFilters: Array<[string, string]> = [
  ["", "All"],
  ["active", "Active"],
  ["pending", "Pending"],
  ["starting", "Starting"],
  ["running", "Running"],
  ["ending", "Ending"],
  ["ended", "Ended"],
];

export async function adminRentalsPage(v: View): Promise<void> {
  const state = v.query.get("state") ?? "";
  const list = pagedTable<AdminRental>(
    v,
    "admin-rentals",
    ["Rental", "State", "Customer", "Billed time", "Charged", "Refunded", "Started"],
    (cursor) => {
      const q = new URLSearchParams({ limit: "50" });
      if (state) q.set("state", state);
      if (cursor) q.set("cursor", cursor);
      return `/rentals?${q}`;
    },
    (items) => rentalRows(items, true),
    { empty: "No rental in this state.", failed: "The rentals could not be loaded" },
  );
  append(
    v.main,
    pageHeader("Rentals", "Every rental on the platform, newest first. Open one to refund what it was charged."),
    adminTabs("/admin/rentals"),
    h(
      "section",
      { class: "card" },
      filterNav(
        "rental-states",
        "Show rentals",
        kRentalFilters.map(([value, label]) => [
          value ? `#/admin/rentals?state=${value}` : "#/admin/rentals",
          label,
          value === state,
        ]),
      ),
      list.el,
    ),
  );
  try {
    await loadModelNames(v.signal);
  } catch {
    // the model ids stand in for their names
  }
  await list.load();
}

// Where a refund's money came from (RefundAnswer's `from`), in words.
const kFromWords: Record<string, string> = {
  platform: "the platform",
  provider_pending: "the provider's pending earnings",
  provider_available: "the provider's available earnings",
};

function refundSection(r: AdminRental, done: (r: AdminRental, a: RefundAnswer) => void): HTMLElement {
  const left = r.charged_micro - r.refunded_micro;
  const slot = new StatusSlot();
  const amount = h("input", { type: "text", inputmode: "decimal", autocomplete: "off", maxlength: 32 });
  const reason = h("input", { type: "text", autocomplete: "off", maxlength: 200 });
  const submit = h("button", { type: "submit", class: "btn btn-primary" }, "Refund…");
  const confirmArea = h("div", { class: "confirm-area" });
  const all = button(
    "All of it",
    () => {
      amount.value = exactText(left);
      amount.focus();
    },
    { kind: "link" },
  );
  const amountField = field("Amount (USDC)", amount, {
    field: "amount_micro",
    hint: `At most ${exactUsdc(left)}: what the rental was charged less what was refunded.`,
  });
  amountField.querySelector(".hint")?.append(" ", all);
  const form = h(
    "form",
    { class: "refund-form", novalidate: true },
    amountField,
    field("Reason", reason, {
      field: "reason",
      hint: "One line; the customer reads it on their statement (e.g. the machine was slow).",
    }),
    h("div", { class: "actions" }, submit),
    confirmArea,
  );
  const attempts = new IdempotentSubmit();
  const send = async (body: { amount_micro: number; reason: string }, btn: HTMLButtonElement) =>
    busy(btn, async () => {
      const key = attempts.keyFor(body);
      try {
        const ans = await api.post<RefundAnswer>(`/admin/rentals/${encodeURIComponent(r.id)}/refund`, body, {
          headers: { "Idempotency-Key": key },
        });
        attempts.settled(null);
        replace(confirmArea);
        submit.disabled = false;
        amount.value = "";
        reason.value = "";
        done(ans.rental, ans);
      } catch (e) {
        const answered = attempts.failed(
          e,
          slot,
          form,
          "Nothing was refunded",
          "Try again: the same refund is made once however often it is sent.",
        );
        if (answered) {
          replace(confirmArea);
          submit.disabled = false;
        }
      }
    });
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    slot.clear();
    clearFieldErrors(form);
    const errors: Record<string, string> = {};
    const parsed = parseUsdc(amount.value);
    if (!parsed.ok) errors.amount_micro = parsed.error;
    else if (parsed.micro > left) errors.amount_micro = `is more than the ${exactUsdc(left)} left to refund`;
    if (!reason.value.trim()) errors.reason = "is required: say why, the customer reads it";
    if (Object.keys(errors).length || !parsed.ok) {
      slot.formError(form, new api.ApiError(422, "validation_failed", "", errors), "", "Nothing was refunded");
      return;
    }
    const body = { amount_micro: parsed.micro, reason: reason.value.trim() };
    askBelow(
      confirmArea,
      submit,
      "Confirm the refund",
      ["Give back ", amountOf(body.amount_micro), " to the customer?"],
      `Refund ${usdc(body.amount_micro)}`,
      (yes) => void send(body, yes),
    );
  });
  const billed = r.state === "ended" || r.state === "ending";
  return h(
    "section",
    { class: "card refund", "aria-labelledby": "refund-title" },
    h("h2", { id: "refund-title" }, "Refund"),
    h(
      "p",
      { class: "muted" },
      "Gives back part or all of the charge as ledger transfers: the commission's share from the platform, the rest from the provider's pending earnings (or available ones; the platform pays what was already paid out).",
    ),
    slot.el,
    !billed
      ? h("p", { class: "banner banner-info" }, "The rental is still billed: it can be refunded once it has ended.")
      : left <= 0
        ? h("p", { class: "muted nothing-left" }, "Nothing is left to refund.")
        : form,
  );
}

export async function adminRentalPage(v: View): Promise<void> {
  const id = v.params.id;
  const body = h("div");
  append(v.main, h("p", null, h("a", { href: "#/admin/rentals" }, "← Rentals")), body);
  let r: AdminRental;
  try {
    await loadModelNames(v.signal);
    r = await api.get<AdminRental>(`/rentals/${encodeURIComponent(id)}`, { signal: v.signal });
  } catch (e) {
    if (!isAbort(e)) append(v.main, errorBanner(e, "The rental could not be loaded"));
    return;
  }
  // The provider by name (the rental names it by id).
  let providerName = r.provider_id ?? "";
  try {
    if (r.provider_id)
      providerName = (
        await api.get<AdminUser>(`/admin/users/${encodeURIComponent(r.provider_id)}`, { signal: v.signal })
      ).name;
  } catch (e) {
    if (isAbort(e)) return; // else the id stands in for the name
  }
  const show = (r: AdminRental, last?: RefundAnswer) => {
    replace(
      body,
      pageHeader(`Rental ${gpusText(r)}`, h("span", { class: "mono" }, r.id)),
      adminTabs("/admin/rentals"),
      last
        ? h(
            "div",
            { class: "banner banner-ok refund-done", role: "status" },
            "Refunded ",
            amountOf(last.transfers.reduce((n, t) => n + t.amount_micro, 0)),
            ": ",
            last.transfers.map((t, i) => [
              i ? ", " : "",
              amountOf(t.amount_micro),
              ` from ${kFromWords[t.from] ?? t.from}`,
            ]),
            ".",
          )
        : null,
      h(
        "section",
        { class: "card admin-rental", "data-rental-id": r.id },
        h("h2", null, "Rental"),
        facts([
          ["State", rentalStateBadge(r.state)],
          [
            "Customer",
            r.customer_id ? h("a", { href: userHref(r.customer_id) }, r.customer ?? r.customer_id) : r.customer,
          ],
          ["Provider", r.provider_id ? h("a", { href: userHref(r.provider_id) }, providerName || r.provider_id) : null],
          ["Machine", r.machine_id, "mono"],
          ["Image", r.image, "mono"],
          ["Started", when(r.started_at)],
          ["Ended", r.ended_at ? when(r.ended_at) : null],
          ["End", r.detail || r.end_reason],
          ["Billed time", duration(r.billed_seconds)],
          ["Charged", amountOf(r.charged_micro), "charged num"],
          ["Commission", amountOf(r.fee_micro), "num"],
          ["Refunded", amountOf(r.refunded_micro), "refunded num"],
        ]),
        h("p", null, h("a", { href: `#/rentals/${encodeURIComponent(r.id)}` }, "The rental's own page (logs, ports)")),
      ),
      refundSection(r, (next, ans) => show(next, ans)),
    );
  };
  show(r);
}
