// Credits and the ledger, for admins (#/admin/billing): credit a customer's balance
// (POST /admin/credits, asked for first, sent with an Idempotency-Key so that a retry
// after a lost answer credits once), and the ledger check (GET /admin/ledger/check):
// every account's stored balance against the sum of its transfers, and the sum of all
// balances, which must be zero.
import * as api from "../api";
import { askBelow } from "../components/confirm";
import { pageHeader, type View } from "../app";
import { IdempotentSubmit } from "../components/workload";
import { append, busy, button, field, h, replace } from "../dom";
import { clearFieldErrors, isAbort, StatusSlot } from "../errors";
import { plural } from "../format";
import { amount as amountOf, parseUsdc, usdc } from "../money";
import { adminTabs } from "./admin_console";

type CreditBody = { user_id?: string; email?: string; amount_micro: number; reference: string };

interface UserFound {
  id: string;
  email: string;
  name: string;
  disabled: boolean;
}

// Finding a user by part of their email or name (GET /admin/users); `use` takes the one
// chosen.
function userSearch(use: (u: UserFound) => void): HTMLElement {
  const slot = new StatusSlot();
  const text = h("input", { type: "search", autocomplete: "off", spellcheck: false, maxlength: 254 });
  const results = h("ul", { class: "user-results", "aria-live": "polite" });
  const form = h(
    "form",
    { class: "user-search", novalidate: true, role: "search", "aria-label": "User search" },
    field("Find a user", text, { field: "q", hint: "Part of their email address or name." }),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "btn btn-secondary" }, "Find")),
  );
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    slot.clear();
    clearFieldErrors(form);
    void (async () => {
      try {
        const q = new URLSearchParams({ q: text.value.trim() });
        const page = await api.get<api.Page<UserFound>>(`/admin/users?${q}`);
        replace(
          results,
          page.items.length
            ? page.items.map((u) =>
                h(
                  "li",
                  { "data-user-id": u.id },
                  h("span", { class: "user-name" }, u.name),
                  " ",
                  h("span", { class: "mono small" }, u.email),
                  u.disabled ? h("span", { class: "badge badge-off" }, "Disabled") : null,
                  " ",
                  button("Credit this user", () => use(u), { kind: "link" }),
                ),
              )
            : h("li", { class: "muted" }, "No user has that in their email or name."),
        );
      } catch (e) {
        replace(results);
        slot.formError(form, e, "The search failed");
      }
    })();
  });
  return h("div", { class: "user-finder" }, slot.el, form, results);
}

