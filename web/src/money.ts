// USDC amounts as the API carries them: integer micro-USDC (1 USDC = 1,000,000). Text a
// person types ("0.45", "0,45", "2") becomes micro-USDC by string arithmetic, never through
// a float, so that "0.45" is exactly 450000; and micro-USDC is shown as decimal text.

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
// at least two decimals.
export function usdcText(micro: number): string {
  const neg = micro < 0;
  const digits = String(Math.abs(Math.trunc(micro))).padStart(kDecimals + 1, "0");
  const whole = digits.slice(0, -kDecimals);
  let frac = digits.slice(-kDecimals).replace(/0+$/, "");
  if (frac.length < 2) frac = frac.padEnd(2, "0");
  return `${neg ? "−" : ""}${whole}.${frac}`;
}

// "0.45 USDC/h": a price per GPU-hour.
export function perHour(micro: number | null | undefined): string {
  return micro === null || micro === undefined ? "—" : `${usdcText(micro)} USDC/h`;
}

// "0.45 USDC"; null → "—".
export function usdc(micro: number | null | undefined): string {
  return micro === null || micro === undefined ? "—" : `${usdcText(micro)} USDC`;
}

// A movement of a balance: "+25.00" into it, "−0.45" out of it.
export function signedUsdc(micro: number): string {
  return micro > 0 ? `+${usdcText(micro)}` : usdcText(micro);
}

// What `perHourMicro` per hour costs over `seconds` (an integer), rounded up to the
// micro-USDC. Whole hours first, so the products stay exact integers for any rate below
// 2.5 million USDC per hour.
export function costOver(perHourMicro: number, seconds: number): number {
  const whole = Math.floor(seconds / 3600);
  const rest = seconds - whole * 3600;
  return whole * perHourMicro + Math.ceil((perHourMicro * rest) / 3600);
}
