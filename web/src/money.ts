// USDC amounts as the API carries them: integer micro-USDC (1 USDC = 1,000,000). Text a
// person types ("0.45", "0,45", "2") becomes micro-USDC by string arithmetic, never through
// a float, so that "0.45" is exactly 450000; and micro-USDC is shown as decimal text.
//
// One way to show an amount across the dashboard: two decimals, rounded half away from zero
// to the cent ("0.12 USDC"), with the exact amount on hover (title "0.123456 USDC"); a
// nonzero amount that rounds to nothing reads "<0.01" ("−<0.01" when negative). `amount`
// makes that element; `usdc`, `perHour` and `signedUsdc` are the same text where only text
// can go (an option, an aria-label, a chart's point). `exactText` is for what a person
// edits (the value of a price or amount input) and for the hover text: it is not display.

export const kMicrosPerUsdc = 1_000_000;
const kDecimals = 6;

export type Parsed = { ok: true; micro: number } | { ok: false; error: string };

// "0.45" → 450000. A comma is taken as the decimal separator too. At most 6 decimals; the
// bounds of what is a valid price are the API's (its message says them).
export function parseUsdc(text: string): Parsed {
  const t = text.trim().replace(",", ".");
  const m = t.match(/^(\d*)(?:\.(\d*))?$/);
  if (!t || !m || (m[1] === "" && !m[2])) {
    return { ok: false, error: "must be an amount in USDC such as 0.45" };
  }
  const frac = m[2] ?? "";
  if (frac.length > kDecimals) {
    return { ok: false, error: `has more than ${kDecimals} decimals (the smallest unit is 0.000001 USDC)` };
  }
  // The digits of the amount in micro-USDC: the whole part, then the fraction to 6 places.
  const digits = (m[1] + frac.padEnd(kDecimals, "0")).replace(/^0+(?=\d)/, "");
  if (digits.length > 15) return { ok: false, error: "is far too large" }; // exact as a number
  return { ok: true, micro: Number(digits) };
}

// 450000 → "0.45", 123456 → "0.123456", 2000000 → "2.00": every digit that is there, and
// at least two decimals. For input values and the hover text of an amount, not for display.
export function exactText(micro: number): string {
  const neg = micro < 0;
  const digits = String(Math.abs(Math.trunc(micro))).padStart(kDecimals + 1, "0");
  const whole = digits.slice(0, -kDecimals);
  let frac = digits.slice(-kDecimals).replace(/0+$/, "");
  if (frac.length < 2) frac = frac.padEnd(2, "0");
  return `${neg ? "−" : ""}${whole}.${frac}`;
}

// 123456 → "0.12", 125000 → "0.13", −5000 → "−0.01", 4999 → "<0.01", 0 → "0.00", 2000000 →
// "2.00": to the cent, half away from zero, in integers (BigInt: no float ever rounds it).
// With `signed`, a positive amount gets a "+" ("+0.12", "+<0.01"); zero has no sign.
export function centsText(micro: number, signed = false): string {
  const m = BigInt(Math.trunc(micro));
  const neg = m < 0n;
  const abs = neg ? -m : m;
  const sign = neg ? "−" : signed && abs > 0n ? "+" : "";
  const cents = (abs + 5000n) / 10000n;
  if (cents === 0n && abs > 0n) return `${sign}<0.01`;
  const digits = cents.toString().padStart(3, "0");
  return `${sign}${digits.slice(0, -2)}.${digits.slice(-2)}`;
}

export interface AmountOptions {
  // "USDC" (the default) or "USDC/h", a price per GPU-hour.
  unit?: "USDC" | "USDC/h";
  // The number alone, under a column head or before words that name the unit; the hover
  // text names it still.
  bare?: boolean;
  // A movement of a balance: "+25.00" into it, "−0.45" out of it.
  signed?: boolean;
}

// The exact amount as the hover text shows it: "0.123456 USDC", "+25.00 USDC/h".
export function exactUsdc(micro: number, o: AmountOptions = {}): string {
  return `${o.signed && micro > 0 ? "+" : ""}${exactText(micro)} ${o.unit ?? "USDC"}`;
}

// <span class="amount" title="0.123456 USDC">0.12 USDC</span>; null → "—". (Made here
// rather than with dom.ts's h, so that this file stands alone: the ux browser suite runs
// its text functions in node.)
export function amount(micro: number | null | undefined, o: AmountOptions = {}): HTMLSpanElement | string {
  if (micro === null || micro === undefined) return "—";
  const text = centsText(micro, o.signed);
  const el = document.createElement("span");
  el.className = "amount";
  el.title = exactUsdc(micro, o);
  el.textContent = o.bare ? text : `${text} ${o.unit ?? "USDC"}`;
  return el;
}

// "0.45 USDC/h": a price per GPU-hour, as text; null → "—".
export function perHour(micro: number | null | undefined): string {
  return micro === null || micro === undefined ? "—" : `${centsText(micro)} USDC/h`;
}

// "0.45 USDC", as text; null → "—".
export function usdc(micro: number | null | undefined): string {
  return micro === null || micro === undefined ? "—" : `${centsText(micro)} USDC`;
}

// A movement of a balance as text: "+25.00" into it, "−0.45" out of it.
export function signedUsdc(micro: number): string {
  return centsText(micro, true);
}

// What `perHourMicro` per hour costs over `seconds` (an integer), rounded up to the
// micro-USDC. Whole hours first, so the products stay exact integers for any rate below
// 2.5 million USDC per hour.
export function costOver(perHourMicro: number, seconds: number): number {
  const whole = Math.floor(seconds / 3600);
  const rest = seconds - whole * 3600;
  return whole * perHourMicro + Math.ceil((perHourMicro * rest) / 3600);
}
