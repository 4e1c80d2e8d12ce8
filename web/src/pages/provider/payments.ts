// The Payments tab (#/provider/payments): when and how the provider is paid. The next
// payout (its date, what it would pay now, and why it would not) and how long earnings
// stay pending (earnings_hold_s); the payout method, chosen with each method's one
// minimum (the larger of the schedule's — the weekly threshold or the monthly minimum —
// and the method's own, as a run applies them), fee and note in view (a method this platform does
// not offer is shown disabled), its details checked as they are typed (bankcheck.ts) and
// by the server, the password asked for a change (PAY-5), and the hold on payouts to new
// details explained; for Solana the USDC token account the payouts go to; the schedule
// (weekly on Mondays from a threshold, or monthly); and the history of payouts with
// their state, Solana signature or bank reference, attempts and lines as CSV.
import * as api from "../../api";
import type { View } from "../../app";
import {
  checkAchAccount,
  checkBic,
  checkHolder,
  checkIban,
  checkRouting,
  checkWallet,
  electronicIban,
  ibanNeedsBic,
  printIban,
  type Check,
} from "../../components/bankcheck";
import { pageThrough } from "../../components/paging";
import {
  attemptsList,
  copyable,
  methodLine,
  methodName,
  payoutAmount,
  payoutReference,
  payoutStateBadge,
} from "../../components/payout";
import { append, busy, button, type Child, field, h, replace, uid } from "../../dom";
import { clearFieldErrors, isAbort, noticeBanner, StatusSlot } from "../../errors";
import { dayText, plural, when } from "../../format";
import { amount, exactText, parseUsdc } from "../../money";
import type { ProviderTab } from "./tabs";

const kHistoryPage = 20;

function capitalized(s: string): string {
  return s ? s[0].toUpperCase() + s.slice(1) : s;
}

// The one minimum a payout by `t` has under the provider's schedule, and where it comes
// from: a run pays from max(weekly threshold or monthly minimum, method minimum) up.
function payoutMinimum(t: api.MethodTerms, s: api.PayoutSettings): { micro: number; why: string } {
  const weekly = s.schedule === "weekly";
  const schedule = weekly ? s.threshold_micro : (s.monthly_minimum_micro ?? t.minimum_micro);
  if (t.minimum_micro > schedule) return { micro: t.minimum_micro, why: "this method's minimum" };
  return { micro: schedule, why: weekly ? "your weekly threshold" : "the monthly minimum" };
}

function termsText(t: api.MethodTerms, s: api.PayoutSettings): Child {
  const fee = t.fee_micro > 0 ? ["fee ", amount(t.fee_micro), " per payout"] : "no fee";
  return [`Paid in ${t.currency} · minimum payout `, amount(payoutMinimum(t, s).micro), " · ", fee];
}

// Where the minimum of termsText comes from (in words: one amount per method).
function minimumWhy(t: api.MethodTerms, s: api.PayoutSettings): string {
  const why = payoutMinimum(t, s).why;
  return why === "this method's minimum"
    ? "Set by this method (above your schedule's minimum)."
    : `Set by ${why} (this method's own is not higher).`;
}

// The minimum of the method set now, or why there is none.
function currentMinimumText(s: api.PayoutSettings): Child {
  const t = s.method ? s.methods.find((x) => x.kind === s.method?.kind) : undefined;
  if (!t) return "— (choose a method below)";
  const min = payoutMinimum(t, s);
  return [amount(min.micro), ` (${min.why})`];
}

// 86400 → "24 hours", 90 → "90 seconds", 5400 → "90 minutes".
function holdDuration(seconds: number): string {
  if (seconds % 3600 === 0) return plural(seconds / 3600, "hour");
  if (seconds % 60 === 0) return plural(seconds / 60, "minute");
  return plural(seconds, "second");
}

