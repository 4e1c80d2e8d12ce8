// One hourly price being edited: a USDC text field that becomes micro-USDC exactly
// (money.ts), and, when a price is set already, an explicit "Remove" that the form shows
// as such until it is saved (a PUT replaces the whole set: what is left out has no price
// afterwards, so leaving a field empty never removes a price by accident).
import { button, field, h, replace, uid } from "../dom";
import { parseUsdc, exactText } from "../money";

export type PriceValue =
  | { kind: "none" } // no price, none asked for
  | { kind: "price"; micro: number }
  | { kind: "removed" } // it had one; the user chose to remove it
  | { kind: "invalid"; error: string };

export interface PriceFieldOptions {
  label: string; // "Your price (USDC per GPU-hour)"
  initial: number | null; // micro-USDC; null: none yet
  hint: string;
  removeText: string; // "Remove price"
  removedText: string; // what removing means, shown while it is pending
  ariaName: string; // what the buttons name: "NVIDIA L4"
  onChange: () => void;
}

export class PriceField {
  readonly el: HTMLElement;
  readonly input: HTMLInputElement;
  private initial: number | null;
  private removed = false;
  private readonly removeSlot = h("div", { class: "price-remove" });
  private readonly o: PriceFieldOptions;

  constructor(o: PriceFieldOptions) {
    this.o = o;
    this.initial = o.initial;
    this.input = h("input", {
      type: "text",
      inputmode: "decimal",
      autocomplete: "off",
      spellcheck: "false",
      class: "price-input",
      id: uid("price"),
      value: o.initial === null ? "" : exactText(o.initial),
      placeholder: "not set",
    });
    this.input.addEventListener("input", () => o.onChange());
    const f = field(o.label, this.input, { hint: o.hint });
    // The error summary names the field by its label: it says which model too.
    f.querySelector("label")?.append(h("span", { class: "visually-hidden" }, ` (${o.ariaName})`));
    this.el = h("div", { class: "price-field" }, f, this.removeSlot);
    this.renderRemove();
  }

  value(): PriceValue {
    if (this.removed) return { kind: "removed" };
    const text = this.input.value.trim();
    if (!text) {
      return this.initial === null
        ? { kind: "none" }
        : { kind: "invalid", error: `enter a price, or choose “${this.o.removeText}”` };
    }
    const p = parseUsdc(text);
    return p.ok ? { kind: "price", micro: p.micro } : { kind: "invalid", error: p.error };
  }

  // What saving would change, in words; null when nothing.
  change(): string | null {
    const v = this.value();
    if (v.kind === "removed") return `${exactText(this.initial ?? 0)} removed`;
    if (v.kind !== "price" || v.micro === this.initial) return null;
    return this.initial === null
      ? `set to ${exactText(v.micro)}`
      : `${exactText(this.initial)} → ${exactText(v.micro)}`;
  }

  // The price stored now (micro-USDC); null: none.
  savedPrice(): number | null {
    return this.initial;
  }

  isRemoval(): boolean {
    return this.removed;
  }

  // The API's field path for this price (errors are shown next to it); null: not sent.
  setPath(path: string | null): void {
    if (path) this.input.dataset.field = path;
    else delete this.input.dataset.field;
  }

  fill(micro: number): void {
    this.removed = false;
    this.input.value = exactText(micro);
    this.renderRemove();
    this.o.onChange();
  }

  // After a save: `micro` is the stored price now (null: none).
  saved(micro: number | null): void {
    this.initial = micro;
    this.removed = false;
    this.input.value = micro === null ? "" : exactText(micro);
    this.renderRemove();
  }

  private renderRemove(): void {
    this.input.disabled = this.removed;
    if (this.initial === null) {
      replace(this.removeSlot);
      return;
    }
    if (!this.removed) {
      replace(
        this.removeSlot,
        button(
          this.o.removeText,
          () => {
            this.removed = true;
            this.renderRemove();
            this.o.onChange();
            this.removeSlot.querySelector<HTMLButtonElement>("button")?.focus();
          },
          { kind: "link", attrs: { "aria-label": `${this.o.removeText}: ${this.o.ariaName}` } },
        ),
      );
      return;
    }
    replace(
      this.removeSlot,
      h("p", { class: "removed-note small", role: "status" }, this.o.removedText),
      button(
        "Undo",
        () => {
          this.removed = false;
          this.renderRemove();
          this.o.onChange();
          this.input.focus();
        },
        { kind: "link", attrs: { "aria-label": `Undo: keep the price of ${this.o.ariaName}` } },
      ),
    );
  }
}
