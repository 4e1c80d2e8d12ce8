// The reviewers' queue (REV-1..3): applications with their age in business days (overdue
// ones marked), the suggested tier, full details, and the decision.
import * as api from "../api";
import { flash, navigate, pageHeader, takeFlash, type View } from "../app";
import { modelMap } from "../catalog";
import { modelLabel } from "../components/appform";
import { applicationDetails, history, statusBadge, suggestedTier } from "../components/details";
import { pageThrough } from "../components/paging";
import { append, busy, field, h, replace, uid } from "../dom";
import { clearFieldErrors, noticeBanner, StatusSlot } from "../errors";
import { plural, tierName, when } from "../format";

const kFilters: Array<[string, string]> = [
  ["submitted", "Awaiting a decision"],
  ["needs_info", "Waiting for the applicant"],
  ["approved", "Approved"],
  ["rejected", "Not approved"],
  ["draft", "Drafts"],
  ["", "All"],
];

function models(app: api.Application, byId: Map<string, api.GpuModel>): HTMLElement[] {
  return app.gpus.map((g) => {
    const m = g.model ? byId.get(g.model) : undefined;
    const name = g.model === "other" ? (g.model_other ?? "other") : m ? modelLabel(m) : (g.model ?? "?");
    return h("div", { class: "muted small" }, `${g.quantity ?? "?"} × ${name}`);
  });
}

function age(app: api.Application): HTMLElement {
  if (app.age_business_days === null) return h("span", { class: "muted" }, "—");
  return h(
    "span",
    { class: app.overdue ? "age overdue" : "age" },
    plural(app.age_business_days, "business day"),
    app.overdue ? h("span", { class: "badge badge-danger" }, "Overdue") : null,
  );
}

export async function reviewQueuePage(v: View): Promise<void> {
  const status = v.query.get("status") ?? "submitted";
  const filter = h(
    "select",
    { id: uid("filter") },
    kFilters.map(([value, text]) => h("option", { value }, text)),
  );
  filter.value = status;
  filter.addEventListener("change", () =>
    navigate(filter.value === "submitted" ? "/review" : `/review?status=${filter.value}`),
  );
  const tbody = h("tbody");
  const table = h(
    "table",
    { class: "queue" },
    h("caption", { class: "visually-hidden" }, "Provider applications"),
    h(
      "thead",
      null,
      h(
        "tr",
        null,
        ["Applicant", "GPUs", "Status", "Submitted", "Age", "Suggested tier", ""].map((t) =>
          h("th", { scope: "col" }, t),
        ),
      ),
    ),
    tbody,
  );
  const more = h("button", { type: "button", class: "btn btn-secondary", hidden: true }, "Load more");
  const slot = new StatusSlot();
  const empty = h("p", { class: "muted", hidden: true }, "No applications here.");
  append(
    v.main,
    pageHeader("Review queue", "Decide within 1–3 business days; overdue applications are marked."),
    h("div", { class: "toolbar" }, h("div", { class: "field inline" }, h("label", { for: filter.id }, "Show"), filter)),
    slot.el,
    h("div", { class: "table-wrap" }, table),
    empty,
    more,
  );
  const byId = await modelMap(v.signal);
  const loadPage = async (cursor: string | null) => {
    const q = new URLSearchParams({ limit: "50" });
    if (status) q.set("status", status);
    if (cursor) q.set("cursor", cursor);
    const page = await api.get<api.Page<api.Application>>(`/provider-applications?${q}`, { signal: v.signal });
    for (const app of page.items) {
      const link = h(
        "a",
        { class: "btn btn-primary btn-small", href: `#/review/${encodeURIComponent(app.id)}` },
        "Review",
      );
      link.setAttribute(
        "aria-label",
        `Review the application of ${app.contact.full_name || app.contact.email || app.id}`,
      );
      tbody.appendChild(
        h(
          "tr",
          { class: app.overdue ? "overdue" : null, "data-id": app.id },
          h(
            "td",
            { "data-label": "Applicant" },
            h("div", { class: "applicant-name" }, app.contact.full_name || "(no name yet)"),
            app.contact.company ? h("div", { class: "muted applicant-company" }, app.contact.company) : null,
            h("div", { class: "muted small" }, app.contact.email ?? ""),
          ),
          h(
            "td",
            { "data-label": "GPUs" },
            h("div", null, String(app.total_gpus)),
            models(app, byId),
            app.has_unlisted_models ? h("span", { class: "badge badge-warn" }, "unlisted model") : null,
          ),
          h("td", { "data-label": "Status" }, statusBadge(app.status)),
          h("td", { "data-label": "Submitted" }, when(app.submitted_at)),
          h("td", { "data-label": "Age" }, age(app)),
          h("td", { "data-label": "Suggested tier" }, tierName(app.suggested_tier)),
          h("td", { class: "row-action" }, link),
        ),
      );
    }
    empty.hidden = tbody.childElementCount > 0;
    table.hidden = tbody.childElementCount === 0;
    return page.next_cursor;
  };
  await pageThrough(more, slot, loadPage, "Could not load the queue", "Could not load more applications");
}

