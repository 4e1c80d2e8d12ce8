// Payout runs, for admins (#/admin/payouts, #/admin/payouts/<run id>; docs/payouts.md).
// The list: each run with its payouts counted by state, the providers it skipped, its
// total and bank files; a form to start a run (its date, schedule and EUR rate); and the
// platform's payout wallet (its key, USDC token account and balances, a warning when
// the payouts waiting need more than it holds). A run: its payouts with provider, state,
// amount, method and Solana signature or bank reference; its bank files to download and
// mark sent; for a bank line submitted, the bank's answer (paid, or failed with the
// reason); a failed payout retried. Read again every few seconds until the run is done.
import * as api from "../api";
import { navigate, pageHeader, type View } from "../app";
import {
  attemptsList,
  copyable,
  methodLine,
  minorText,
  payoutAmount,
  payoutReference,
  payoutStateBadge,
} from "../components/payout";
import { append, busy, button, field, h, replace } from "../dom";
import { adminTabs } from "./admin_console";
import { clearFieldErrors, errorBanner, isAbort, StatusSlot } from "../errors";
import { addDays, dayText, plural, utcDay, when } from "../format";
import { amount } from "../money";

const kPollMs = 2000;

const kRunStates: Record<string, [string, string]> = {
  planning: ["Planning", "badge-off"],
  running: ["Running", "status-submitted"],
  waiting: ["Waiting", "status-needs_info"],
  done: ["Done", "status-approved"],
};

function runStateBadge(state: string): HTMLElement {
  const [name, cls] = kRunStates[state] ?? [state, ""];
  return h("span", { class: `badge run-state ${cls}`.trim(), "data-state": state }, name);
}

const kCountNames: Array<[string, string]> = [
  ["confirmed", "paid"],
  ["submitted", "submitted"],
  ["planned", "planned"],
  ["waiting_funds", "waiting for funds"],
  ["failed", "failed"],
];
const kSkipNames: Array<[string, string]> = [
  ["carried_over", "carried over"],
  ["held", "held after a change"],
  ["no_method", "no method"],
];

function countsText(counts: Record<string, number>, names: Array<[string, string]>, none: string): string {
  const parts = names.filter(([k]) => (counts[k] ?? 0) > 0).map(([k, name]) => `${counts[k]} ${name}`);
  return parts.length ? parts.join(" · ") : none;
}

// Lamports as SOL: 1500000000 → "1.50 SOL".
function solText(lamports: number): string {
  const digits = String(Math.abs(Math.trunc(lamports))).padStart(10, "0");
  let frac = digits.slice(-9).replace(/0+$/, "");
  if (frac.length < 2) frac = frac.padEnd(2, "0");
  return `${lamports < 0 ? "−" : ""}${digits.slice(0, -9)}.${frac} SOL`;
}

// The latest run date of a schedule at or before today (UTC): weekly the last Monday,
// monthly the first weekday of the month (holidays are the server's to know).
export function latestRunDate(schedule: string, today = utcDay()): string {
  if (schedule === "weekly") {
    const dow = new Date(`${today}T00:00:00Z`).getUTCDay(); // 0 Sunday
    return addDays(today, -((dow + 6) % 7));
  }
  const first = (month: string) => {
    let d = `${month}-01`;
    while ([0, 6].includes(new Date(`${d}T00:00:00Z`).getUTCDay())) d = addDays(d, 1);
    return d;
  };
  const f = first(today.slice(0, 7));
  return f <= today ? f : first(addDays(`${today.slice(0, 7)}-01`, -1).slice(0, 7));
}

// ---- the wallet