// How long earnings stay pending, from the API ([rentals] earnings_hold_s).
function pendingText(s: api.PayoutSettings): string {
  if (s.earnings_hold_s === undefined) return "Earnings stay pending for a while after the usage that made them.";
  return `Earnings stay pending for ${holdDuration(s.earnings_hold_s)} after the usage that made them, then become available; only available earnings are paid out.`;
}

function holdActive(s: api.PayoutSettings): boolean {
  return !!s.hold_until && Date.parse(s.hold_until) > Date.now();
}

function holdBanner(s: api.PayoutSettings): HTMLElement | null {
  if (!holdActive(s)) return null;
  return h(
    "section",
    { class: "banner banner-warn payout-hold", role: "status", "aria-labelledby": "hold-title" },
    h("h2", { id: "hold-title" }, `Payouts are on hold until ${when(s.hold_until)}`),
    h(
      "p",
      null,
      `Your payout details changed ${s.changed_at ? when(s.changed_at) : "recently"}. To protect you if someone else got into your account, no payout goes to new details until the hold ends; we emailed you about the change. Your earnings stay available and are paid by the first payout after that. If you did not make this change, change your password at once (`,
      h("a", { href: "#/account" }, "Account security"),
      ").",
    ),
  );
}

function nextPayoutCard(s: api.PayoutSettings): HTMLElement {
  const n = s.next_payout;
  const held = n.reason.startsWith("held") && s.hold_until;
  const reason = held ? `Held until ${when(s.hold_until)} after the change of details` : capitalized(n.reason);
  return h(
    "section",
    { class: "card next-payout", "aria-labelledby": "next-title" },
    h("h2", { id: "next-title" }, "Upcoming payout"),
    h(
      "dl",
      { class: "facts compact" },
      h("dt", null, "Date"),
      h("dd", { class: "next-date" }, `${dayText(n.date)} (${n.schedule === "monthly" ? "monthly" : "weekly"}, UTC)`),
      h("dt", null, "Available now"),
      h("dd", { class: "next-estimate" }, amount(n.estimate_micro)),
      h("dt", null, "Minimum payout"),
      h("dd", { class: "next-minimum" }, currentMinimumText(s)),
      h("dt", null, "Status"),
      h(
        "dd",
        { class: "next-status" },
        n.eligible
          ? h("span", { class: "badge status-approved" }, "Will be paid")
          : h("span", { class: "badge status-needs_info" }, "Not paid"),
        n.eligible ? null : h("span", { class: "next-reason" }, ` ${reason}`),
      ),
    ),
    h("p", { class: "small muted pending-hold" }, `The estimate is what is available now. ${pendingText(s)}`),
  );
}

// ---- the method: what is set now, and the form to change it

function currentMethod(s: api.PayoutSettings): HTMLElement {
  const m = s.method;
  if (!m)
    return h(
      "p",
      { class: "banner banner-info current-method" },
      s.methods.some((t) => t.offered) ? "No payout method yet: choose one below to be paid." : "No payout method yet.",
    );
  const rows: Array<[string, Node | string]> = [["Method", methodName(m.kind)]];
  if (m.kind === "solana") {
    rows.push(["Wallet", copyable(m.wallet, "the wallet address")]);
    const ata = m.token_account ?? s.token_account;
    if (ata)
      rows.push(["USDC token account", h("span", { class: "token-account" }, copyable(ata, "the USDC token account"))]);
  } else if (m.kind === "sepa") {
    rows.push(["Account holder", m.holder], ["IBAN", h("span", { class: "mono" }, m.iban_print ?? printIban(m.iban))]);
    rows.push(["BIC", m.bic ?? "—"]);
  } else {
    rows.push(
      ["Account holder", m.holder],
      ["Routing number", h("span", { class: "mono" }, m.routing_number)],
      ["Account", h("span", { class: "mono" }, `…${m.account_number_last4 ?? ""} (${m.account_type})`)],
    );
  }
  if (s.changed_at) rows.push(["Last changed", when(s.changed_at)]);
  return h(
    "div",
    { class: "current-method", "data-kind": m.kind },
    h(
      "dl",
      { class: "facts compact" },
      rows.map(([k, val]) => [h("dt", null, k), h("dd", null, val)]),
    ),
    m.kind === "solana"
      ? h(
          "p",
          { class: "small muted" },
          "Payouts arrive in the USDC token account of your wallet (its associated token account, derived from the wallet address). The platform creates it with your first payout if it does not exist, and pays the network fee.",
        )
      : null,
  );
}

