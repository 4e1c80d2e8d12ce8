// The Pricing tab (#/provider/pricing?machine=<id>): the provider's hourly price per GPU
// model (one row per model of its machines' GPUs and per model priced already), each with
// whether its GPUs are listed, the market's recommended price for it in the offer's region
// (with the data behind it, saying plainly when it is only the catalog's default), and
// where its offers rank (the summary, the price that would gain a place, the advice and
// the formula's factors); next to each price, what the provider keeps of it after the
// platform's commission (commission_bps); why a recommendation is below (or above) the
// median rented price (the API's reason: the utilization factor); per-machine overrides;
// the history of every change, a page at a time. Saving sends the whole set (PUT /providers/me/prices): a model left out loses its
// price, so removing one is an explicit action that the form shows until it is saved.
// Listing states and ranks refresh every 10 s and right after a save.
import * as api from "../../api";
import { session, type View } from "../../app";
import { modelMap } from "../../catalog";
import { modelLabel } from "../../components/appform";
import { pageThrough } from "../../components/paging";
import { PriceField } from "../../components/price";
import { rankFactors } from "../../components/rank";
import { append, busy, button, type Child, field, h, replace } from "../../dom";
import { clearFieldErrors, errorBanner, isAbort, StatusSlot } from "../../errors";
import { bpsPercent, percent, plural, when } from "../../format";
import { amount, centsText, exactUsdc, perHour } from "../../money";
import { listingText, machineTitle } from "./overview";
import { machinePicker } from "./picker";
import type { ProviderTab } from "./tabs";

const kPollMs = 10000;
const kAfterSaveMs = [800, 2500]; // the marketplace's index follows a change within ~1 s
const kHistoryPage = 20;

const enc = encodeURIComponent;

// What the tab knows of the provider's fleet and market position now.
interface Live {
  machines: api.Machine[];
  offers: api.OwnOffer[];
}

async function loadLive(signal: AbortSignal): Promise<Live> {
  const [machines, offers] = await Promise.all([
    api.get<api.Page<api.Machine>>("/machines?limit=500", { signal }),
    api.get<{ items: api.OwnOffer[] }>("/providers/me/offers", { signal }),
  ]);
  return { machines: machines.items, offers: offers.items };
}

function modelName(models: Map<string, api.GpuModel>, id: string): string {
  const m = models.get(id);
  return m ? m.name : id;
}

// A validation failure made here, shown as the API's are (next to the fields).
function localError(fields: Record<string, string>): api.ApiError {
  return new api.ApiError(422, "validation_failed", "some prices are not valid", fields);
}

// The region an offer of `model` has, or would have: the offer's; else, as the platform
// places it, the region of the approved application's entry for that model, else of its
// first entry. null: none named.
function regionOf(model: string, offers: api.OwnOffer[], app: api.Application | null): string | null {
  const offer = offers.find((o) => o.gpu_model === model && o.region);
  if (offer) return offer.region;
  const entry = app?.gpus.find((g) => g.model === model) ?? app?.gpus[0];
  return entry?.location?.region || null;
}

// What the provider keeps of an hourly price after the commission, as billing computes a
// charge's parts (docs/billing.md): the fee rounded down, the provider the rest.
function providerShare(micro: number, bps: number): number {
  return micro - Math.floor((micro * bps) / 10000);
}

// "you keep 0.36 USDC/h (after the 20 % commission)"; null without a known rate.
function shareLine(micro: number, bps: number | undefined): HTMLElement | null {
  if (bps === undefined) return null;
  return h(
    "span",
    { class: "small muted share" },
    "you keep ",
    amount(providerShare(micro, bps), { unit: "USDC/h" }),
    ` (after the ${bpsPercent(bps)} commission)`,
  );
}

// ---- one GPU model: its price, listing, recommendation and rank

class ModelCard {
  readonly el: HTMLFieldSetElement;
  readonly price: PriceField;
  private readonly status = h("div", { class: "price-status" });
  private readonly rank = h("div", { class: "price-rank", "aria-live": "polite" });
  private readonly rec = h("div", { class: "price-rec" }, h("p", { class: "muted small" }, "Loading…"));
  private readonly share = h("p", { class: "price-share", "aria-live": "polite" });
  private shape = "";

