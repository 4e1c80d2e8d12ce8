// The Marketplace (#/marketplace?gpu_model=l4-24gb&max_price_micro=500000&sort=price):
// offers with a free GPU (with include_busy=true, those whose GPUs are all busy too), for
// customers and anonymous visitors alike. Each card shows the machine as its agent
// reports it (CPU, RAM, disk, driver and CUDA) and the performance score with its scale.
// The filters are the parameters of GET /offers and live in the address, so a search can
// be shared; a bad value is refused by the API and shown next to the filter it names. The
// first page comes from one request (explain=true: "Why this rank?" needs no other);
// "More" reads the next page through the cursor. Providers show as their pseudonym only,
// never who they are.
import * as api from "../api";
import { navigate, pageHeader, session, type View } from "../app";
import { gpuModels } from "../catalog";
import { modelLabel } from "../components/appform";
import { pageThrough } from "../components/paging";
import { rankFactors } from "../components/rank";
import { rentForm } from "../components/rentform";
import { append, button, field, h, replace, uid } from "../dom";
import { clearFieldErrors, isAbort, StatusSlot } from "../errors";
import { plural, tierName } from "../format";
import { amount, exactText, parseUsdc } from "../money";

const kPageSize = 20;

const kSorts: Array<[string, string]> = [
  ["rank", "Default ranking"],
  ["price", "Lowest price"],
  ["-performance", "Highest performance"],
  ["-value", "Most performance per USDC"],
  ["-reliability", "Highest reliability"],
];

// What min_gpus counts: the free GPUs of one machine, or with include_busy all of them.
const kMinGpusFree = "Free now, one machine";
const kMinGpusAll = "On one machine, free or busy";

// The filters of GET /offers shown as text fields: [parameter, label, hint, inputmode].
type TextFilter = [string, string, string, "numeric" | "decimal" | "text"];
const kMainFilters: TextFilter[] = [
  ["min_gpus", "Min. GPUs", kMinGpusFree, "numeric"],
  ["region", "Region", "e.g. eu-south", "text"],
];
const kMoreFilters: TextFilter[] = [
  ["min_vram_gb", "Min. VRAM (GB)", "Per GPU", "decimal"],
  ["country", "Country", "Two letters, e.g. IT", "text"],
  ["min_reliability", "Min. reliability", "0 to 100", "decimal"],
  ["min_performance", "Min. performance", "100 = an A100-SXM-80GB", "decimal"],
  ["min_down_mbps", "Min. download (Mbit/s)", "Measured", "decimal"],
  ["min_up_mbps", "Min. upload (Mbit/s)", "Measured", "decimal"],
  ["min_cuda", "Min. CUDA version", "e.g. 12.4", "decimal"],
];
function sortName(sort: string): string {
  return kSorts.find(([value]) => value === sort)?.[1] ?? sort;
}

// Parameters the address may carry besides the filters' own.
const kPassThrough = ["limit"];

// 16896.49 → "16,896"; 86.4 → "86.4".
function mbit(n: number): string {
  return n.toLocaleString("en-US", { maximumFractionDigits: n >= 100 ? 0 : 1 });
}

function networkText(o: api.Offer): string {
  if (o.down_mbps === null && o.up_mbps === null && o.latency_ms === null) return "not measured";
  const part = (label: string, v: number | null) => `${label} ${v === null ? "not measured" : mbit(v)}`;
  const latency =
    o.latency_ms === null
      ? "latency not measured"
      : `${o.latency_ms < 10 ? o.latency_ms.toFixed(1) : Math.round(o.latency_ms)} ms`;
  return `${part("↓", o.down_mbps)} · ${part("↑", o.up_mbps)} Mbit/s · ${latency}`;
}

// 62.7 → "62.7 GB", 503.4 → "503 GB".
function gb(n: number): string {
  return `${n.toLocaleString("en-US", { maximumFractionDigits: n >= 100 ? 0 : 1 })} GB`;
}

// What one GPU of the offer gets: "4 cores per GPU".
function perGpu(n: number, unit: string): string {
  return `${n.toLocaleString("en-US", { maximumFractionDigits: 1 })} ${unit} per GPU`;
}

function cpuText(o: api.Offer): string {
  const cores = o.host?.cpu_cores
    ? `${plural(o.host.cpu_cores, "core")} (${perGpu(o.cpu_cores_per_gpu, "cores")})`
    : "";
  return [o.host?.cpu_model, cores].filter(Boolean).join(" · ") || "—";
}