function decisionForm(app: api.Application, onDone: () => void): HTMLElement {
  const status = new StatusSlot();
  const name = uid("decision");
  const choice = (value: string, text: string, checked = false) => {
    const input = h("input", { type: "radio", name, value, id: uid("d"), checked });
    return { input, label: h("label", { class: "check", for: input.id }, input, text) };
  };
  const approve = choice("approve", "Approve", true);
  const info = choice("request_info", "Request more information");
  const reject = choice("reject", "Reject");
  const group = h(
    "fieldset",
    { class: "group", "data-field": "decision" },
    h("legend", null, "Decision"),
    h("div", { class: "choices" }, approve.label, info.label, reject.label),
  );
  const tier = h(
    "select",
    { "data-field": "tier" },
    h("option", { value: "community" }, "Community"),
    h("option", { value: "enterprise" }, "Enterprise"),
  );
  tier.value = app.suggested_tier;
  const tierField = field("Tier", tier, {
    hint: `Suggested: ${tierName(app.suggested_tier)}. Enterprise requires a UPS.`,
  });
  const message = h("textarea", { rows: 4, maxlength: 4000, "data-field": "message" });
  const messageField = field("Message to the applicant (optional)", message);
  const messageLabel = messageField.querySelector("label")!;
  const submit = h("button", { type: "submit", class: "btn btn-primary" }, "Approve");
  const sync = () => {
    const d = [approve, info, reject].find((c) => c.input.checked)!.input.value;
    tierField.hidden = d !== "approve";
    messageLabel.textContent =
      d === "approve"
        ? "Message to the applicant (optional)"
        : d === "reject"
          ? "Reason for the rejection"
          : "What information is needed";
    submit.textContent = d === "approve" ? "Approve" : d === "reject" ? "Reject" : "Request information";
    submit.className = d === "reject" ? "btn btn-danger" : "btn btn-primary";
  };
  [approve, info, reject].forEach((c) => c.input.addEventListener("change", sync));
  sync();
  const form = h(
    "form",
    { class: "card decision", novalidate: true, "aria-labelledby": "decision-title" },
    h("h2", { id: "decision-title" }, "Decide"),
    status.el,
    group,
    tierField,
    messageField,
    h("div", { class: "actions" }, submit),
  );
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    void busy(submit, async () => {
      status.clear();
      clearFieldErrors(form);
      const d = [approve, info, reject].find((c) => c.input.checked)!.input.value;
      const body: Record<string, string> = { decision: d };
      if (d === "approve") body.tier = tier.value;
      if (message.value.trim()) body.message = message.value;
      try {
        await api.post(`/provider-applications/${encodeURIComponent(app.id)}/decision`, body);
      } catch (e) {
        status.formError(form, e, "The decision was not recorded");
        return;
      }
      flash(
        d === "approve"
          ? `Approved as ${tierName(tier.value)}. The applicant gets an email with the agent token.`
          : d === "reject"
            ? "Rejected. The applicant was told the reason."
            : "Information requested. The application waits for the applicant.",
      );
      onDone();
    });
  });
  return form;
}

export async function reviewDetailPage(v: View): Promise<void> {
  const id = v.params.id;
  const [byId, app] = await Promise.all([
    modelMap(v.signal),
    api.get<api.Application>(`/provider-applications/${encodeURIComponent(id)}`, { signal: v.signal }),
  ]);
  const flashed = takeFlash();
  const sub = h(
    "span",
    { class: "app-status" },
    statusBadge(app.status),
    " ",
    age(app),
    app.submitted_at ? ` · submitted ${when(app.submitted_at)}` : "",
  );
  const title = `Application from ${app.contact.full_name || app.contact.email || app.id}`;
  const header = pageHeader("", sub, h("a", { class: "btn btn-secondary", href: "#/review" }, "Back to the queue"));
  replace(header.querySelector("h1")!, title);
  append(v.main, header, flashed ? noticeBanner(flashed) : null);
  const layout = h("div", { class: "review-layout" });
  const side = h("div", { class: "side" }, suggestedTier(app));
  if (app.status === "submitted") {
    side.appendChild(decisionForm(app, () => navigate(`/review/${app.id}`)));
  } else {
    side.appendChild(h("p", { class: "card muted" }, "Only submitted applications can be decided."));
  }
  append(layout, h("div", { class: "main-col" }, applicationDetails(app, byId), history(app.history)), side);
  v.main.appendChild(layout);
}