  constructor(
    readonly model: api.GpuModel,
    initial: number | null,
    onChange: () => void,
    private readonly bps: number | undefined,
  ) {
    this.price = new PriceField({
      label: "Your price (USDC per GPU-hour)",
      initial,
      hint: "Up to 6 decimals, e.g. 0.45.",
      removeText: "Remove price",
      removedText:
        "Removed when you save: GPUs of this model are no longer listed, except on machines with an override.",
      ariaName: model.name,
      onChange: () => {
        this.showShare();
        onChange();
      },
    });
    this.el = h(
      "fieldset",
      { class: "price-model", "data-model": model.id },
      h("legend", null, modelLabel(model)),
      h(
        "div",
        { class: "price-model-grid" },
        h("div", { class: "price-col" }, this.price.el, this.share, this.status),
        h("section", { class: "price-col", "aria-label": `Recommended price for ${model.name}` }, this.rec),
        h("section", { class: "price-col", "aria-label": `Rank of ${model.name}` }, this.rank),
      ),
    );
  }

  // What the provider keeps of the price in the field (nothing while it is not a price).
  showShare(): void {
    const v = this.price.value();
    replace(this.share, v.kind === "price" ? shareLine(v.micro, this.bps) : null);
  }

  // The listing of the model's GPUs and the rank of its offers (redrawn only when they
  // changed, so that an opened explanation stays open). `prices`: the provider's, saved.
  show(live: Live, models: Map<string, api.GpuModel>, prices: Map<string, number>): void {
    const gpus = live.machines.flatMap((m) =>
      m.gpus.filter((g) => g.present && g.catalog_id === this.model.id).map((g) => ({ m, g })),
    );
    const offers = live.offers.filter((o) => o.gpu_model === this.model.id);
    const now = JSON.stringify([
      prices.get(this.model.id),
      gpus.map(({ m, g }) => [m.id, m.name, g.id, g.listing_state, g.listing_note]),
      offers.map((o) => [o.id, o.price_micro, o.gpus_available, o.gpus_total, o.rank]),
    ]);
    if (now === this.shape) return;
    this.shape = now;
    replace(this.status, statusView(gpus));
    replace(
      this.rank,
      rankView(this.model, offers, live.machines, prices.get(this.model.id) ?? null, models, this.bps),
    );
  }

  async loadRecommendation(region: string | null, signal: AbortSignal): Promise<void> {
    const q = `gpu_model=${enc(this.model.id)}${region ? `&region=${enc(region)}` : ""}`;
    try {
      const [rec, stats] = await Promise.all([
        api.get<api.Recommendation>(`/market/recommendation?${q}`, { signal }),
        api.get<api.MarketStats>(`/market/stats?${q}`, { signal }),
      ]);
      replace(this.rec, recommendationView(this.model, rec, stats, this.price, this.bps));
    } catch (e) {
      if (!isAbort(e)) replace(this.rec, errorBanner(e, "Could not load the recommendation"));
    }
  }
}

function statusView(gpus: Array<{ m: api.Machine; g: api.MachineGpu }>): HTMLElement {
  if (!gpus.length) {
    return h("p", { class: "small muted listing-summary" }, "None of your machines has a GPU of this model now.");
  }
  const listed = gpus.filter((x) => x.g.listed).length;
  const machines = new Set(gpus.map((x) => x.m.id)).size;
  // The GPUs that are not listed, grouped by why.
  const why = new Map<string, number>();
  for (const { g } of gpus) {
    if (g.listed) continue;
    const text = listingText(g).text.replace(/^Not listed: /, "");
    why.set(text, (why.get(text) ?? 0) + 1);
  }
  return h(
    "div",
    { class: "listing-summary" },
    h(
      "p",
      null,
      listed
        ? h("span", { class: "badge badge-ok" }, `${listed} of ${plural(gpus.length, "GPU")} listed`)
        : h("span", { class: "badge badge-off" }, "Not listed"),
      h("span", { class: "small muted" }, ` on ${plural(machines, "machine")}`),
    ),
    why.size
      ? h(
          "ul",
          { class: "small listing-reasons" },
          [...why].map(([text, n]) => h("li", { class: "listing not-listed" }, `${plural(n, "GPU")}: ${text}`)),
        )
      : null,
  );
}

