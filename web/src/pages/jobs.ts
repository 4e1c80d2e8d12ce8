// Jobs: a request for GPUs that the platform places on the best offer that matches, now
// or as soon as one frees up before its deadline, by renting it for the customer.
// #/jobs lists them (state, and the rental once placed with where it stands; a queued job
// can be cancelled), #/jobs/{id} shows one, #/jobs/new submits one (POST /jobs with an
// Idempotency-Key).
import * as api from "../api";
import { flash, navigate, pageHeader, takeFlash, type View } from "../app";
import { gpuModels } from "../catalog";
import { modelLabel } from "../components/appform";
import { pageThrough } from "../components/paging";
import { rentalStateBadge } from "../components/rental";
import { facts } from "../components/details";
import {
  argvList,
  IdempotentSubmit,
  parseDuration,
  showLocalErrors,
  TopUpHint,
  workloadFields,
} from "../components/workload";
import { append, busy, button, field, h, replace, uid } from "../dom";
import { clearFieldErrors, isAbort, noticeBanner, StatusSlot } from "../errors";
import { duration, when } from "../format";
import { amount, parseUsdc } from "../money";

const kPollMs = 3000;
const kPageSize = 20;

const kJobStates: Record<string, [string, string]> = {
  queued: ["Queued", "badge-warn"],
  placed: ["Placed", "badge-ok"],
  unplaceable: ["Not placed", "badge-danger"],
  cancelled: ["Cancelled", "badge-off"],
};

function jobStateBadge(state: string): HTMLElement {
  const [name, cls] = kJobStates[state] ?? [state, ""];
  return h("span", { class: `badge job-state ${cls}`, "data-state": state }, name);
}

function jobModels(j: api.Job, names: Map<string, string>): string {
  const ids = j.gpu_models?.length ? j.gpu_models : j.gpu_model ? [j.gpu_model] : [];
  return ids.map((id) => names.get(id) ?? id).join(" or ") || "Any model";
}

// Whether the job may still change: queued, or placed with its rental not ended.
function jobMoves(j: api.Job): boolean {
  return j.state === "queued" || (j.state === "placed" && !!j.rental_state && j.rental_state !== "ended");
}

// A placed job's rental as it stands: "Rental running", "Rental ended · exit code 3".
function placedRental(j: api.Job): HTMLElement | null {
  if (!j.rental_state) return null;
  const end =
    j.rental_state === "ended"
      ? j.rental_exit_code !== null && j.rental_exit_code !== undefined
        ? ` · exit code ${j.rental_exit_code}`
        : j.rental_end_reason
          ? ` · ${j.rental_end_reason.replace(/_/g, " ")}`
          : ""
      : "";
  return h("div", { class: "small job-rental" }, "Rental ", rentalStateBadge(j.rental_state), end);
}

function jobRow(j: api.Job, names: Map<string, string>, cancel: (j: api.Job, cell: HTMLElement) => void): HTMLElement {
  const action = h("td", { class: "row-action" });
  if (j.state === "queued") {
    const b = button("Cancel", () => cancel(j, action), {
      kind: "danger",
      attrs: { class: "btn btn-danger btn-small", "aria-label": `Cancel job ${j.id}`, "data-focus": `cancel-${j.id}` },
    });
    action.appendChild(b);
  }
  return h(
    "tr",
    { "data-job-id": j.id },
    h(
      "td",
      { "data-label": "Job" },
      h("a", { href: `#/jobs/${encodeURIComponent(j.id)}`, class: "job-link" }, `${jobModels(j, names)} × ${j.gpus}`),
      h("div", { class: "small muted mono" }, j.id),
    ),
    h("td", { "data-label": "Max. price", class: "num" }, amount(j.max_price_micro, { unit: "USDC/h" }), " per GPU"),
    h("td", { "data-label": "Submitted" }, when(j.created_at)),
    h(
      "td",
      { "data-label": "State" },
      jobStateBadge(j.state),
      // Why it was not placed; a placed job's rental says the rest.
      j.detail && j.state !== "placed" ? h("div", { class: "small muted job-detail" }, j.detail) : null,
      placedRental(j),
    ),
    h(
      "td",
      { "data-label": "Rental" },
      j.rental_id
        ? h(
            "a",
            {
              href: `#/rentals/${encodeURIComponent(j.rental_id)}`,
              class: "rental-link",
              "data-focus": `rental-${j.id}`,
            },
            "Open the rental",
          )
        : j.state === "queued" && j.deadline_at
          ? h("span", { class: "small muted" }, `Waits until ${when(j.deadline_at)}`)
          : "—",
    ),
    action,
  );
}

