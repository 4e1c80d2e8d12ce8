// A confirm step in a table row or a cell: the button that started it gives way to a
// sentence, the button that does it and Cancel, which puts the starting button back.
import { busy, button, type Child, h, replace } from "../dom";

// In `cell`, in place of `trigger`: `what` says what happens, `label` names the button
// that does it (focused), `work` runs while that button is busy.
export function confirmIn(
  cell: HTMLElement,
  trigger: HTMLButtonElement,
  what: Child,
  label: string,
  kind: "danger" | "primary",
  work: () => Promise<void>,
): void {
  const confirmBtn = button(label, () => void busy(confirmBtn, work), { kind });
  const cancel = button("Cancel", () => {
    replace(cell, trigger);
    trigger.focus();
  });
  replace(cell, h("span", { class: "confirm" }, what, " ", confirmBtn, " ", cancel));
  confirmBtn.focus();
}

// Below a form, in `area`: `what` asked before money moves, with `label`'s button (focused:
// `onYes` gets it, to show it busy) and Cancel, which clears `area` and lets the form's
// `submit` be pressed again. `submit` stays disabled while it is asked.
export function askBelow(
  area: HTMLElement,
  submit: HTMLButtonElement,
  aria: string,
  what: Child,
  label: string,
  onYes: (yes: HTMLButtonElement) => void,
): void {
  submit.disabled = true;
  const yes = button(label, () => onYes(yes), { kind: "primary" });
  const no = button("Cancel", () => {
    replace(area);
    submit.disabled = false;
    submit.focus();
  });
  replace(area, h("div", { class: "confirm", role: "group", "aria-label": aria }, h("span", null, what), yes, no));
  yes.focus();
}