function ramText(o: api.Offer): string {
  if (!o.host?.ram_gb) return o.ram_gb_per_gpu ? perGpu(o.ram_gb_per_gpu, "GB") : "—";
  return `${gb(o.host.ram_gb)} (${perGpu(o.ram_gb_per_gpu, "GB")})`;
}

function diskText(o: api.Offer): string {
  const total = o.host?.disk_total_gb ?? 0;
  const free = o.host?.disk_free_gb ?? 0;
  if (!total && !free) return "—";
  return total ? `${gb(free)} free of ${gb(total)}` : `${gb(free)} free`;
}

// "Driver 550.54.15 · CUDA 12.4"; EMULATED GPUs report the one word "emulated" for both.
function softwareText(o: api.Offer): string {
  if (o.driver_version && o.driver_version === o.cuda_version && !/\d/.test(o.driver_version)) return o.driver_version;
  return `Driver ${o.driver_version || "—"} · CUDA ${o.cuda_version || "—"}`;
}

// The score and its scale (docs/performance-score.md): open-ended, 100 = an
// A100-SXM-80GB at its datasheet peaks.
const kScoreScale =
  "Measured by gpunex's benchmark: a weighted mix of FP32, FP16, tensor-core and memory-bandwidth figures. 100 = an A100-SXM-80GB at its datasheet peaks; higher is faster (an H100 SXM at its peaks is about 247, an L4 about 34).";

// "Performance (A100 = 100)": the fact's name carries the scale, what it means on hover.
function performanceName(): Array<string | Node> {
  return ["Performance ", h("abbr", { class: "score-scale", title: kScoreScale }, "(A100 = 100)")];
}

function locationText(o: api.Offer): string {
  const place = [o.city, o.country].filter(Boolean).join(", ") || "—";
  return o.region ? `${place} · ${o.region}` : place;
}

// The offer's Rent action: for a signed-in user, the rental form opens in the card; a
// visitor is sent to log in first and comes back to the offer (#/rent/ID).
function rentAction(o: api.Offer, signal: AbortSignal): HTMLElement {
  const slot = h("div", { class: "rent-slot", id: uid("rent-slot") });
  const label = `Rent ${o.gpu_name} from ${o.provider.pseudonym}`;
  // A busy offer (include_busy): nothing to rent until a GPU is free again.
  if (o.gpus_available === 0) {
    return h(
      "div",
      { class: "offer-actions" },
      h(
        "button",
        {
          type: "button",
          class: "btn btn-secondary rent-btn",
          disabled: true,
          "aria-label": `${o.gpu_name} from ${o.provider.pseudonym}: all GPUs busy`,
        },
        "All GPUs busy",
      ),
    );
  }
  if (!session.user) {
    const link = h(
      "a",
      {
        class: "btn btn-primary rent-btn",
        href: `#/rent/${encodeURIComponent(o.id)}`,
        "aria-label": label,
        onclick: (ev: Event) => {
          ev.preventDefault();
          sessionStorage.setItem("gpunex.return", `/rent/${encodeURIComponent(o.id)}`);
          navigate("/login?m=" + encodeURIComponent("Log in to rent GPUs: you come back to the offer afterwards."));
        },
      },
      "Rent",
    );
    return h("div", { class: "offer-actions" }, link);
  }
  const close = () => {
    replace(slot);
    btn.setAttribute("aria-expanded", "false");
    btn.focus();
  };
  const btn = button(
    "Rent",
    () => {
      if (slot.firstChild) {
        close();
        return;
      }
      btn.setAttribute("aria-expanded", "true");
      replace(slot, rentForm(o, signal, close));
      slot.querySelector<HTMLElement>("select, input")?.focus();
    },
    {
      kind: "primary",
      attrs: {
        class: "btn btn-primary rent-btn",
        "aria-label": label,
        "aria-expanded": "false",
        "aria-controls": slot.id,
      },
    },
  );
  return h("div", { class: "offer-rent" }, h("div", { class: "offer-actions" }, btn), slot);
}