function walletCard(v: View): { el: HTMLElement; load: () => Promise<void> } {
  const body = h("div", { "aria-live": "polite" }, h("p", { class: "muted" }, "Loading…"));
  const load = async () => {
    let w: api.PayoutWallet;
    try {
      w = await api.get<api.PayoutWallet>("/admin/payout-wallet", { signal: v.signal });
    } catch (e) {
      if (!isAbort(e)) replace(body, errorBanner(e, "Could not read the payout wallet"));
      return;
    }
    if (!w.configured) {
      replace(
        body,
        h(
          "p",
          { class: "banner banner-info" },
          "No Solana wallet is set up ([solana] rpc_url and keypair): USDC payouts and top-ups are not offered.",
        ),
      );
      return;
    }
    replace(
      body,
      w.error ? errorBanner(w.error, "The balances could not be read from the Solana node") : null,
      w.short
        ? h(
            "div",
            { class: "banner banner-warn wallet-short", role: "alert" },
            h("strong", null, "Short of funds. "),
            "The Solana payouts waiting need ",
            amount(w.needed_micro),
            w.needed_lamports ? ` and ${solText(w.needed_lamports)} for fees and new token accounts` : "",
            "; the wallet holds ",
            amount(w.usdc_micro),
            ` and ${solText(w.sol_lamports)}. They are sent once it is funded.`,
          )
        : null,
      h(
        "dl",
        { class: "facts compact wallet-facts" },
        h("dt", null, "Public key"),
        h("dd", { class: "wallet-key" }, copyable(w.public_key, "the wallet's public key")),
        h("dt", null, "USDC token account"),
        h("dd", { class: "wallet-token-account" }, copyable(w.token_account, "the USDC token account")),
        h("dt", null, "USDC"),
        h("dd", { class: "wallet-usdc" }, amount(w.usdc_micro)),
        h("dt", null, "SOL"),
        h("dd", { class: "wallet-sol" }, solText(w.sol_lamports)),
        h("dt", null, "Needed by waiting payouts"),
        h("dd", { class: "wallet-needed" }, amount(w.needed_micro)),
      ),
    );
  };
  const again = button("Refresh", () => void busy(again, load), { attrs: { class: "btn btn-secondary btn-small" } });
  const el = h(
    "section",
    { class: "card payout-wallet", "aria-labelledby": "wallet-title" },
    h("div", { class: "section-head" }, h("h2", { id: "wallet-title" }, "Payout wallet"), again),
    body,
    h(
      "p",
      { class: "small muted" },
      "Fund it by sending USDC to the token account and a little SOL to the public key (network fees, new token accounts).",
    ),
  );
  return { el, load };
}

// ---- starting a run

function startRunCard(): HTMLElement {
  const slot = new StatusSlot();
  const schedule = h(
    "select",
    null,
    h("option", { value: "weekly" }, "Weekly"),
    h("option", { value: "monthly" }, "Monthly"),
  );
  const asOf = h("input", { type: "date", value: latestRunDate("weekly"), max: utcDay(), required: true });
  const rate = h("input", {
    type: "text",
    inputmode: "decimal",
    autocomplete: "off",
    maxlength: 20,
    class: "short",
    placeholder: "0.92",
  });
  schedule.addEventListener("change", () => {
    asOf.value = latestRunDate(schedule.value);
  });
  const submit = h("button", { type: "submit", class: "btn btn-primary" }, "Start the run");
  const form = h(
    "form",
    { class: "start-run-form", novalidate: true },
    h(
      "div",
      { class: "row" },
      field("Schedule", schedule, { field: "schedule" }),
      field("As of", asOf, {
        field: "as_of",
        hint: "Weekly: a Monday; monthly: the first business day. Not in the future.",
      }),
      field("EUR per USDC (optional)", rate, {
        field: "eur_rate",
        hint: "The rate of SEPA payouts in EUR; without one, the configured rate.",
      }),
    ),
    h("div", { class: "form-actions" }, submit),
  );
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    slot.clear();
    clearFieldErrors(form);
    const body: Record<string, string> = { as_of: asOf.value, schedule: schedule.value };
    if (rate.value.trim()) body.eur_rate = rate.value.trim().replace(",", ".");
    void busy(submit, async () => {
      try {
        const run = await api.post<api.PayoutRun>("/admin/payout-runs", body);
        navigate(`/admin/payouts/${encodeURIComponent(run.id)}`);
      } catch (e) {
        if (!isAbort(e)) slot.formError(form, e, "The run did not start", "The run did not start");
      }
    });
  });
  return h(
    "section",
    { class: "card start-run", "aria-labelledby": "start-title" },
    h("h2", { id: "start-title" }, "Start a run"),
    h(
      "p",
      { class: "small muted" },
      "A run pays every provider of its schedule whose available earnings reach their threshold and their method's minimum. Starting the same schedule and date again opens the run made for it.",
    ),
    slot.el,
    form,
  );
}