function basisText(rec: api.Recommendation): string {
  if (rec.basis === "catalog") return "Catalog default: no rentals yet";
  if (rec.basis === "global") return "From rentals in every region";
  return `From rentals in ${rec.region}`;
}

function recommendationView(
  model: api.GpuModel,
  rec: api.Recommendation,
  stats: api.MarketStats,
  price: PriceField,
  bps: number | undefined,
): HTMLElement {
  const where = rec.region ? `in ${rec.region}` : "in every region";
  const window = (w: api.MarketWindow) =>
    `${w.rented_gpu_hours.toFixed(1)} of ${w.listed_gpu_hours.toFixed(1)} GPU-hours rented, ${plural(w.rentals, "rental")}`;
  const market: Child =
    stats.offers === 0
      ? `No ${model.name} offers ${where} on the marketplace now.`
      : [
          `On the marketplace ${where} now: ${plural(stats.offers, "offer")}, ${plural(stats.listed_gpus, "GPU")} (${stats.available_gpus} free), prices `,
          amount(stats.price_p25_micro ?? 0, { unit: "USDC/h", bare: true }),
          "–",
          amount(stats.price_p75_micro ?? 0, { unit: "USDC/h" }),
          " (median ",
          amount(stats.price_median_micro ?? 0, { unit: "USDC/h" }),
          ").",
        ];
  return h(
    "div",
    { class: `recommendation basis-${rec.basis}`, "data-basis": rec.basis },
    h("h3", { class: "col-title" }, "Recommended price"),
    h(
      "p",
      { class: "rec-line" },
      h("strong", { class: "rec-price" }, amount(rec.price_micro, { unit: "USDC/h" })),
      " ",
      h("span", { class: `badge ${rec.basis === "catalog" ? "badge-warn" : "badge-ok"} rec-basis` }, basisText(rec)),
    ),
    bps !== undefined ? h("p", { class: "rec-share" }, shareLine(rec.price_micro, bps)) : null,
    h("p", { class: "small rec-note" }, rec.note),
    reasonView(rec),
    h(
      "dl",
      { class: "facts compact rec-facts" },
      h("dt", null, "Region"),
      h("dd", null, rec.region ?? "every region (your application names none)"),
      h("dt", null, "Utilization (7 days)"),
      h("dd", null, rec.utilization === null ? "— (nothing listed)" : percent(rec.utilization, 1)),
      h("dt", null, "Median rented price"),
      h(
        "dd",
        null,
        rec.median_price_micro === null ? "— (no rentals)" : amount(rec.median_price_micro, { unit: "USDC/h" }),
        rec.median_price_micro !== null && rec.utilization_factor !== null && rec.utilization_factor !== undefined
          ? h("span", { class: "muted" }, ` × ${rec.utilization_factor.toFixed(3)} (utilization factor)`)
          : null,
      ),
      h("dt", null, "Sample"),
      h("dd", { class: "rec-sample" }, plural(rec.sample_rentals, "rental")),
      h("dt", null, "Catalog default"),
      h("dd", null, amount(rec.catalog_price_micro, { unit: "USDC/h" })),
      rec.region ? [h("dt", null, `In ${rec.region}`), h("dd", null, window(rec.region_window))] : null,
      h("dt", null, "In every region"),
      h("dd", null, window(rec.global_window)),
    ),
    h("p", { class: "small muted rec-market" }, market),
    button(`Use ${centsText(rec.price_micro)}`, () => price.fill(rec.price_micro), {
      kind: "secondary",
      attrs: {
        class: "btn btn-secondary btn-small",
        "aria-label": `Use the recommended price ${perHour(rec.price_micro)} for ${model.name}`,
        title: `Fills in ${exactUsdc(rec.price_micro, { unit: "USDC/h" })}`,
      },
    }),
  );
}

// Why the recommendation is below (or above) the median rented price, in the API's words,
// marked as such when it is below.
function reasonView(rec: api.Recommendation): HTMLElement | null {
  if (!rec.reason) return null;
  const below = rec.median_price_micro !== null && rec.price_micro < rec.median_price_micro;
  return h(
    "p",
    { class: `small rec-reason${below ? " below-median" : ""}` },
    below ? h("strong", null, "Why below the median: ") : null,
    below ? rec.reason.replace(/^Below the median rented price: /, "") : rec.reason,
  );
}

