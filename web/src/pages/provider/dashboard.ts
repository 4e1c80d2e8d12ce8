// The Provider Dashboard (#/provider, #/provider/<tab>): the tab bar and the chosen tab.
import * as api from "../../api";
import { currentPath, pageHeader, render, type View } from "../../app";
import { append, button, h } from "../../dom";
import { errorBanner, isAbort } from "../../errors";
import { tierName } from "../../format";
import { notFoundPage } from "../notfound";
import { providerTabs } from "./tabs";

export async function providerPage(v: View): Promise<void> {
  const tabId = v.params.tab ?? providerTabs[0].id;
  const tab = providerTabs.find((t) => t.id === tabId);
  if (!tab) {
    notFoundPage(v, currentPath());
    return;
  }
  let provider: api.Provider;
  try {
    provider = await api.get<api.Provider>("/providers/me", { signal: v.signal });
  } catch (e) {
    if (e instanceof api.ApiError && (e.status === 403 || e.status === 404)) {
      append(
        v.main,
        pageHeader("Provider Dashboard"),
        h(
          "div",
          { class: "card" },
          h(
            "p",
            null,
            "You are not a provider yet. Apply to provide GPUs; once a reviewer approves you, your dashboard is here.",
          ),
          h("a", { class: "btn btn-primary", href: "#/roles" }, "Go to the Roles page"),
        ),
      );
      return;
    }
    if (isAbort(e)) throw e;
    append(
      v.main,
      pageHeader("Provider Dashboard"),
      errorBanner(e, "Could not load the Provider Dashboard"),
      h(
        "div",
        { class: "actions" },
        button("Try again", () => void render(), { kind: "primary" }),
      ),
    );
    return;
  }
  const tabs = h(
    "nav",
    { class: "tabs", "aria-label": "Provider Dashboard sections" },
    h(
      "ul",
      null,
      providerTabs.map((t) =>
        h(
          "li",
          null,
          h(
            "a",
            {
              href: `#/provider/${t.id}`,
              class: t === tab ? "tab active" : "tab",
              "aria-current": t === tab ? "page" : null,
            },
            t.label,
          ),
        ),
      ),
    ),
  );
  const panel = h("section", { class: "tab-panel", "aria-label": tab.label });
  append(v.main, pageHeader("Provider Dashboard", `${tierName(provider.tier)} provider`), tabs, panel);
  await tab.render(v, panel, provider);
}