// `sort`: the order of the results, said in the explanation when it is not the ranking.
function offerCard(o: api.SearchHit, sort: string, signal: AbortSignal): HTMLElement {
  const titleId = uid("offer");
  const fact = (name: string | Array<string | Node>, value: string | Node | Array<string | Node | null>, cls: string) =>
    h("div", { class: `fact ${cls}` }, h("dt", null, name), h("dd", null, value));
  return h(
    "li",
    null,
    h(
      "article",
      { class: "card offer", "data-offer-id": o.id, "aria-labelledby": titleId },
      h(
        "header",
        { class: "offer-head" },
        h(
          "div",
          { class: "offer-title" },
          h("span", { class: "position", title: "Place in these results" }, `#${o.position}`),
          h("h2", { id: titleId }, o.gpu_name),
          h("span", { class: `badge tier-${o.tier}` }, tierName(o.tier)),
          o.emulated
            ? h("span", { class: "badge badge-warn", title: "Emulated GPUs, for tests and demos" }, "EMULATED")
            : null,
        ),
        h(
          "p",
          { class: "offer-price" },
          h("strong", null, amount(o.price_micro, { unit: "USDC/h", bare: true })),
          h("span", { class: "small muted" }, " USDC per GPU-hour"),
        ),
      ),
      h(
        "dl",
        { class: "offer-facts" },
        fact(
          "GPUs",
          o.gpus_available
            ? `${o.gpus_available} of ${o.gpus_total} available`
            : [`0 of ${o.gpus_total} available `, h("span", { class: "badge badge-off" }, "Busy")],
          "gpus",
        ),
        fact("VRAM", `${o.vram_gb} GB per GPU`, "vram"),
        fact(performanceName(), o.performance_score.toFixed(2), "performance"),
        fact(
          "Reliability",
          [
            o.reliability_score.toFixed(2),
            " ",
            o.reliability_status === "new"
              ? h("span", { class: "badge badge-warn", title: "Fewer than 24 scheduled hours: provisional" }, "New")
              : h("span", { class: "badge badge-ok" }, "Scored"),
          ],
          "reliability",
        ),
        fact("Location", locationText(o), "location"),
        fact("Network", networkText(o), "network"),
        fact("CPU", cpuText(o), "cpu"),
        fact("RAM", ramText(o), "ram"),
        fact("Disk", diskText(o), "disk"),
        fact("Driver and CUDA", softwareText(o), "software"),
        fact("Provider", h("span", { class: "pseudonym" }, o.provider.pseudonym), "provider"),
      ),
      o.explain
        ? h(
            "details",
            { class: "why-rank" },
            h("summary", null, "Why this rank?"),
            sort !== "rank"
              ? h(
                  "p",
                  { class: "small muted" },
                  `These results are sorted by ${sortName(sort).toLowerCase()}; by the default ranking the offer scores:`,
                )
              : null,
            rankFactors(o.explain, o, "the offers this search matched"),
          )
        : null,
      rentAction(o, signal),
    ),
  );
}

