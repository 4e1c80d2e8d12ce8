// The Earnings tab (#/provider/earnings?from=2026-11-01&to=2026-11-30&month=2026-11):
// what the provider earned in the current payout period (the week from Monday, or the
// month, as their schedule), where their money is (pending in the hold after the usage,
// available for the next payout, in payment, paid out), and for a range of UTC days
// (the last 30 by default; "to" includes its day) the earnings per GPU, per model and
// per day, drawn as a chart, each table with its CSV; and the monthly statement of a
// month with its CSV. Net is what the provider earned: gross − commission − refunds.
import * as api from "../../api";
import { navigate, type View } from "../../app";
import { chartLegend, fitChart, lineChart, type ChartSeries } from "../../components/chart";
import { loadModelNames, modelName } from "../../components/rental";
import { methodLine, payoutAmount, payoutReference, payoutStateBadge } from "../../components/payout";
import { append, button, dataTable, field, h, replace } from "../../dom";
import { clearFieldErrors, isAbort, StatusSlot } from "../../errors";
import { addDays, dayText, gpuHours, isDay, monthText, plural, utcDay } from "../../format";
import { amount, usdc } from "../../money";
import { gpuLabel, machineTitle } from "./overview";
import type { ProviderTab } from "./tabs";

const kDefaultDays = 30;
const kMaxChartDays = 400;

function tile(label: string, micro: number, cls: string, note: string): HTMLElement {
  return h(
    "div",
    { class: `money-tile ${cls}` },
    h("div", { class: "money-label" }, label),
    h("div", { class: "money-value" }, amount(micro)),
    h("div", { class: "small muted" }, note),
  );
}

function periodCard(e: api.Earnings): HTMLElement {
  const last = addDays(e.period.to, -1);
  const what = e.period.schedule === "monthly" ? "This month" : "This week";
  return h(
    "section",
    { class: "card earnings-period", "aria-labelledby": "period-title" },
    h("h2", { id: "period-title" }, `${what}: ${dayText(e.period.from)} – ${dayText(last)}`),
    h(
      "p",
      { class: "period-total" },
      h("span", { class: "money-value" }, amount(e.totals.period_micro)),
      " ",
      h("span", { class: "muted" }, "earned so far"),
    ),
    h(
      "p",
      { class: "small muted" },
      e.period.schedule === "monthly"
        ? "You are paid monthly, on the first business day of the month (UTC). "
        : "You are paid weekly, on Mondays (UTC). ",
      "Change it on the ",
      h("a", { href: "#/provider/payments" }, "Payments"),
      " tab.",
    ),
  );
}

// `holdS`: how long earnings stay pending (the payout settings' earnings_hold_s); null
// when unknown.
function totalTiles(t: api.EarningsTotals, holdS: number | null): HTMLElement {
  const hold =
    holdS === null
      ? "In the hold after the usage, for refunds"
      : `In the hold for ${holdS % 3600 === 0 ? plural(holdS / 3600, "hour") : plural(Math.round(holdS / 60), "minute")} after the usage, for refunds`;
  return h(
    "div",
    { class: "balance-tiles earnings-tiles" },
    tile("Pending", t.pending_micro, "earn-pending", hold),
    tile("Available", t.available_micro, "earn-available", "Paid with your next payout"),
    tile("In payment", t.in_payment_micro, "earn-in-payment", "In a payout on its way"),
    tile("Paid out", t.paid_micro, "earn-paid", "Paid to you so far"),
  );
}

// The money columns every earnings table has, after its own first columns.
const kMoneyHeads = ["Rentals", "GPU-hours", "Gross (USDC)", "Commission (USDC)", "Refunds (USDC)", "Net (USDC)"];

function moneyCells(r: {
  rentals?: number;
  gpu_seconds: number;
  gross_micro: number;
  commission_micro: number;
  refunds_micro: number;
  net_micro: number;
}): HTMLElement[] {
  const cells: HTMLElement[] = [];
  if (r.rentals !== undefined) cells.push(h("td", { "data-label": "Rentals", class: "num" }, String(r.rentals)));
  return [
    ...cells,
    h("td", { "data-label": "GPU-hours", class: "num" }, gpuHours(r.gpu_seconds)),
    h("td", { "data-label": "Gross", class: "num" }, amount(r.gross_micro, { bare: true })),
    h("td", { "data-label": "Commission", class: "num" }, amount(r.commission_micro, { bare: true })),
    h("td", { "data-label": "Refunds", class: "num" }, amount(r.refunds_micro, { bare: true })),
    h("td", { "data-label": "Net", class: "num net" }, h("strong", null, amount(r.net_micro, { bare: true }))),
  ];
}