function runsTable(runs: api.PayoutRun[]): HTMLElement {
  if (!runs.length) return h("p", { class: "muted" }, "No payout runs yet.");
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: "payout-runs" },
      h("caption", { class: "visually-hidden" }, "Payout runs, newest first"),
      h(
        "thead",
        null,
        h(
          "tr",
          null,
          ["As of", "Schedule", "State", "Payouts", "Skipped", "Total", "Files", "Started"].map((x) =>
            h("th", { scope: "col" }, x),
          ),
        ),
      ),
      h(
        "tbody",
        null,
        runs.map((r) =>
          h(
            "tr",
            { "data-run-id": r.id, "data-state": r.state },
            h(
              "td",
              { "data-label": "As of", class: "nowrap" },
              h("a", { href: `#/admin/payouts/${encodeURIComponent(r.id)}` }, dayText(r.as_of)),
            ),
            h("td", { "data-label": "Schedule" }, r.schedule === "monthly" ? "Monthly" : "Weekly"),
            h("td", { "data-label": "State" }, runStateBadge(r.state)),
            h("td", { "data-label": "Payouts", class: "run-counts" }, countsText(r.counts, kCountNames, "none")),
            h("td", { "data-label": "Skipped", class: "run-skips" }, countsText(r.counts, kSkipNames, "none")),
            h("td", { "data-label": "Total", class: "num" }, amount(r.total_micro)),
            h("td", { "data-label": "Files", class: "num" }, String(r.files.length)),
            h("td", { "data-label": "Started", class: "nowrap" }, when(r.created_at)),
          ),
        ),
      ),
    ),
  );
}

export async function adminPayoutsPage(v: View): Promise<void> {
  const wallet = walletCard(v);
  const list = h("div", { "aria-live": "polite" });
  const slot = new StatusSlot();
  append(
    v.main,
    pageHeader("Payouts", "Weekly and monthly payout runs to providers: USDC on Solana, SEPA and ACH files."),
    adminTabs("/admin/payouts"),
    wallet.el,
    startRunCard(),
    h(
      "section",
      { class: "card", "aria-labelledby": "runs-title" },
      h("h2", { id: "runs-title" }, "Runs"),
      slot.el,
      list,
    ),
  );
  let last = "";
  const load = async () => {
    try {
      const runs = await api.get<{ items: api.PayoutRun[] }>("/admin/payout-runs", { signal: v.signal });
      slot.clear();
      const key = JSON.stringify(runs.items);
      if (key !== last) replace(list, runsTable(runs.items));
      last = key;
    } catch (e) {
      if (!isAbort(e) && !v.signal.aborted) slot.error(e, "Could not load the runs");
    }
  };
  await Promise.all([wallet.load(), load()]);
  v.every(kPollMs * 3, load);
}

// ---- one run

function filesCard(
  run: api.PayoutRun,
  act: (work: () => Promise<unknown>, btn: HTMLButtonElement) => void,
): HTMLElement {
  if (!run.files.length) return h("p", { class: "muted small" }, "No bank files: this run has no SEPA or ACH payouts.");
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: "bank-files" },
      h("caption", { class: "visually-hidden" }, "Bank files of the run"),
      h(
        "thead",
        null,
        h(
          "tr",
          null,
          ["File", "Kind", "Lines", "Total", "State", "SHA-256"].map((x) => h("th", { scope: "col" }, x)),
          h("th", { scope: "col" }, h("span", { class: "visually-hidden" }, "Action")),
        ),
      ),
      h(
        "tbody",
        null,
        run.files.map((f) => {
          const sent = button(
            "Mark sent",
            () =>
              act(
                () =>
                  api.post(`/admin/payout-runs/${encodeURIComponent(run.id)}/files/${encodeURIComponent(f.name)}/sent`),
                sent,
              ),
            { kind: "primary", attrs: { class: "btn btn-primary btn-small", "aria-label": `Mark ${f.name} sent` } },
          );
          return h(
            "tr",
            { "data-file": f.name, "data-state": f.state },
            h(
              "td",
              { "data-label": "File" },
              h(
                "a",
                {
                  href: `/api/v1/admin/payout-runs/${encodeURIComponent(run.id)}/files/${encodeURIComponent(f.name)}`,
                  download: f.name,
                  class: "mono small file-link",
                },
                f.name,
              ),
            ),
            h("td", { "data-label": "Kind" }, f.kind === "nacha" ? "NACHA (ACH)" : "pain.001 (SEPA)"),
            h("td", { "data-label": "Lines", class: "num" }, String(f.lines)),
            h("td", { "data-label": "Total", class: "num" }, minorText(f.total_minor, f.currency)),
            h(
              "td",
              { "data-label": "State" },
              f.state === "sent"
                ? [
                    h("span", { class: "badge status-approved" }, "Sent"),
                    h("div", { class: "small muted" }, when(f.sent_at)),
                  ]
                : h("span", { class: "badge status-needs_info" }, "Not sent yet"),
            ),
            h("td", { "data-label": "SHA-256" }, h("code", { class: "mono small ident sha" }, f.sha256)),
            h("td", { class: "row-action" }, f.state === "sent" ? null : sent),
          );
        }),
      ),
    ),
  );
}

