// The form that rents GPUs of one offer (POST /rentals): how many of its free GPUs, the
// workload, optional limits; what it costs per hour and how long the balance lasts at
// that rate. Sent with an Idempotency-Key, so that a retry after a lost answer does not
// start a second rental. On success the rental's page opens.
import * as api from "../api";
import { flash, navigate } from "../app";
import { append, busy, button, type Child, field, h, replace, uid } from "../dom";
import { clearFieldErrors, isAbort, StatusSlot } from "../errors";
import { duration } from "../format";
import { amount, costOver } from "../money";
import { IdempotentSubmit, showLocalErrors, TopUpHint, workloadFields } from "./workload";

export function rentForm(offer: api.Offer, signal: AbortSignal, onCancel?: () => void): HTMLFormElement {
  const titleId = uid("rent");
  const gpus = h(
    "select",
    null,
    Array.from({ length: Math.max(1, offer.gpus_available) }, (_, i) =>
      h("option", { value: String(i + 1) }, String(i + 1)),
    ),
  );
  const work = workloadFields({ privateImage: true });
  const estimate = h("p", { class: "estimate", "aria-live": "polite" });
  // The API names "balance" when it does not cover an hour (or the maximum duration).
  const balanceText = h("div", { class: "balance-text" });
  const topUp = new TopUpHint();
  const balanceLine = h(
    "fieldset",
    { class: "balance-line", "data-field": "balance" },
    h("legend", null, "Balance"),
    balanceText,
    topUp.el,
  );
  let balance: api.Balance | null = null;
  const slot = new StatusSlot();
  const submit = h("button", { type: "submit", class: "btn btn-primary" }, "Start the rental");
  const form = h(
    "form",
    { class: "rent-form", novalidate: true, "aria-labelledby": titleId, "data-offer": offer.id },
    h(
      "div",
      { class: "rent-head", "data-field": "offer_id" },
      h("h3", { id: titleId }, `Rent ${offer.gpu_name}`),
      h(
        "p",
        { class: "small muted" },
        amount(offer.price_micro, { unit: "USDC/h" }),
        ` per GPU from ${offer.provider.pseudonym}; billed by the second while it runs.`,
      ),
    ),
    slot.el,
    h(
      "div",
      { class: "row" },
      field("GPUs", gpus, { field: "gpus", hint: `${offer.gpus_available} free on this machine` }),
    ),
    work.parts,
    work.limits,
    estimate,
    balanceLine,
    h("div", { class: "actions" }, submit, onCancel ? button("Cancel", onCancel, { kind: "secondary" }) : null),
  );

  const update = () => {
    const perHourMicro = Number(gpus.value) * offer.price_micro;
    const maxS = work.maxDurationSeconds();
    const parts: Child[] = [h("strong", null, amount(perHourMicro, { unit: "USDC/h" }))];
    if (Number(gpus.value) > 1) {
      parts.push(` (${gpus.value} GPUs × `, amount(offer.price_micro, { unit: "USDC/h" }), ")");
    }
    if (maxS) parts.push("; at most ", amount(costOver(perHourMicro, maxS)), ` over ${duration(maxS)}`);
    replace(estimate, "Costs ", parts, ".");
    if (balance) {
      const lasts = perHourMicro > 0 ? Math.floor((balance.balance_micro * 3600) / perHourMicro) : null;
      replace(
        balanceText,
        h(
          "p",
          { class: "small" },
          "Yours: ",
          amount(balance.balance_micro),
          lasts !== null ? `, enough for about ${duration(lasts)} at this rate` : "",
          balance.running_rentals ? ` (with nothing else running; ${balance.running_rentals} running now)` : "",
          ". ",
          h("a", { href: "#/balance" }, "Balance and statement"),
        ),
      );
    }
  };
  gpus.addEventListener("change", update);
  work.onChange(update);
  update();
  void (async () => {
    try {
      balance = await api.get<api.Balance>("/me/balance", { signal });
      update();
    } catch (e) {
      if (!isAbort(e)) replace(balanceText, h("p", { class: "small warn" }, "Your balance could not be loaded."));
    }
  })();

  const attempts = new IdempotentSubmit();
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    void busy(submit, async () => {
      slot.clear();
      clearFieldErrors(form);
      const read = work.read();
      if (!read.ok) {
        showLocalErrors(slot, form, read.errors, "The rental was not started");
        return;
      }
      const body: api.CreateRental = { offer_id: offer.id, gpus: Number(gpus.value), ...read.body };
      const key = attempts.keyFor(body);
      let rental: api.Rental;
      try {
        rental = await api.post<api.Rental>("/rentals", body, { headers: { "Idempotency-Key": key } });
        attempts.settled(null);
      } catch (e) {
        attempts.settled(e);
        if (e instanceof api.ApiError && e.status === 409) {
          slot.error(e, "The rental was not started");
          append(slot.el, h("p", { class: "small" }, "Search again for GPUs that are free now."));
          return;
        }
        slot.formError(form, e, "The rental was not started", "The rental was not started");
        topUp.after(e);
        if (e instanceof api.ApiError && (e.status === 0 || e.status >= 500)) {
          append(
            slot.el,
            h("p", { class: "small" }, "Try again: a retry of the same request never starts a second rental."),
          );
        }
        return;
      }
      flash(`Rental started: ${offer.gpu_name} × ${rental.gpus}. It is billed while it runs; stop it here.`);
      navigate(`/rentals/${encodeURIComponent(rental.id)}`);
    });
  });
  return form;
}