export async function jobsPage(v: View): Promise<void> {
  const slot = new StatusSlot();
  const flashText = takeFlash();
  const tbody = h("tbody");
  const table = h(
    "table",
    { class: "jobs" },
    h(
      "thead",
      null,
      h(
        "tr",
        null,
        ["Job", "Max. price", "Submitted", "State", "Rental", ""].map((x) => h("th", { scope: "col" }, x)),
      ),
    ),
    tbody,
  );
  const empty = h("p", { class: "muted", hidden: true }, "No jobs yet.");
  const more = button("More", () => {}, { attrs: { hidden: true, class: "btn btn-secondary more-btn" } });
  append(
    v.main,
    pageHeader(
      "Jobs",
      "Ask for GPUs by what you need: the platform rents the best matching offer for you, now or as soon as one is free.",
      h("a", { class: "btn btn-primary", href: "#/jobs/new" }, "Submit a job"),
    ),
    flashText ? noticeBanner(flashText) : null,
    slot.el,
    h("div", { class: "table-wrap" }, table),
    empty,
    more,
  );
  const names = new Map<string, string>();
  try {
    for (const m of await gpuModels(v.signal)) names.set(m.id, m.name);
  } catch (e) {
    if (isAbort(e)) return;
  }

  const rows = new Map<string, HTMLElement>();
  const cancel = (j: api.Job, cell: HTMLElement) => {
    const yes = button(
      "Cancel the job",
      () =>
        void busy(yes, async () => {
          try {
            const done = await api.post<api.Job>(`/jobs/${encodeURIComponent(j.id)}/cancel`);
            slot.ok(done.state === "cancelled" ? "Job cancelled." : "The job was placed before it could be cancelled.");
            show([done], false);
          } catch (e) {
            slot.error(e, "The job was not cancelled");
          }
        }),
      { kind: "danger" },
    );
    const no = button("Keep it", () => show([j], false));
    replace(cell, h("span", { class: "confirm" }, yes, no));
    yes.focus();
  };
  // The jobs shown that may still change (jobMoves), which the poll below follows.
  const moving = new Set<string>();
  const show = (items: api.Job[], atTop: boolean) => {
    const fresh: HTMLElement[] = [];
    for (const j of items) {
      if (jobMoves(j)) moving.add(j.id);
      else moving.delete(j.id);
      const row = jobRow(j, names, cancel);
      const old = rows.get(j.id);
      if (old) {
        const key = old.contains(document.activeElement)
          ? (document.activeElement as HTMLElement).dataset.focus
          : undefined;
        old.replaceWith(row);
        if (key) row.querySelector<HTMLElement>(`[data-focus="${key}"]`)?.focus({ preventScroll: true });
      } else {
        fresh.push(row);
      }
      rows.set(j.id, row);
    }
    if (atTop) tbody.prepend(...fresh);
    else tbody.append(...fresh);
    empty.hidden = rows.size > 0;
    table.hidden = rows.size === 0;
  };
  await pageThrough(
    more,
    slot,
    async (cursor) => {
      const q = new URLSearchParams({ limit: String(kPageSize) });
      if (cursor) q.set("cursor", cursor);
      const page = await api.get<api.Page<api.Job>>(`/jobs?${q}`, { signal: v.signal });
      show(page.items, false);
      return page.next_cursor;
    },
    "Could not load your jobs",
    "Could not load more jobs",
  );
  // Queued jobs are placed, or give up, and placed jobs' rentals run and end, meanwhile:
  // the first page follows them.
  v.every(kPollMs, async () => {
    if (moving.size === 0) return;
    try {
      const page = await api.get<api.Page<api.Job>>(`/jobs?limit=${kPageSize}`, { signal: v.signal });
      show(page.items, true);
    } catch {
      // the next round tries again
    }
  });
}