// The actions of one payout: the bank's answer for a bank line submitted, a retry for a
// failed payout. `open` tells the page a small form is open (no refresh meanwhile).
function payoutActions(
  p: api.Payout,
  act: (work: () => Promise<unknown>, btn: HTMLButtonElement) => void,
  open: (on: boolean) => void,
): HTMLElement | null {
  const base = `/admin/payouts/${encodeURIComponent(p.id)}`;
  const bank = p.method && p.method.kind !== "solana";
  if (!(bank && p.state === "submitted") && p.state !== "failed") return null;
  const cell = h("div", { class: "payout-actions" });
  const buttons = () => {
    open(false);
    const list: HTMLElement[] = [];
    if (bank && p.state === "submitted") {
      list.push(
        button("Paid…", () => form("paid"), {
          attrs: { class: "btn btn-secondary btn-small", "aria-label": `Record payout ${p.id} paid` },
        }),
        button("Failed…", () => form("failed"), {
          attrs: { class: "btn btn-secondary btn-small", "aria-label": `Record payout ${p.id} failed` },
        }),
      );
    }
    if (p.state === "failed") {
      const retry = button("Retry", () => act(() => api.post(`${base}/retry`), retry), {
        attrs: { class: "btn btn-secondary btn-small", "aria-label": `Retry payout ${p.id}` },
      });
      list.push(retry);
    }
    replace(cell, list);
  };
  const form = (state: "paid" | "failed") => {
    open(true);
    const slot = new StatusSlot();
    const input = h("input", {
      type: "text",
      autocomplete: "off",
      maxlength: state === "paid" ? 100 : 300,
      "data-field": state === "paid" ? "bank_reference" : "reason",
    });
    const ok = h(
      "button",
      { type: "submit", class: "btn btn-primary btn-small" },
      state === "paid" ? "Record paid" : "Record failed",
    );
    const f = h(
      "form",
      { class: "bank-result-form", novalidate: true, "aria-label": `The bank's answer for payout ${p.id}` },
      field(state === "paid" ? "Bank reference (optional)" : "Reason", input, {
        field: state === "paid" ? "bank_reference" : "reason",
        hint:
          state === "paid"
            ? "From the bank's statement; the file's reference when empty."
            : "Why the bank returned it; the provider sees it.",
      }),
      h("div", { class: "actions" }, ok, button("Cancel", buttons, { attrs: { class: "btn btn-link btn-small" } })),
      slot.el,
    );
    f.addEventListener("submit", (ev) => {
      ev.preventDefault();
      clearFieldErrors(f);
      slot.clear();
      const body: Record<string, string> = { state };
      if (input.value.trim()) body[state === "paid" ? "bank_reference" : "reason"] = input.value.trim();
      if (state === "failed" && !body.reason) {
        slot.formError(f, new api.ApiError(422, "validation_failed", "", { reason: "is required" }), "");
        return;
      }
      void busy(ok, async () => {
        try {
          await api.post(`${base}/bank-result`, body);
          open(false);
          act(async () => undefined, ok);
        } catch (e) {
          if (!isAbort(e)) slot.formError(f, e, "Not recorded");
        }
      });
    });
    replace(cell, f);
    input.focus();
  };
  buttons();
  return cell;
}

