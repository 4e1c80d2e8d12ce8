// The Account security page (#/account, docs/security.md): change the password (which
// ends every other session), the sessions logged in with this account (end one, or all
// but this one), API keys (create with scopes, shown once; revoke) and SSH keys.
import * as api from "../api";
import { hasRole, pageHeader, session, type View } from "../app";
import { confirmIn } from "../components/confirm";
import { copy } from "../components/copy";
import { append, busy, button, field, h, replace } from "../dom";
import { clearFieldErrors, showFieldErrors, StatusSlot } from "../errors";
import { ago, plural, when } from "../format";
import { sshKeysSection } from "./ssh_keys";
import { emailsSection } from "./verify";

export async function accountPage(v: View): Promise<void> {
  const user = session.user!;
  const sessions = sessionsSection(v);
  const emails = emailsSection(v);
  append(
    v.main,
    pageHeader("Account security", `Signed in as ${user.email}`),
    passwordSection(user, sessions.reload),
    emails.el,
    sessions.el,
    apiKeysSection(v),
    sshKeysSection(v),
  );
  await Promise.all([sessions.reload(), emails.reload()]);
}

// ---- password

function passwordSection(user: api.User, afterChange: () => Promise<void>): HTMLElement {
  const slot = new StatusSlot();
  const password = (autocomplete: string, path: string) =>
    h("input", { type: "password", autocomplete, required: true, maxlength: 256, "data-field": path });
  const current = password("current-password", "current_password");
  const fresh = password("new-password", "new_password");
  fresh.minLength = 10;
  const confirm = password("new-password", "confirm_password");
  const submit = h("button", { type: "submit", class: "btn btn-primary" }, "Change password");
  const form = h(
    "form",
    { class: "password-form", novalidate: true },
    // For password managers: the account the new password belongs to.
    h("input", { type: "text", name: "username", autocomplete: "username", value: user.email, hidden: true }),
    field("Current password", current),
    field("New password", fresh, { hint: "At least 10 characters, not the current one." }),
    field("Confirm the new password", confirm),
    h("div", { class: "actions" }, submit),
  );
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    void busy(submit, async () => {
      slot.clear();
      clearFieldErrors(form);
      if (fresh.value !== confirm.value) {
        // Shown as the server's field errors are: beside the field, and listed above.
        const summary = showFieldErrors(form, { confirm_password: "does not match the new password" });
        if (summary) slot.el.replaceChildren(summary);
        return;
      }
      try {
        await api.post("/me/password", { current_password: current.value, new_password: fresh.value });
      } catch (e) {
        slot.formError(form, e, "Password not changed");
        return;
      }
      for (const input of [current, fresh, confirm]) input.value = "";
      slot.ok(
        "Password changed. Every other session was logged out; this one stays logged in. " +
          "API keys keep working: revoke any you no longer trust.",
      );
      await afterChange().catch(() => {}); // the list reports its own failure
    });
  });
  return h(
    "section",
    { class: "card", "aria-labelledby": "password-title" },
    h("h2", { id: "password-title" }, "Password"),
    h("p", { class: "muted" }, "Changing it logs out every other browser and device using this account."),
    slot.el,
    form,
  );
}

// ---- sessions

// "Chrome on Linux" from a User-Agent header; the header itself when it names neither.
function deviceName(ua: string): string {
  if (!ua) return "Unknown device";
  const browser = /Edg(e|A|iOS)?\//.test(ua)
    ? "Edge"
    : /OPR\/|Opera/.test(ua)
      ? "Opera"
      : /Firefox\/|FxiOS\//.test(ua)
        ? "Firefox"
        : /Chrome\/|CriOS\//.test(ua)
          ? "Chrome"
          : /Version\/.*Safari\//.test(ua)
            ? "Safari"
            : null;
  const os = /iPhone|iPad|iPod/.test(ua)
    ? "iOS"
    : /Android/.test(ua)
      ? "Android"
      : /CrOS/.test(ua)
        ? "ChromeOS"
        : /Windows/.test(ua)
          ? "Windows"
          : /Mac OS X|Macintosh/.test(ua)
            ? "macOS"
            : /Linux|X11/.test(ua)
              ? "Linux"
              : null;
  if (browser && os) return `${browser} on ${os}`;
  return browser ?? os ?? ua;
}