// Optional numeric requirement: a number, or an error; undefined when empty.
function optionalNumber(input: HTMLInputElement, errors: Record<string, string>, name: string): number | undefined {
  const t = input.value.trim().replace(",", ".");
  if (!t) return undefined;
  const n = Number(t);
  if (!Number.isFinite(n)) {
    errors[name] = "must be a number";
    return undefined;
  }
  return n;
}

// #/jobs/{id}: one job, what it asked for, and the rental it placed as it stands.
export async function jobPage(v: View): Promise<void> {
  const slot = new StatusSlot();
  const id = v.params.id;
  const body = h("div", { class: "job-page" });
  append(v.main, h("p", null, h("a", { href: "#/jobs" }, "← Jobs")), slot.el, body);
  const names = new Map<string, string>();
  try {
    for (const m of await gpuModels(v.signal)) names.set(m.id, m.name);
  } catch (e) {
    if (isAbort(e)) return;
  }
  let job: api.Job;
  const load = async () => {
    job = await api.get<api.Job>(`/jobs/${encodeURIComponent(id)}`, { signal: v.signal });
    const cancelCell = h("div", { class: "job-actions" });
    if (job.state === "queued") {
      cancelCell.append(
        button(
          "Cancel the job",
          () =>
            void api
              .post<api.Job>(`/jobs/${encodeURIComponent(id)}/cancel`)
              .then(() => load())
              .catch((e) => slot.error(e, "The job was not cancelled")),
          { kind: "danger" },
        ),
      );
    }
    const requirements = [
      job.region ? `region ${job.region}` : "",
      job.country ? `country ${job.country}` : "",
      job.min_reliability ? `reliability ≥ ${job.min_reliability}` : "",
      job.min_performance ? `performance ≥ ${job.min_performance}` : "",
      job.min_vram_gb ? `VRAM ≥ ${job.min_vram_gb} GB` : "",
    ].filter(Boolean);
    replace(
      body,
      pageHeader(`Job: ${jobModels(job, names)} × ${job.gpus}`, h("span", { class: "mono small" }, job.id), cancelCell),
      h(
        "section",
        { class: "card job-state-card", "aria-labelledby": "job-state-title" },
        h("h2", { id: "job-state-title" }, "State"),
        facts([
          ["State", jobStateBadge(job.state), "state"],
          ["Why", job.state !== "placed" ? job.detail : null, "detail"],
          ["Submitted", when(job.created_at)],
          ["Waits until", job.state === "queued" && job.deadline_at ? when(job.deadline_at) : null],
          ["Placed", job.placed_at ? when(job.placed_at) : null],
          [
            "Rental",
            job.rental_id
              ? h(
                  "span",
                  { class: "job-rental-link" },
                  h("a", { href: `#/rentals/${encodeURIComponent(job.rental_id)}` }, "Open the rental"),
                  " ",
                  placedRental(job),
                )
              : null,
            "rental",
          ],
          ["How it ended", job.rental_state === "ended" ? job.rental_detail : null, "rental-detail"],
        ]),
      ),
      h(
        "section",
        { class: "card job-ask-card", "aria-labelledby": "job-ask-title" },
        h("h2", { id: "job-ask-title" }, "What it asked for"),
        facts([
          ["GPUs", `${jobModels(job, names)} × ${job.gpus}`],
          ["Max. price", [amount(job.max_price_micro, { unit: "USDC/h" }), " per GPU"]],
          ["Requirements", requirements.join(" · ")],
          ["Image", h("code", null, job.image)],
          ["Command", job.command?.length ? argvList(job.command) : "The image's own command", "command"],
          ["Max. duration", job.max_duration_s ? duration(job.max_duration_s) : null],
          ["Max. cost", job.max_cost_micro ? amount(job.max_cost_micro) : null],
        ]),
      ),
    );
  };
  try {
    await load();
  } catch (e) {
    if (!isAbort(e)) slot.error(e, "Could not load the job");
    return;
  }
  v.every(kPollMs, async () => {
    if (!jobMoves(job)) return;
    try {
      await load();
    } catch {
      // the next round tries again
    }
  });
}

