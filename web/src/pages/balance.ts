// The Balance page (#/balance?from=2026-12-01&to=2026-12-31): the prepaid balance, what
// the running rentals cost per hour and how long it lasts at that rate, a warning when it
// is low, and the statement (every movement of the balance, newest first) for a range of
// days, page by page, with the same range as CSV. The days are the reader's own: a day
// runs from local midnight to the next, sent to the API as RFC 3339 instants.
import * as api from "../api";
import { navigate, pageHeader, session, type View } from "../app";
import { pageThrough } from "../components/paging";
import { lowBalanceBanner } from "../components/rental";
import { append, button, field, h, replace } from "../dom";
import { clearFieldErrors, isAbort, StatusSlot } from "../errors";
import { duration, plural, when } from "../format";
import { amount } from "../money";

const kPollMs = 10000;
const kPageSize = 50;

const kKindNames: Record<string, string> = {
  operator_credit: "Credit",
  usdc_topup: "Top-up (USDC)",
  usage_provider: "GPU time (provider)",
  usage_fee: "GPU time (platform fee)",
  refund: "Refund",
  refund_provider: "Refund (provider's part)",
  refund_fee: "Refund (platform fee)",
};

export function kindName(kind: string): string {
  return kKindNames[kind] ?? kind;
}

const kDay = /^(\d{4})-(\d{2})-(\d{2})$/;

// "2026-12-01" → the instant of that day's local midnight (or of the next day's, for the
// end of a range that includes the day); null when it is not a date.
function dayStart(day: string, next = false): string | null {
  const m = day.match(kDay);
  if (!m) return null;
  const d = new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]) + (next ? 1 : 0));
  return Number.isNaN(d.getTime()) ? null : d.toISOString();
}

// The statement's query for the days chosen ("to" includes its day; the API's excludes).
export function statementQuery(from: string, to: string): URLSearchParams {
  const q = new URLSearchParams();
  const a = from ? dayStart(from) : null;
  const b = to ? dayStart(to, true) : null;
  if (a) q.set("from", a);
  if (b) q.set("to", b);
  return q;
}

function tile(label: string, value: string | Node, cls: string, note?: string | null): HTMLElement {
  return h(
    "div",
    { class: `money-tile ${cls}` },
    h("div", { class: "money-label" }, label),
    h("div", { class: "money-value" }, value),
    note ? h("div", { class: "small muted" }, note) : null,
  );
}

