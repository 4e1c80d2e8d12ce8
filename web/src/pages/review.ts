// The reviewers' queue (REV-1..3): applications with their age in business days from the
// first submission (overdue ones marked), the suggested tier, a count, a search and a
// sort; full details, the history (replies, what each edit changed) and the decision,
// where nothing is preselected and approving a tier other than the suggested one asks
// for confirmation. Once decided, the panel shows who decided what and when.
import * as api from "../api";
import { flash, navigate, pageHeader, takeFlash, type View } from "../app";
import { modelMap } from "../catalog";
import { modelLabel } from "../components/appform";
import { applicationDetails, statusBadge, suggestedTier } from "../components/details";
import { pageThrough } from "../components/paging";
import { append, busy, field, h, replace, uid } from "../dom";
import { clearFieldErrors, noticeBanner, StatusSlot } from "../errors";
import { actionName, plural, tierName, when } from "../format";
import "../review.css";

// The parts of the API's application that api.ts does not describe yet.
export interface FieldChange {
  field: string;
  from: string | null;
  to: string | null;
}
export interface ReviewEvent extends api.HistoryEvent {
  changes?: FieldChange[] | null;
  changes_omitted?: number;
  overridden_suggestion?: string | null;
}
export type ReviewApplication = Omit<api.Application, "history"> & {
  resubmitted_at?: string | null;
  decided_by?: string | null;
  history?: ReviewEvent[];
};
interface CountedPage<T> extends api.Page<T> {
  total: number;
}

const kFilters: Array<[string, string]> = [
  ["submitted", "Awaiting a decision"],
  ["needs_info", "Waiting for the applicant"],
  ["approved", "Approved"],
  ["rejected", "Not approved"],
  ["draft", "Drafts"],
  ["", "All"],
];

const kSorts: Array<[string, string]> = [
  ["oldest", "Oldest first"],
  ["newest", "Newest first"],
];

const kDecisions = ["approve", "reject", "request_info"];

function models(app: ReviewApplication, byId: Map<string, api.GpuModel>): HTMLElement[] {
  return app.gpus.map((g) => {
    const m = g.model ? byId.get(g.model) : undefined;
    const name = g.model === "other" ? (g.model_other ?? "other") : m ? modelLabel(m) : (g.model ?? "?");
    return h("div", { class: "muted small" }, `${g.quantity ?? "?"} × ${name}`);
  });
}

function age(app: ReviewApplication): HTMLElement {
  if (app.age_business_days === null) return h("span", { class: "muted" }, "—");
  return h(
    "span",
    { class: app.overdue ? "age overdue" : "age" },
    plural(app.age_business_days, "business day"),
    app.overdue ? h("span", { class: "badge badge-warn" }, "Overdue") : null,
  );
}

// "Submitted 2 Dec, 10:00", with the latest resubmission under it.
function submittedCell(app: ReviewApplication): HTMLElement {
  return h(
    "div",
    null,
    when(app.submitted_at),
    app.resubmitted_at
      ? h("div", { class: "muted small resubmitted" }, `resubmitted ${when(app.resubmitted_at)}`)
      : null,
  );
}

// --- the history, shared with the applicant's page

const kFieldNames: Record<string, string> = {
  "contact.full_name": "Full legal name",
  "contact.email": "Email",
  "contact.company": "Company",
  model: "GPU model",
  model_other: "Model name",
  quantity: "Quantity (GPUs)",
  system_ram_gb: "System RAM (GB)",
  upload_gbps: "Upload (Gbit/s)",
  download_gbps: "Download (Gbit/s)",
  availability: "Availability",
  "location.city": "City",
  "location.country": "Country",
  "location.region": "Data-center region",
  "infrastructure.ups": "UPS",
  "infrastructure.commitment_months": "Commitment (months)",
  "infrastructure.maintenance_notes": "Maintenance notes",
};

// "gpus[1].quantity" → "GPU entry 2 · Quantity (GPUs)".
export function changeFieldName(path: string): string {
  const entry = /^gpus\[(\d+)\](?:\.(.+))?$/.exec(path);
  if (!entry) return kFieldNames[path] ?? path;
  const n = `GPU entry ${Number(entry[1]) + 1}`;
  if (!entry[2]) return n;
  return `${n} · ${kFieldNames[entry[2]] ?? entry[2]}`;
}