export async function marketplacePage(v: View): Promise<void> {
  const query = v.query;
  const controls = new Map<string, HTMLInputElement | HTMLSelectElement>();
  const text = (f: TextFilter) => {
    const [name, label, hint, mode] = f;
    const input = h("input", {
      type: "text",
      inputmode: mode,
      autocomplete: "off",
      value: query.get(name) ?? "",
      maxlength: 64,
    });
    controls.set(name, input);
    const shown = name === "min_gpus" && query.get("include_busy") === "true" ? kMinGpusAll : hint;
    const wrapper = field(label, input, { field: name, hint: shown });
    const hintEl = wrapper.querySelector<HTMLElement>(".hint");
    if (hintEl) hints.set(name, hintEl);
    return wrapper;
  };
  const hints = new Map<string, HTMLElement>();

  // GPU models: checkboxes, filled in when the catalog arrives; until then (or if it does
  // not) the address's choice stands.
  const wanted = new Set((query.get("gpu_model") ?? "").split(",").filter(Boolean));
  const modelBoxes = h("div", { class: "model-boxes" }, h("p", { class: "small muted" }, "Loading GPU models…"));
  const modelGroup = h(
    "fieldset",
    { class: "group model-filter", "data-field": "gpu_model" },
    h("legend", null, "GPU model"),
    modelBoxes,
  );

  const priceText = query.get("max_price_micro") ?? "";
  const maxPrice = h("input", {
    type: "text",
    inputmode: "decimal",
    autocomplete: "off",
    value: /^\d+$/.test(priceText) ? exactText(Number(priceText)) : priceText,
  });
  const tier = h(
    "select",
    null,
    [
      ["", "Any tier"],
      ["community", "Community"],
      ["enterprise", "Enterprise"],
    ].map(([value, label]) => h("option", { value, selected: (query.get("tier") ?? "") === value }, label)),
  );
  controls.set("tier", tier);
  const sortNow = query.get("sort") ?? "rank";
  const sort = h(
    "select",
    null,
    kSorts.map(([value, label]) => h("option", { value, selected: value === sortNow }, label)),
    kSorts.some(([value]) => value === sortNow) ? null : h("option", { value: sortNow, selected: true }, sortNow),
  );
  const verified = h("input", { type: "checkbox", checked: query.get("verified_only") === "true", id: uid("cb") });
  const busy = h("input", {
    type: "checkbox",
    role: "switch",
    checked: query.get("include_busy") === "true",
    id: uid("cb"),
  });
  busy.dataset.field = "include_busy";
  busy.addEventListener("change", () => {
    const minGpusHint = hints.get("min_gpus");
    if (minGpusHint) minGpusHint.textContent = busy.checked ? kMinGpusAll : kMinGpusFree;
    search();
  });

  const moreNames = [...kMoreFilters.map((f) => f[0]), "tier", "verified_only"];
  const more = h(
    "details",
    { class: "more-filters", open: moreNames.some((n) => query.has(n)) },
    h("summary", null, "More filters"),
    h(
      "div",
      { class: "row filter-row" },
      kMoreFilters.map(text),
      field("Tier", tier, { field: "tier" }),
      h(
        "div",
        { class: "field check-field" },
        h("label", { class: "check", for: verified.id, "data-field": "verified_only" }, verified, "Verified GPUs only"),
        h("div", { class: "hint" }, "Leaves out emulated GPUs (for tests and demos)"),
      ),
    ),
  );
  verified.dataset.field = "verified_only";

  const apply = h("button", { type: "submit", class: "btn btn-primary" }, "Search");
  // A navigation even when the address has no filters any more (then it is the same).
  const clear = button("Clear filters", () => navigate("/marketplace"), { kind: "link" });
  const form = h(
    "form",
    { class: "card market-filters", novalidate: true, role: "search", "aria-label": "Filter offers" },
    modelGroup,
    h(
      "div",
      { class: "row filter-row" },
      field("Max. price", maxPrice, { field: "max_price_micro", hint: "USDC per GPU-hour, e.g. 0.50" }),
      kMainFilters.map(text),
      field("Sort by", sort, { field: "sort", className: "sort-field" }),
      h(
        "div",
        { class: "field check-field busy-field" },
        h("label", { class: "check switch", for: busy.id, "data-field": "include_busy" }, busy, "Include busy offers"),
        h("div", { class: "hint" }, "Offers whose GPUs are all rented now"),
      ),
    ),
    more,
    h("div", { class: "actions" }, apply, clear),
  );

  const slot = new StatusSlot();
  const count = h("p", { class: "result-count", "aria-live": "polite" });
  const results = h("div", { class: "offer-results" });
  append(
    v.main,
    pageHeader(
      "Marketplace",
      "GPUs offered by providers, with measured performance, reliability and network. Prices are per GPU-hour in USDC.",
    ),
    form,
    slot.el,
    count,
    results,
  );

  // The parameters of the search the form describes; local errors (a price that is not
  // an amount) instead.
  const selected = () =>
    modelBoxes.querySelector("input") === null
      ? [...wanted]
      : [...modelBoxes.querySelectorAll<HTMLInputElement>("input:checked")].map((x) => x.value);
  const params = (): URLSearchParams | Record<string, string> => {
    const p = new URLSearchParams();
    const models = selected();
    if (models.length) p.set("gpu_model", models.join(","));
    for (const [name, el] of controls) if (el.value.trim()) p.set(name, el.value.trim());
    if (maxPrice.value.trim()) {
      const parsed = parseUsdc(maxPrice.value);
      if (!parsed.ok) return { max_price_micro: parsed.error };
      p.set("max_price_micro", String(parsed.micro));
    }
    if (verified.checked) p.set("verified_only", "true");
    if (busy.checked) p.set("include_busy", "true");
    if (sort.value !== "rank") p.set("sort", sort.value);
    for (const name of kPassThrough) if (query.has(name)) p.set(name, query.get(name)!);
    return p;
  };

  let current: AbortController | null = null;
  const run = (p: URLSearchParams, extra: URLSearchParams | null) => {
    current?.abort();
    const ctrl = new AbortController();
    current = ctrl;
    v.signal.addEventListener("abort", () => ctrl.abort());
    slot.clear();
    clearFieldErrors(form);
    const shown = p.toString();
    history.replaceState(null, "", `#/marketplace${shown ? "?" + shown : ""}`);
    const sent = new URLSearchParams(p);
    // A shared address's parameters the page does not know are sent too: the API names
    // them, rather than the search quietly ignoring them.
    if (extra) for (const [k, val] of extra) sent.set(k, val);
    sent.set("explain", "true");
    if (!sent.has("limit")) sent.set("limit", String(kPageSize));
    const list = h("ol", { class: "offers", "aria-label": "Offers" });
    const moreBtn = button("More", () => {}, { attrs: { hidden: true, class: "btn btn-secondary more-offers" } });
    results.setAttribute("aria-busy", "true");
    replace(count, "Searching…");
    replace(results, list, moreBtn);
    let first = true;
    void pageThrough(
      moreBtn,
      {
        // A refused search names the filters: the errors go next to them.
        error: (e, prefix) => {
          if (ctrl.signal.aborted || isAbort(e)) return;
          results.removeAttribute("aria-busy");
          if (first) replace(count);
          if (e instanceof api.ApiError && Object.keys(e.fields).some((k) => moreNames.includes(k))) more.open = true;
          slot.formError(form, e, prefix, "The search was not run");
        },
      },
      async (cursor) => {
        const q = new URLSearchParams(sent);
        if (cursor) q.set("cursor", cursor);
        const page = await api.get<api.OfferPage>(`/offers?${q}`, { signal: ctrl.signal });
        if (ctrl.signal.aborted) return null;
        results.removeAttribute("aria-busy");
        if (first) {
          first = false;
          const by = sortName(page.sort);
          replace(
            count,
            page.matched
              ? `${plural(page.matched, "offer")} ${busy.checked ? "(busy ones included)" : "with free GPUs"} · sorted by ${by.toLowerCase()}`
              : busy.checked
                ? "No offers match these filters. Remove a filter or raise the maximum price."
                : "No offers with free GPUs match these filters. Remove a filter, raise the maximum price, or include busy offers.",
          );
        }
        append(
          list,
          page.items.map((o) => offerCard(o, page.sort, ctrl.signal)),
        );
        return page.next_cursor;
      },
      "The search failed",
      "Could not load more offers",
    );
  };
  const search = () => {
    const p = params();
    if (!(p instanceof URLSearchParams)) {
      slot.clear();
      clearFieldErrors(form);
      slot.formError(
        form,
        new api.ApiError(422, "validation_failed", "a filter is not valid", p),
        "",
        "The search was not run",
      );
      return;
    }
    run(p, null);
  };
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    search();
  });
  sort.addEventListener("change", search);

  // The first page at once, from the address as it is.
  const known = new Set([
    "gpu_model",
    "max_price_micro",
    "sort",
    "verified_only",
    "include_busy",
    ...controls.keys(),
    ...kPassThrough,
  ]);
  const extra = new URLSearchParams([...query].filter(([k]) => !known.has(k)));
  const firstParams = params();
  if (firstParams instanceof URLSearchParams) {
    if (query.has("verified_only") && !verified.checked) firstParams.set("verified_only", query.get("verified_only")!);
    if (query.has("include_busy") && !busy.checked) firstParams.set("include_busy", query.get("include_busy")!);
    run(firstParams, extra);
  } else {
    search();
  }

  try {
    const models = await gpuModels(v.signal);
    replace(
      modelBoxes,
      models.map((m) => {
        const box = h("input", { type: "checkbox", value: m.id, checked: wanted.has(m.id), id: uid("cb") });
        return h("label", { class: "check", for: box.id }, box, modelLabel(m));
      }),
    );
  } catch (e) {
    if (isAbort(e)) return;
    replace(
      modelBoxes,
      h("p", { class: "small warn" }, "The GPU models could not be loaded; the search uses the models in the address."),
    );
  }
}