function nextPlaceText(o: api.OwnOffer): Child {
  const r = o.rank;
  if (r.position === null) return "Not in search results now: none of its GPUs is free.";
  if (r.position === 1) return "First place: no offer ranks higher.";
  if (r.price_for_next_place_micro === null) return "No price alone would move it up a place.";
  return [
    "To move up one place: ",
    amount(r.price_for_next_place_micro, { unit: "USDC/h" }),
    " or less (now ",
    amount(o.price_micro, { unit: "USDC/h" }),
    ").",
  ];
}

function rankView(
  model: api.GpuModel,
  offers: api.OwnOffer[],
  machines: api.Machine[],
  price: number | null, // the provider's
  models: Map<string, api.GpuModel>,
  bps: number | undefined,
): HTMLElement {
  const title = h("h3", { class: "col-title" }, "Rank on the marketplace");
  if (!offers.length) {
    return h(
      "div",
      null,
      title,
      h(
        "p",
        { class: "small muted no-offer" },
        price !== null
          ? "No offer on the marketplace now: none of its GPUs is listed (see why on the left)."
          : `No offer yet: save a price to list your ${modelName(models, model.id)} GPUs.`,
      ),
    );
  }
  return h(
    "div",
    null,
    title,
    offers.map((o) => {
      const m = machines.find((x) => x.id === o.machine_id);
      const among = o.region ? `the ${o.gpu_name} offers in ${o.region}` : `the ${o.gpu_name} offers ranked with it`;
      return h(
        "div",
        { class: "rank-offer", "data-offer-id": o.id },
        h("p", { class: "rank-summary" }, h("strong", null, o.rank.summary)),
        h(
          "p",
          { class: "small muted" },
          `${m ? machineTitle(m) : "A machine"} · `,
          amount(o.price_micro, { unit: "USDC/h" }),
          o.price_micro !== price ? " (this machine's override)" : "",
          bps !== undefined ? [", ", shareLine(o.price_micro, bps)] : null,
          ` · ${o.gpus_available} of ${plural(o.gpus_total, "GPU")} free`,
        ),
        h("p", { class: "small next-place" }, nextPlaceText(o)),
        o.rank.advice.length
          ? h(
              "ul",
              { class: "small advice rank-advice" },
              o.rank.advice.map((a) => h("li", null, a)),
            )
          : null,
        h(
          "details",
          { class: "rank-details" },
          h("summary", null, "How this rank is computed"),
          rankFactors(o.rank.explain, o, among),
        ),
      );
    }),
  );
}

// ---- the provider's prices

class PricesForm {
  readonly el: HTMLElement;
  private readonly cards: ModelCard[] = [];
  private readonly list = h("div", { class: "price-models", "data-field": "items" });
  private readonly pending = h("div", { class: "pending-changes", "aria-live": "polite" });
  private readonly actions = h("div", { class: "actions form-actions" });
  private readonly save = h("button", { type: "submit", class: "btn btn-primary" }, "Save prices");
  private readonly slot = new StatusSlot();
  private readonly form: HTMLFormElement;
  private readonly adder = h("div", { class: "add-model" });
  private live: Live;

