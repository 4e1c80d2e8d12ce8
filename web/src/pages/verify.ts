// Email verification (docs/security.md, "Email"): the page an emailed link opens
// (#/verify-email?token=...), the reminder under the header while the account's own
// address waits, and the Account page's list of the addresses gpunex mails.
import * as api from "../api";
import { pageHeader, refreshMe, session, type View } from "../app";
import { append, busy, button, h, replace } from "../dom";
import { errorBanner, messageOf, noticeBanner, StatusSlot } from "../errors";
import { ago, plural, when } from "../format";

export interface AddressState {
  email: string;
  account: boolean;
  verified: boolean;
  verified_at: string | null;
  last_link_at: string | null;
  waiting_emails: number;
}

interface Verified {
  email: string;
  verified: boolean;
  already_verified: boolean;
  released_emails: number;
}

// Asks for a new link to `email`; what to tell the user.
async function resend(email: string): Promise<string> {
  await api.post("/me/emails/resend", { email });
  return `A new link is on its way to ${email}. It works for 48 hours.`;
}

export async function verifyEmailPage(v: View): Promise<void> {
  const token = v.query.get("token") ?? "";
  append(v.main, pageHeader("Confirm your email address"));
  const card = h("section", { class: "card narrow", "aria-live": "polite" });
  append(v.main, card);
  if (!token) {
    replace(card, errorBanner("This address has no link in it: open the link from the email again."));
    return;
  }
  replace(card, h("p", { class: "muted" }, "Checking the link…"));
  let ans: Verified;
  try {
    ans = await api.post<Verified>("/auth/verify-email", { token }, { signal: v.signal });
  } catch (e) {
    const expired = e instanceof api.ApiError && /expired/.test(e.fields.token ?? "");
    replace(
      card,
      errorBanner(e instanceof api.ApiError && e.fields.token ? `The link ${e.fields.token}.` : messageOf(e)),
      h(
        "p",
        null,
        expired || session.user
          ? "Ask for a new link on your Account page."
          : "Log in, then ask for a new link on your Account page.",
      ),
      h(
        "a",
        { class: "btn btn-secondary", href: session.user ? "#/account" : "#/login" },
        session.user ? "Account" : "Log in",
      ),
    );
    return;
  }
  const sent = ans.released_emails
    ? ` ${plural(ans.released_emails, "email")} that waited for it ${ans.released_emails === 1 ? "is" : "are"} on ${ans.released_emails === 1 ? "its" : "their"} way.`
    : "";
  replace(
    card,
    noticeBanner(
      ans.already_verified ? `${ans.email} was confirmed already.` : `Thank you: ${ans.email} is confirmed.${sent}`,
    ),
    h(
      "a",
      { class: "btn btn-primary", href: session.user ? "#/roles" : "#/login" },
      session.user ? "Continue" : "Log in",
    ),
  );
  if (session.user) await refreshMe(v.signal).catch(() => {});
}

// The reminder under the header while the account's own address is not confirmed.
export function verifyReminder(user: api.User): HTMLElement | null {
  if (user.email_verified !== false) return null;
  const slot = new StatusSlot();
  const again = button(
    "Send a new link",
    () =>
      void busy(again, async () => {
        try {
          slot.ok(await resend(user.email));
        } catch (e) {
          slot.error(e, "No new link was sent");
        }
      }),
  );
  return h(
    "div",
    { class: "verify-reminder", role: "region", "aria-label": "Confirm your address" },
    h(
      "p",
      null,
      h("strong", null, "Confirm your email address. "),
      `We sent a link to ${user.email}. Until you open it, gpunex emails you nothing else; log-in and everything else work as usual.`,
    ),
    h("div", { class: "actions" }, again, h("a", { href: "#/account" }, "Email addresses")),
    slot.el,
  );
}

// The Account page's section: every address gpunex mails for this account.
export function emailsSection(v: View): { el: HTMLElement; reload: () => Promise<void> } {
  const slot = new StatusSlot();
  const list = h("div", { class: "table-wrap" });
  const reload = async () => {
    let items: AddressState[];
    try {
      items = (await api.get<{ items: AddressState[] }>("/me/emails", { signal: v.signal })).items;
    } catch (e) {
      slot.error(e, "Could not load your email addresses");
      return;
    }
    replace(list, emailsTable(items, slot, reload));
  };
  const el = h(
    "section",
    { class: "card", "aria-labelledby": "emails-title" },
    h("h2", { id: "emails-title" }, "Email addresses"),
    h(
      "p",
      { class: "muted" },
      "gpunex emails an address only once its owner has confirmed it with the link sent to it. Emails to an address not confirmed wait for a week.",
    ),
    slot.el,
    list,
  );
  return { el, reload };
}

function emailsTable(items: AddressState[], slot: StatusSlot, reload: () => Promise<void>): HTMLElement {
  const rows = items.map((a) => {
    const state = a.verified
      ? h("span", { class: "badge badge-ok" }, "Confirmed")
      : h("span", { class: "badge badge-warn" }, "Not confirmed");
    const waiting = a.verified
      ? h("span", { class: "muted" }, `since ${when(a.verified_at)}`)
      : h(
          "span",
          null,
          a.waiting_emails ? `${plural(a.waiting_emails, "email")} waiting. ` : "",
          a.last_link_at ? `Link sent ${ago(a.last_link_at)}.` : "No link sent yet.",
        );
    const action = a.verified
      ? null
      : button("Send a new link", (ev) => {
          const btn = ev.currentTarget as HTMLButtonElement;
          void busy(btn, async () => {
            try {
              slot.ok(await resend(a.email));
            } catch (e) {
              slot.error(e, "No new link was sent");
            }
            await reload();
          });
        });
    return h(
      "tr",
      null,
      h("td", { class: "email" }, a.email),
      h("td", null, a.account ? "Your account's" : "Contact address"),
      h("td", null, state),
      h("td", null, waiting),
      h("td", null, action),
    );
  });
  return h(
    "table",
    { class: "table" },
    h(
      "thead",
      null,
      h(
        "tr",
        null,
        h("th", { scope: "col" }, "Address"),
        h("th", { scope: "col" }, "Used for"),
        h("th", { scope: "col" }, "State"),
        h("th", { scope: "col" }, "Details"),
        h("th", { scope: "col" }, h("span", { class: "visually-hidden" }, "Action")),
      ),
    ),
    h("tbody", null, rows),
  );
}
