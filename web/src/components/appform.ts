// The provider application form (APP-1..3): contact, GPU entries that can be added and
// removed, infrastructure. Inputs carry the API's field paths in data-field
// ("gpus[1].location.country") so that the API's field errors land next to them.
import * as api from "../api";
import { countries } from "../countries";
import { append, button, field, h, uid } from "../dom";
import { unreadableNumbers } from "../errors";
import { ScheduleEditor } from "./schedule";

function text(
  value: string | null | undefined,
  attrs: Record<string, string | number | boolean> = {},
): HTMLInputElement {
  return h("input", { type: "text", value: value ?? "", ...attrs });
}

function num(value: number | null | undefined, attrs: Record<string, string | number | boolean>): HTMLInputElement {
  return h("input", { type: "number", value: value === null || value === undefined ? "" : String(value), ...attrs });
}

function strOrNull(input: HTMLInputElement | HTMLTextAreaElement): string | null {
  const v = input.value.trim();
  return v === "" ? null : v;
}

function numOrNull(input: HTMLInputElement): number | null {
  const v = input.value.trim();
  if (v === "") return null;
  const n = Number(v);
  return Number.isFinite(n) ? n : null;
}

export function modelLabel(m: api.GpuModel): string {
  return `${m.name} (${m.vram_gb} GB)`;
}

class GpuEntryEditor {
  readonly el: HTMLFieldSetElement;
  private readonly legend = h("legend", null, "");
  private readonly model: HTMLSelectElement;
  private readonly modelOther: HTMLInputElement;
  private readonly otherField: HTMLDivElement;
  private readonly quantity: HTMLInputElement;
  private readonly ram: HTMLInputElement;
  private readonly up: HTMLInputElement;
  private readonly down: HTMLInputElement;
  private readonly availGroup: HTMLFieldSetElement;
  private readonly always: HTMLInputElement;
  private readonly scheduled: HTMLInputElement;
  private readonly schedule: ScheduleEditor;
  private readonly locGroup: HTMLFieldSetElement;
  private readonly city: HTMLInputElement;
  private readonly country: HTMLSelectElement;
  private readonly region: HTMLInputElement;
  private readonly removeBtn: HTMLButtonElement;

  constructor(models: api.GpuModel[], g: api.GpuEntry, onRemove: (e: GpuEntryEditor) => void) {
    const known = new Set(models.map((m) => m.id));
    this.model = h(
      "select",
      { required: true },
      h("option", { value: "" }, "Choose a GPU model…"),
      models.map((m) => h("option", { value: m.id }, modelLabel(m))),
      g.model && g.model !== "other" && !known.has(g.model) ? h("option", { value: g.model }, g.model) : null,
      h("option", { value: "other" }, "Other (not in the catalog)"),
    );
    this.model.value = g.model ?? "";
    this.modelOther = text(g.model_other, { maxlength: 100, autocomplete: "off" });
    this.otherField = field("Model name", this.modelOther, {
      hint: "Models outside the catalog are reviewed case by case.",
    });
    this.model.addEventListener("change", () => this.syncOther());

    this.quantity = num(g.quantity, { min: 1, max: 1024, step: 1, inputmode: "numeric" });
    this.ram = num(g.system_ram_gb, { min: 1, max: 65536, step: 1, inputmode: "numeric" });
    this.up = num(g.upload_gbps, { min: 0, max: 800, step: "any", inputmode: "decimal" });
    this.down = num(g.download_gbps, { min: 0, max: 800, step: "any", inputmode: "decimal" });

    const radioName = uid("avail");
    const isSchedule = g.availability?.kind === "schedule";
    this.always = h("input", { type: "radio", name: radioName, value: "always", checked: !isSchedule, id: uid("r") });
    this.scheduled = h("input", {
      type: "radio",
      name: radioName,
      value: "schedule",
      checked: isSchedule,
      id: uid("r"),
    });
    this.schedule = new ScheduleEditor(g.availability?.kind === "schedule" ? g.availability : null);
    this.always.addEventListener("change", () => this.syncSchedule());
    this.scheduled.addEventListener("change", () => this.syncSchedule());
    this.availGroup = h(
      "fieldset",
      { class: "group" },
      h("legend", null, "Availability"),
      h(
        "div",
        { class: "choices" },
        h("label", { class: "check", for: this.always.id }, this.always, "24/7"),
        h("label", { class: "check", for: this.scheduled.id }, this.scheduled, "Weekly schedule"),
      ),
      this.schedule.el,
    );

    this.city = text(g.location?.city, { maxlength: 100, autocomplete: "address-level2" });
    // A picker by name: a code typed by hand was cut to two letters ("Germany" became
    // "GE", Georgia). A saved code that is no country stays, to be replaced.
    const saved = g.location?.country ?? "";
    const listed = countries();
    this.country = h(
      "select",
      { autocomplete: "country" },
      h("option", { value: "" }, "Choose a country"),
      saved && !listed.some((c) => c.code === saved)
        ? h("option", { value: saved }, `${saved} (not a country code)`)
        : null,
      listed.map((c) => h("option", { value: c.code }, `${c.name} (${c.code})`)),
    );
    this.country.value = saved;
    this.region = text(g.location?.region, { maxlength: 64, autocomplete: "off" });
    this.locGroup = h(
      "fieldset",
      { class: "group" },
      h("legend", null, "Location of the machines"),
      h(
        "div",
        { class: "row" },
        field("City", this.city),
        field("Country", this.country),
        field("Data-center region (optional)", this.region, { hint: "e.g. eu-south" }),
      ),
    );

    this.removeBtn = button("Remove this entry", () => onRemove(this), { kind: "danger" });
    this.el = h(
      "fieldset",
      { class: "gpu-entry card" },
      this.legend,
      h("div", { class: "row" }, field("GPU model", this.model), this.otherField),
      h(
        "div",
        { class: "row numbers" },
        field("Quantity (GPUs)", this.quantity),
        field("System RAM (GB)", this.ram, { hint: "Host memory of the machine." }),
        field("Upload (Gbit/s)", this.up),
        field("Download (Gbit/s)", this.down),
      ),
      this.availGroup,
      this.locGroup,
      h("div", { class: "actions end" }, this.removeBtn),
    );
    this.syncOther();
    this.syncSchedule();
  }

