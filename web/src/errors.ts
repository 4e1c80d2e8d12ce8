// Showing failures: a banner for the request as a whole, and the API's field errors
// ({"gpus[0].quantity": "must be at least 1"}) next to the inputs they name.
import { ApiError } from "./api";
import { h, replace } from "./dom";

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

export function noticeBanner(text: string, kind: "ok" | "info" = "ok"): HTMLDivElement {
  return h("div", { class: `banner banner-${kind}`, role: "status" }, text);
}

// A place for one request's outcome inside a page.
export class StatusSlot {
  readonly el = h("div", { class: "status-slot", "aria-live": "polite" });

  error(err: unknown, prefix = ""): void {
    if (err instanceof DOMException && err.name === "AbortError") return;
    replace(this.el, errorBanner(err, prefix));
  }

  ok(text: string): void {
    replace(this.el, noticeBanner(text, "ok"));
  }

  clear(): void {
    replace(this.el);
  }

  // The failure of a form's submission: the API's field errors next to their inputs with
  // their summary here (under "title: message" when a title is given), or else the error
  // banner prefixed with `prefix`. Returns whether there were field errors.
  formError(form: HTMLElement, err: unknown, prefix: string, title = ""): boolean {
    const summary = err instanceof ApiError ? showFieldErrors(form, err.fields) : null;
    if (!summary) {
      this.error(err, prefix);
      return false;
    }
    const heading = title ? h("p", { class: "error-title" }, `${title}: ${messageOf(err)}`) : null;
    this.el.replaceChildren(...(heading ? [heading, summary] : [summary]));
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

// Shows each field error next to its input and returns a summary element listing them
// all (null when there are none). The first invalid input gets the focus.
export function showFieldErrors(root: HTMLElement, fields: Record<string, string>): HTMLElement | null {
  clearFieldErrors(root);
  const entries = Object.entries(fields);
  if (entries.length === 0) return null;
  const items: HTMLElement[] = [];
  let first: HTMLElement | null = null;
  for (const [path, msg] of entries) {
    const target = targetFor(root, path);
    const label = fieldLabel(root, path);
    // The message names the path's last part when it landed on an enclosing group.
    const exact = target?.dataset.field === path;
    const tail = path.match(/([A-Za-z_]+(?:\[\d+\])?)$/);
    const text = exact ? msg : `${tail ? tail[1] : path} ${msg}`;
    if (target) {
      errorCounter += 1;
      const id = `err-${errorCounter}`;
      const err = h("div", { class: "field-error", id, "data-path": path }, text);
      const isControl =
        target instanceof HTMLInputElement ||
        target instanceof HTMLSelectElement ||
        target instanceof HTMLTextAreaElement;
      if (isControl) {
        target.setAttribute("aria-invalid", "true");
        target.setAttribute("data-error-for", path);
        const described = target.getAttribute("aria-describedby");
        target.setAttribute("aria-describedby", described ? `${described} ${id}` : id);
        target.insertAdjacentElement("afterend", err);
        first = first ?? target;
      } else {
        // A group (fieldset): the message goes right after its legend.
        const legend = target.querySelector(":scope > legend");
        if (legend) legend.insertAdjacentElement("afterend", err);
        else target.prepend(err);
        first = first ?? target.querySelector<HTMLElement>("input, select, textarea") ?? null;
      }
    }
    items.push(h("li", null, `${label}: ${msg}`));
  }
  first?.focus();
  return h(
    "div",
    { class: "banner banner-error", role: "alert" },
    h("p", null, entries.length === 1 ? "One field needs attention:" : `${entries.length} fields need attention:`),
    h("ul", null, items),
  );
}
