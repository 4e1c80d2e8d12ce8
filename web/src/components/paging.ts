// Lists read a page at a time through the API's cursors ({"items": [...], "next_cursor"}).
import { busy } from "../dom";

// Where failures go: a StatusSlot, or anything that shows an error with a prefix.
export interface ErrorSink {
  error(err: unknown, prefix: string): void;
}

// Loads the first page at once and each next one when `more` is clicked; `more` is shown
// only while there is a next page. `loadPage` fetches and shows the page after `cursor`
// (null: the first) and returns the next page's cursor. Failures go to `slot`, prefixed
// with `firstError` or `moreError`.
export async function pageThrough(
  more: HTMLButtonElement,
  slot: ErrorSink,
  loadPage: (cursor: string | null) => Promise<string | null>,
  firstError: string,
  moreError: string,
): Promise<void> {
  let cursor: string | null = null;
  const load = async () => {
    cursor = await loadPage(cursor);
    more.hidden = !cursor;
  };
  more.addEventListener(
    "click",
    () =>
      void busy(more, async () => {
        try {
          await load();
        } catch (e) {
          slot.error(e, moreError);
        }
      }),
  );
  try {
    await load();
  } catch (e) {
    slot.error(e, firstError);
  }
}