export async function newJobPage(v: View): Promise<void> {
  const slot = new StatusSlot();
  const modelBoxes = h("div", { class: "model-boxes" }, h("p", { class: "small muted" }, "Loading GPU models…"));
  const models = h(
    "fieldset",
    { class: "group", "data-field": "gpu_models" },
    h("legend", null, "GPU models"),
    h("p", { class: "hint" }, "Any of those chosen will do."),
    modelBoxes,
  );
  const gpus = h("input", { type: "number", min: 1, max: 8, step: 1, value: "1", inputmode: "numeric" });
  const maxPrice = h("input", { type: "text", inputmode: "decimal", autocomplete: "off", maxlength: 32 });
  const deadline = h("input", { type: "text", autocomplete: "off", maxlength: 32, value: "1 h" });
  const text = (hint: string, mode: "text" | "decimal" = "text") =>
    h("input", { type: "text", autocomplete: "off", inputmode: mode, maxlength: 64, placeholder: hint });
  const region = text("e.g. eu-south");
  const country = text("e.g. IT");
  const minVram = text("GB", "decimal");
  const minReliability = text("0 to 100", "decimal");
  const minPerformance = text("100 = an A100-SXM-80GB", "decimal");
  const work = workloadFields();
  // The API names "balance" when it does not cover the first hour at the maximum price.
  const balanceText = h("p", { class: "small" });
  const topUp = new TopUpHint();
  const balanceLine = h(
    "fieldset",
    { class: "balance-line", "data-field": "balance" },
    h("legend", null, "Balance"),
    balanceText,
    topUp.el,
  );
  let balance: api.Balance | null = null;
  const updateBalance = () => {
    const price = parseUsdc(maxPrice.value);
    const n = Number(gpus.value);
    const hour = price.ok && Number.isInteger(n) && n > 0 ? price.micro * n : null;
    replace(
      balanceText,
      hour !== null ? ["The first hour costs at most ", amount(hour)] : "It needs the first hour at the maximum price",
      balance ? ["; yours: ", amount(balance.balance_micro), "."] : ".",
    );
  };
  maxPrice.addEventListener("input", updateBalance);
  gpus.addEventListener("input", updateBalance);
  updateBalance();
  void api
    .get<api.Balance>("/me/balance", { signal: v.signal })
    .then((b) => {
      balance = b;
      updateBalance();
    })
    .catch(() => {}); // the line stays without it
  const submit = h("button", { type: "submit", class: "btn btn-primary" }, "Submit the job");
  const form = h(
    "form",
    { class: "card job-form", novalidate: true, "aria-label": "New job" },
    slot.el,
    models,
    h(
      "div",
      { class: "row" },
      field("GPUs", gpus, { field: "gpus", hint: "On one machine, 1 to 8" }),
      field("Max. price (USDC per GPU-hour)", maxPrice, { field: "max_price_micro", hint: "e.g. 0.50" }),
      field("Place within", deadline, {
        field: "deadline_s",
        hint: "Gives up when no offer is free by then: 1 min to 7 d",
      }),
    ),
    h(
      "details",
      { class: "more-filters" },
      h("summary", null, "More requirements"),
      h(
        "div",
        { class: "row" },
        field("Region", region, { field: "region" }),
        field("Country", country, { field: "country", hint: "Two letters" }),
        field("Min. VRAM (GB)", minVram, { field: "min_vram_gb", hint: "Per GPU" }),
        field("Min. reliability", minReliability, { field: "min_reliability" }),
        field("Min. performance", minPerformance, { field: "min_performance" }),
      ),
    ),
    balanceLine,
    h("h2", { class: "section-title" }, "Workload"),
    work.parts,
    work.limits,
    h(
      "div",
      { class: "actions form-actions" },
      submit,
      h("a", { class: "btn btn-secondary", href: "#/jobs" }, "Cancel"),
    ),
  );
  append(
    v.main,
    h("p", { class: "back" }, h("a", { href: "#/jobs" }, "← Jobs")),
    pageHeader("Submit a job", "The platform rents the best offer that matches, billed as any rental."),
    form,
  );

  const attempts = new IdempotentSubmit();
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    void busy(submit, async () => {
      slot.clear();
      clearFieldErrors(form);
      const errors: Record<string, string> = {};
      const read = work.read();
      if (!read.ok) Object.assign(errors, read.errors);
      const body: Record<string, unknown> = {
        gpu_models: [...modelBoxes.querySelectorAll<HTMLInputElement>("input:checked")].map((b) => b.value),
        gpus: Number(gpus.value),
      };
      if (!Number.isInteger(body.gpus)) errors.gpus = "must be a whole number";
      const price = parseUsdc(maxPrice.value);
      if (!maxPrice.value.trim()) errors.max_price_micro = "is required: the most you pay per GPU-hour";
      else if (!price.ok) errors.max_price_micro = price.error;
      else body.max_price_micro = price.micro;
      if (deadline.value.trim()) {
        const d = parseDuration(deadline.value);
        if (!d.ok) errors.deadline_s = d.error;
        else body.deadline_s = d.seconds;
      }
      if (region.value.trim()) body.region = region.value.trim();
      if (country.value.trim()) body.country = country.value.trim().toUpperCase();
      const numbers: Array<[HTMLInputElement, string]> = [
        [minVram, "min_vram_gb"],
        [minReliability, "min_reliability"],
        [minPerformance, "min_performance"],
      ];
      for (const [input, name] of numbers) {
        const n = optionalNumber(input, errors, name);
        if (n !== undefined) body[name] = n;
      }
      if (Object.keys(errors).length || !read.ok) {
        if (
          Object.keys(errors).some((k) =>
            ["region", "country", "min_vram_gb", "min_reliability", "min_performance"].includes(k),
          )
        ) {
          form.querySelector("details")!.open = true;
        }
        showLocalErrors(slot, form, errors, "The job was not submitted");
        return;
      }
      Object.assign(body, read.body);
      const key = attempts.keyFor(body);
      let job: api.Job;
      try {
        job = await api.post<api.Job>("/jobs", body, { headers: { "Idempotency-Key": key } });
        attempts.settled(null);
      } catch (e) {
        attempts.settled(e);
        if (
          e instanceof api.ApiError &&
          Object.keys(e.fields).some((k) =>
            ["region", "country", "min_vram_gb", "min_reliability", "min_performance"].includes(k),
          )
        ) {
          form.querySelector("details")!.open = true;
        }
        slot.formError(form, e, "The job was not submitted", "The job was not submitted");
        topUp.after(e);
        return;
      }
      flash(
        job.state === "placed"
          ? "Job submitted and placed: its rental has started."
          : job.state === "queued"
            ? `Job submitted: it waits for a matching offer${job.deadline_at ? ` until ${when(job.deadline_at)}` : ""}.`
            : `Job submitted: ${job.detail ?? job.state}.`,
      );
      navigate("/jobs");
    });
  });

  try {
    const list = await gpuModels(v.signal);
    replace(
      modelBoxes,
      list
        .filter((m) => m.id !== "other")
        .map((m) => {
          const box = h("input", { type: "checkbox", value: m.id, id: uid("cb") });
          return h("label", { class: "check", for: box.id }, box, modelLabel(m));
        }),
    );
  } catch (e) {
    if (isAbort(e)) return;
    replace(
      modelBoxes,
      h("p", { class: "small warn" }, "The GPU models could not be loaded: reload the page to choose."),
    );
  }
}