function sessionsSection(v: View): { el: HTMLElement; reload: () => Promise<void> } {
  const slot = new StatusSlot();
  const list = h("div", { class: "table-wrap sessions-list" });
  const others = h("div", { class: "actions" });
  const title = h("h2", { id: "sessions-title", tabindex: -1 }, "Sessions");

  const reload = async () => {
    let items: api.SessionInfo[];
    try {
      items = (await api.get<api.Page<api.SessionInfo>>("/me/sessions", { signal: v.signal })).items;
    } catch (e) {
      slot.error(e, "Could not load your sessions");
      return;
    }
    // This session first, then the others newest first (the API's order).
    items = [...items.filter((s) => s.current), ...items.filter((s) => !s.current)];
    replace(list, sessionsTable(items, endOne));
    const n = items.filter((s) => !s.current).length;
    replace(others, n ? everywhereElse(n) : h("p", { class: "muted" }, "No other session is logged in."));
  };

  const endOne = (s: api.SessionInfo, btn: HTMLButtonElement) =>
    void busy(btn, async () => {
      try {
        await api.del(`/me/sessions/${encodeURIComponent(s.id)}`);
        slot.ok(`Session ended: ${deviceName(s.user_agent)} (${s.ip || "unknown address"}) must log in again.`);
      } catch (e) {
        if (!(e instanceof api.ApiError && e.status === 404)) {
          slot.error(e, "The session was not ended");
          return;
        }
        slot.ok("That session had ended already.");
      }
      await reload();
      title.focus();
    });

  // "Log out everywhere else", asking first.
  const everywhereElse = (n: number): HTMLElement => {
    const start = button(
      "Log out everywhere else",
      () => {
        const yes = button(
          "Log out everywhere else",
          () =>
            void busy(yes, async () => {
              try {
                const ans = await api.post<{ revoked: number }>("/me/sessions/revoke-others");
                slot.ok(`${plural(ans.revoked, "other session")} ended. Only this one is logged in now.`);
              } catch (e) {
                slot.error(e, "The other sessions were not ended");
              }
              await reload();
              title.focus();
            }),
          { kind: "danger" },
        );
        const cancel = button("Cancel", () => {
          replace(others, everywhereElse(n));
          others.querySelector("button")?.focus();
        });
        replace(
          others,
          h(
            "div",
            { class: "confirm", role: "group", "aria-label": "Confirm" },
            h("span", null, `End ${plural(n, "other session")}? They must log in again.`),
            yes,
            cancel,
          ),
        );
        yes.focus();
      },
      { kind: "danger" },
    );
    return start;
  };

  const el = h(
    "section",
    { class: "card", "aria-labelledby": "sessions-title" },
    title,
    h(
      "p",
      { class: "muted" },
      "Every browser and device logged in with this account. End any you do not recognise, then change your password.",
    ),
    slot.el,
    list,
    others,
  );
  return { el, reload };
}

// A session's last use is kept to the minute: "12 s ago" would claim more than is known.
function lastSeen(rfc3339: string): string {
  const t = new Date(rfc3339).getTime();
  return Date.now() - t < 60000 ? "in the last minute" : ago(rfc3339);
}