function table(cls: string, caption: string, heads: string[], rows: HTMLElement[]): HTMLElement {
  return dataTable(`earnings-table ${cls}`, heads, rows, caption);
}

function csvLink(query: URLSearchParams, group: string, name: string): HTMLAnchorElement {
  const q = new URLSearchParams(query);
  q.set("group", group);
  q.set("format", "csv");
  return h(
    "a",
    {
      class: "btn btn-secondary btn-small csv-link",
      href: `/api/v1/providers/me/earnings?${q}`,
      download: `gpunex-earnings-${name}.csv`,
      "data-group": group,
    },
    "Download CSV",
  );
}

function sumNet(rows: api.EarningsRow[]): number {
  return rows.reduce((a, r) => a + r.net_micro, 0);
}

// The range asked for: from and to (inclusive) as UTC days, the last 30 days by default.
function rangeOf(v: View): { from: string; to: string; custom: boolean } {
  const today = utcDay();
  const from = v.query.get("from") ?? "";
  const to = v.query.get("to") ?? "";
  return {
    from: isDay(from) ? from : addDays(isDay(to) ? to : today, -(kDefaultDays - 1)),
    to: isDay(to) ? to : today,
    custom: isDay(from) || isDay(to),
  };
}

function chartCard(days: api.EarningsRow[], from: string, to: string, stops: Array<() => void>): HTMLElement {
  const byDay = new Map(days.map((d) => [d.day ?? d.key, d]));
  const points = [];
  const span = Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 86400000) + 1;
  if (span <= kMaxChartDays) {
    for (let day = from; day <= to; day = addDays(day, 1)) {
      const net = byDay.get(day)?.net_micro ?? 0;
      points.push({ t: Date.parse(`${day}T12:00:00Z`), y: net / 1e6, label: `${dayText(day)}: ${usdc(net)}` });
    }
  } else {
    for (const d of days) {
      const day = d.day ?? d.key;
      points.push({
        t: Date.parse(`${day}T12:00:00Z`),
        y: d.net_micro / 1e6,
        label: `${dayText(day)}: ${usdc(d.net_micro)}`,
      });
    }
  }
  const series: ChartSeries[] = [{ name: "Net earnings per day (USDC)", points }];
  const best = days.reduce<api.EarningsRow | null>((a, d) => (!a || d.net_micro > a.net_micro ? d : a), null);
  const description = `${plural(days.length, "day")} with earnings from ${dayText(from)} to ${dayText(to)}, ${usdc(sumNet(days))} in all${best ? `; the most on ${dayText(best.day ?? best.key)}: ${usdc(best.net_micro)}` : ""}.`;
  const box = h("div", { class: "chart-box" });
  stops.push(
    fitChart(box, (width) =>
      lineChart({
        title: "Net earnings per day",
        description,
        xLabel: "Day (UTC)",
        yLabel: "USDC",
        series,
        width,
        height: 220,
        days: true,
      }),
    ),
  );
  return h("figure", { class: "bench-chart earnings-chart" }, box, h("figcaption", null, chartLegend(series)));
}

// ---- the monthly statement

function statementView(s: api.MonthlyStatement): HTMLElement {
  const csv = h(
    "a",
    {
      class: "btn btn-secondary btn-small csv-link",
      href: `/api/v1/providers/me/statements/${encodeURIComponent(s.month)}?format=csv`,
      download: `gpunex-statement-${s.month}.csv`,
      "data-csv": "statement",
    },
    "Download CSV",
  );
  return h(
    "div",
    { class: "statement-view", "data-month": s.month },
    h("div", { class: "section-head" }, h("h3", null, `Statement for ${monthText(s.month)}`), csv),
    h(
      "dl",
      { class: "facts compact statement-facts" },
      h("dt", null, "Rentals"),
      h("dd", { class: "rentals" }, String(s.rentals)),
      h("dt", null, "GPU-hours"),
      h("dd", null, gpuHours(s.gpu_seconds)),
      h("dt", null, "Gross"),
      h("dd", null, amount(s.gross_micro)),
      h("dt", null, "Commission"),
      h("dd", null, amount(s.commission_micro)),
      h("dt", null, "Refunds"),
      h("dd", null, amount(s.refunds_micro)),
      h("dt", null, "Net earned"),
      h("dd", { class: "net" }, h("strong", null, amount(s.net_micro))),
      h("dt", null, "Paid out"),
      h("dd", { class: "paid" }, amount(s.paid_micro)),
    ),
    s.lines.length
      ? table(
          "statement-lines",
          `Rentals in ${monthText(s.month)}`,
          ["Rental", "GPUs", ...kMoneyHeads.slice(1)],
          s.lines.map((l) =>
            h(
              "tr",
              { "data-rental-id": l.rental_id },
              h(
                "td",
                { "data-label": "Rental" },
                h("a", { href: `#/rentals/${encodeURIComponent(l.rental_id)}`, class: "mono small" }, l.rental_id),
              ),
              h("td", { "data-label": "GPUs" }, `${modelName(l.gpu_model)} × ${l.gpus}`),
              ...moneyCells(l),
            ),
          ),
        )
      : h("p", { class: "muted" }, `No rentals earned you anything in ${monthText(s.month)}.`),
    s.payouts.length
      ? table(
          "statement-payouts",
          `Payouts in ${monthText(s.month)}`,
          ["Date", "State", "Amount", "Method", "Signature or reference"],
          s.payouts.map((p) =>
            h(
              "tr",
              { "data-payout-id": p.id },
              h("td", { "data-label": "Date", class: "nowrap" }, dayText(p.as_of)),
              h("td", { "data-label": "State" }, payoutStateBadge(p.state)),
              h("td", { "data-label": "Amount", class: "num" }, payoutAmount(p)),
              h("td", { "data-label": "Method" }, methodLine(p.method)),
              h("td", { "data-label": "Reference" }, payoutReference(p)),
            ),
          ),
        )
      : h("p", { class: "muted small" }, "No payouts in this month."),
  );
}

