// The Roles page (ACC-3): the user's roles and "Apply to provide GPUs".
import * as api from "../api";
import { hasRole, pageHeader, refreshMe, session, type View } from "../app";
import { append, h } from "../dom";
import { errorBanner } from "../errors";
import { statusName, tierName, when } from "../format";

const kRoleText: Record<api.Role, { name: string; text: string }> = {
  customer: { name: "Customer", text: "Rent GPUs from providers in the marketplace." },
  provider: { name: "Provider", text: "Offer your NVIDIA GPUs and earn from every hour they are rented." },
  admin: { name: "Reviewer / admin", text: "Review provider applications and run the platform." },
};

function linkButton(href: string, text: string, kind = "primary"): HTMLAnchorElement {
  return h("a", { class: `btn btn-${kind}`, href }, text);
}

// The newest of the user's own applications, or null: only the user's own are asked for
// (an admin's list would otherwise hold everybody's).
export async function latestApplication(signal: AbortSignal): Promise<api.Application | null> {
  const page = await api.get<api.Page<api.Application>>("/provider-applications?mine=true&sort=newest&limit=1", {
    signal,
  });
  return page.items[0] ?? null;
}

export async function rolesPage(v: View): Promise<void> {
  const user = (await refreshMe(v.signal)) ?? session.user!;
  const roles = h(
    "ul",
    { class: "role-list" },
    user.roles.map((r) =>
      h(
        "li",
        { class: "card role" },
        h("h3", null, kRoleText[r]?.name ?? r),
        h("p", null, kRoleText[r]?.text ?? ""),
        r === "customer"
          ? h(
              "div",
              { class: "actions" },
              linkButton("#/marketplace", "Browse the marketplace", "secondary"),
              linkButton("#/rentals", "Your rentals", "secondary"),
            )
          : null,
        r === "provider" ? linkButton("#/provider", "Open the Provider Dashboard", "secondary") : null,
        r === "admin" ? linkButton("#/review", "Open the review queue", "secondary") : null,
      ),
    ),
  );
  const provide = h(
    "section",
    { class: "card", "aria-labelledby": "provide-title" },
    h("h2", { id: "provide-title" }, "Provide GPUs"),
  );
  append(v.main, pageHeader("Your roles", `Signed in as ${user.email}`), roles, provide);

  if (hasRole("provider")) {
    let tier = "";
    try {
      tier = tierName((await api.get<api.Provider>("/providers/me", { signal: v.signal })).tier);
    } catch (e) {
      append(provide, errorBanner(e, "Could not load your provider record"));
    }
    append(
      provide,
      h("p", null, `You are an approved ${tier ? tier + " " : ""}provider.`),
      h("div", { class: "actions" }, linkButton("#/provider", "Go to the Provider Dashboard")),
    );
    return;
  }
  let app: api.Application | null;
  try {
    app = await latestApplication(v.signal);
  } catch (e) {
    append(provide, errorBanner(e, "Could not load your application"));
    return;
  }
  const apply = linkButton("#/apply", "Apply to provide GPUs");
  if (!app) {
    append(
      provide,
      h(
        "p",
        null,
        "Contribute NVIDIA GPUs from your own machines. Tell us about your hardware, connection and " +
          "availability; a reviewer answers within 1–3 business days.",
      ),
      h("div", { class: "actions" }, apply),
    );
    return;
  }
  const open = h("a", { class: "btn btn-primary", href: `#/applications/${encodeURIComponent(app.id)}` }, "");
  const line = h("p", null);
  switch (app.status) {
    case "draft":
      line.textContent = `You have a draft application (last saved ${when(app.updated_at)}).`;
      open.textContent = "Continue your application";
      break;
    case "submitted":
      line.textContent = `Your application was submitted ${when(app.submitted_at)} and is in review.`;
      open.textContent = "View your application";
      break;
    case "needs_info":
      line.textContent = "The reviewer needs more information about your application.";
      open.textContent = "Edit and resubmit";
      break;
    case "approved":
      line.textContent = "Your application is approved.";
      open.textContent = "View your application";
      break;
    case "rejected":
      line.textContent = "Your last application was not approved. You can apply again.";
      open.textContent = "View the decision";
      open.className = "btn btn-secondary";
      break;
  }
  append(
    provide,
    h("p", null, h("span", { class: `badge status-${app.status}` }, statusName(app.status))),
    line,
    h("div", { class: "actions" }, open, app.status === "rejected" ? apply : null),
  );
}
