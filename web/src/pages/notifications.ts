// In-dashboard notifications (NTF-1): the same events the emails tell.
import * as api from "../api";
import { pageHeader, refreshUnread, type View } from "../app";
import { pageThrough } from "../components/paging";
import { append, busy, button, h, replace } from "../dom";
import { StatusSlot } from "../errors";
import { when } from "../format";

// Only links into this dashboard are followed ("/#/applications/ID",
// "/#/provider/benchmark?machine=ID"); anything else is shown as text.
function safeLink(link: string | null): string | null {
  if (!link) return null;
  if (/^\/#\/[A-Za-z0-9/_-]*(\?[A-Za-z0-9_.~=&%-]*)?$/.test(link)) return link.slice(1);
  return null;
}

export async function notificationsPage(v: View): Promise<void> {
  const slot = new StatusSlot();
  const list = h("ol", { class: "notifications" });
  const more = h("button", { type: "button", class: "btn btn-secondary", hidden: true }, "Load more");
  const readAll = button(
    "Mark all as read",
    () =>
      void busy(readAll, async () => {
        try {
          await api.post("/notifications/read-all");
          list.querySelectorAll(".unread").forEach((li) => li.classList.remove("unread"));
          list.querySelectorAll(".mark-read").forEach((b) => b.remove());
          slot.ok("All notifications marked as read.");
          void refreshUnread();
        } catch (e) {
          slot.error(e, "Could not mark them as read");
        }
      }),
  );
  append(
    v.main,
    pageHeader("Notifications", "What happened to your applications and machines.", readAll),
    slot.el,
    list,
    more,
  );

  const loadPage = async (cursor: string | null) => {
    const q = new URLSearchParams({ limit: "50" });
    if (cursor) q.set("cursor", cursor);
    const page = await api.get<api.NotificationPage>(`/notifications?${q}`, { signal: v.signal });
    for (const n of page.items) {
      const li = h("li", { class: n.read ? "card notification" : "card notification unread" });
      const href = safeLink(n.link);
      const mark = n.read
        ? null
        : button(
            "Mark as read",
            () =>
              void busy(mark, async () => {
                try {
                  await api.post(`/notifications/${encodeURIComponent(n.id)}/read`);
                  li.classList.remove("unread");
                  mark?.remove();
                  void refreshUnread();
                } catch (e) {
                  slot.error(e, "Could not mark it as read");
                }
              }),
            { kind: "link", attrs: { class: "btn btn-link mark-read" } },
          );
      append(
        li,
        h(
          "div",
          { class: "notification-head" },
          h("strong", null, n.title),
          h("span", { class: "muted small" }, when(n.at)),
        ),
        h("p", null, n.body),
        h(
          "div",
          { class: "actions" },
          href
            ? h(
                "a",
                {
                  href,
                  onclick: () => {
                    if (!n.read)
                      void api.post(`/notifications/${encodeURIComponent(n.id)}/read`).then(refreshUnread, () => {});
                  },
                },
                "Open",
              )
            : null,
          mark,
        ),
      );
      list.appendChild(li);
    }
    if (list.childElementCount === 0) replace(list, h("li", { class: "muted" }, "No notifications yet."));
    return page.next_cursor;
  };
  await pageThrough(more, slot, loadPage, "Could not load your notifications", "Could not load more");
}