function changeList(e: ReviewEvent): HTMLElement | null {
  const changes = e.changes ?? [];
  if (!changes.length && !e.changes_omitted) return null;
  return h(
    "ul",
    { class: "changes", "aria-label": "Changed fields" },
    changes.map((c) =>
      h(
        "li",
        { class: "change", "data-field": c.field },
        h("span", { class: "change-field" }, changeFieldName(c.field)),
        h(
          "span",
          { class: "change-values" },
          c.from === null ? h("span", { class: "muted" }, "(empty)") : h("del", { class: "change-from" }, c.from),
          h("span", { "aria-hidden": "true" }, " → "),
          h("span", { class: "visually-hidden" }, " changed to "),
          c.to === null ? h("span", { class: "muted" }, "(empty)") : h("ins", { class: "change-to" }, c.to),
        ),
      ),
    ),
    e.changes_omitted ? h("li", { class: "change muted" }, `and ${plural(e.changes_omitted, "more field")}`) : null,
  );
}

function eventTitle(e: ReviewEvent): string {
  if (e.action === "reply") return "Replied to the reviewer";
  return actionName(e.action);
}

export function reviewHistory(events: ReviewEvent[] | undefined): HTMLElement {
  const list = events ?? [];
  return h(
    "section",
    { class: "card history", "aria-labelledby": "history-title" },
    h("h2", { id: "history-title" }, "History"),
    list.length === 0
      ? h("p", { class: "muted" }, "Nothing yet.")
      : h(
          "ol",
          { class: "timeline" },
          list.map((e) =>
            h(
              "li",
              { class: `event event-${e.action}` },
              h(
                "div",
                { class: "event-head" },
                h("strong", null, eventTitle(e)),
                e.tier ? ` as ${tierName(e.tier)}` : "",
                h("span", { class: "muted" }, ` · ${when(e.at)}${e.actor_name ? " · " + e.actor_name : ""}`),
              ),
              e.overridden_suggestion
                ? h(
                    "p",
                    { class: "override-note" },
                    `Against the suggested tier, ${tierName(e.overridden_suggestion)}.`,
                  )
                : null,
              e.message
                ? h("blockquote", { class: e.action === "reply" ? "message reply" : "message" }, e.message)
                : null,
              changeList(e),
            ),
          ),
        ),
  );
}

// --- the queue