// Shows `check`'s error under `input` (aria-invalid) or, for text that is only
// unfinished, a note in `live`; `final` (leaving the field) makes an unfinished value an
// error. Returns the error shown, or null.
function showCheck(input: HTMLInputElement, live: HTMLElement, c: Check, final: boolean): string | null {
  const id = input.id + "-live-err";
  document.getElementById(id)?.remove();
  const server = input.parentElement?.querySelector(".field-error");
  server?.remove();
  input.removeAttribute("aria-invalid");
  const described = (input.getAttribute("aria-describedby") ?? "")
    .split(" ")
    .filter((x) => x && x !== id && !x.startsWith("err-"));
  const value = input.value.trim();
  let error = c.error ?? null;
  if (!error && c.incomplete && final && value)
    error = c.incomplete === "required" ? "is required" : `is incomplete: ${c.incomplete}`;
  live.textContent = !error && c.incomplete && value && c.incomplete !== "required" ? c.incomplete : "";
  if (error) {
    const err = h("div", { class: "field-error live-error", id, "data-path": input.dataset.field ?? "" }, error);
    input.insertAdjacentElement("afterend", err);
    input.setAttribute("aria-invalid", "true");
    described.push(id);
  }
  if (described.length) input.setAttribute("aria-describedby", described.join(" "));
  else input.removeAttribute("aria-describedby");
  return error;
}

interface Checked {
  input: HTMLInputElement;
  check: (v: string) => Check;
  required: () => boolean;
}

// A text input whose value is checked as it is typed and when the field is left.
function checkedField(
  label: string,
  input: HTMLInputElement,
  path: string,
  check: (v: string) => Check,
  hint: string,
  list: Checked[],
  required: () => boolean = () => true,
): HTMLElement {
  const f = field(label, input, { field: path, hint });
  const live = h("div", { class: "hint live-hint", "aria-live": "polite", id: uid("live") });
  f.appendChild(live);
  input.setAttribute("aria-describedby", `${input.getAttribute("aria-describedby") ?? ""} ${live.id}`.trim());
  input.addEventListener("input", () => showCheck(input, live, check(input.value), false));
  input.addEventListener("blur", () => showCheck(input, live, check(input.value), true));
  list.push({ input, check, required });
  return f;
}