function sessionsTable(
  items: api.SessionInfo[],
  end: (s: api.SessionInfo, btn: HTMLButtonElement) => void,
): HTMLElement {
  if (!items.length) return h("p", { class: "muted" }, "No sessions.");
  const rows = items.map((s) => {
    const name = deviceName(s.user_agent);
    const actions = h("td", { class: "row-action" });
    if (s.current) {
      actions.appendChild(h("span", { class: "muted small" }, "You are using it"));
    } else {
      const endBtn = button("End", () => end(s, endBtn), {
        kind: "danger",
        attrs: {
          class: "btn btn-danger btn-small",
          "aria-label": `End session: ${name}, ${s.ip || "unknown address"}`,
        },
      });
      actions.appendChild(endBtn);
    }
    return h(
      "tr",
      { class: s.current ? "current-session" : null, "data-session": s.id },
      h(
        "td",
        { "data-label": "Device" },
        h(
          "div",
          { class: "device" },
          h("strong", null, name),
          s.current ? h("span", { class: "badge badge-ok" }, "This session") : null,
        ),
        name !== s.user_agent && s.user_agent ? h("div", { class: "muted small ua" }, s.user_agent) : null,
      ),
      h("td", { "data-label": "Address", class: "nowrap" }, s.ip || "—"),
      h("td", { "data-label": "Logged in", class: "nowrap" }, when(s.created_at)),
      h("td", { "data-label": "Last used", class: "nowrap" }, s.current ? "now" : lastSeen(s.last_seen_at)),
      h("td", { "data-label": "Expires", class: "nowrap" }, when(s.expires_at)),
      actions,
    );
  });
  return h(
    "table",
    { class: "sessions" },
    h(
      "thead",
      null,
      h(
        "tr",
        null,
        ["Device", "Address", "Logged in", "Last used", "Expires", ""].map((x) => h("th", { scope: "col" }, x)),
      ),
    ),
    h("tbody", null, rows),
  );
}

// ---- API keys

const kScopes: Array<{ scope: api.Scope; name: string; text: string; role?: api.Role; checked: boolean }> = [
  { scope: "read", name: "Read", text: "look at what your account can see (GET requests)", checked: true },
  { scope: "write", name: "Write", text: "create, change and delete (every other request)", checked: true },
  {
    scope: "provider",
    name: "Provider",
    text: "your machines, prices and agent tokens",
    role: "provider",
    checked: false,
  },
  { scope: "admin", name: "Admin", text: "reviewing applications and the catalog", role: "admin", checked: false },
];

function scopeBadges(scopes: api.Scope[]): HTMLElement {
  return h(
    "span",
    { class: "scopes" },
    scopes.map((s) => h("span", { class: `badge scope scope-${s}` }, s)),
  );
}

function newKeyPanel(k: api.CreatedApiKey, onClose: () => void): HTMLElement {
  const copied = h("span", { class: "copied", role: "status", "aria-live": "polite" });
  const value = h("code", { class: "key-value" }, k.key);
  return h(
    "div",
    { class: "banner banner-ok new-token new-key", role: "region", "aria-label": "New API key" },
    h("h3", null, `API key “${k.name}” created`),
    h(
      "p",
      null,
      h("strong", null, "Copy it now: it will not be shown again."),
      " Only its hash is kept; if it is lost, revoke it and create another.",
    ),
    h("pre", { class: "code" }, value),
    h("p", null, "Scopes: ", scopeBadges(k.scopes)),
    h("p", { class: "small" }, "Send it in a header: ", h("code", null, "Authorization: Bearer <key>")),
    h(
      "p",
      { class: "small cli-hint" },
      "Or use it with the gpunex command-line client: ",
      h("code", null, `GPUNEX_URL=${location.origin} GPUNEX_API_KEY=<key> gpunex balance`),
      " (or ",
      h("code", null, "gpunex auth login"),
      ", which makes a key of its own).",
    ),
    h(
      "div",
      { class: "actions" },
      button("Copy key", () => void copy(k.key, value, copied), { kind: "primary", attrs: { "data-copy": "key" } }),
      copied,
    ),
    h("div", { class: "actions" }, button("Done, I have copied it", onClose)),
  );
}