export async function balancePage(v: View): Promise<void> {
  const from = v.query.get("from") ?? "";
  const to = v.query.get("to") ?? "";
  const low = h("div");
  const tiles = h("div", { class: "balance-tiles", "aria-live": "polite" }, h("p", { class: "muted" }, "Loading…"));
  const balanceSlot = new StatusSlot();
  const user = session.user!;

  const render = (b: api.Balance) => {
    replace(low, lowBalanceBanner(b));
    replace(
      tiles,
      tile("Balance", amount(b.balance_micro), "balance-now"),
      tile(
        "Running cost",
        b.running_rentals ? amount(b.running_cost_per_hour_micro, { unit: "USDC/h" }) : "Nothing running",
        "running-cost",
        b.running_rentals ? plural(b.running_rentals, "running rental") : null,
      ),
      tile(
        "Time left",
        b.seconds_left === null ? "—" : duration(b.seconds_left),
        "time-left",
        b.seconds_left === null ? "Nothing is running" : "At the current cost per hour",
      ),
    );
  };
  let failing = false;
  const refresh = async () => {
    try {
      render(await api.get<api.Balance>("/me/balance", { signal: v.signal }));
      if (failing) balanceSlot.clear();
      failing = false;
    } catch (e) {
      if (isAbort(e) || v.signal.aborted) return;
      failing = true;
      balanceSlot.error(e, "Could not load your balance");
    }
  };

  // ---- the statement
  const fromInput = h("input", { type: "date", value: from, max: "9999-12-31" });
  const toInput = h("input", { type: "date", value: to, max: "9999-12-31" });
  const apply = h("button", { type: "submit", class: "btn btn-primary" }, "Show");
  const filterSlot = new StatusSlot();
  const filter = h(
    "form",
    { class: "statement-filter", novalidate: true, role: "search", "aria-label": "Statement dates" },
    field("From", fromInput, { field: "from", hint: "First day" }),
    field("To", toInput, { field: "to", hint: "Last day, included" }),
    h(
      "div",
      { class: "actions" },
      apply,
      from || to ? button("All dates", () => navigate("/balance"), { kind: "link" }) : null,
    ),
  );
  const q = statementQuery(from, to);
  const csvQuery = new URLSearchParams(q);
  csvQuery.set("format", "csv");
  const csv = h(
    "a",
    {
      class: "btn btn-secondary csv-link",
      href: `/api/v1/me/statement?${csvQuery}`,
      download: `gpunex-statement${from ? "-from-" + from : ""}${to ? "-to-" + to : ""}.csv`,
    },
    "Download CSV",
  );
  const tbody = h("tbody");
  const table = h(
    "table",
    { class: "statement" },
    h(
      "thead",
      null,
      h(
        "tr",
        null,
        ["Date", "What", "Amount (USDC)", "Balance after (USDC)", "Reference"].map((x) => h("th", { scope: "col" }, x)),
      ),
    ),
    tbody,
  );
  const groups = new Map<string, RentalGroup>();
  const empty = h(
    "p",
    { class: "muted", hidden: true },
    from || to ? "Nothing moved your balance in these days." : "Nothing has moved your balance yet.",
  );
  const more = button("More", () => {}, { attrs: { hidden: true, class: "btn btn-secondary more-btn" } });
  const statementSlot = new StatusSlot();

  filter.addEventListener("submit", (ev) => {
    ev.preventDefault();
    filterSlot.clear();
    clearFieldErrors(filter);
    const errors: Record<string, string> = {};
    if (fromInput.value && !kDay.test(fromInput.value)) errors.from = "must be a date";
    if (toInput.value && !kDay.test(toInput.value)) errors.to = "must be a date";
    if (fromInput.value && toInput.value && toInput.value < fromInput.value) errors.to = "must not be before From";
    if (Object.keys(errors).length) {
      filterSlot.formError(filter, new api.ApiError(422, "validation_failed", "", errors), "");
      return;
    }
    const p = new URLSearchParams();
    if (fromInput.value) p.set("from", fromInput.value);
    if (toInput.value) p.set("to", toInput.value);
    navigate(`/balance${p.toString() ? "?" + p : ""}`);
  });

  append(
    v.main,
    pageHeader(
      "Balance",
      "Prepaid USDC that your rentals draw on while they run, billed by the second.",
      h("a", { class: "btn btn-primary topup-link", href: "#/balance/top-up" }, "Top up with USDC"),
    ),
    balanceSlot.el,
    low,
    tiles,
    h(
      "p",
      { class: "small muted account-id" },
      "To add funds, top up with USDC from a Solana wallet, or an operator credits your account. Your account id: ",
      h("code", { class: "user-id" }, user.id),
    ),
    h(
      "section",
      { class: "card statement-card", "aria-labelledby": "statement-title" },
      h("div", { class: "section-head" }, h("h2", { id: "statement-title" }, "Statement"), csv),
      filterSlot.el,
      filter,
      statementSlot.el,
      h("div", { class: "table-wrap" }, table),
      empty,
      more,
    ),
  );

  await refresh();
  v.every(kPollMs, refresh);

  let shown = 0;
  await pageThrough(
    more,
    statementSlot,
    async (cursor) => {
      const page = new URLSearchParams(q);
      page.set("limit", String(kPageSize));
      if (cursor) page.set("cursor", cursor);
      const ans = await api.get<api.Page<api.StatementItem>>(`/me/statement?${page}`, { signal: v.signal });
      for (const t of ans.items) {
        if (!t.rental_id) {
          tbody.appendChild(transferRow(t, false));
          continue;
        }
        // A rental's transfers are one group, where its newest one is; older pages add to
        // it (its rows go after the ones it has).
        let g = groups.get(t.rental_id);
        if (!g) {
          g = new RentalGroup(t);
          groups.set(t.rental_id, g);
          tbody.appendChild(g.row);
        }
        g.add(t);
      }
      shown += ans.items.length;
      empty.hidden = shown > 0;
      table.hidden = shown === 0;
      return ans.next_cursor;
    },
    "Could not load your statement",
    "Could not load more of your statement",
  );
}