function methodForm(s: api.PayoutSettings, onSaved: (s: api.PayoutSettings) => void): HTMLElement {
  const slot = new StatusSlot();
  const current = s.method;
  const checks: Record<string, Checked[]> = { solana: [], sepa: [], ach: [] };
  const text = (value: string, extra: Record<string, string | number | boolean> = {}) =>
    h("input", { type: "text", value, autocomplete: "off", spellcheck: false, ...extra });

  // Solana
  const wallet = text(current?.kind === "solana" ? current.wallet : "", { class: "mono", maxlength: 64 });
  // SEPA
  const sepaHolder = text(current?.kind === "sepa" ? current.holder : "", { maxlength: 140, autocomplete: "name" });
  const iban = text(current?.kind === "sepa" ? printIban(current.iban) : "", { class: "mono", maxlength: 64 });
  const bic = text(current?.kind === "sepa" ? (current.bic ?? "") : "", { class: "mono", maxlength: 16 });
  const bicHint = h("span");
  // ACH
  const achHolder = text(current?.kind === "ach" ? current.holder : "", { maxlength: 140, autocomplete: "name" });
  const routing = text(current?.kind === "ach" ? current.routing_number : "", {
    class: "mono",
    maxlength: 16,
    inputmode: "numeric",
  });
  const account = text("", { class: "mono", maxlength: 32, inputmode: "numeric" });
  const accountType = h(
    "select",
    { "data-field": "method.account_type" },
    ["checking", "savings"].map((t) =>
      h("option", { value: t, selected: current?.kind === "ach" && current.account_type === t }, capitalized(t)),
    ),
  );
  const password = h("input", { type: "password", autocomplete: "current-password", maxlength: 256 });

  const groups: Record<string, HTMLElement> = {
    solana: h(
      "div",
      { class: "method-fields", "data-kind": "solana" },
      checkedField(
        "Wallet address",
        wallet,
        "method.wallet",
        checkWallet,
        "Your Solana wallet's own address (base58), not a token account: the USDC goes to the wallet's USDC token account.",
        checks.solana,
      ),
    ),
    sepa: h(
      "div",
      { class: "method-fields", "data-kind": "sepa" },
      checkedField(
        "Account holder",
        sepaHolder,
        "method.holder",
        checkHolder,
        "As the bank knows the account.",
        checks.sepa,
      ),
      checkedField(
        "IBAN",
        iban,
        "method.iban",
        checkIban,
        "An account in a SEPA country, e.g. DE89 3704 0044 0532 0130 00. Spaces are fine.",
        checks.sepa,
      ),
      checkedField(
        "BIC (optional)",
        bic,
        "method.bic",
        checkBic,
        "Your bank's BIC (SWIFT code), 8 or 11 characters.",
        checks.sepa,
        () => ibanNeedsBic(iban.value),
      ),
    ),
    ach: h(
      "div",
      { class: "method-fields", "data-kind": "ach" },
      checkedField(
        "Account holder",
        achHolder,
        "method.holder",
        checkHolder,
        "As the bank knows the account.",
        checks.ach,
      ),
      checkedField(
        "Routing number",
        routing,
        "method.routing_number",
        checkRouting,
        "The 9-digit ABA routing number of your bank.",
        checks.ach,
      ),
      checkedField(
        "Account number",
        account,
        "method.account_number",
        checkAchAccount,
        current?.kind === "ach"
          ? `4 to 17 digits. Type it again to change your details (now …${current.account_number_last4 ?? ""}).`
          : "4 to 17 digits.",
        checks.ach,
      ),
      field("Account type", accountType, { field: "method.account_type" }),
    ),
  };
  // The BIC is needed for an IBAN outside the EEA (CH, GB, ...): its hint says so.
  const bicField = groups.sepa.querySelectorAll(".field")[2];
  bicField.querySelector(".hint")?.appendChild(bicHint);
  const bicLabel = bicField.querySelector("label")!;
  iban.addEventListener("input", () => {
    const needs = ibanNeedsBic(iban.value);
    bicLabel.textContent = needs ? "BIC" : "BIC (optional)";
    bicHint.textContent = needs ? ` Required for an account in ${electronicIban(iban.value).slice(0, 2)}.` : "";
  });
  iban.dispatchEvent(new Event("input"));

  const radios = s.methods.map((t) => {
    const r = h("input", {
      type: "radio",
      name: "payout-method",
      value: t.kind,
      checked: t.offered && (current?.kind === t.kind || (!current && t === s.methods.find((x) => x.offered))),
      disabled: !t.offered,
    });
    return { t, r };
  });
  const chosen = () => radios.find((x) => x.r.checked)?.t.kind ?? null;
  const showChosen = () => {
    for (const [kind, g] of Object.entries(groups)) g.hidden = kind !== chosen();
  };
  const choices = h(
    "fieldset",
    { class: "method-choices", "data-field": "method.kind" },
    h("legend", null, "Method"),
    radios.map(({ t, r }) => {
      const termsId = uid("terms");
      r.setAttribute("aria-describedby", termsId);
      r.addEventListener("change", showChosen);
      return h(
        "label",
        { class: `method-choice${t.offered ? "" : " not-offered"}`, "data-kind": t.kind },
        r,
        h(
          "span",
          { class: "method-text" },
          h("strong", null, t.label),
          h(
            "span",
            { id: termsId, class: "method-terms" },
            h("span", { class: "small terms" }, termsText(t, s)),
            h("span", { class: "small muted minimum-why" }, minimumWhy(t, s)),
            t.note ? h("span", { class: "small muted note" }, t.note) : null,
            t.offered
              ? null
              : h(
                  "span",
                  { class: "small not-offered-why" },
                  `Not offered: this platform has not set up ${t.kind === "solana" ? "a Solana wallet" : `a bank account for ${t.kind === "sepa" ? "SEPA" : "ACH"} payouts`}.`,
                ),
          ),
        ),
      );
    }),
  );
  showChosen();

  const build = (): { method: api.PayoutMethod | null; errors: Record<string, string> } => {
    const kind = chosen();
    const errors: Record<string, string> = {};
    if (!kind) return { method: null, errors: { "method.kind": "choose a method" } };
    for (const c of checks[kind]) {
      const r = c.check(c.input.value);
      const path = c.input.dataset.field!;
      if (r.error) errors[path] = r.error;
      else if (r.incomplete && (c.input.value.trim() || c.required()))
        errors[path] = r.incomplete === "required" ? "is required" : `is incomplete: ${r.incomplete}`;
    }
    let method: api.PayoutMethod;
    if (kind === "solana") method = { kind, wallet: wallet.value.trim() };
    else if (kind === "sepa") {
      const b = bic.value.replace(/\s+/g, "").toUpperCase();
      method = { kind, holder: sepaHolder.value.trim(), iban: electronicIban(iban.value), bic: b || null };
    } else {
      method = {
        kind,
        holder: achHolder.value.trim(),
        routing_number: routing.value.trim(),
        account_number: account.value.trim(),
        account_type: accountType.value as "checking" | "savings",
      };
    }
    return { method, errors };
  };
  const same = (m: api.PayoutMethod): boolean => {
    const c = current;
    if (!c || c.kind !== m.kind) return false;
    if (c.kind === "solana" && m.kind === "solana") return c.wallet === m.wallet;
    if (c.kind === "sepa" && m.kind === "sepa")
      return c.holder === m.holder && c.iban === m.iban && (c.bic ?? null) === m.bic;
    return false; // ACH: the account number is never shown back, so a submission is a change
  };

  const submit = h("button", { type: "submit", class: "btn btn-primary" }, "Save payout method");
  const form = h(
    "form",
    { class: "method-form", novalidate: true, "aria-labelledby": "method-form-title" },
    h("h3", { id: "method-form-title" }, current ? "Change the payout method" : "Choose a payout method"),
    choices,
    groups.solana,
    groups.sepa,
    groups.ach,
    s.methods.some((t) => t.offered)
      ? [
          field("Your password", password, {
            field: "password",
            hint: "Needed to change where your money goes. Payouts to new details wait for a hold after a change; we email you about it.",
          }),
          h("div", { class: "form-actions" }, submit),
        ]
      : h(
          "p",
          { class: "banner banner-warn none-offered" },
          "No payout method is offered on this platform yet: its operators have to set one up before you can be paid.",
        ),
  );
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    slot.clear();
    clearFieldErrors(form);
    const { method, errors } = build();
    if (method && !errors["method.kind"] && same(method) && !Object.keys(errors).length) {
      slot.ok("These are your current details: nothing to change.");
      return;
    }
    if (!password.value) errors.password = "is required to change the payout method";
    if (Object.keys(errors).length || !method) {
      slot.formError(form, new api.ApiError(422, "validation_failed", "", errors), "", "Not saved");
      return;
    }
    void busy(submit, async () => {
      try {
        const saved = await api.put<api.PayoutSettings>("/providers/me/payout-settings", {
          method,
          password: password.value,
        });
        password.value = "";
        onSaved(saved);
      } catch (e) {
        if (!isAbort(e)) slot.formError(form, e, "Not saved", "Not saved");
      }
    });
  });
  return h("div", { class: "method-form-wrap" }, slot.el, form);
}