function statementSection(v: View): HTMLElement {
  const slot = new StatusSlot();
  const body = h("div", { "aria-live": "polite" });
  const wanted = v.query.get("month") ?? "";
  const month = h("input", {
    type: "month",
    value: /^\d{4}-\d{2}$/.test(wanted) ? wanted : utcDay().slice(0, 7),
    max: utcDay().slice(0, 7),
    required: true,
  });
  const form = h(
    "form",
    { class: "statement-filter month-form", novalidate: true, "aria-label": "Statement month" },
    field("Month", month, { field: "month", hint: "Months are UTC calendar months" }),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "btn btn-primary" }, "Show statement")),
  );
  const show = async () => {
    slot.clear();
    clearFieldErrors(form);
    if (!/^\d{4}-\d{2}$/.test(month.value)) {
      slot.formError(form, new api.ApiError(422, "validation_failed", "", { month: "must be a month" }), "");
      return;
    }
    try {
      const s = await api.get<api.MonthlyStatement>(`/providers/me/statements/${encodeURIComponent(month.value)}`, {
        signal: v.signal,
      });
      replace(body, statementView(s));
      // The address names the month shown, without a reload.
      const q = new URLSearchParams(v.query);
      q.set("month", month.value);
      history.replaceState(null, "", `#/provider/earnings?${q}`);
    } catch (e) {
      if (!isAbort(e)) slot.formError(form, e, "Could not load the statement");
    }
  };
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    void show();
  });
  if (wanted) void show();
  return h(
    "section",
    { class: "card statement-card monthly-statements", "aria-labelledby": "statements-title" },
    h("h2", { id: "statements-title" }, "Monthly statements"),
    h(
      "p",
      { class: "small muted" },
      "Every rental that earned you something in a month, with the commission, refunds and payouts: for your records and your accountant.",
    ),
    slot.el,
    form,
    body,
  );
}

// ---- the tab