  constructor(
    private readonly v: View,
    private readonly models: Map<string, api.GpuModel>,
    prices: api.Price[],
    live: Live,
    private readonly app: api.Application | null,
    private readonly onSaved: () => void,
    private readonly bps: number | undefined,
  ) {
    this.live = live;
    const priced = new Map(prices.map((p) => [p.gpu_model, p.price_micro]));
    const ids = new Set<string>(priced.keys());
    for (const m of live.machines)
      for (const g of m.gpus) if (g.present && models.has(g.catalog_id)) ids.add(g.catalog_id);
    const ordered = [...ids]
      .map((id) => models.get(id) ?? { id, name: id, vram_gb: 0, default_price_micro: 0, source: "" })
      .sort((a, b) => a.name.localeCompare(b.name));
    for (const m of ordered) this.addCard(m, priced.get(m.id) ?? null, false);

    this.form = h(
      "form",
      { class: "prices-form", novalidate: true, "aria-labelledby": "prices-title" },
      this.list,
      this.adder,
      this.pending,
      this.actions,
      this.slot.el,
    );
    this.form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      this.submit(false);
    });
    this.resetActions();
    this.renderAdder();
    this.changed();
    this.el = h(
      "section",
      { class: "card prices-card", "aria-labelledby": "prices-title" },
      h("h2", { id: "prices-title" }, "Your prices"),
      h(
        "p",
        { class: "muted" },
        "One hourly price per GPU model, in USDC per GPU. A GPU is listed only while its model has a price. A change applies to new rentals; a running rental keeps the price it started with.",
      ),
      ordered.length
        ? null
        : h(
            "p",
            { class: "muted" },
            "None of your machines has a GPU yet. You can set prices now: add the models you will connect.",
          ),
      this.form,
    );
  }

  private addCard(m: api.GpuModel, initial: number | null, fresh: boolean): ModelCard {
    const card = new ModelCard(m, initial, () => this.changed(), this.bps);
    card.showShare();
    this.cards.push(card);
    this.list.appendChild(card.el);
    card.show(this.live, this.models, this.prices());
    void card.loadRecommendation(regionOf(m.id, this.live.offers, this.app), this.v.signal);
    if (fresh) card.price.input.focus();
    return card;
  }

  private renderAdder(): void {
    const shown = new Set(this.cards.map((c) => c.model.id));
    const rest = [...this.models.values()].filter((m) => !shown.has(m.id));
    if (!rest.length) {
      replace(this.adder);
      return;
    }
    const select = h(
      "select",
      null,
      h("option", { value: "" }, "Choose a GPU model…"),
      rest.map((m) => h("option", { value: m.id }, modelLabel(m))),
    );
    const add = button("Add", () => {
      const m = this.models.get(select.value);
      if (!m) {
        select.focus();
        return;
      }
      this.addCard(m, null, true);
      this.renderAdder();
      this.changed();
    });
    replace(this.adder, field("Add a price for another GPU model", select, { className: "add-model-field" }), add);
  }

  // The unsaved changes, in words.
  private changed(): void {
    const lines = this.cards
      .map((c) => {
        const v = c.price.value();
        const what = v.kind === "invalid" ? v.error : c.price.change();
        return what ? h("li", { class: c.price.isRemoval() ? "removal" : null }, `${c.model.name}: ${what}`) : null;
      })
      .filter((x): x is HTMLLIElement => x !== null);
    replace(
      this.pending,
      lines.length
        ? [h("p", { class: "small" }, h("strong", null, "Not saved yet:")), h("ul", { class: "small" }, lines)]
        : h("p", { class: "small muted" }, "No unsaved changes."),
    );
  }

  private resetActions(): void {
    replace(this.actions, this.save);
  }

  // The body of the PUT, with the field path of each price set on its input; the local
  // field errors instead when a price cannot be read.
  private body(): { items: api.PriceItem[] } | { fields: Record<string, string> } {
    const items: api.PriceItem[] = [];
    const fields: Record<string, string> = {};
    for (const c of this.cards) {
      const v = c.price.value();
      if (v.kind === "none" || v.kind === "removed") {
        c.price.setPath(null);
        delete c.el.dataset.field;
        continue;
      }
      const path = `items[${items.length}]`;
      c.price.setPath(`${path}.price_micro`);
      c.el.dataset.field = `${path}.gpu_model`;
      if (v.kind === "invalid") fields[`${path}.price_micro`] = v.error;
      items.push({ gpu_model: c.model.id, price_micro: v.kind === "price" ? v.micro : 0 });
    }
    return Object.keys(fields).length ? { fields } : { items };
  }

  private submit(confirmed: boolean): void {
    this.slot.clear();
    clearFieldErrors(this.form);
    const body = this.body();
    if ("fields" in body) {
      this.slot.formError(this.form, localError(body.fields), "", "The prices were not saved");
      return;
    }
    const removals = this.cards.filter((c) => c.price.isRemoval());
    if (removals.length && !confirmed) {
      const yes = button("Yes, remove and save", () => this.submit(true), { kind: "danger" });
      const no = button("Cancel", () => {
        this.resetActions();
        this.save.focus();
      });
      replace(
        this.actions,
        h(
          "span",
          { class: "confirm" },
          `This removes the price of ${removals.map((c) => c.model.name).join(", ")}: its GPUs stop being listed (except where a machine override prices them). `,
        ),
        yes,
        no,
      );
      yes.focus();
      return;
    }
    const btn = this.actions.querySelector<HTMLButtonElement>("button");
    void busy(btn, async () => {
      try {
        const saved = await api.put<{ items: api.Price[] }>("/providers/me/prices", body);
        const byModel = new Map(saved.items.map((p) => [p.gpu_model, p.price_micro]));
        for (const c of this.cards) c.price.saved(byModel.get(c.model.id) ?? null);
        this.changed();
        this.slot.ok(
          saved.items.length
            ? `Prices saved (${plural(saved.items.length, "model")}). Listings and ranks follow within seconds.`
            : "Prices saved: no model has a price now, so none of your GPUs is listed.",
        );
        this.onSaved();
      } catch (e) {
        this.slot.formError(this.form, e, "The prices were not saved", "The prices were not saved");
      }
    }).then(() => {
      if (confirmed) this.resetActions();
    });
  }

  // The saved price of each model (micro-USDC).
  prices(): Map<string, number> {
    const out = new Map<string, number>();
    for (const c of this.cards) {
      const p = c.price.savedPrice();
      if (p !== null) out.set(c.model.id, p);
    }
    return out;
  }

  show(live: Live): void {
    this.live = live;
    const prices = this.prices();
    for (const c of this.cards) c.show(live, this.models, prices);
  }

  // The recommendations and market figures again (after a change of the provider's).
  reloadMarket(): void {
    for (const c of this.cards) {
      void c.loadRecommendation(regionOf(c.model.id, this.live.offers, this.app), this.v.signal);
    }
  }
}

