// Small DOM helpers. Every piece of text goes in through textContent or a text node and
// every attribute through setAttribute or a DOM property: nothing is ever parsed as HTML,
// so names, notes and model names typed by users are shown as the text they are.

export type Child = Node | string | number | null | undefined | false | Child[];

type Listener = (ev: Event) => void;
export type Attrs = Record<string, string | number | boolean | null | undefined | Listener>;

// Properties that must be set as properties (the attribute only sets the default).
const kProps = new Set(["value", "checked", "selected", "disabled", "indeterminate"]);

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs?: Attrs | null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (attrs) setAttrs(el, attrs);
  append(el, ...children);
  return el;
}

export function setAttrs(el: HTMLElement, attrs: Attrs): void {
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) {
      if (kProps.has(key)) (el as unknown as Record<string, unknown>)[key] = false;
      continue;
    }
    if (typeof value === "function") {
      if (!key.startsWith("on")) throw new Error(`listener for ${key} must be named on...`);
      el.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (key === "style" || key === "innerHTML" || key.startsWith("on")) {
      // Inline styles are refused by the Content-Security-Policy; markup is never set.
      throw new Error(`attribute ${key} is not allowed`);
    } else if (kProps.has(key)) {
      (el as unknown as Record<string, unknown>)[key] = key === "value" ? String(value) : value;
    } else if (key === "class") {
      el.className = String(value);
    } else {
      el.setAttribute(key, value === true ? "" : String(value));
    }
  }
}

export function append(parent: Node, ...children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) {
      append(parent, ...c);
    } else if (c instanceof Node) {
      parent.appendChild(c);
    } else {
      parent.appendChild(document.createTextNode(String(c)));
    }
  }
}

// Replaces the children of `el`.
export function replace(el: Node, ...children: Child[]): void {
  while (el.firstChild) el.removeChild(el.firstChild);
  append(el, ...children);
}

// Replaces the children of `el` as `replace` does, and puts the focus back where it was
// when it was inside `el`: on the new element with the same data-focus key. Lists that
// refresh every few seconds use it so that a keyboard user keeps their place.
export function replaceKeepingFocus(el: HTMLElement, ...children: Child[]): void {
  const active = document.activeElement;
  const key = active instanceof HTMLElement && el.contains(active) ? active.dataset.focus : undefined;
  replace(el, ...children);
  if (key) {
    const again = [...el.querySelectorAll<HTMLElement>("[data-focus]")].find((x) => x.dataset.focus === key);
    again?.focus({ preventScroll: true });
  }
}

let idCounter = 0;
// A document-unique id, for label/for and aria-describedby pairs.
export function uid(prefix = "f"): string {
  idCounter += 1;
  return `${prefix}-${idCounter}`;
}

// A labelled form control: <div class="field"><label for>…</label> control hint error</div>.
// `field` is the API's field path ("gpus[0].quantity"); the API's message for that path is
// shown in the error slot (see errors.ts).
export function field(
  label: string,
  control: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement,
  opts: { field?: string; hint?: string; className?: string } = {},
): HTMLDivElement {
  if (!control.id) control.id = uid("in");
  const hint = opts.hint ? h("div", { class: "hint", id: uid("hint") }, opts.hint) : null;
  if (hint) control.setAttribute("aria-describedby", hint.id);
  if (opts.field) control.dataset.field = opts.field;
  return h(
    "div",
    { class: "field" + (opts.className ? " " + opts.className : "") },
    h("label", { for: control.id }, label),
    control,
    hint,
  );
}

// A table of `rows` under a row of column heads, in a wrapper that scrolls it sideways on
// a narrow screen; `caption` names it for screen readers.
export function dataTable(cls: string, heads: string[], rows: Node[], caption?: string): HTMLElement {
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: cls },
      caption ? h("caption", { class: "visually-hidden" }, caption) : null,
      h(
        "thead",
        null,
        h(
          "tr",
          null,
          heads.map((x) => h("th", { scope: "col" }, x)),
        ),
      ),
      h("tbody", null, rows),
    ),
  );
}

export function button(
  text: string,
  onclick: (ev: Event) => void,
  opts: { kind?: "primary" | "secondary" | "danger" | "link"; type?: "button" | "submit"; attrs?: Attrs } = {},
): HTMLButtonElement {
  return h(
    "button",
    { type: opts.type ?? "button", class: "btn btn-" + (opts.kind ?? "secondary"), onclick, ...opts.attrs },
    text,
  );
}

// Disables `btn` while `work` runs; a second click meanwhile does nothing.
export async function busy<T>(btn: HTMLButtonElement | null, work: () => Promise<T>): Promise<T> {
  if (btn) {
    btn.disabled = true;
    btn.setAttribute("aria-busy", "true");
  }
  try {
    return await work();
  } finally {
    if (btn) {
      btn.disabled = false;
      btn.removeAttribute("aria-busy");
    }
  }
}
