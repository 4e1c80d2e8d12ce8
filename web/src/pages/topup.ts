// Top-ups (PAY-6): a customer adds USDC to their balance by paying a Solana Pay transfer
// request from their wallet. #/balance/top-up asks for the amount (POST /topups) and
// lists the past top-ups; #/balance/top-ups/<id> shows one: the solana: link a wallet
// opens, its QR code to scan, the reference that finds the payment on chain, and its
// status, read again every few seconds until it is credited (then the amount credited
// and the transaction's signature). Where the platform has no Solana set up, POST
// answers failed_precondition and the page says so.
import * as api from "../api";
import { navigate, pageHeader, type View } from "../app";
import { pageThrough } from "../components/paging";
import { copyable, explorerUrl } from "../components/payout";
import { append, busy, button, field, h, replace } from "../dom";
import { clearFieldErrors, isAbort, StatusSlot } from "../errors";
import { when } from "../format";
import { amount as amountOf, exactUsdc, parseUsdc, usdc } from "../money";

const kPollMs = 2500;
const kExpiredPollMs = 15000;

const kStatus: Record<string, [string, string]> = {
  pending: ["Waiting for the payment", "status-submitted"],
  credited: ["Credited", "status-approved"],
  expired: ["Expired", "badge-off"],
};

function statusBadge(status: string): HTMLElement {
  const [name, cls] = kStatus[status] ?? [status, ""];
  return h("span", { class: `badge topup-status ${cls}`.trim(), "data-status": status }, name);
}

function notOffered(e: unknown): boolean {
  return e instanceof api.ApiError && e.code === "failed_precondition";
}

export async function topupPage(v: View): Promise<void> {
  const slot = new StatusSlot();
  const amount = h("input", {
    type: "text",
    inputmode: "decimal",
    autocomplete: "off",
    maxlength: 20,
    class: "short",
    required: true,
  });
  const submit = h("button", { type: "submit", class: "btn btn-primary" }, "Create the payment request");
  const form = h(
    "form",
    { class: "topup-form", novalidate: true },
    field("Amount (USDC)", amount, {
      field: "amount_micro",
      hint: "e.g. 25 or 12.50. You pay exactly this amount of USDC; it is added to your balance once the payment is confirmed.",
    }),
    h("div", { class: "form-actions" }, submit),
  );
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    slot.clear();
    clearFieldErrors(form);
    const parsed = parseUsdc(amount.value);
    if (!parsed.ok) {
      slot.formError(form, new api.ApiError(422, "validation_failed", "", { amount_micro: parsed.error }), "");
      return;
    }
    void busy(submit, async () => {
      try {
        const t = await api.post<api.Topup>("/topups", { amount_micro: parsed.micro });
        navigate(`/balance/top-ups/${encodeURIComponent(t.id)}`);
      } catch (e) {
        if (notOffered(e)) {
          replace(
            slot.el,
            h(
              "div",
              { class: "banner banner-warn topup-not-offered", role: "alert" },
              h("p", null, h("strong", null, "Top-ups in USDC are not possible here right now.")),
              h("p", null, `The platform says: ${(e as api.ApiError).message}.`),
              h("p", null, "Ask an operator to credit your account instead (your account id is on the Balance page)."),
            ),
          );
        } else if (!isAbort(e)) {
          slot.formError(form, e, "No payment request was made");
        }
      }
    });
  });

  const tbody = h("tbody");
  const table = h(
    "table",
    { class: "topups" },
    h("caption", { class: "visually-hidden" }, "Your top-ups, newest first"),
    h(
      "thead",
      null,
      h(
        "tr",
        null,
        ["Created", "Amount", "Status", "Credited", "Signature"].map((x) => h("th", { scope: "col" }, x)),
      ),
    ),
    tbody,
  );
  const empty = h("p", { class: "muted", hidden: true }, "No top-ups yet.");
  const more = button("More", () => {}, { attrs: { hidden: true, class: "btn btn-secondary more-btn" } });
  const listSlot = new StatusSlot();

  append(
    v.main,
    pageHeader(
      "Top up your balance",
      "Pay USDC on Solana from any wallet that supports Solana Pay (Phantom, Solflare, …).",
      h("a", { class: "btn btn-secondary", href: "#/balance" }, "Back to Balance"),
    ),
    h(
      "section",
      { class: "card narrow-form", "aria-labelledby": "topup-new-title" },
      h("h2", { id: "topup-new-title" }, "New top-up"),
      slot.el,
      form,
    ),
    h(
      "section",
      { class: "card", "aria-labelledby": "topup-list-title" },
      h("h2", { id: "topup-list-title" }, "Your top-ups"),
      listSlot.el,
      h("div", { class: "table-wrap" }, table),
      empty,
      more,
    ),
  );

  let shown = 0;
  await pageThrough(
    more,
    listSlot,
    async (cursor) => {
      const q = new URLSearchParams({ limit: "20" });
      if (cursor) q.set("cursor", cursor);
      const page = await api.get<api.Page<api.Topup>>(`/topups?${q}`, { signal: v.signal });
      append(
        tbody,
        page.items.map((t) =>
          h(
            "tr",
            { "data-topup-id": t.id, "data-status": t.status },
            h(
              "td",
              { "data-label": "Created", class: "nowrap" },
              h("a", { href: `#/balance/top-ups/${encodeURIComponent(t.id)}` }, when(t.created_at)),
            ),
            h("td", { "data-label": "Amount", class: "num" }, amountOf(t.amount_micro)),
            h("td", { "data-label": "Status" }, statusBadge(t.status)),
            h("td", { "data-label": "Credited", class: "num" }, amountOf(t.credited_micro)),
            h(
              "td",
              { "data-label": "Signature" },
              t.signature
                ? h(
                    "a",
                    {
                      class: "mono small ident",
                      href: explorerUrl(t.signature),
                      target: "_blank",
                      rel: "noopener noreferrer",
                    },
                    t.signature,
                  )
                : "—",
            ),
          ),
        ),
      );
      shown += page.items.length;
      empty.hidden = shown > 0;
      table.hidden = shown === 0;
      return page.next_cursor;
    },
    "Could not load your top-ups",
    "Could not load more top-ups",
  );
}

