// Read-only views of an application: its answers, the suggested tier and its history
// with the reviewer's messages. Shared by the applicant's page and the review queue.
import type * as api from "../api";
import { type Child, h } from "../dom";
import { actionName, commitmentName, kDayNames, statusName, tierName, when } from "../format";
import { modelLabel } from "./appform";

function dl(rows: Array<[string, string | Node | null | undefined]>): HTMLDListElement {
  return h(
    "dl",
    { class: "facts" },
    rows.map(([k, v]) => [h("dt", null, k), h("dd", null, v === null || v === undefined || v === "" ? "—" : v)]),
  );
}

// Label and value rows, those without a value left out; a row's third element is its
// value's class.
export function facts(rows: Array<[string, Child, string?]>): HTMLDListElement {
  return h(
    "dl",
    { class: "facts" },
    rows
      .filter(([, value]) => value !== null && value !== undefined && value !== "")
      .map(([k, value, cls]) => [h("dt", null, k), h("dd", { class: cls ?? null }, value)]),
  );
}

function modelText(g: api.GpuEntry, models: Map<string, api.GpuModel>): Node {
  if (g.model === "other") {
    return h(
      "span",
      null,
      h("span", { class: "model-other" }, g.model_other ?? "—"),
      " ",
      h("span", { class: "badge badge-warn" }, "not in the catalog"),
    );
  }
  const m = g.model ? models.get(g.model) : undefined;
  return document.createTextNode(m ? modelLabel(m) : (g.model ?? "—"));
}

function availabilityText(a: api.Availability | null): string {
  if (!a) return "—";
  if (a.kind === "always") return "24/7";
  const windows = a.windows.map((w) => `${w.days.map((d) => kDayNames[d] ?? d).join(", ")} ${w.start}–${w.end}`);
  return `${windows.join("; ")} (${a.timezone})`;
}

function locationText(l: api.GpuEntry["location"]): string {
  if (!l) return "—";
  return [l.city, l.country, l.region].filter(Boolean).join(", ") || "—";
}

export function applicationDetails(app: api.ApplicationBody, models: Map<string, api.GpuModel>): HTMLElement {
  return h(
    "div",
    { class: "details" },
    h(
      "section",
      { class: "card" },
      h("h3", null, "Contact"),
      dl([
        ["Full legal name", h("span", { class: "contact-name" }, app.contact.full_name ?? "")],
        ["Email", app.contact.email],
        ["Company", h("span", { class: "contact-company" }, app.contact.company ?? "")],
      ]),
    ),
    app.gpus.map((g, i) =>
      h(
        "section",
        { class: "card" },
        h("h3", null, `GPU entry ${i + 1}`),
        dl([
          ["Model", modelText(g, models)],
          ["Quantity", g.quantity === null ? null : String(g.quantity)],
          ["System RAM", g.system_ram_gb === null ? null : `${g.system_ram_gb} GB`],
          ["Upload / download", `${g.upload_gbps ?? "—"} / ${g.download_gbps ?? "—"} Gbit/s`],
          ["Availability", availabilityText(g.availability)],
          ["Location", locationText(g.location)],
        ]),
      ),
    ),
    h(
      "section",
      { class: "card" },
      h("h3", null, "Infrastructure"),
      dl([
        ["UPS", app.infrastructure.ups === null ? null : app.infrastructure.ups ? "Yes" : "No"],
        ["Commitment", commitmentName(app.infrastructure.commitment_months)],
        ["Maintenance notes", h("span", { class: "notes" }, app.infrastructure.maintenance_notes ?? "")],
      ]),
    ),
  );
}

export function suggestedTier(app: api.Application): HTMLElement {
  return h(
    "div",
    { class: "tier-suggestion card" },
    h("span", null, "Suggested tier: "),
    h("strong", null, tierName(app.suggested_tier)),
    app.suggested_tier_reasons.length
      ? h(
          "ul",
          { class: "reasons" },
          app.suggested_tier_reasons.map((r) => h("li", null, r)),
        )
      : null,
  );
}

export function statusBadge(status: string): HTMLElement {
  return h("span", { class: `badge status-${status}` }, statusName(status));
}

// The latest message from a reviewer, for the applicant.
export function reviewerMessage(app: api.Application): HTMLElement | null {
  const events = (app.history ?? []).filter(
    (e) => e.message && ["request_info", "reject", "approve"].includes(e.action),
  );
  const last = events[events.length - 1];
  if (!last) return null;
  return h(
    "section",
    { class: `banner ${app.status === "needs_info" ? "banner-warn" : "banner-info"} reviewer-message`, role: "note" },
    h("h2", null, "Message from the reviewer"),
    h("blockquote", { class: "message" }, last.message ?? ""),
    h("p", { class: "muted" }, `${actionName(last.action)} · ${when(last.at)}`),
  );
}