// ---- per-machine overrides

function overridesSection(
  v: View,
  machines: api.Machine[],
  models: Map<string, api.GpuModel>,
  providerPrices: () => Map<string, number>,
  onSaved: () => void,
  bps: number | undefined,
): { el: HTMLElement; reload: () => void } {
  const host = h("div", { class: "override-machine" });
  const el = h(
    "section",
    { class: "card overrides-card", "aria-labelledby": "overrides-title" },
    h("h2", { id: "overrides-title" }, "Prices for one machine"),
    h(
      "p",
      { class: "muted" },
      "An override replaces your price for one machine's GPUs of a model, for example a machine with a faster connection. Without one, your price applies.",
    ),
  );
  if (!machines.length) {
    append(el, h("p", { class: "muted" }, "No machines yet: connect one from the Overview."));
    return { el, reload: () => {} };
  }
  let current: api.Machine = machines[0];
  let ctrl: AbortController | null = null;

  const load = async (m: api.Machine) => {
    ctrl?.abort();
    const mine = new AbortController();
    ctrl = mine;
    v.signal.addEventListener("abort", () => mine.abort());
    try {
      const mp = await api.get<api.MachinePrices>(`/machines/${enc(m.id)}/prices`, { signal: mine.signal });
      if (!mine.signal.aborted) replace(host, overrideForm(m, mp, models, providerPrices, onSaved, bps));
    } catch (e) {
      if (!isAbort(e)) replace(host, errorBanner(e, "Could not load the machine's prices"));
    }
  };
  machinePicker(el, {
    tab: "pricing",
    machines,
    wanted: v.query.get("machine"),
    show: (id) => {
      current = machines.find((x) => x.id === id) ?? machines[0];
      void load(current);
    },
  });
  el.appendChild(host);
  return { el, reload: () => void load(current) };
}