function payPanel(t: api.Topup): HTMLElement {
  return h(
    "section",
    { class: "card topup-pay", "aria-labelledby": "pay-title" },
    h("h2", { id: "pay-title" }, "Pay ", amountOf(t.amount_micro), " with a Solana wallet"),
    h(
      "div",
      { class: "topup-grid" },
      h(
        "figure",
        { class: "topup-qr" },
        h("img", {
          src: `/api/v1/topups/${encodeURIComponent(t.id)}/qr.svg`,
          alt: `QR code of the payment request for ${usdc(t.amount_micro)}: scan it with a Solana wallet`,
          width: 240,
          height: 240,
        }),
        h("figcaption", { class: "small muted" }, "Scan with your phone's wallet app"),
      ),
      h(
        "div",
        { class: "topup-how" },
        h("p", null, h("a", { class: "btn btn-primary solana-pay-link", href: t.url }, "Open in a wallet")),
        h("p", { class: "small muted" }, "On a computer with a wallet extension, or on the phone holding your wallet."),
        h(
          "dl",
          { class: "facts compact topup-facts" },
          h("dt", null, "Amount"),
          h("dd", { class: "topup-exact" }, `${exactUsdc(t.amount_micro)} (exactly)`),
          h("dt", null, "Reference"),
          h("dd", { class: "topup-reference" }, copyable(t.reference, "the reference")),
          h("dt", null, "Recipient"),
          h("dd", null, copyable(t.recipient, "the recipient address")),
          h("dt", null, "Token"),
          h("dd", null, "USDC ", h("span", { class: "mono small ident" }, t.mint)),
          h("dt", null, "Link expires"),
          h("dd", null, when(t.expires_at)),
        ),
        h(
          "details",
          { class: "topup-url" },
          h("summary", null, "The payment request as text"),
          copyable(t.url, "the payment request"),
        ),
      ),
    ),
    h(
      "p",
      { class: "small muted" },
      "Pay from a wallet that reads Solana Pay requests: it sends the amount with the reference, and this page shows the credit as soon as the payment is confirmed. A payment of another token, to another address or of less than the amount is not credited.",
    ),
  );
}

function statusPanel(t: api.Topup): HTMLElement {
  if (t.status === "credited") {
    return h(
      "div",
      { class: "banner banner-ok topup-credited", role: "status" },
      h("h2", null, amountOf(t.credited_micro ?? t.amount_micro), " added to your balance"),
      h(
        "dl",
        { class: "facts compact" },
        h("dt", null, "Credited"),
        h("dd", { class: "credited-amount" }, amountOf(t.credited_micro ?? t.amount_micro)),
        t.credited_micro !== null && t.credited_micro !== t.amount_micro
          ? [h("dt", null, "Asked"), h("dd", null, amountOf(t.amount_micro))]
          : null,
        h("dt", null, "When"),
        h("dd", null, when(t.credited_at)),
        h("dt", null, "Transaction"),
        h(
          "dd",
          { class: "topup-signature" },
          t.signature ? copyable(t.signature, "the transaction signature", explorerUrl(t.signature)) : "—",
        ),
      ),
      h("p", null, h("a", { href: "#/balance" }, "See your balance")),
    );
  }
  return h(
    "div",
    { class: "topup-state", role: "status" },
    statusBadge(t.status),
    " ",
    t.status === "expired"
      ? "This payment request has expired: make a new one. A payment still made to it is credited when it is seen."
      : "Waiting for your payment; this page updates by itself.",
    // The detail says why a payment found did not qualify (it starts as "waiting for ...").
    t.detail && !t.detail.startsWith("waiting for")
      ? h("p", { class: "small warn topup-detail" }, `A payment was seen: ${t.detail}`)
      : null,
  );
}

export async function topupDetailPage(v: View): Promise<void> {
  const id = v.params.id;
  const state = h("div", { class: "topup-status-area", "aria-live": "polite" });
  const pay = h("div");
  const slot = new StatusSlot();
  const head = pageHeader(
    "Top-up",
    null,
    h("a", { class: "btn btn-secondary", href: "#/balance/top-up" }, "All top-ups"),
  );
  append(v.main, head, slot.el, state, pay);
  let last = "";
  let t = await api.get<api.Topup>(`/topups/${encodeURIComponent(id)}`, { signal: v.signal });
  const draw = () => {
    const key = JSON.stringify([t.status, t.detail, t.signature]);
    if (key === last) return;
    last = key;
    replace(head.querySelector("h1")!, "Top-up of ", amountOf(t.amount_micro));
    replace(state, statusPanel(t));
    if (t.status === "credited") replace(pay);
    else if (!pay.firstChild) replace(pay, payPanel(t));
  };
  draw();
  let lastPoll = Date.now();
  v.every(kPollMs, async () => {
    if (t.status === "credited") return;
    if (t.status === "expired" && Date.now() - lastPoll < kExpiredPollMs) return;
    lastPoll = Date.now();
    try {
      t = await api.get<api.Topup>(`/topups/${encodeURIComponent(id)}`, { signal: v.signal });
      slot.clear();
      draw();
    } catch (e) {
      if (!isAbort(e) && !v.signal.aborted) slot.error(e, "Could not read the top-up");
    }
  });
}
