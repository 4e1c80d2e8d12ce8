// Display formats: dates in the browser's locale and time zone, sizes, tiers, statuses.

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });

export function when(rfc3339: string | null | undefined): string {
  if (!rfc3339) return "—";
  const d = new Date(rfc3339);
  return Number.isNaN(d.getTime()) ? rfc3339 : dateTime.format(d);
}

// "12 s ago", "5 min ago", or the date.
export function ago(rfc3339: string | null | undefined, now = Date.now()): string {
  if (!rfc3339) return "never";
  const t = new Date(rfc3339).getTime();
  if (Number.isNaN(t)) return rfc3339;
  const s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return when(rfc3339);
}

export function gib(mb: number | null | undefined): string {
  if (mb === null || mb === undefined) return "—";
  return `${(mb / 1024).toFixed(mb % 1024 === 0 ? 0 : 1)} GiB`;
}

function figure(n: number): string {
  const digits = Math.abs(n) >= 100 ? 0 : Math.abs(n) >= 10 ? 1 : 2;
  return n.toLocaleString(undefined, { maximumFractionDigits: digits });
}

// Rates in one style across the dashboard: bits for networks ("940 Mbit/s", "18.9
// Gbit/s"), bytes for storage and memory ("850 MB/s", "2.1 GB/s"), SI prefixes.
export function bitRate(mbitPerS: number | null | undefined): string {
  if (mbitPerS === null || mbitPerS === undefined || !Number.isFinite(mbitPerS)) return "—";
  return mbitPerS >= 1000 ? `${figure(mbitPerS / 1000)} Gbit/s` : `${figure(mbitPerS)} Mbit/s`;
}

export function byteRate(mbPerS: number | null | undefined): string {
  if (mbPerS === null || mbPerS === undefined || !Number.isFinite(mbPerS)) return "—";
  return mbPerS >= 1000 ? `${figure(mbPerS / 1000)} GB/s` : `${figure(mbPerS)} MB/s`;
}

export function tierName(tier: string | null | undefined): string {
  if (tier === "enterprise") return "Enterprise";
  if (tier === "community") return "Community";
  return tier ?? "—";
}

const kStatusNames: Record<string, string> = {
  draft: "Draft",
  submitted: "Submitted: in review",
  needs_info: "More information needed",
  approved: "Approved",
  rejected: "Not approved",
};

export function statusName(status: string): string {
  return kStatusNames[status] ?? status;
}

const kActionNames: Record<string, string> = {
  created: "Draft created",
  updated: "Edited",
  submitted: "Submitted",
  resubmitted: "Resubmitted",
  approve: "Approved",
  reject: "Rejected",
  request_info: "More information requested",
};

export function actionName(action: string): string {
  return kActionNames[action] ?? action;
}

export function commitmentName(months: number | null | undefined): string {
  if (months === null || months === undefined) return "—";
  return months === 0 ? "None" : `${months} months`;
}

export const kDays = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"] as const;
export const kDayNames: Record<string, string> = {
  mon: "Mon",
  tue: "Tue",
  wed: "Wed",
  thu: "Thu",
  fri: "Fri",
  sat: "Sat",
  sun: "Sun",
};

export function plural(n: number, one: string, many = one + "s"): string {
  return `${n} ${n === 1 ? one : many}`;
}

// A length of time: "45 s", "17 min", "2 h 5 min", "3 d 4 h".
export function duration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return "—";
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  const m = Math.round(s / 60);
  if (m < 60) return `${m} min`;
  const hours = Math.floor(m / 60);
  if (hours < 48) return m % 60 ? `${hours} h ${m % 60} min` : `${hours} h`;
  const d = Math.floor(hours / 24);
  return hours % 24 ? `${d} d ${hours % 24} h` : `${d} d`;
}

// A fraction as a percentage: 0.99213 → "99.21 %"; null → "—".
export function percent(fraction: number | null | undefined, digits = 2): string {
  if (fraction === null || fraction === undefined || !Number.isFinite(fraction)) return "—";
  return `${(100 * fraction).toFixed(digits)} %`;
}

const dayTime = new Intl.DateTimeFormat(undefined, {
  weekday: "short",
  day: "numeric",
  month: "short",
  hour: "2-digit",
  minute: "2-digit",
});
const timeOnly = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit" });

// "Tue, 2 Dec, 14:00 – 16:00", or with both dates when the interval spans days.
export function timeRange(start: string, end: string): string {
  const a = new Date(start);
  const b = new Date(end);
  if (Number.isNaN(a.getTime()) || Number.isNaN(b.getTime())) return `${start} – ${end}`;
  return a.toDateString() === b.toDateString()
    ? `${dayTime.format(a)} – ${timeOnly.format(b)}`
    : `${dayTime.format(a)} – ${dayTime.format(b)}`;
}

// Basis points as a percentage: 2000 → "20 %", 1250 → "12.5 %".
export function bpsPercent(bps: number): string {
  const whole = Math.trunc(bps / 100);
  const frac = String(Math.abs(bps % 100))
    .padStart(2, "0")
    .replace(/0+$/, "");
  return `${whole}${frac ? "." + frac : ""} %`;
}

// ---- UTC days ("2026-12-07"), as payouts and earnings count them

// The UTC day of `t` (default now).
export function utcDay(t: Date | number = Date.now()): string {
  return new Date(t).toISOString().slice(0, 10);
}

// `day` moved by `n` days.
export function addDays(day: string, n: number): string {
  const t = Date.parse(`${day}T00:00:00Z`);
  return Number.isNaN(t) ? day : utcDay(t + n * 86400000);
}

export function isDay(s: string): boolean {
  return /^\d{4}-\d{2}-\d{2}$/.test(s) && !Number.isNaN(Date.parse(`${s}T00:00:00Z`));
}

const dayFormat = new Intl.DateTimeFormat(undefined, {
  weekday: "short",
  day: "numeric",
  month: "short",
  year: "numeric",
  timeZone: "UTC",
});

// "Mon, 7 Dec 2026" for "2026-12-07" (the day as such, in no time zone).
export function dayText(day: string | null | undefined): string {
  if (!day) return "—";
  const t = Date.parse(`${day}T00:00:00Z`);
  return Number.isNaN(t) ? day : dayFormat.format(t);
}

const monthFormat = new Intl.DateTimeFormat(undefined, { month: "long", year: "numeric", timeZone: "UTC" });

// "November 2026" for "2026-11".
export function monthText(month: string): string {
  const t = Date.parse(`${month}-01T00:00:00Z`);
  return Number.isNaN(t) ? month : monthFormat.format(t);
}

// GPU-seconds as GPU-hours, rounded down: two decimals ("1.50" for 5400), four below an
// hour ("0.0025" for 9 s).
export function gpuHours(seconds: number): string {
  const places = seconds < 3600 ? 4 : 2;
  const f = 10 ** places;
  return (Math.floor((seconds * f) / 3600) / f).toFixed(places);
}