function overrideForm(
  m: api.Machine,
  mp: api.MachinePrices,
  models: Map<string, api.GpuModel>,
  providerPrices: () => Map<string, number>,
  onSaved: () => void,
  bps: number | undefined,
): HTMLElement {
  const slot = new StatusSlot();
  const overrides = new Map(mp.items.map((p) => [p.gpu_model, p.price_micro]));
  const ids = new Set<string>(overrides.keys());
  for (const g of m.gpus) if (g.present && models.has(g.catalog_id)) ids.add(g.catalog_id);
  const ordered = [...ids].sort((a, b) => modelName(models, a).localeCompare(modelName(models, b)));
  if (!ordered.length) return h("p", { class: "muted" }, "This machine reports no GPU of a catalog model.");

  const effective = new Map<string, HTMLElement>();
  const showEffective = (list: api.PriceItem[], own: Map<string, number>) => {
    const eff = new Map(list.map((x) => [x.gpu_model, x.price_micro]));
    for (const id of ordered) {
      const e = effective.get(id)!;
      const p = eff.get(id);
      replace(
        e,
        p === undefined
          ? h("span", { class: "listing not-listed" }, "No price: its GPUs are not listed")
          : [
              h("strong", null, amount(p, { unit: "USDC/h" })),
              h("span", { class: "muted" }, own.has(id) ? " (this machine's override)" : " (your price)"),
              bps !== undefined ? [", ", shareLine(p, bps)] : null,
            ],
      );
    }
  };
  const rows = ordered.map((id) => {
    const own = providerPrices().get(id);
    const price = new PriceField({
      label: "Price on this machine (USDC per GPU-hour)",
      initial: overrides.get(id) ?? null,
      hint: `Empty: your price applies (${own === undefined ? "none set" : perHour(own)}).`,
      removeText: "Remove override",
      removedText: "Removed when you save: your price applies again on this machine.",
      ariaName: `${modelName(models, id)} on ${machineTitle(m)}`,
      onChange: () => {},
    });
    const eff = h("p", { class: "small effective" });
    effective.set(id, eff);
    const count = m.gpus.filter((g) => g.present && g.catalog_id === id).length;
    const row = h(
      "fieldset",
      { class: "override-row", "data-model": id },
      h("legend", null, models.get(id) ? modelLabel(models.get(id)!) : id),
      h("p", { class: "small muted" }, count ? `${plural(count, "GPU")} on this machine` : "No GPU of this model now"),
      price.el,
      h("p", { class: "small" }, "Charged now: ", eff),
    );
    return { id, price, row };
  });
  showEffective(mp.effective, overrides);

  const save = h("button", { type: "submit", class: "btn btn-primary" }, "Save prices for this machine");
  const form = h(
    "form",
    { class: "override-form", novalidate: true, "aria-label": `Prices for ${machineTitle(m)}` },
    h(
      "div",
      { class: "override-rows", "data-field": "items" },
      rows.map((r) => r.row),
    ),
    h("div", { class: "actions form-actions" }, save),
    slot.el,
  );
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    slot.clear();
    clearFieldErrors(form);
    const items: api.PriceItem[] = [];
    const fields: Record<string, string> = {};
    for (const r of rows) {
      const val = r.price.value();
      if (val.kind === "none" || val.kind === "removed") {
        r.price.setPath(null);
        delete r.row.dataset.field;
        continue;
      }
      const path = `items[${items.length}]`;
      r.price.setPath(`${path}.price_micro`);
      r.row.dataset.field = `${path}.gpu_model`;
      if (val.kind === "invalid") fields[`${path}.price_micro`] = val.error;
      items.push({ gpu_model: r.id, price_micro: val.kind === "price" ? val.micro : 0 });
    }
    if (Object.keys(fields).length) {
      slot.formError(form, localError(fields), "", "The machine's prices were not saved");
      return;
    }
    void busy(save, async () => {
      try {
        const saved = await api.put<api.MachinePrices>(`/machines/${enc(m.id)}/prices`, { items });
        const now = new Map(saved.items.map((p) => [p.gpu_model, p.price_micro]));
        for (const r of rows) r.price.saved(now.get(r.id) ?? null);
        showEffective(saved.effective, now);
        slot.ok(
          saved.items.length
            ? `Prices for ${machineTitle(m)} saved (${plural(saved.items.length, "override")}).`
            : `Prices for ${machineTitle(m)} saved: no overrides, your prices apply.`,
        );
        onSaved();
      } catch (e) {
        slot.formError(form, e, "The machine's prices were not saved", "The machine's prices were not saved");
      }
    });
  });
  return form;
}

// ---- the history of changes

function changeText(c: api.PriceChange): Child {
  if (c.old_price_micro === null && c.new_price_micro !== null) {
    return ["set to ", amount(c.new_price_micro, { unit: "USDC/h" })];
  }
  if (c.new_price_micro === null) {
    return c.old_price_micro === null
      ? "removed"
      : ["removed (was ", amount(c.old_price_micro, { unit: "USDC/h" }), ")"];
  }
  return [
    amount(c.old_price_micro ?? 0, { unit: "USDC/h", bare: true }),
    " → ",
    amount(c.new_price_micro, { unit: "USDC/h" }),
  ];
}