export async function adminPayoutRunPage(v: View): Promise<void> {
  const id = v.params.id;
  const slot = new StatusSlot();
  const summary = h("div");
  const files = h("div");
  const payouts = h("div");
  const head = pageHeader(
    "Payout run",
    null,
    h("a", { class: "btn btn-secondary", href: "#/admin/payouts" }, "All runs"),
  );
  append(
    v.main,
    head,
    adminTabs("/admin/payouts"),
    slot.el,
    summary,
    h(
      "section",
      { class: "card", "aria-labelledby": "files-title" },
      h("h2", { id: "files-title" }, "Bank files"),
      files,
    ),
    h(
      "section",
      { class: "card", "aria-labelledby": "run-payouts-title" },
      h("h2", { id: "run-payouts-title" }, "Payouts"),
      payouts,
    ),
  );
  let formsOpen = 0;
  let last = "";
  let run: api.PayoutRun;
  const load = async (force = false) => {
    run = await api.get<api.PayoutRun>(`/admin/payout-runs/${encodeURIComponent(id)}`, { signal: v.signal });
    const key = JSON.stringify(run);
    if (!force && (key === last || formsOpen > 0)) return;
    last = key;
    draw();
  };
  // Runs one action, then reads the run again; failures go to the page's slot.
  const act = (work: () => Promise<unknown>, btn: HTMLButtonElement) =>
    void busy(btn, async () => {
      slot.clear();
      try {
        await work();
        await load(true);
      } catch (e) {
        if (!isAbort(e)) slot.error(e, "Not done");
      }
    });
  const open = (on: boolean) => {
    formsOpen = Math.max(0, formsOpen + (on ? 1 : -1));
  };
  const draw = () => {
    head.querySelector("h1")!.textContent =
      `${run.schedule === "monthly" ? "Monthly" : "Weekly"} payout run · ${dayText(run.as_of)}`;
    replace(
      summary,
      h(
        "section",
        { class: "card run-summary", "aria-labelledby": "run-title" },
        h("div", { class: "section-head" }, h("h2", { id: "run-title" }, "Summary"), runStateBadge(run.state)),
        h(
          "dl",
          { class: "facts compact" },
          h("dt", null, "Run"),
          h("dd", { class: "mono small" }, run.id),
          h("dt", null, "Total"),
          h("dd", { class: "run-total" }, amount(run.total_micro)),
          h("dt", null, "Payouts"),
          h("dd", { class: "run-counts" }, countsText(run.counts, kCountNames, "none")),
          h("dt", null, "Skipped providers"),
          h("dd", { class: "run-skips" }, countsText(run.counts, kSkipNames, "none")),
          h("dt", null, "EUR per USDC"),
          h("dd", null, run.eur_rate ?? "—"),
          h("dt", null, "Started"),
          h("dd", null, when(run.created_at)),
          h("dt", null, "Finished"),
          h("dd", null, when(run.finished_at)),
        ),
        run.state === "waiting"
          ? h(
              "p",
              { class: "banner banner-info" },
              "Waiting: bank files to send and the bank's answers to record below, or USDC to fund (see the payout wallet).",
            )
          : null,
      ),
    );
    formsOpen = 0;
    replace(files, filesCard(run, act));
    const list = run.payouts ?? [];
    replace(
      payouts,
      list.length
        ? h(
            "div",
            { class: "table-wrap" },
            h(
              "table",
              { class: "run-payouts" },
              h("caption", { class: "visually-hidden" }, `Payouts of the run, ${plural(list.length, "payout")}`),
              h(
                "thead",
                null,
                h(
                  "tr",
                  null,
                  ["Provider", "State", "Amount", "Method", "Signature or reference", "Attempts"].map((x) =>
                    h("th", { scope: "col" }, x),
                  ),
                  h("th", { scope: "col" }, h("span", { class: "visually-hidden" }, "Actions")),
                ),
              ),
              h(
                "tbody",
                null,
                list.map((p) =>
                  h(
                    "tr",
                    { "data-payout-id": p.id, "data-state": p.state, "data-kind": p.method?.kind ?? "" },
                    h(
                      "td",
                      { "data-label": "Provider" },
                      p.provider_name ? h("span", null, p.provider_name) : null,
                      h("div", { class: "mono small muted" }, p.provider_id ?? ""),
                    ),
                    h(
                      "td",
                      { "data-label": "State" },
                      payoutStateBadge(p.state),
                      p.failure ? h("div", { class: "small failure" }, p.failure) : null,
                    ),
                    h("td", { "data-label": "Amount", class: "num" }, payoutAmount(p)),
                    h(
                      "td",
                      { "data-label": "Method" },
                      methodLine(p.method),
                      p.file ? h("div", { class: "small muted mono" }, p.file) : null,
                    ),
                    h("td", { "data-label": "Reference" }, payoutReference(p)),
                    h("td", { "data-label": "Attempts" }, attemptsList(p)),
                    h("td", { class: "row-action" }, payoutActions(p, act, open)),
                  ),
                ),
              ),
            ),
          )
        : h("p", { class: "muted" }, run.state === "planning" ? "Planning…" : "This run pays nobody."),
    );
  };
  await load(true);
  v.every(kPollMs, async () => {
    try {
      await load();
    } catch (e) {
      if (!isAbort(e) && !v.signal.aborted) slot.error(e, "Could not read the run");
    }
  });
}
