// Checks of payout details as they are typed (PAY-2), before the server sees them: a
// Solana wallet's base58 form, an IBAN's country, length and ISO 7064 MOD 97-10 check
// digits, a BIC's form, an ABA routing number's 3-7-1 check digit and a US account
// number. The server checks the same (src/platform/bank/details.cc, solana/address.cc)
// and more (a wallet must be an ed25519 key), and its field errors are shown too. The
// messages read after the field's label, as the API's do ("IBAN: has wrong check digits").

// What a check says about the text so far: an error, or (while it is only unfinished) a
// note of what is still missing, or nothing when it is fine.
export interface Check {
  error?: string;
  incomplete?: string;
}

const kBase58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

// The bytes `s` decodes to in base58, or null when a character is not base58.
export function base58Decode(s: string): Uint8Array | null {
  const bytes: number[] = []; // little-endian
  for (const ch of s) {
    const v = kBase58.indexOf(ch);
    if (v < 0) return null;
    let carry = v;
    for (let i = 0; i < bytes.length; i++) {
      carry += bytes[i] * 58;
      bytes[i] = carry & 0xff;
      carry >>= 8;
    }
    while (carry) {
      bytes.push(carry & 0xff);
      carry >>= 8;
    }
  }
  for (let i = 0; i < s.length && s[i] === "1"; i++) bytes.push(0);
  return Uint8Array.from(bytes.reverse());
}

// A Solana address: 32 bytes in base58 (32 to 44 characters).
export function checkWallet(raw: string): Check {
  const s = raw.trim();
  if (!s) return { incomplete: "required" };
  for (let i = 0; i < s.length; i++) {
    if (!kBase58.includes(s[i])) {
      return {
        error: `is not a Solana address: “${s[i]}” at position ${i + 1} is not a base58 character (base58 has no 0, O, I or l)`,
      };
    }
  }
  if (s.length > 44) return { error: `is not a Solana address: it has ${s.length} characters, at most 44` };
  const bytes = base58Decode(s);
  if (bytes && bytes.length === 32) return {};
  if (s.length < 32 || (bytes && bytes.length < 32 && s.length < 44))
    return { incomplete: `${s.length} characters so far: a Solana address has 32 to 44` };
  return { error: `is not a Solana address: it decodes to ${bytes?.length ?? 0} bytes, not 32` };
}

// IBAN lengths of the SEPA countries (SWIFT IBAN Registry), and whether the country is in
// the EEA (outside it a payment needs the bank's BIC).
const kIban: Record<string, [number, boolean]> = {
  AD: [24, false],
  AL: [28, false],
  AT: [20, true],
  BE: [16, true],
  BG: [22, true],
  CH: [21, false],
  CY: [28, true],
  CZ: [24, true],
  DE: [22, true],
  DK: [18, true],
  EE: [20, true],
  ES: [24, true],
  FI: [18, true],
  FR: [27, true],
  GB: [22, false],
  GI: [23, false],
  GR: [27, true],
  HR: [21, true],
  HU: [28, true],
  IE: [22, true],
  IS: [26, true],
  IT: [27, true],
  LI: [21, true],
  LT: [20, true],
  LU: [20, true],
  LV: [21, true],
  MC: [27, false],
  MD: [24, false],
  ME: [22, false],
  MK: [19, false],
  MT: [31, true],
  NL: [18, true],
  NO: [15, true],
  PL: [28, true],
  PT: [25, true],
  RO: [24, true],
  RS: [22, false],
  SE: [24, true],
  SI: [19, true],
  SK: [24, true],
  SM: [27, false],
  VA: [22, false],
};

// "de89 3704 0044 0532 0130 00" → "DE89370400440532013000".
export function electronicIban(raw: string): string {
  return raw.replace(/\s+/g, "").toUpperCase();
}

// "DE89370400440532013000" → "DE89 3704 0044 0532 0130 00".
export function printIban(iban: string): string {
  return electronicIban(iban).replace(/(.{4})(?=.)/g, "$1 ");
}

// ISO 7064 MOD 97-10 over the IBAN moved round (country and check digits last), the
// letters as 10..35, a few digits at a time so that no number grows past 2^53.
export function ibanMod97(iban: string): number {
  const moved = iban.slice(4) + iban.slice(0, 4);
  let rest = 0;
  for (const ch of moved) {
    const v = ch >= "A" && ch <= "Z" ? ch.charCodeAt(0) - 55 : Number(ch);
    rest = (rest * (v >= 10 ? 100 : 10) + v) % 97;
  }
  return rest;
}