function historySection(
  v: View,
  machines: api.Machine[],
  models: Map<string, api.GpuModel>,
): { el: HTMLElement; reload: () => void } {
  const body = h("div");
  const el = h(
    "section",
    { class: "card price-history-card", "aria-labelledby": "price-history-title" },
    h("h2", { id: "price-history-title" }, "Price history"),
    h("p", { class: "muted small" }, "Every change of your prices and overrides, newest first."),
    body,
  );
  const load = () => {
    const slot = new StatusSlot();
    const rows = h("tbody");
    const table = h(
      "div",
      { class: "table-wrap" },
      h(
        "table",
        { class: "price-history" },
        h(
          "thead",
          null,
          h(
            "tr",
            null,
            ["When", "GPU model", "Applies to", "Change", "By"].map((x) => h("th", { scope: "col" }, x)),
          ),
        ),
        rows,
      ),
    );
    const empty = h("p", { class: "muted empty-history" }, "No changes yet.");
    const more = button("Show older changes", () => {}, { attrs: { hidden: true } });
    replace(body, slot.el, table, more);
    void pageThrough(
      more,
      slot,
      async (cursor) => {
        const page = await api.get<api.Page<api.PriceChange>>(
          `/providers/me/prices/history?limit=${kHistoryPage}${cursor ? `&cursor=${enc(cursor)}` : ""}`,
          { signal: v.signal },
        );
        for (const c of page.items) {
          const m = c.machine_id ? machines.find((x) => x.id === c.machine_id) : null;
          append(
            rows,
            h(
              "tr",
              { "data-change-id": c.id },
              h("td", { "data-label": "When" }, h("time", { datetime: c.at }, when(c.at))),
              h("td", { "data-label": "GPU model" }, modelName(models, c.gpu_model)),
              h(
                "td",
                { "data-label": "Applies to" },
                c.machine_id ? `Machine ${m ? machineTitle(m) : c.machine_id} (override)` : "All your machines",
              ),
              h("td", { "data-label": "Change", class: "change" }, changeText(c)),
              h("td", { "data-label": "By" }, c.changed_by === session.user?.id ? "You" : c.changed_by),
            ),
          );
        }
        if (!rows.childElementCount) table.replaceWith(empty);
        return page.next_cursor;
      },
      "Could not load the price history",
      "Could not load older changes",
    );
  };
  load();
  return { el, reload: load };
}

export const pricingTab: ProviderTab = {
  id: "pricing",
  label: "Pricing",
  async render(v, panel, provider) {
    const [live, prices, models, app] = await Promise.all([
      loadLive(v.signal),
      api.get<{ items: api.Price[] }>("/providers/me/prices", { signal: v.signal }),
      modelMap(v.signal),
      // Only for the region of a model that has no offer yet.
      api
        .get<api.Application>(`/provider-applications/${enc(provider.application_id)}`, { signal: v.signal })
        .catch(() => null),
    ]);
    const problem = h("div");
    const stamp = h("p", { class: "muted small updated" });
    let history: { reload: () => void } | null = null;
    let overrides: { reload: () => void } | null = null;
    const refresh = async () => {
      try {
        form.show(await loadLive(v.signal));
        stamp.textContent = `Listings and ranks updated ${new Date().toLocaleTimeString()} · refresh every ${kPollMs / 1000} s`;
        replace(problem);
      } catch (e) {
        if (!isAbort(e) && !v.signal.aborted) replace(problem, errorBanner(e, "Could not refresh (retrying)"));
      }
    };
    const afterSave = () => {
      kAfterSaveMs.forEach((ms, i) => {
        const t = window.setTimeout(() => {
          void refresh().then(() => {
            if (i === 0) form.reloadMarket();
          });
        }, ms);
        v.onLeave(() => window.clearTimeout(t));
      });
      history?.reload();
    };
    const form = new PricesForm(
      v,
      models,
      prices.items,
      live,
      app,
      () => {
        overrides?.reload();
        afterSave();
      },
      provider.commission_bps,
    );
    const o = overridesSection(v, live.machines, models, () => form.prices(), afterSave, provider.commission_bps);
    overrides = o;
    const hs = historySection(v, live.machines, models);
    history = hs;
    append(panel, problem, form.el, stamp, o.el, hs.el);
    v.every(kPollMs, refresh);
  },
};