function methodCard(s: api.PayoutSettings, onSaved: (s: api.PayoutSettings, msg: string) => void): HTMLElement {
  return h(
    "section",
    { class: "card payout-method", "aria-labelledby": "method-title" },
    h("h2", { id: "method-title" }, "Payout method"),
    currentMethod(s),
    methodForm(s, (saved) => {
      const hold = holdActive(saved) ? ` Payouts to them are held until ${when(saved.hold_until)}.` : "";
      onSaved(saved, `Payout method saved: ${methodLine(saved.method)}.${hold}`);
    }),
  );
}

// ---- the schedule

function scheduleCard(s: api.PayoutSettings, onSaved: (s: api.PayoutSettings, msg: Child) => void): HTMLElement {
  const slot = new StatusSlot();
  const weekly = h("input", {
    type: "radio",
    name: "payout-schedule",
    value: "weekly",
    checked: s.schedule === "weekly",
  });
  const monthly = h("input", {
    type: "radio",
    name: "payout-schedule",
    value: "monthly",
    checked: s.schedule === "monthly",
  });
  const threshold = h("input", {
    type: "text",
    inputmode: "decimal",
    autocomplete: "off",
    maxlength: 20,
    class: "short",
    value: exactText(s.threshold_micro),
  });
  const thresholdField = field("Weekly threshold (USDC)", threshold, {
    field: "threshold_micro",
    hint: "A weekly payout is made when your available earnings reach at least this much; less waits for the next Monday.",
  });
  const sync = () => {
    thresholdField.hidden = !weekly.checked;
  };
  weekly.addEventListener("change", sync);
  monthly.addEventListener("change", sync);
  sync();
  const submit = h("button", { type: "submit", class: "btn btn-primary" }, "Save schedule");
  const form = h(
    "form",
    { class: "schedule-form payout-schedule-form", novalidate: true },
    h(
      "fieldset",
      { class: "choices stacked", "data-field": "schedule" },
      h("legend", null, "Schedule"),
      h(
        "label",
        { class: "check" },
        weekly,
        h(
          "span",
          null,
          h("strong", null, "Weekly"),
          " — every Monday (UTC), when your available earnings reach the threshold",
        ),
      ),
      h(
        "label",
        { class: "check" },
        monthly,
        h(
          "span",
          null,
          h("strong", null, "Monthly"),
          " — on the first business day of the month (UTC), from ",
          s.monthly_minimum_micro === undefined
            ? "the method's minimum"
            : [amount(s.monthly_minimum_micro), ", or the method's minimum when higher"],
        ),
      ),
    ),
    thresholdField,
    h("div", { class: "form-actions" }, submit),
  );
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    slot.clear();
    clearFieldErrors(form);
    const body: api.PayoutSettingsUpdate = { schedule: weekly.checked ? "weekly" : "monthly" };
    if (weekly.checked) {
      const t = parseUsdc(threshold.value);
      if (!t.ok) {
        slot.formError(
          form,
          new api.ApiError(422, "validation_failed", "", { threshold_micro: t.error }),
          "",
          "Not saved",
        );
        return;
      }
      body.threshold_micro = t.micro;
    }
    void busy(submit, async () => {
      try {
        const saved = await api.put<api.PayoutSettings>("/providers/me/payout-settings", body);
        onSaved(
          saved,
          saved.schedule === "weekly"
            ? ["Schedule saved: weekly, from ", amount(saved.threshold_micro), "."]
            : "Schedule saved: monthly.",
        );
      } catch (e) {
        if (!isAbort(e)) slot.formError(form, e, "Not saved", "Not saved");
      }
    });
  });
  return h(
    "section",
    { class: "card payout-schedule", "aria-labelledby": "schedule-title" },
    h("h2", { id: "schedule-title" }, "Schedule"),
    slot.el,
    form,
  );
}

