// Showing failures: a banner for the request as a whole, and the API's field errors
// ({"gpus[0].quantity": "must be at least 1"}) next to the inputs they name.
import { ApiError } from "./api";
import { type Child, h, replace, uid } from "./dom";

export function messageOf(err: unknown): string {
  if (err instanceof ApiError) return err.message;
  if (err instanceof Error) return err.message;
  return String(err);
}

export function isAbort(err: unknown): boolean {
  return err instanceof DOMException && err.name === "AbortError";
}

// A banner that screen readers announce.
export function errorBanner(err: unknown, prefix = ""): HTMLDivElement {
  const text = messageOf(err);
  return h("div", { class: "banner banner-error", role: "alert" }, prefix ? `${prefix}: ${text}` : text);
}

export function noticeBanner(text: Child, kind: "ok" | "info" = "ok"): HTMLDivElement {
  return h("div", { class: `banner banner-${kind}`, role: "status" }, text);
}

// A place for one request's outcome inside a page.
export class StatusSlot {
  readonly el = h("div", { class: "status-slot", "aria-live": "polite" });

  error(err: unknown, prefix = ""): void {
    if (err instanceof DOMException && err.name === "AbortError") return;
    replace(this.el, errorBanner(err, prefix));
  }

  ok(text: Child): void {
    replace(this.el, noticeBanner(text, "ok"));
  }

  clear(): void {
    replace(this.el);
  }

  // The failure of a form's submission: the API's field errors next to their inputs with
  // their summary here (under "title: message" when a title is given), or else the error
  // banner prefixed with `prefix`. Returns whether there were field errors.
  formError(form: HTMLElement, err: unknown, prefix: string, title = ""): boolean {
    const fields = err instanceof ApiError ? err.fields : {};
    const summary =
      Object.keys(fields).length || Object.keys(unreadableNumbers(form)).length
        ? showFieldErrors(form, fields, title ? `${title}: ${messageOf(err)}` : undefined)
        : null;
    if (!summary) {
      this.error(err, prefix);
      return false;
    }
    this.el.replaceChildren(summary);
    return true;
  }
}