function apiKeysSection(v: View): HTMLElement {
  const slot = new StatusSlot();
  const fresh = h("div");
  const list = h("div", { class: "table-wrap keys-list" });
  const name = h("input", {
    type: "text",
    maxlength: 100,
    placeholder: "e.g. CI pipeline",
    autocomplete: "off",
    "data-field": "name",
  });
  const boxes = kScopes
    .filter((s) => !s.role || hasRole(s.role))
    .map((s) => ({
      scope: s.scope,
      box: h("input", { type: "checkbox", name: "scope", value: s.scope, checked: s.checked }),
      label: s,
    }));
  const scopes = h(
    "fieldset",
    { class: "scope-choices", "data-field": "scopes" },
    h("legend", null, "Scopes"),
    h(
      "div",
      { class: "choices stacked" },
      boxes.map(({ box, label }) =>
        h("label", { class: "check" }, box, h("span", null, h("strong", null, label.name), `: ${label.text}`)),
      ),
    ),
    h(
      "div",
      { class: "hint" },
      "A key can do only what its scopes allow, and never create keys or change the password.",
    ),
  );
  const create = h("button", { type: "submit", class: "btn btn-primary" }, "Create API key");
  const form = h(
    "form",
    { class: "key-form", novalidate: true },
    field("Key name", name, { hint: "What will use it." }),
    scopes,
    h("div", { class: "actions" }, create),
  );

  const load = async () => {
    const page = await api.get<api.Page<api.ApiKey>>("/api-keys", { signal: v.signal });
    replace(list, keysTable(page.items, revoke));
  };

  const revoke = (k: api.ApiKey, actions: HTMLElement, start: HTMLButtonElement) =>
    confirmIn(actions, start, "Scripts using it stop working.", `Revoke “${k.name}”`, "danger", async () => {
      try {
        await api.del(`/api-keys/${encodeURIComponent(k.id)}`);
        slot.ok(`API key “${k.name}” revoked: requests made with it are refused from now on.`);
        await load();
      } catch (e) {
        slot.error(e, "The key was not revoked");
      }
    });

  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    void busy(create, async () => {
      slot.clear();
      clearFieldErrors(form);
      try {
        const chosen = boxes.filter((b) => b.box.checked).map((b) => b.scope);
        const k = await api.post<api.CreatedApiKey>("/api-keys", { name: name.value.trim(), scopes: chosen });
        name.value = "";
        for (const b of boxes) b.box.checked = b.label.checked;
        replace(
          fresh,
          newKeyPanel(k, () => {
            replace(fresh);
            name.focus();
          }),
        );
        fresh.querySelector<HTMLButtonElement>("[data-copy]")?.focus();
        await load();
      } catch (e) {
        slot.formError(form, e, "The key was not created");
      }
    });
  });

  void load().catch((e) => slot.error(e, "Could not load your API keys"));
  return h(
    "section",
    { class: "card", "aria-labelledby": "keys-title" },
    h("h2", { id: "keys-title" }, "API keys"),
    h(
      "p",
      { class: "muted" },
      "For scripts and the gpunex command line. A key works until you revoke it; changing the password does not end it.",
    ),
    slot.el,
    form,
    fresh,
    list,
  );
}

function keysTable(
  items: api.ApiKey[],
  revoke: (k: api.ApiKey, actions: HTMLElement, start: HTMLButtonElement) => void,
): HTMLElement {
  if (!items.length) return h("p", { class: "muted" }, "No API keys yet.");
  const rows = items.map((k) => {
    const actions = h("td", { class: "row-action" });
    if (!k.revoked_at) {
      const start: HTMLButtonElement = button("Revoke", () => revoke(k, actions, start), {
        kind: "danger",
        attrs: { class: "btn btn-danger btn-small", "aria-label": `Revoke API key ${k.name}` },
      });
      actions.appendChild(start);
    }
    return h(
      "tr",
      { class: k.revoked_at ? "revoked" : null, "data-key": k.id },
      h("td", { "data-label": "Name" }, k.name),
      h("td", { "data-label": "Key", class: "nowrap" }, h("code", null, `${k.prefix}…`)),
      h("td", { "data-label": "Scopes" }, scopeBadges(k.scopes)),
      h("td", { "data-label": "Created", class: "nowrap" }, when(k.created_at)),
      h("td", { "data-label": "Last used" }, k.last_used_at ? ago(k.last_used_at) : "never"),
      h(
        "td",
        { "data-label": "Status" },
        k.revoked_at
          ? h("span", { class: "badge" }, `Revoked ${when(k.revoked_at)}`)
          : h("span", { class: "badge badge-ok" }, "Active"),
      ),
      actions,
    );
  });
  return h(
    "table",
    { class: "keys" },
    h(
      "thead",
      null,
      h(
        "tr",
        null,
        ["Name", "Key", "Scopes", "Created", "Last used", "Status", ""].map((x) => h("th", { scope: "col" }, x)),
      ),
    ),
    h("tbody", null, rows),
  );
}