// #/rent/ID: the rental form of one offer on a page of its own, where a visitor who chose
// Rent lands after logging in.
export async function rentPage(v: View): Promise<void> {
  const back = h("p", { class: "back" }, h("a", { href: "#/marketplace" }, "← Marketplace"));
  let offer: api.Offer;
  try {
    offer = await api.get<api.Offer>(`/offers/${encodeURIComponent(v.params.id)}`, { signal: v.signal });
  } catch (e) {
    if (e instanceof api.ApiError && e.status === 404) {
      append(
        v.main,
        back,
        pageHeader("Rent GPUs"),
        h(
          "div",
          { class: "card" },
          h("p", null, "This offer is no longer on the marketplace: its GPUs were rented or withdrawn."),
          h("a", { class: "btn btn-primary", href: "#/marketplace" }, "Find other GPUs"),
        ),
      );
      return;
    }
    throw e;
  }
  append(
    v.main,
    back,
    pageHeader("Rent GPUs", `${offer.gpu_name} · ${locationText(offer)} · ${offer.provider.pseudonym}`),
    offer.gpus_available > 0
      ? h(
          "div",
          { class: "card" },
          rentForm(offer, v.signal, () => navigate("/marketplace")),
        )
      : h("div", { class: "banner banner-info", role: "status" }, "No GPU of this offer is free right now."),
  );
}
