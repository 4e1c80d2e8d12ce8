// Copying a secret shown once (an agent token, an API key) to the clipboard.

// Copies `text` and says so in `status`; where the Clipboard API is unavailable (no
// permission, plain HTTP), selects `el` for Ctrl+C instead.
export async function copy(text: string, el: HTMLElement, status: HTMLElement): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
    status.textContent = "Copied to the clipboard.";
  } catch {
    const range = document.createRange();
    range.selectNodeContents(el);
    const sel = window.getSelection();
    sel?.removeAllRanges();
    sel?.addRange(range);
    status.textContent = "Selected: press Ctrl+C (⌘C) to copy.";
  }
}