export async function reviewQueuePage(v: View): Promise<void> {
  const status = v.query.get("status") ?? "submitted";
  const text = v.query.get("q") ?? "";
  const sortBy = v.query.get("sort") === "newest" ? "newest" : "oldest";
  // The queue's address for a filter, search and sort.
  const go = (s: string, q: string, sort: string) => {
    const params = new URLSearchParams();
    if (s !== "submitted") params.set("status", s);
    if (q.trim()) params.set("q", q.trim());
    if (sort !== "oldest") params.set("sort", sort);
    const qs = params.toString();
    navigate(qs ? `/review?${qs}` : "/review");
  };
  const filter = h(
    "select",
    { id: uid("filter") },
    kFilters.map(([value, label]) => h("option", { value }, label)),
  );
  filter.value = status;
  const sort = h(
    "select",
    { id: uid("sort"), "data-field": "sort" },
    kSorts.map(([value, label]) => h("option", { value }, label)),
  );
  sort.value = sortBy;
  const search = h("input", {
    type: "search",
    id: uid("q"),
    "data-field": "q",
    maxlength: 100,
    value: text,
    placeholder: "Name, company, email or id",
    autocomplete: "off",
  });
  const searchButton = h("button", { type: "submit", class: "btn btn-secondary" }, "Search");
  filter.addEventListener("change", () => go(filter.value, search.value, sort.value));
  sort.addEventListener("change", () => go(filter.value, search.value, sort.value));
  const toolbar = h(
    "form",
    { class: "toolbar queue-toolbar", role: "search", novalidate: true },
    h("div", { class: "field inline" }, h("label", { for: filter.id }, "Show"), filter),
    h("div", { class: "field inline queue-search" }, h("label", { for: search.id }, "Search"), search, searchButton),
    h("div", { class: "field inline" }, h("label", { for: sort.id }, "Sort"), sort),
  );
  toolbar.addEventListener("submit", (ev) => {
    ev.preventDefault();
    go(filter.value, search.value, sort.value);
  });
  const count = h("p", { class: "queue-count", "aria-live": "polite" }, "");
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
  const empty = h(
    "p",
    { class: "muted", hidden: true },
    text ? "No applications match the search." : "No applications here.",
  );
  append(
    v.main,
    pageHeader(
      "Review queue",
      "Decide within 1–3 business days of the first submission; overdue applications are marked.",
    ),
    toolbar,
    count,
    slot.el,
    h("div", { class: "table-wrap" }, table),
    empty,
    more,
  );
  const byId = await modelMap(v.signal);
  const statusText = kFilters.find(([value]) => value === status)?.[1].toLowerCase() ?? status;
  const loadPage = async (cursor: string | null) => {
    const q = new URLSearchParams({ limit: "50" });
    if (status) q.set("status", status);
    if (text) q.set("q", text);
    if (sortBy !== "oldest") q.set("sort", sortBy);
    if (cursor) q.set("cursor", cursor);
    const page = await api.get<CountedPage<ReviewApplication>>(`/provider-applications?${q}`, {
      signal: v.signal,
    });
    count.textContent =
      `${plural(page.total, "application")}` +
      (status ? ` · ${statusText}` : "") +
      (text ? ` · matching “${text}”` : "");
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
          h("td", { "data-label": "Submitted" }, submittedCell(app)),
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

// --- the decision

// "Community: not available 24/7 on every GPU entry" / "Enterprise: meets every criterion".
function suggestionWhy(app: ReviewApplication): string {
  return app.suggested_tier_reasons.length
    ? app.suggested_tier_reasons.join("; ")
    : "the application meets every Enterprise criterion";
}

function decisionForm(app: ReviewApplication, onDone: () => void): HTMLElement {
  const status = new StatusSlot();
  const name = uid("decision");
  const choice = (value: string, text: string) => {
    const input = h("input", { type: "radio", name, value, id: uid("d") });
    return { input, label: h("label", { class: "check", for: input.id }, input, text) };
  };
  const approve = choice("approve", "Approve");
  const info = choice("request_info", "Request more information");
  const reject = choice("reject", "Reject");
  const choices = [approve, info, reject];
  const chosen = () => choices.find((c) => c.input.checked)?.input.value ?? "";
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
  // Agrees with the suggestion above (whose reasons it does not repeat).
  const tierField = field("Tier", tier, {
    hint:
      app.suggested_tier === "enterprise"
        ? "Suggested: Enterprise (every Enterprise criterion is met)."
        : "Suggested: Community (for the reasons listed above).",
  });
  const confirm = h("input", { type: "checkbox", id: uid("override") });
  const overrideText = h("p", null);
  const override = h(
    "div",
    { class: "banner banner-warn override-warning", role: "note", hidden: true },
    overrideText,
    h(
      "fieldset",
      { class: "group", "data-field": "override_suggestion" },
      h("legend", null, "Against the suggestion"),
      h("label", { class: "check", for: confirm.id }, confirm, "Confirm: decide against the suggestion"),
    ),
  );
  const message = h("textarea", { rows: 4, maxlength: 4000, "data-field": "message" });
  const messageField = field("Message to the applicant (optional)", message);
  const messageLabel = messageField.querySelector("label")!;
  const submit = h("button", { type: "submit", class: "btn btn-primary" }, "Decide");
  const overriding = () => chosen() === "approve" && tier.value !== app.suggested_tier;
  const sync = () => {
    const d = chosen();
    tierField.hidden = d !== "approve";
    messageField.hidden = d === "";
    override.hidden = !overriding();
    if (!overriding()) confirm.checked = false;
    // Written only while shown: the reasons are on the page once otherwise.
    overrideText.textContent = overriding()
      ? `${tierName(tier.value)} differs from the suggested tier, ${tierName(app.suggested_tier)}: ` +
        `${suggestionWhy(app)}.` +
        (tier.value === "enterprise" ? " Enterprise offers are ranked higher and promise more to renters." : "")
      : "";
    messageLabel.textContent =
      d === "reject"
        ? "Reason for the rejection"
        : d === "request_info"
          ? "What information is needed"
          : "Message to the applicant (optional)";
    submit.textContent =
      d === "approve" ? "Approve" : d === "reject" ? "Reject" : d === "request_info" ? "Request information" : "Decide";
    submit.className = d === "reject" ? "btn btn-danger" : "btn btn-primary";
  };
  choices.forEach((c) => c.input.addEventListener("change", sync));
  tier.addEventListener("change", sync);
  sync();
  const form = h(
    "form",
    { class: "card decision", novalidate: true, "aria-labelledby": "decision-title" },
    h("h2", { id: "decision-title" }, "Decide"),
    status.el,
    group,
    tierField,
    override,
    messageField,
    h("div", { class: "actions" }, submit),
  );
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    void busy(submit, async () => {
      status.clear();
      clearFieldErrors(form);
      const d = chosen();
      // What the API would refuse anyway, said before asking it.
      const missing: Record<string, string> = {};
      if (!kDecisions.includes(d)) missing.decision = "choose approve, request more information or reject";
      if (overriding() && !confirm.checked)
        missing.override_suggestion = "must be confirmed to decide against the suggestion";
      if (Object.keys(missing).length) {
        status.formError(
          form,
          new api.ApiError(422, "validation_failed", "The decision is not complete", missing),
          "The decision was not recorded",
        );
        return;
      }
      const body: Record<string, string | boolean> = { decision: d };
      if (d === "approve") body.tier = tier.value;
      if (overriding()) body.override_suggestion = true;
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

// Who decided what, and when: for an application that is not waiting for a decision.
function outcome(app: ReviewApplication): HTMLElement {
  const decisions = (app.history ?? []).filter((e) => kDecisions.includes(e.action));
  const last = decisions[decisions.length - 1];
  const card = h(
    "section",
    { class: `card outcome outcome-${app.status}`, "aria-labelledby": "outcome-title" },
    h("h2", { id: "outcome-title" }, app.status === "draft" ? "Not submitted yet" : "Decision"),
  );
  if (app.status === "draft") {
    append(card, h("p", { class: "muted" }, "The applicant has not submitted this application yet."));
    return card;
  }
  if (!last) {
    append(card, h("p", null, statusBadge(app.status)));
    return card;
  }
  const what =
    last.action === "approve"
      ? `Approved as ${tierName(last.tier ?? app.tier ?? "")}`
      : last.action === "reject"
        ? "Rejected"
        : "More information requested";
  append(
    card,
    h("p", { class: "outcome-what" }, h("strong", null, what)),
    h("p", { class: "outcome-who muted" }, `by ${last.actor_name ?? "a reviewer no longer here"} · ${when(last.at)}`),
    last.overridden_suggestion
      ? h("p", { class: "override-note" }, `Against the suggested tier, ${tierName(last.overridden_suggestion)}.`)
      : null,
    last.message ? h("blockquote", { class: "message" }, last.message) : null,
    app.status === "needs_info"
      ? h("p", { class: "muted" }, "Waiting for the applicant to reply and resubmit; it returns to the queue then.")
      : null,
  );
  return card;
}

export async function reviewDetailPage(v: View): Promise<void> {
  const id = v.params.id;
  const [byId, app] = await Promise.all([
    modelMap(v.signal),
    api.get<ReviewApplication>(`/provider-applications/${encodeURIComponent(id)}`, { signal: v.signal }),
  ]);
  const flashed = takeFlash();
  const sub = h(
    "span",
    { class: "app-status" },
    statusBadge(app.status),
    " ",
    age(app),
    app.submitted_at ? ` · submitted ${when(app.submitted_at)}` : "",
    app.resubmitted_at ? ` · resubmitted ${when(app.resubmitted_at)}` : "",
  );
  const title = `Application from ${app.contact.full_name || app.contact.email || app.id}`;
  const header = pageHeader("", sub, h("a", { class: "btn btn-secondary", href: "#/review" }, "Back to the queue"));
  replace(header.querySelector("h1")!, title);
  append(v.main, header, flashed ? noticeBanner(flashed) : null);
  const layout = h("div", { class: "review-layout" });
  const side = h("div", { class: "side" }, suggestedTier(app as api.Application));
  if (app.status === "submitted") {
    side.appendChild(decisionForm(app, () => navigate(`/review/${app.id}`)));
  } else {
    side.appendChild(outcome(app));
  }
  append(layout, h("div", { class: "main-col" }, applicationDetails(app, byId), reviewHistory(app.history)), side);
  v.main.appendChild(layout);
}
