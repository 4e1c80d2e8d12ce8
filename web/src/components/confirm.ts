// A confirm step in a table row or a cell: the button that started it gives way to a
// sentence, the button that does it and Cancel, which puts the starting button back.
import { busy, button, h, replace } from "../dom";

// In `cell`, in place of `trigger`: `what` says what happens, `label` names the button
// that does it (focused), `work` runs while that button is busy.
export function confirmIn(
  cell: HTMLElement,
  trigger: HTMLButtonElement,
  what: string,
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
