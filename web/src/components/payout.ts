// What the provider's Payments tab and the admins' Payouts pages both show of a payout:
// its state as a badge, its method in a line (details masked as the API masks them), the
// amount in USDC with what the bank sends in EUR or USD, and its Solana signature or bank
// reference (monospace, copyable; a signature links to the explorer).
import type * as api from "../api";
import { button, h, replace } from "../dom";
import { when } from "../format";
import { amount } from "../money";
import { copy } from "./copy";

const kStates: Record<string, [string, string]> = {
  planned: ["Planned", "badge-off"],
  waiting_funds: ["Waiting for funds", "status-needs_info"],
  submitted: ["Submitted", "status-submitted"],
  confirmed: ["Paid", "status-approved"],
  failed: ["Failed", "status-rejected"],
};

export function payoutStateName(state: string): string {
  return kStates[state]?.[0] ?? state;
}

export function payoutStateBadge(state: string): HTMLElement {
  const [name, cls] = kStates[state] ?? [state, ""];
  return h("span", { class: `badge payout-state ${cls}`.trim(), "data-state": state }, name);
}

const kMethodNames: Record<string, string> = {
  solana: "USDC on Solana",
  sepa: "SEPA transfer",
  ach: "US ACH transfer",
};

export function methodName(kind: string): string {
  return kMethodNames[kind] ?? kind;
}

// "…4xQz" of a long identifier: its last characters.
function tail(s: string, n = 4): string {
  return s.length > n ? `…${s.slice(-n)}` : s;
}

// One line for a method: "USDC on Solana · wallet …8Zk2", "SEPA transfer · DE89 … 3000".
export function methodLine(m: api.PayoutMethod | null | undefined): string {
  if (!m) return "—";
  if (m.kind === "solana") return `${methodName(m.kind)} · wallet ${tail(m.wallet)}`;
  if (m.kind === "sepa") return `${methodName(m.kind)} · IBAN ${tail(m.iban)}`;
  return `${methodName(m.kind)} · account ${m.account_number_last4 ? "…" + m.account_number_last4 : "—"}`;
}

// Cents as text: 1234 → "12.34 EUR".
export function minorText(minor: number, currency: string): string {
  const neg = minor < 0;
  const abs = Math.abs(Math.trunc(minor));
  return `${neg ? "−" : ""}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, "0")} ${currency}`;
}

// The amount of a payout: what reaches the provider, with the bank's currency.
export function payoutAmount(p: api.Payout): HTMLElement {
  const net = p.net_micro ?? p.amount_micro - p.fee_micro;
  return h(
    "span",
    { class: "payout-amount" },
    h("span", { class: "usdc" }, amount(net)),
    p.amount_minor !== null && p.currency !== "USDC"
      ? h("span", { class: "small muted minor" }, ` = ${minorText(p.amount_minor, p.currency)}`)
      : null,
    p.fee_micro > 0 ? h("span", { class: "small muted fee" }, " (fee ", amount(p.fee_micro), ")") : null,
  );
}

// A long identifier to read and copy: monospace, a copy button, an optional link.
export function copyable(text: string, label: string, href?: string): HTMLElement {
  const status = h("span", { class: "copied small", role: "status", "aria-live": "polite" });
  const value = href
    ? h("a", { class: "mono ident", href, target: "_blank", rel: "noopener noreferrer" }, text)
    : h("code", { class: "mono ident" }, text);
  return h(
    "span",
    { class: "copyable" },
    value,
    button("Copy", () => void copy(text, value, status), {
      kind: "link",
      attrs: { class: "btn btn-link btn-small copy-btn", "aria-label": `Copy ${label}` },
    }),
    status,
  );
}

export function explorerUrl(signature: string): string {
  return `https://explorer.solana.com/tx/${encodeURIComponent(signature)}`;
}

// The Solana signature (a link) or the bank's reference of a payout; "—" without either.
export function payoutReference(p: api.Payout): HTMLElement | string {
  if (p.signature)
    return h(
      "span",
      { class: "signature" },
      copyable(p.signature, "the transaction signature", explorerUrl(p.signature)),
    );
  if (p.bank_reference) return h("span", { class: "bank-reference" }, copyable(p.bank_reference, "the bank reference"));
  return "—";
}

function attemptItems(list: api.PayoutAttempt[]): HTMLElement {
  return h(
    "ol",
    null,
    list.map((a) =>
      h(
        "li",
        { "data-attempt": a.n },
        h("span", { class: "small" }, `${when(a.at)} · ${a.state}`),
        a.signature ? h("div", { class: "mono small ident" }, a.signature) : null,
        a.error ? h("div", { class: "small field-error-text" }, a.error) : null,
      ),
    ),
  );
}

// The attempts of a Solana payout, oldest first, in a disclosure. Lists of payouts come
// without them: `load` (when given) reads them when the disclosure is opened.
export function attemptsList(p: api.Payout, load?: () => Promise<api.Payout>): HTMLElement | string {
  if (p.method?.kind !== "solana" && !p.attempts.length) return "—";
  if (p.attempts.length) {
    return h(
      "details",
      { class: "attempts" },
      h("summary", null, p.attempts.length === 1 ? "1 attempt" : `${p.attempts.length} attempts`),
      attemptItems(p.attempts),
    );
  }
  if (!load || p.state === "planned") return "—";
  const body = h("div", { "aria-live": "polite" }, h("p", { class: "small muted" }, "Loading…"));
  const d = h("details", { class: "attempts" }, h("summary", null, "Attempts"), body);
  let loaded = false;
  d.addEventListener("toggle", () => {
    if (!d.open || loaded) return;
    loaded = true;
    load().then(
      (full) =>
        replace(body, full.attempts.length ? attemptItems(full.attempts) : h("p", { class: "small muted" }, "None.")),
      (e) => {
        loaded = false;
        replace(body, h("p", { class: "small field-error-text" }, e instanceof Error ? e.message : String(e)));
      },
    );
  });
  return d;
}