export const earningsTab: ProviderTab = {
  id: "earnings",
  label: "Earnings",
  async render(v, panel) {
    const range = rangeOf(v);
    const slot = new StatusSlot();
    const fromInput = h("input", { type: "date", value: range.from, max: "9999-12-31" });
    const toInput = h("input", { type: "date", value: range.to, max: "9999-12-31" });
    const filter = h(
      "form",
      { class: "statement-filter", novalidate: true, role: "search", "aria-label": "Earnings dates" },
      field("From", fromInput, { field: "from", hint: "First day (UTC)" }),
      field("To", toInput, { field: "to", hint: "Last day, included" }),
      h(
        "div",
        { class: "actions" },
        h("button", { type: "submit", class: "btn btn-primary" }, "Show"),
        range.custom ? button("Last 30 days", () => navigate("/provider/earnings"), { kind: "link" }) : null,
      ),
    );
    filter.addEventListener("submit", (ev) => {
      ev.preventDefault();
      slot.clear();
      clearFieldErrors(filter);
      const errors: Record<string, string> = {};
      if (!isDay(fromInput.value)) errors.from = "must be a date";
      if (!isDay(toInput.value)) errors.to = "must be a date";
      if (!errors.from && !errors.to && toInput.value < fromInput.value) errors.to = "must not be before From";
      if (Object.keys(errors).length) {
        slot.formError(filter, new api.ApiError(422, "validation_failed", "", errors), "");
        return;
      }
      navigate(`/provider/earnings?from=${fromInput.value}&to=${toInput.value}`);
    });

    const query = new URLSearchParams({ from: range.from, to: addDays(range.to, 1) });
    const get = (group: string) =>
      api.get<api.Earnings>(`/providers/me/earnings?${query}&group=${group}`, { signal: v.signal });
    const [byGpu, byModel, byDay, machines, settings] = await Promise.all([
      get("gpu"),
      get("model"),
      get("day"),
      api.get<api.Page<api.Machine>>("/machines?limit=500", { signal: v.signal }).catch(() => null),
      api.get<api.PayoutSettings>("/providers/me/payout-settings", { signal: v.signal }).catch(() => null),
      loadModelNames(v.signal),
    ]);
    const machineById = new Map((machines?.items ?? []).map((m) => [m.id, m]));
    const rangeText = `${dayText(range.from)} – ${dayText(range.to)}`;
    const stops: Array<() => void> = [];
    v.onLeave(() => stops.forEach((f) => f()));
    const name = `${range.from}-to-${range.to}`;
    const none = h("p", { class: "muted" }, "Nothing earned in these days.");

    const gpuRows = byGpu.rows.map((r) => {
      const m = r.machine_id ? machineById.get(r.machine_id) : undefined;
      const g = m?.gpus.find((x) => x.id === r.gpu_id);
      return h(
        "tr",
        { "data-key": r.key },
        h("td", { "data-label": "GPU" }, g ? gpuLabel(g) : r.gpu_model ? modelName(r.gpu_model) : r.label),
        h(
          "td",
          { "data-label": "Machine" },
          m ? machineTitle(m) : h("span", { class: "mono small" }, r.machine_id ?? "—"),
        ),
        ...moneyCells(r),
      );
    });
    const modelRows = byModel.rows.map((r) =>
      h(
        "tr",
        { "data-key": r.key },
        h("td", { "data-label": "Model" }, modelName(r.gpu_model ?? r.key)),
        ...moneyCells(r),
      ),
    );
    const dayRows = [...byDay.rows]
      .reverse()
      .map((r) =>
        h(
          "tr",
          { "data-day": r.day ?? r.key },
          h("td", { "data-label": "Day", class: "nowrap" }, dayText(r.day ?? r.key)),
          ...moneyCells(r),
        ),
      );

    const section = (id: string, title: string, csv: HTMLElement | null, ...body: Array<Node | null>) =>
      h(
        "section",
        { class: `card earnings-${id}`, "aria-labelledby": `earn-${id}-title` },
        h("div", { class: "section-head" }, h("h2", { id: `earn-${id}-title` }, title), csv),
        ...body,
      );

    append(
      panel,
      periodCard(byModel),
      totalTiles(byModel.totals, settings?.earnings_hold_s ?? null),
      h(
        "section",
        { class: "card earnings-range", "aria-labelledby": "earn-range-title" },
        h("h2", { id: "earn-range-title" }, "Earnings by day, GPU and model"),
        h(
          "p",
          { class: "small muted" },
          `${rangeText}: `,
          amount(sumNet(byModel.rows)),
          " net. Net is what you earned: the rentals' gross less the platform's commission and refunds. Days are UTC days.",
        ),
        slot.el,
        filter,
      ),
      section(
        "chart",
        "Net earnings per day",
        null,
        byDay.rows.length ? chartCard(byDay.rows, range.from, range.to, stops) : (none.cloneNode(true) as HTMLElement),
      ),
      section(
        "gpu",
        "Per GPU",
        gpuRows.length ? csvLink(query, "gpu", `per-gpu-${name}`) : null,
        gpuRows.length
          ? table("by-gpu", `Earnings per GPU, ${rangeText}`, ["GPU", "Machine", ...kMoneyHeads], gpuRows)
          : (none.cloneNode(true) as HTMLElement),
      ),
      section(
        "model",
        "Per model",
        modelRows.length ? csvLink(query, "model", `per-model-${name}`) : null,
        modelRows.length
          ? table("by-model", `Earnings per GPU model, ${rangeText}`, ["Model", ...kMoneyHeads], modelRows)
          : (none.cloneNode(true) as HTMLElement),
      ),
      section(
        "history",
        "History",
        dayRows.length ? csvLink(query, "day", `per-day-${name}`) : null,
        dayRows.length
          ? table("by-day", `Earnings per day, newest first, ${rangeText}`, ["Day", ...kMoneyHeads], dayRows)
          : (none.cloneNode(true) as HTMLElement),
      ),
      statementSection(v),
    );
  },
};