// One transfer of the statement: a row of its own, or (`inGroup`) one of a rental's group,
// hidden until the group is opened.
function transferRow(t: api.StatementItem, inGroup: boolean): HTMLTableRowElement {
  return h(
    "tr",
    { "data-transfer-id": t.id, "data-kind": t.kind, class: inGroup ? "group-item" : "transfer", hidden: inGroup },
    h("td", { "data-label": "Date", class: "nowrap" }, when(t.at)),
    h(
      "td",
      { "data-label": "What" },
      kindName(t.kind),
      !inGroup && t.rental_id
        ? h(
            "a",
            { href: `#/rentals/${encodeURIComponent(t.rental_id)}`, class: "mono small rental-link" },
            ` ${t.rental_id}`,
          )
        : null,
    ),
    h(
      "td",
      { "data-label": "Amount", class: `num amount ${t.amount_micro >= 0 ? "amount-in" : "amount-out"}` },
      amount(t.amount_micro, { bare: true, signed: true }),
    ),
    h(
      "td",
      { "data-label": "Balance after", class: "num balance-after" },
      amount(t.balance_after_micro, { bare: true }),
    ),
    h("td", { "data-label": "Reference", class: "reference" }, t.reference || "—"),
  );
}

// A rental's transfers on the statement (issue 30 item 8): one row with their sum, when
// they ran, and the balance after the newest; its transfers (a charge per metering tick,
// refunds) behind a toggle.
class RentalGroup {
  readonly row: HTMLTableRowElement;
  private readonly items: HTMLTableRowElement[] = [];
  private sum = 0;
  private oldest = "";
  private readonly newest: string;
  private readonly sumCell: HTMLElement;
  private readonly span: HTMLElement;
  private readonly toggle: HTMLButtonElement;
  private open = false;

  constructor(first: api.StatementItem) {
    const id = first.rental_id ?? "";
    this.newest = first.at;
    this.sumCell = h("td", { "data-label": "Amount", class: "num amount" });
    this.span = h("span", { class: "small muted group-span" });
    this.toggle = button("", () => this.setOpen(!this.open), {
      kind: "link",
      attrs: { "aria-expanded": "false" },
    });
    this.toggle.classList.add("group-toggle");
    this.row = h(
      "tr",
      { class: "rental-group", "data-rental-id": id },
      h("td", { "data-label": "Date", class: "nowrap" }, when(first.at)),
      h(
        "td",
        { "data-label": "What" },
        "Rental ",
        h("a", { href: `#/rentals/${encodeURIComponent(id)}`, class: "mono small" }, id),
        h("br"),
        this.span,
        " ",
        this.toggle,
      ),
      this.sumCell,
      h(
        "td",
        { "data-label": "Balance after", class: "num balance-after" },
        amount(first.balance_after_micro, { bare: true }),
      ),
      h("td", { "data-label": "Reference", class: "reference" }, "—"),
    );
  }

  add(t: api.StatementItem): void {
    const row = transferRow(t, true);
    row.hidden = !this.open;
    (this.items[this.items.length - 1] ?? this.row).after(row);
    this.items.push(row);
    this.sum += t.amount_micro;
    this.oldest = t.at;
    replace(this.sumCell, amount(this.sum, { bare: true, signed: true }));
    this.sumCell.className = `num amount ${this.sum >= 0 ? "amount-in" : "amount-out"}`;
    const n = this.items.length;
    this.span.textContent =
      n === 1
        ? "1 transfer"
        : `${n} transfers over ${duration((Date.parse(this.newest) - Date.parse(this.oldest)) / 1000)}`;
    this.toggle.textContent = this.open ? "Hide transfers" : `Show ${plural(n, "transfer")}`;
  }

  private setOpen(open: boolean): void {
    this.open = open;
    for (const r of this.items) r.hidden = !open;
    this.toggle.setAttribute("aria-expanded", String(open));
    this.toggle.textContent = open ? "Hide transfers" : `Show ${plural(this.items.length, "transfer")}`;
  }
}