function creditSection(afterCredit: () => void, email = ""): HTMLElement {
  const slot = new StatusSlot();
  const userId = h("input", { type: "text", autocomplete: "off", spellcheck: false, maxlength: 254, class: "mono" });
  const amount = h("input", { type: "text", inputmode: "decimal", autocomplete: "off", maxlength: 32 });
  const reference = h("input", { type: "text", autocomplete: "off", maxlength: 200 });
  // From a user's page (#/admin/users/ID): that user's email, ready to credit.
  userId.value = email;
  const submit = h("button", { type: "submit", class: "btn btn-primary" }, "Credit…");
  const confirmArea = h("div", { class: "confirm-area" });
  const form = h(
    "form",
    { class: "credit-form", novalidate: true },
    field("User id or email", userId, {
      field: "user_id",
      hint: "The customer's email address, or their account id (usr_…) shown on their Balance page.",
    }),
    field("Amount (USDC)", amount, { field: "amount_micro", hint: "e.g. 25 or 0.50" }),
    field("Reference", reference, {
      field: "reference",
      hint: "Why: the payment it books (e.g. bank transfer 2026-118). On the customer's statement.",
    }),
    h("div", { class: "actions" }, submit),
    confirmArea,
  );
  const attempts = new IdempotentSubmit();

  const send = async (body: CreditBody, btn: HTMLButtonElement) =>
    busy(btn, async () => {
      const key = attempts.keyFor(body);
      try {
        const ans = await api.post<api.CreditAnswer>("/admin/credits", body, { headers: { "Idempotency-Key": key } });
        attempts.settled(null);
        replace(confirmArea);
        slot.ok([
          "Credited ",
          amountOf(ans.transfer.amount_micro),
          ` to ${body.email ?? body.user_id}: their balance is `,
          amountOf(ans.balance_micro),
          " now.",
        ]);
        userId.value = "";
        amount.value = "";
        reference.value = "";
        submit.disabled = false;
        afterCredit();
      } catch (e) {
        const answered = attempts.failed(
          e,
          slot,
          form,
          "Nothing was credited",
          "Try again: the same credit is booked once however often it is sent.",
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
    const parsed = parseUsdc(amount.value);
    if (!parsed.ok) {
      slot.formError(
        form,
        new api.ApiError(422, "validation_failed", "", { amount_micro: parsed.error }),
        "",
        "Nothing was credited",
      );
      return;
    }
    // An email address names the user as well as their id does.
    const who = userId.value.trim();
    const byEmail = who.includes("@");
    userId.dataset.field = byEmail ? "email" : "user_id";
    const body: CreditBody = byEmail
      ? { email: who, amount_micro: parsed.micro, reference: reference.value.trim() }
      : { user_id: who, amount_micro: parsed.micro, reference: reference.value.trim() };
    // Asked first: money moves. The fields stay as they are until it is answered.
    askBelow(
      confirmArea,
      submit,
      "Confirm the credit",
      ["Credit ", amountOf(body.amount_micro), ` to ${who || "(no user)"}?`],
      `Credit ${usdc(body.amount_micro)}`,
      (yes) => void send(body, yes),
    );
  });

  return h(
    "section",
    { class: "card", "aria-labelledby": "credit-title" },
    h("h2", { id: "credit-title" }, "Credit a customer"),
    h(
      "p",
      { class: "muted" },
      "Adds USDC to a customer's prepaid balance, for a payment received outside the platform.",
    ),
    userSearch((u) => {
      userId.value = u.email;
      amount.focus();
    }),
    slot.el,
    form,
  );
}

function ledgerSection(v: View): { el: HTMLElement; check: () => Promise<void> } {
  const slot = new StatusSlot();
  const result = h("div", { class: "ledger-result", "aria-live": "polite" });
  const again = button("Check again", () => void busy(again, check));
  const stamp = h("span", { class: "small muted" });
  async function check(): Promise<void> {
    slot.clear();
    let c: api.LedgerCheck;
    try {
      c = await api.get<api.LedgerCheck>("/admin/ledger/check", { signal: v.signal });
    } catch (e) {
      if (!isAbort(e)) slot.error(e, "The ledger check did not run");
      return;
    }
    stamp.textContent = `Checked ${new Date().toLocaleTimeString()}`;
    replace(
      result,
      h(
        "p",
        { class: "ledger-verdict" },
        c.ok
          ? h("span", { class: "badge badge-ok" }, "Balanced")
          : h("span", { class: "badge badge-danger" }, "Mismatch"),
        " ",
        c.ok
          ? "Every account's balance is the sum of its transfers, and all balances add up to zero."
          : `${
              c.mismatches.length === 1
                ? "1 account disagrees with its transfers"
                : `${plural(c.mismatches.length, "account")} disagree with their transfers`
            }${c.sum_micro !== 0 ? ", and the balances do not add up to zero" : ""}.`,
      ),
      h(
        "dl",
        { class: "facts compact ledger-facts" },
        h("dt", null, "Accounts"),
        h("dd", { class: "accounts" }, String(c.accounts)),
        h("dt", null, "Transfers"),
        h("dd", { class: "transfers" }, String(c.transfers)),
        h("dt", null, "Sum of all balances"),
        h("dd", { class: "sum" }, amountOf(c.sum_micro), " (must be 0.00)"),
      ),
      c.mismatches.length
        ? h(
            "div",
            { class: "table-wrap" },
            h(
              "table",
              { class: "mismatches" },
              h(
                "thead",
                null,
                h(
                  "tr",
                  null,
                  ["Account", "Stored", "From transfers", "Difference"].map((x) => h("th", { scope: "col" }, x)),
                ),
              ),
              h(
                "tbody",
                null,
                c.mismatches.map((m) =>
                  h(
                    "tr",
                    null,
                    h("td", { "data-label": "Account", class: "mono" }, m.account),
                    h("td", { "data-label": "Stored", class: "num" }, amountOf(m.stored_micro)),
                    h("td", { "data-label": "From transfers", class: "num" }, amountOf(m.computed_micro)),
                    h(
                      "td",
                      { "data-label": "Difference", class: "num" },
                      amountOf(m.stored_micro - m.computed_micro, { signed: true }),
                    ),
                  ),
                ),
              ),
            ),
          )
        : null,
    );
  }
  const el = h(
    "section",
    { class: "card", "aria-labelledby": "ledger-title" },
    h("div", { class: "section-head" }, h("h2", { id: "ledger-title" }, "Ledger check"), stamp),
    slot.el,
    result,
    h("div", { class: "actions" }, again),
  );
  return { el, check };
}

export async function adminBillingPage(v: View): Promise<void> {
  const ledger = ledgerSection(v);
  append(
    v.main,
    pageHeader("Credits and ledger", "Customer balances are kept in a double-entry ledger in micro-USDC."),
    adminTabs("/admin/billing"),
    creditSection(() => void ledger.check(), v.query.get("email") ?? ""),
    ledger.el,
  );
  await ledger.check();
}
