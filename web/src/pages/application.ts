// The provider application: a new one (#/apply) and one that exists
// (#/applications/ID): editable as a draft or when the reviewer asked for more
// information (with a reply to the reviewer, sent with the resubmission), otherwise its
// answers, status and history.
import * as api from "../api";
import { flash, navigate, pageHeader, session, takeFlash, type View } from "../app";
import { gpuModels } from "../catalog";
import { ApplicationForm, emptyEntry } from "../components/appform";
import { applicationDetails, reviewerMessage, statusBadge, suggestedTier } from "../components/details";
import { append, busy, field, h } from "../dom";
import { clearFieldErrors, noticeBanner, StatusSlot } from "../errors";
import { when } from "../format";
import { reviewHistory, type ReviewApplication } from "./review";
import { latestApplication } from "./roles";

function bodyOf(app: api.ApplicationBody): api.ApplicationBody {
  return { contact: app.contact, gpus: app.gpus, infrastructure: app.infrastructure };
}

function blankBody(): api.ApplicationBody {
  return {
    contact: { full_name: session.user?.name ?? "", email: session.user?.email ?? "", company: null },
    gpus: [emptyEntry()],
    infrastructure: { ups: false, commitment_months: null, maintenance_notes: null },
  };
}

// Runs a save/submit request and shows what went wrong: field errors next to their
// inputs (with a summary at the top), anything else as a banner. The work's result on
// success, null on failure.
async function attempt<T>(
  form: ApplicationForm,
  status: StatusSlot,
  what: string,
  work: () => Promise<T>,
): Promise<{ value: T } | null> {
  status.clear();
  clearFieldErrors(form.el);
  try {
    return { value: await work() };
  } catch (e) {
    status.formError(form.el, e, what, what);
    status.el.scrollIntoView({ block: "nearest" });
    return null;
  }
}

export async function applyPage(v: View): Promise<void> {
  const [models, latest] = await Promise.all([gpuModels(v.signal), latestApplication(v.signal)]);
  if (latest && latest.status !== "rejected") {
    navigate(`/applications/${latest.id}`);
    return;
  }
  const status = new StatusSlot();
  const save = h("button", { type: "button", class: "btn btn-secondary" }, "Save as draft");
  const submit = h("button", { type: "submit", class: "btn btn-primary" }, "Submit application");
  const form = new ApplicationForm(
    models,
    latest ? bodyOf(latest) : blankBody(),
    status.el,
    h("div", { class: "actions form-actions" }, save, submit),
  );
  save.addEventListener(
    "click",
    () =>
      void busy(save, async () => {
        const created = await attempt(form, status, "The draft was not saved", () =>
          api.post<api.Application>("/provider-applications", form.value()),
        );
        if (created) {
          flash("Draft saved. You can come back to it at any time.");
          navigate(`/applications/${created.value.id}`);
        }
      }),
  );
  form.el.addEventListener("submit", (ev) => {
    ev.preventDefault();
    void busy(submit, async () => {
      const created = await attempt(form, status, "The application was not submitted", () =>
        api.post<api.Application>("/provider-applications", { ...form.value(), submit: true }),
      );
      if (created) {
        flash("Application submitted. A reviewer will answer within 1–3 business days.");
        navigate(`/applications/${created.value.id}`);
      }
    });
  });
  append(
    v.main,
    pageHeader(
      "Apply to provide GPUs",
      latest
        ? "Your previous application was not approved; its answers are filled in below."
        : "Tell us about you and your GPUs.",
    ),
    form.el,
  );
}