  private syncOther(): void {
    this.otherField.hidden = this.model.value !== "other";
  }

  private syncSchedule(): void {
    this.schedule.el.hidden = !this.scheduled.checked;
  }

  renumber(index: number, total: number): void {
    const p = `gpus[${index}]`;
    this.legend.textContent = `GPU entry ${index + 1}`;
    this.el.dataset.field = p;
    this.model.dataset.field = `${p}.model`;
    this.modelOther.dataset.field = `${p}.model_other`;
    this.quantity.dataset.field = `${p}.quantity`;
    this.ram.dataset.field = `${p}.system_ram_gb`;
    this.up.dataset.field = `${p}.upload_gbps`;
    this.down.dataset.field = `${p}.download_gbps`;
    this.availGroup.dataset.field = `${p}.availability`;
    this.schedule.renumber(`${p}.availability`);
    this.locGroup.dataset.field = `${p}.location`;
    this.city.dataset.field = `${p}.location.city`;
    this.country.dataset.field = `${p}.location.country`;
    this.region.dataset.field = `${p}.location.region`;
    this.removeBtn.hidden = total <= 1;
    this.removeBtn.setAttribute("aria-label", `Remove GPU entry ${index + 1}`);
  }

  focus(): void {
    this.model.focus();
  }

  value(): api.GpuEntry {
    const model = this.model.value || null;
    return {
      model,
      model_other: model === "other" ? strOrNull(this.modelOther) : null,
      quantity: numOrNull(this.quantity),
      system_ram_gb: numOrNull(this.ram),
      upload_gbps: numOrNull(this.up),
      download_gbps: numOrNull(this.down),
      availability: this.scheduled.checked ? this.schedule.value() : { kind: "always" },
      location: {
        city: strOrNull(this.city),
        country: this.country.value || null,
        region: strOrNull(this.region)?.toLowerCase() ?? null,
      },
    };
  }
}

export function emptyEntry(): api.GpuEntry {
  return {
    model: null,
    model_other: null,
    quantity: 1,
    system_ram_gb: null,
    upload_gbps: null,
    download_gbps: null,
    availability: { kind: "always" },
    location: null,
  };
}

export class ApplicationForm {
  readonly el: HTMLFormElement;
  private readonly fullName: HTMLInputElement;
  private readonly email: HTMLInputElement;
  private readonly company: HTMLInputElement;
  private readonly entriesEl: HTMLDivElement;
  private entries: GpuEntryEditor[] = [];
  private readonly ups: HTMLInputElement;
  private readonly commitment: HTMLSelectElement;
  private readonly notes: HTMLTextAreaElement;

