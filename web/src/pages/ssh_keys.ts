// The SSH keys section of the Account page (#/account; src/platform/sshkeys/README.md):
// the public keys that may log in to the account's rentals over SSH. Add one by pasting
// a .pub line; remove one after a confirmation.
import * as api from "../api";
import { type View } from "../app";
import { confirmIn } from "../components/confirm";
import { busy, button, field, h, replace } from "../dom";
import { clearFieldErrors, StatusSlot } from "../errors";
import { when } from "../format";

export interface SshKey {
  id: string;
  name: string;
  type: string; // "ssh-ed25519", "ecdsa-sha2-nistp256", "ssh-rsa", ...
  bits: number;
  fingerprint: string; // "SHA256:..." as ssh-keygen -l prints it
  public_key: string;
  created_at: string;
}

// "ED25519", "ECDSA 256", "RSA 4096": as ssh-keygen -l names them.
export function keyKind(k: SshKey): string {
  if (k.type === "ssh-ed25519") return "ED25519";
  if (k.type.startsWith("ecdsa-")) return `ECDSA ${k.bits}`;
  if (k.type === "ssh-rsa") return `RSA ${k.bits}`;
  return k.type;
}

export function sshKeysSection(v: View): HTMLElement {
  const slot = new StatusSlot();
  const list = h("div", { class: "table-wrap ssh-keys-list" });
  const name = h("input", { type: "text", maxlength: 64, autocomplete: "off", placeholder: "e.g. laptop" });
  const key = h("textarea", {
    rows: 3,
    spellcheck: false,
    autocomplete: "off",
    class: "mono",
    placeholder: "ssh-ed25519 AAAAC3Nza... you@laptop",
  });
  const add = h("button", { type: "submit", class: "btn btn-primary" }, "Add SSH key");
  const form = h(
    "form",
    { class: "ssh-key-form", novalidate: true },
    field("Public key", key, {
      field: "public_key",
      hint: "One line from a .pub file, such as ~/.ssh/id_ed25519.pub (ssh-keygen -t ed25519 makes one). Never the private key.",
    }),
    field("Name (optional)", name, { field: "name", hint: "Without one, the key's comment names it." }),
    h("div", { class: "actions" }, add),
  );

  const load = async () => {
    const page = await api.get<api.Page<SshKey>>("/me/ssh-keys", { signal: v.signal });
    replace(list, keysTable(page.items, remove));
  };

  const remove = (k: SshKey, actions: HTMLElement, start: HTMLButtonElement) =>
    confirmIn(actions, start, "Logins with it stop working.", `Remove “${k.name}”`, "danger", async () => {
      try {
        await api.del(`/me/ssh-keys/${encodeURIComponent(k.id)}`);
        slot.ok(`SSH key “${k.name}” removed: it no longer logs in to your rentals.`);
        await load();
      } catch (e) {
        slot.error(e, "The key was not removed");
      }
    });

  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    void busy(add, async () => {
      slot.clear();
      clearFieldErrors(form);
      try {
        const body: Record<string, string> = { public_key: key.value.trim() };
        if (name.value.trim()) body.name = name.value.trim();
        const k = await api.post<SshKey>("/me/ssh-keys", body);
        key.value = "";
        name.value = "";
        slot.ok(`SSH key “${k.name}” added (${keyKind(k)} ${k.fingerprint}).`);
        await load();
      } catch (e) {
        slot.formError(form, e, "The key was not added");
      }
    });
  });

  void load().catch((e) => slot.error(e, "Could not load your SSH keys"));
  return h(
    "section",
    { class: "card", "aria-labelledby": "ssh-keys-title" },
    h("h2", { id: "ssh-keys-title" }, "SSH keys"),
    h(
      "p",
      { class: "muted" },
      "The public keys that may log in to your rentals over SSH. The private key stays on your computer; compare a fingerprint with ",
      h("code", null, "ssh-keygen -l -f <file>"),
      ".",
    ),
    slot.el,
    form,
    list,
  );
}

function keysTable(
  items: SshKey[],
  remove: (k: SshKey, actions: HTMLElement, start: HTMLButtonElement) => void,
): HTMLElement {
  if (!items.length) return h("p", { class: "muted" }, "No SSH keys yet.");
  const rows = items.map((k) => {
    const actions = h("td", { class: "row-action" });
    const start: HTMLButtonElement = button("Remove", () => remove(k, actions, start), {
      kind: "danger",
      attrs: { class: "btn btn-danger btn-small", "aria-label": `Remove SSH key ${k.name}` },
    });
    actions.appendChild(start);
    return h(
      "tr",
      { "data-ssh-key": k.id },
      h("td", { "data-label": "Name" }, k.name),
      h("td", { "data-label": "Type", class: "nowrap" }, keyKind(k)),
      h("td", { "data-label": "Fingerprint", class: "fingerprint" }, h("code", null, k.fingerprint)),
      h("td", { "data-label": "Added", class: "nowrap" }, when(k.created_at)),
      actions,
    );
  });
  return h(
    "table",
    { class: "ssh-keys" },
    h(
      "thead",
      null,
      h(
        "tr",
        null,
        ["Name", "Type", "Fingerprint", "Added", ""].map((x) => h("th", { scope: "col" }, x)),
      ),
    ),
    h("tbody", null, rows),
  );
}