// ---- the history

function historyCard(v: View): HTMLElement {
  const slot = new StatusSlot();
  const tbody = h("tbody");
  const tableEl = h(
    "table",
    { class: "payouts" },
    h("caption", { class: "visually-hidden" }, "Your payouts, newest first"),
    h(
      "thead",
      null,
      h(
        "tr",
        null,
        ["Date", "State", "Amount", "Method", "Signature or reference", "Attempts", "Lines"].map((x) =>
          h("th", { scope: "col" }, x),
        ),
      ),
    ),
    tbody,
  );
  const empty = h("p", { class: "muted", hidden: true }, "No payouts yet.");
  const more = button("More", () => {}, { attrs: { hidden: true, class: "btn btn-secondary more-btn" } });
  let shown = 0;
  void pageThrough(
    more,
    slot,
    async (cursor) => {
      const q = new URLSearchParams({ limit: String(kHistoryPage) });
      if (cursor) q.set("cursor", cursor);
      const page = await api.get<api.Page<api.Payout>>(`/providers/me/payouts?${q}`, { signal: v.signal });
      append(
        tbody,
        page.items.map((p) =>
          h(
            "tr",
            { "data-payout-id": p.id, "data-state": p.state },
            h("td", { "data-label": "Date", class: "nowrap" }, dayText(p.as_of)),
            h(
              "td",
              { "data-label": "State" },
              payoutStateBadge(p.state),
              p.failure ? h("div", { class: "small failure" }, p.failure) : null,
            ),
            h("td", { "data-label": "Amount", class: "num" }, payoutAmount(p)),
            h("td", { "data-label": "Method" }, methodLine(p.method)),
            h("td", { "data-label": "Reference" }, payoutReference(p)),
            h(
              "td",
              { "data-label": "Attempts" },
              attemptsList(p, () =>
                api.get<api.Payout>(`/providers/me/payouts/${encodeURIComponent(p.id)}`, { signal: v.signal }),
              ),
            ),
            h(
              "td",
              { "data-label": "Lines" },
              h(
                "a",
                {
                  href: `/api/v1/providers/me/payouts/${encodeURIComponent(p.id)}?format=csv`,
                  download: `gpunex-payout-${p.id}.csv`,
                  class: "csv-link",
                  "aria-label": `Lines of the payout of ${dayText(p.as_of)} as CSV`,
                },
                "CSV",
              ),
            ),
          ),
        ),
      );
      shown += page.items.length;
      empty.hidden = shown > 0;
      tableEl.hidden = shown === 0;
      return page.next_cursor;
    },
    "Could not load your payouts",
    "Could not load more payouts",
  );
  return h(
    "section",
    { class: "card payout-history", "aria-labelledby": "history-title" },
    h("h2", { id: "history-title" }, "Payout history"),
    slot.el,
    h("div", { class: "table-wrap" }, tableEl),
    empty,
    more,
  );
}

export const paymentsTab: ProviderTab = {
  id: "payments",
  label: "Payments",
  async render(v, panel) {
    const top = h("div", { class: "payments-top" });
    const history = historyCard(v);
    const draw = (s: api.PayoutSettings, message?: Child) => {
      const note = message ? noticeBanner(message, "ok") : null;
      if (note) note.tabIndex = -1;
      replace(
        top,
        note,
        holdBanner(s),
        nextPayoutCard(s),
        methodCard(s, (saved, msg) => draw(saved, msg)),
        scheduleCard(s, (saved, msg) => draw(saved, msg)),
      );
      note?.focus();
    };
    draw(await api.get<api.PayoutSettings>("/providers/me/payout-settings", { signal: v.signal }));
    append(panel, top, history);
  },
};