export async function applicationPage(v: View): Promise<void> {
  const id = v.params.id;
  const [models, app] = await Promise.all([
    gpuModels(v.signal),
    api.get<ReviewApplication>(`/provider-applications/${encodeURIComponent(id)}`, { signal: v.signal }),
  ]);
  const mine = app.user_id === session.user?.id;
  const editable = mine && (app.status === "draft" || app.status === "needs_info");
  const flashed = takeFlash();
  const sub = h(
    "span",
    { class: "app-status" },
    statusBadge(app.status),
    app.submitted_at ? ` Submitted ${when(app.submitted_at)}` : ` Created ${when(app.created_at)}`,
    app.resubmitted_at ? ` · resubmitted ${when(app.resubmitted_at)}` : "",
    app.decided_at ? ` · decided ${when(app.decided_at)}` : "",
  );
  append(
    v.main,
    pageHeader(mine ? "Your provider application" : "Provider application", sub),
    flashed ? noticeBanner(flashed) : null,
    reviewerMessage(app),
  );
  if (app.status === "approved" && mine) {
    append(
      v.main,
      h(
        "div",
        { class: "banner banner-ok" },
        h(
          "p",
          null,
          "You are a provider. Your agent token and the install command were emailed to you; you can create more tokens in the Provider Dashboard.",
        ),
        h("a", { class: "btn btn-primary", href: "#/provider" }, "Open the Provider Dashboard"),
      ),
    );
  }
  if (app.status === "rejected" && mine) {
    append(
      v.main,
      h("div", { class: "actions" }, h("a", { class: "btn btn-primary", href: "#/apply" }, "Apply again")),
    );
  }
  if (!mine && session.user?.roles.includes("admin")) {
    append(
      v.main,
      h("p", null, h("a", { href: `#/review/${encodeURIComponent(app.id)}` }, "Open in the review queue")),
    );
  }

  if (editable) {
    const status = new StatusSlot();
    const resubmit = app.status === "needs_info";
    const save = h("button", { type: "button", class: "btn btn-secondary" }, resubmit ? "Save changes" : "Save draft");
    const submit = h(
      "button",
      { type: "submit", class: "btn btn-primary" },
      resubmit ? "Resubmit application" : "Submit application",
    );
    // The answer to the reviewer's request, sent with the resubmission: its own entry in
    // the history.
    const reply = h("textarea", { rows: 4, maxlength: 4000, "data-field": "reply" });
    const replyField = resubmit
      ? h(
          "fieldset",
          { class: "reply-box" },
          h("legend", null, "Reply to the reviewer"),
          field("Your reply to the reviewer (optional)", reply, {
            className: "reply-field",
            hint: "Sent with the resubmission and shown to the reviewer in the history.",
          }),
        )
      : null;
    const form = new ApplicationForm(
      models,
      bodyOf(app),
      status.el,
      h("div", null, replyField, h("div", { class: "actions form-actions" }, save, submit)),
    );
    const path = `/provider-applications/${encodeURIComponent(app.id)}`;
    save.addEventListener(
      "click",
      () =>
        void busy(save, async () => {
          const ok = await attempt(form, status, "Your changes were not saved", () => api.put(path, form.value()));
          if (ok) status.ok(`Saved ${when(new Date().toISOString())}.`);
        }),
    );
    form.el.addEventListener("submit", (ev) => {
      ev.preventDefault();
      void busy(submit, async () => {
        const ok = await attempt(
          form,
          status,
          `The application was not ${resubmit ? "resubmitted" : "submitted"}`,
          async () => {
            await api.put(path, form.value());
            await api.post(`${path}/submit`, resubmit && reply.value.trim() ? { reply: reply.value } : undefined);
          },
        );
        if (ok) {
          flash(
            resubmit
              ? "Application resubmitted: it is back in review."
              : "Application submitted. A reviewer will answer within 1–3 business days.",
          );
          navigate(`/applications/${app.id}`);
        }
      });
    });
    append(
      v.main,
      resubmit
        ? h("p", null, "Edit your answers below, reply to the reviewer if you like, then resubmit the application.")
        : null,
      form.el,
      reviewHistory(app.history),
    );
    return;
  }

  const byId = new Map(models.map((m) => [m.id, m]));
  append(
    v.main,
    h(
      "section",
      { "aria-labelledby": "answers-title" },
      h("h2", { id: "answers-title" }, mine ? "Your answers" : "Answers"),
      suggestedTier(app),
      applicationDetails(app, byId),
    ),
    reviewHistory(app.history),
  );
}
