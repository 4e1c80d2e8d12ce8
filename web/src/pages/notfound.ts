// The page for an address the dashboard does not know (#/nowhere, #/provider/nonsense):
// says so, with the address, and links to where the reader can go.
import { pageHeader, session, type View } from "../app";
import { append, h } from "../dom";

export function notFoundPage(v: View, path: string): void {
  document.title = "Page not found · gpunex";
  append(
    v.main,
    pageHeader("Page not found"),
    h(
      "div",
      { class: "card not-found" },
      h("p", null, "There is no page at ", h("code", null, "#" + path), ". The link may be mistyped or out of date."),
      h(
        "div",
        { class: "actions" },
        session.user
          ? h("a", { class: "btn btn-primary", href: "#/roles" }, "Go to your roles")
          : h("a", { class: "btn btn-primary", href: "#/" }, "Go to the home page"),
        h("a", { class: "btn btn-secondary", href: "#/marketplace" }, "Browse the marketplace"),
      ),
    ),
  );
}