  // `actions` go at the end of the form (save, submit).
  constructor(
    private readonly models: api.GpuModel[],
    body: api.ApplicationBody,
    top: Node,
    actions: Node,
  ) {
    this.fullName = text(body.contact.full_name, {
      maxlength: 200,
      autocomplete: "name",
      "data-field": "contact.full_name",
    });
    this.email = h("input", {
      type: "email",
      value: body.contact.email ?? "",
      maxlength: 254,
      autocomplete: "email",
      "data-field": "contact.email",
    });
    this.company = text(body.contact.company, {
      maxlength: 200,
      autocomplete: "organization",
      "data-field": "contact.company",
    });
    this.entriesEl = h("div", { class: "entries", "data-field": "gpus" });
    const gpus = body.gpus.length ? body.gpus : [emptyEntry()];
    for (const g of gpus) this.addEntry(g);
    this.renumber();

    this.ups = h("input", {
      type: "checkbox",
      checked: body.infrastructure.ups === true,
      id: uid("ups"),
      "data-field": "infrastructure.ups",
    });
    const c = body.infrastructure.commitment_months;
    this.commitment = h(
      "select",
      { "data-field": "infrastructure.commitment_months" },
      h("option", { value: "" }, "Choose…"),
      h("option", { value: "0" }, "None"),
      h("option", { value: "3" }, "3 months"),
      h("option", { value: "6" }, "6 months"),
      h("option", { value: "12" }, "12 months"),
    );
    this.commitment.value = c === null || c === undefined ? "" : String(c);
    this.notes = h("textarea", {
      rows: 3,
      maxlength: 2000,
      "data-field": "infrastructure.maintenance_notes",
      value: body.infrastructure.maintenance_notes ?? "",
    });

    this.el = h(
      "form",
      { class: "application-form", novalidate: true },
      top,
      h(
        "fieldset",
        { class: "card" },
        h("legend", null, "Contact and organization"),
        h(
          "div",
          { class: "row" },
          field("Full legal name", this.fullName),
          field("Email", this.email, { hint: "Every notification about your application goes here." }),
          field("Company (optional)", this.company, { hint: "Company or data center, if any." }),
        ),
      ),
      h(
        "section",
        { class: "gpus", "aria-labelledby": "gpus-title" },
        h("h2", { id: "gpus-title" }, "GPUs"),
        h(
          "p",
          { class: "muted" },
          "One entry per GPU model or group of identical GPUs; add an entry for each other model or machine.",
        ),
        this.entriesEl,
        button(
          "Add another GPU entry",
          () => {
            const e = this.addEntry(emptyEntry());
            this.renumber();
            e.focus();
          },
          { attrs: { class: "btn btn-secondary add-entry" } },
        ),
      ),
      h(
        "fieldset",
        { class: "card" },
        h("legend", null, "Infrastructure"),
        h(
          "div",
          { class: "field" },
          h("label", { class: "check", for: this.ups.id }, this.ups, "The machines are protected by a UPS"),
          h("div", { class: "hint" }, "Strongly recommended; required for the Enterprise tier."),
        ),
        field("Commitment period", this.commitment, {
          hint: "How long you commit to keep the GPUs on the platform.",
        }),
        field("Maintenance notes (optional)", this.notes, {
          hint: "e.g. 2-hour maintenance window on the first Sunday of each month.",
        }),
      ),
      actions,
    );
  }

  private addEntry(g: api.GpuEntry): GpuEntryEditor {
    const e = new GpuEntryEditor(this.models, g, (gone) => {
      const i = this.entries.indexOf(gone);
      this.entries = this.entries.filter((x) => x !== gone);
      gone.el.remove();
      this.renumber();
      this.entries[Math.max(0, i - 1)]?.focus();
    });
    this.entries.push(e);
    append(this.entriesEl, e.el);
    return e;
  }

  private renumber(): void {
    this.entries.forEach((e, i) => e.renumber(i, this.entries.length));
  }

  // The form's body. Throws a 422 ApiError naming each number field whose text is not a
  // number ("1e"), which the browser would otherwise send as empty.
  value(): api.ApplicationBody {
    const unreadable = unreadableNumbers(this.el);
    if (Object.keys(unreadable).length) {
      throw new api.ApiError(422, "validation_failed", "some fields are not valid", unreadable);
    }
    return {
      contact: {
        full_name: strOrNull(this.fullName),
        email: strOrNull(this.email),
        company: strOrNull(this.company),
      },
      gpus: this.entries.map((e) => e.value()),
      infrastructure: {
        ups: this.ups.checked,
        commitment_months: this.commitment.value === "" ? null : Number(this.commitment.value),
        maintenance_notes: this.notes.value.trim() === "" ? null : this.notes.value,
      },
    };
  }
}