// A CSS.escape stand-in for attribute selectors on field paths ("gpus[0].quantity").
function attrValue(s: string): string {
  return s.replace(/["\\]/g, "\\$&");
}

// The element that shows the error for `path`: the input or group with data-field equal
// to the path, or to the nearest enclosing path ("gpus[0].availability.windows[1]" falls
// back to "gpus[0].availability.windows", then "gpus[0].availability", ...).
function targetFor(root: HTMLElement, path: string): HTMLElement | null {
  let p = path;
  for (;;) {
    const el = root.querySelector<HTMLElement>(`[data-field="${attrValue(p)}"]`);
    if (el) return el;
    const cut = Math.max(p.lastIndexOf("."), p.lastIndexOf("["));
    if (cut <= 0) return null;
    p = p.slice(0, cut);
  }
}

// A readable name for a field path, for the summary list.
export function fieldLabel(root: HTMLElement, path: string): string {
  const el = targetFor(root, path);
  if (el) {
    const label = el.id ? root.querySelector(`label[for="${attrValue(el.id)}"]`) : null;
    const legend = el.querySelector(":scope > legend");
    const text = (label ?? legend)?.textContent?.trim();
    if (text) {
      const entry = path.match(/^gpus\[(\d+)\]/);
      const win = path.match(/\.windows\[(\d+)\]\./);
      const named = win ? `Window ${Number(win[1]) + 1}: ${text}` : text;
      return entry ? `GPU entry ${Number(entry[1]) + 1}: ${named}` : named;
    }
  }
  return path;
}

export function clearFieldErrors(root: HTMLElement): void {
  summaries.get(root)?.abort();
  summaries.delete(root);
  root.querySelectorAll(".field-error").forEach((e) => e.remove());
  root.querySelectorAll("[aria-invalid]").forEach((e) => e.removeAttribute("aria-invalid"));
  root.querySelectorAll<HTMLElement>("[data-error-for]").forEach((e) => {
    const ids = (e.getAttribute("aria-describedby") ?? "").split(" ").filter((id) => !id.startsWith("err-"));
    if (ids.length) e.setAttribute("aria-describedby", ids.join(" "));
    else e.removeAttribute("aria-describedby");
    e.removeAttribute("data-error-for");
  });
}

let errorCounter = 0;

// The API's messages in the words of the form: "must have at least 1 item" is how the
// decoder says it; a person reads "choose at least one".
export function humanMessage(msg: string): string {
  const atLeast = msg.match(/^must have at least (\d+) items?$/);
  if (atLeast) return atLeast[1] === "1" ? "choose at least one" : `choose at least ${atLeast[1]}`;
  const atMost = msg.match(/^must have at most (\d+) items?$/);
  if (atMost) return `can have at most ${atMost[1]}`;
  if (msg === "must be an integer") return "must be a whole number";
  return msg;
}

// The inputs of `root` whose text the browser could not read as a number ("1e" in a
// number field reads as empty): "must be a number", whatever the API said (it saw
// nothing and may have said "is required").
export function unreadableNumbers(root: HTMLElement): Record<string, string> {
  const out: Record<string, string> = {};
  root.querySelectorAll<HTMLInputElement>('input[type="number"][data-field]').forEach((el) => {
    if (el.validity.badInput) out[el.dataset.field!] = "must be a number";
  });
  return out;
}

// The listeners of the summary shown in each form, stopped when its errors are cleared.
const summaries = new WeakMap<HTMLElement, AbortController>();

// The control a field error points to: the input itself, or a group's first input.
function controlOf(target: HTMLElement): HTMLElement | null {
  const isControl =
    target instanceof HTMLInputElement || target instanceof HTMLSelectElement || target instanceof HTMLTextAreaElement;
  return isControl ? target : target.querySelector<HTMLElement>("input, select, textarea");
}

// Shows each field error next to its input and returns a summary element listing them
// all in the order of the form (null when there are none), each a link that moves the
// focus to its field; `title` heads the summary. The first invalid input gets the focus.
// An error goes, with its line in the summary, once its field is changed; the summary
// goes with the last one.
export function showFieldErrors(root: HTMLElement, fields: Record<string, string>, title?: string): HTMLElement | null {
  clearFieldErrors(root);
  const all = { ...fields, ...unreadableNumbers(root) };
  const entries = Object.entries(all).map(([path, msg]) => ({
    path,
    msg: humanMessage(msg),
    target: targetFor(root, path),
  }));
  if (entries.length === 0) return null;
  // Form order; what has no input of its own goes last, in the API's order.
  entries.sort((a, b) => {
    if (!a.target || !b.target) return a.target ? -1 : b.target ? 1 : 0;
    if (a.target === b.target) return 0;
    return a.target.compareDocumentPosition(b.target) & Node.DOCUMENT_POSITION_FOLLOWING ? -1 : 1;
  });
  const controller = new AbortController();
  summaries.set(root, controller);
  const list = h("ul");
  const shown: Array<{ target: HTMLElement; err: HTMLElement; item: HTMLElement; path: string }> = [];
  let first: HTMLElement | null = null;
  for (const { path, msg, target } of entries) {
    const label = fieldLabel(root, path);
    // The message names the path's last part when it landed on an enclosing group.
    const exact = target?.dataset.field === path;
    const tail = path.match(/([A-Za-z_]+(?:\[\d+\])?)$/);
    const text = exact ? msg : `${tail ? tail[1] : path} ${msg}`;
    const control = target ? controlOf(target) : null;
    let item: HTMLElement;
    if (control) {
      if (!control.id) control.id = uid("in");
      item = h(
        "li",
        null,
        h(
          "a",
          {
            href: `#${control.id}`,
            "data-path": path,
            onclick: (ev: Event) => {
              // The router owns the hash: the link moves the focus, not the page.
              ev.preventDefault();
              control.focus();
              control.scrollIntoView({ block: "center" });
            },
          },
          `${label}: ${msg}`,
        ),
      );
    } else {
      item = h("li", null, `${label}: ${msg}`);
    }
    list.appendChild(item);
    if (!target) continue;
    errorCounter += 1;
    const id = `err-${errorCounter}`;
    const err = h("div", { class: "field-error", id, "data-path": path }, text);
    if (control === target) {
      target.setAttribute("aria-invalid", "true");
      target.setAttribute("data-error-for", path);
      const described = target.getAttribute("aria-describedby");
      target.setAttribute("aria-describedby", described ? `${described} ${id}` : id);
      target.insertAdjacentElement("afterend", err);
    } else {
      // A group (fieldset): the message goes right after its legend.
      const legend = target.querySelector(":scope > legend");
      if (legend) legend.insertAdjacentElement("afterend", err);
      else target.prepend(err);
    }
    first = first ?? control;
    shown.push({ target, err, item, path });
  }
  const count = h(
    "p",
    null,
    entries.length === 1 ? "One field needs attention:" : `${entries.length} fields need attention:`,
  );
  const summary = h(
    "div",
    { class: "banner banner-error error-summary", role: "alert" },
    title ? h("p", { class: "error-title" }, title) : null,
    count,
    list,
  );
  // A changed field is taken as fixed: its message and its line go (a number the
  // browser still cannot read stays).
  const onEdit = (ev: Event) => {
    const at = ev.target as Node;
    for (const s of [...shown]) {
      if (!s.target.contains(at)) continue;
      if (at instanceof HTMLInputElement && at.type === "number" && at.validity.badInput) continue;
      s.err.remove();
      s.item.remove();
      if (s.target.getAttribute("data-error-for") === s.path) {
        s.target.removeAttribute("aria-invalid");
        const ids = (s.target.getAttribute("aria-describedby") ?? "").split(" ").filter((x) => x !== s.err.id);
        if (ids.length) s.target.setAttribute("aria-describedby", ids.join(" "));
        else s.target.removeAttribute("aria-describedby");
        s.target.removeAttribute("data-error-for");
      }
      shown.splice(shown.indexOf(s), 1);
    }
    const left = list.children.length;
    if (left === 0) {
      summary.remove();
      controller.abort();
    } else {
      count.textContent = left === 1 ? "One field needs attention:" : `${left} fields need attention:`;
    }
  };
  root.addEventListener("input", onEdit, { signal: controller.signal });
  root.addEventListener("change", onEdit, { signal: controller.signal });
  first?.focus();
  return summary;
}