export function checkIban(raw: string): Check {
  const s = electronicIban(raw);
  if (!s) return { incomplete: "required" };
  if (!/^[A-Z0-9]*$/.test(s)) return { error: "may contain only letters, digits and spaces" };
  if (s.length < 2) return { incomplete: "starts with a two-letter country code, such as DE" };
  if (!/^[A-Z]{2}/.test(s)) return { error: "must start with a two-letter country code, such as DE" };
  const country = kIban[s.slice(0, 2)];
  if (!country)
    return { error: `must start with the code of a SEPA country, such as DE (${s.slice(0, 2)} is not one)` };
  if (s.length >= 4 && !/^[A-Z]{2}\d{2}/.test(s)) return { error: "must have two check digits after the country code" };
  const [length] = country;
  if (s.length > length) return { error: `must have ${length} characters for ${s.slice(0, 2)} (it has ${s.length})` };
  if (s.length < length) return { incomplete: `${s.length} of ${length} characters for ${s.slice(0, 2)}` };
  if (ibanMod97(s) !== 1) return { error: "has wrong check digits: check it for a typing mistake" };
  return {};
}

// Whether a payment to this IBAN needs the BIC (a SEPA country outside the EEA).
export function ibanNeedsBic(raw: string): boolean {
  const country = kIban[electronicIban(raw).slice(0, 2)];
  return country ? !country[1] : false;
}

// A BIC (ISO 9362): 4 letters, a country, 2 letters or digits, and an optional branch.
export function checkBic(raw: string): Check {
  const s = raw.replace(/\s+/g, "").toUpperCase();
  if (!s) return {};
  if (!/^[A-Z0-9]*$/.test(s)) return { error: "may contain only letters, digits and spaces" };
  if (!/^[A-Z]{0,4}$/.test(s.slice(0, 4))) return { error: "must start with 4 letters, the bank's code" };
  if (s.length >= 6 && !/^[A-Z]{2}$/.test(s.slice(4, 6)))
    return { error: "must have a country code in its 5th and 6th characters" };
  if (s.length > 11) return { error: `must have 8 or 11 letters and digits (it has ${s.length})` };
  if (s.length < 8) return { incomplete: `${s.length} of 8 or 11 characters` };
  if (s.length > 8 && s.length < 11) return { incomplete: `${s.length} characters: 8 or 11` };
  return {};
}

// An ABA routing transit number: 9 digits, a Federal Reserve prefix, and the 3-7-1 check
// digit (3·(d1+d4+d7) + 7·(d2+d5+d8) + (d3+d6+d9) is a multiple of 10).
export function abaChecksum(routing: string): number {
  const d = [...routing].map(Number);
  return (3 * (d[0] + d[3] + d[6]) + 7 * (d[1] + d[4] + d[7]) + (d[2] + d[5] + d[8])) % 10;
}

export function checkRouting(raw: string): Check {
  const s = raw.trim();
  if (!s) return { incomplete: "required" };
  if (!/^\d*$/.test(s)) return { error: "must be 9 digits" };
  if (s.length > 9) return { error: `must be 9 digits (it has ${s.length})` };
  if (s.length < 9) return { incomplete: `${s.length} of 9 digits` };
  if (s === "000000000") return { error: "is not a routing number" };
  const prefix = Number(s.slice(0, 2));
  const known = prefix <= 12 || (prefix >= 21 && prefix <= 32) || (prefix >= 61 && prefix <= 72) || prefix === 80;
  if (!known) return { error: "must start with 00–12, 21–32, 61–72 or 80 (a Federal Reserve routing symbol)" };
  if (abaChecksum(s) !== 0) return { error: "has a wrong check digit: check it for a typing mistake" };
  return {};
}

export function checkAchAccount(raw: string): Check {
  const s = raw.trim();
  if (!s) return { incomplete: "required" };
  if (!/^\d*$/.test(s)) return { error: "may contain only digits" };
  if (s.length > 17) return { error: `must be 4 to 17 digits (it has ${s.length})` };
  if (s.length < 4) return { incomplete: `${s.length} of at least 4 digits` };
  return {};
}

export function checkHolder(raw: string): Check {
  const s = raw.trim();
  if (!s) return { incomplete: "required" };
  if (s.length > 70) return { error: `must be at most 70 characters (it has ${s.length})` };
  return {};
}
