// The workload part of a rental or a job: image, command, environment and the optional
// limits (maximum duration, maximum cost), read into the API's fields. What can be told
// here (an environment line that is not NAME=value, an amount that is not one) is
// reported under the API's field names, next to the same inputs as the API's own errors.
import * as api from "../api";
import { append, field, h, replace } from "../dom";
import { StatusSlot } from "../errors";
import { parseUsdc } from "../money";

export interface WorkloadBody {
  image: string;
  command?: string[];
  env?: Record<string, string>;
  ports?: api.PortSpec[];
  registry_auth?: { username: string; password: string };
  max_duration_s?: number;
  max_cost_micro?: number;
}

export type Read<T> = { ok: true; body: T } | { ok: false; errors: Record<string, string> };

// The words of a command line as a POSIX shell splits them, with nothing expanded:
// blanks (newlines too) separate words; '...' keeps everything inside; "..." keeps
// everything but \" \\ \$ \` and a backslash-newline; a backslash outside quotes keeps
// the next character. So `sh -c 'while true; do date; sleep 5; done'` is three arguments.
export function splitWords(text: string): { ok: true; args: string[] } | { ok: false; error: string } {
  const args: string[] = [];
  let word = "";
  let inWord = false;
  for (let i = 0; i < text.length;) {
    const c = text[i];
    if (c === "'") {
      const end = text.indexOf("'", i + 1);
      if (end < 0) return { ok: false, error: "has a ' (single quote) that is not closed" };
      word += text.slice(i + 1, end);
      inWord = true;
      i = end + 1;
    } else if (c === '"') {
      inWord = true;
      let closed = false;
      for (i++; i < text.length;) {
        const d = text[i];
        if (d === '"') {
          closed = true;
          i++;
          break;
        }
        if (d === "\\" && i + 1 < text.length && '"\\$`\n'.includes(text[i + 1])) {
          if (text[i + 1] !== "\n") word += text[i + 1];
          i += 2;
          continue;
        }
        word += d;
        i++;
      }
      if (!closed) return { ok: false, error: 'has a " (double quote) that is not closed' };
    } else if (c === "\\") {
      if (i + 1 >= text.length) return { ok: false, error: "ends with a \\ that escapes nothing" };
      if (text[i + 1] !== "\n") {
        word += text[i + 1];
        inWord = true;
      }
      i += 2;
    } else if (/\s/.test(c)) {
      if (inWord) args.push(word);
      word = "";
      inWord = false;
      i++;
    } else {
      word += c;
      inWord = true;
      i++;
    }
  }
  if (inWord) args.push(word);
  return { ok: true, args };
}

// `args` as a shell command line that splitWords reads back as the same arguments.
export function quoteWords(args: string[]): string {
  return args.map((a) => (/^[A-Za-z0-9_@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, "'\\''")}'`)).join(" ");
}

// The arguments of a command, each in a box of its own, so that one holding spaces reads
// as one.
export function argvList(args: string[]): HTMLElement {
  return h(
    "ol",
    { class: "argv", "aria-label": `${args.length} argument${args.length === 1 ? "" : "s"}` },
    args.map((a) => h("li", null, h("code", null, a === "" ? "''" : a))),
  );
}

const kEnvName = /^[A-Za-z_][A-Za-z0-9_]*$/;

// NAME=value per line; blank lines and lines starting with # are skipped.
export function parseEnv(text: string): { ok: true; env: Record<string, string> } | { ok: false; error: string } {
  const env: Record<string, string> = {};
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].replace(/\r$/, "");
    if (!line.trim() || line.trim().startsWith("#")) continue;
    const eq = line.indexOf("=");
    const name = eq > 0 ? line.slice(0, eq).trim() : "";
    if (!kEnvName.test(name)) {
      return { ok: false, error: `line ${i + 1} must be NAME=value, the name of letters, digits and _` };
    }
    if (name in env) return { ok: false, error: `line ${i + 1}: ${name} is set twice` };
    env[name] = line.slice(eq + 1);
  }
  return { ok: true, env };
}

// "8888, 22/tcp, 8080/public": an HTTP port, a TCP port, an HTTP port anyone may open;
// commas or spaces between them. The API checks the rest (at most 16, each once).
export function parsePorts(text: string): { ok: true; ports: api.PortSpec[] } | { ok: false; error: string } {
  const ports: api.PortSpec[] = [];
  for (const word of text.split(/[\s,]+/).filter(Boolean)) {
    const m = word.toLowerCase().match(/^(\d{1,5})(?:\/(http|tcp))?(?:\/(public))?$/);
    const port = m ? Number(m[1]) : 0;
    if (!m || port < 1 || port > 65535) {
      return { ok: false, error: `"${word}" must be a port from 1 to 65535, then /tcp or /public if so` };
    }
    if (m[2] === "tcp" && m[3]) return { ok: false, error: `"${word}": only an HTTP port can be public` };
    const spec: api.PortSpec = { port, protocol: m[2] === "tcp" ? "tcp" : "http" };
    if (m[3]) spec.public = true;
    ports.push(spec);
  }
  return { ok: true, ports };
}

const kUnits: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 };

// "90 min", "2 h", "1.5h", "1 d", "45 s"; a bare number is hours. Seconds, or an error.
export function parseDuration(text: string): { ok: true; seconds: number } | { ok: false; error: string } {
  const m = text
    .trim()
    .replace(",", ".")
    .match(/^(\d+(?:\.\d+)?)\s*(s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?)?$/i);
  if (!m) return { ok: false, error: "must be a length of time such as 90 min, 2 h or 1 d" };
  const unit = (m[2] ?? "h")[0].toLowerCase();
  return { ok: true, seconds: Math.round(Number(m[1]) * kUnits[unit]) };
}

export interface WorkloadFields {
  // The inputs, to place in the form.
  readonly parts: HTMLElement[];
  readonly limits: HTMLElement;
  readonly image: HTMLInputElement;
  read(): Read<WorkloadBody>;
  // The maximum duration typed, in seconds; null when empty or not a duration.
  maxDurationSeconds(): number | null;
  // Called when the limits change (for cost estimates).
  onChange(fn: () => void): void;
}

// `privateImage`: with fields for a private registry's credentials (rentals take them,
// jobs do not: a queued job would have to keep the password).
export function workloadFields(opts: { privateImage?: boolean } = {}): WorkloadFields {
  const image = h("input", {
    type: "text",
    autocomplete: "off",
    spellcheck: false,
    maxlength: 255,
    placeholder: "e.g. pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime",
  });
  const command = h("textarea", { rows: 2, spellcheck: false, maxlength: 16384, class: "mono" });
  // What will run, argument by argument, as it is typed.
  const commandPreview = h("div", { class: "command-preview small", "aria-live": "polite" });
  const preview = () => {
    if (!command.value.trim()) return replace(commandPreview);
    const words = splitWords(command.value);
    if (!words.ok) return replace(commandPreview, h("span", { class: "muted" }, `The command ${words.error}.`));
    replace(commandPreview, h("span", { class: "muted" }, "Runs: "), argvList(words.args));
  };
  command.addEventListener("input", preview);
  const env = h("textarea", { rows: 3, spellcheck: false, maxlength: 65536, class: "mono" });
  env.placeholder = "EPOCHS=3\nWANDB_MODE=offline";
  const ports = h("input", { type: "text", autocomplete: "off", spellcheck: false, maxlength: 512, class: "mono" });
  ports.placeholder = "8888, 22/tcp";
  const maxDuration = h("input", { type: "text", autocomplete: "off", inputmode: "text", maxlength: 32 });
  const maxCost = h("input", { type: "text", autocomplete: "off", inputmode: "decimal", maxlength: 32 });
  const registryUser = h("input", { type: "text", autocomplete: "off", spellcheck: false, maxlength: 256 });
  // Never offered to the browser's password manager as the gpunex password.
  const registryPassword = h("input", { type: "password", autocomplete: "new-password", maxlength: 4096 });
  const parts: HTMLElement[] = [
    field("Image", image, {
      field: "image",
      hint: opts.privateImage
        ? "A container image from a public registry, or from a private one with its credentials below."
        : "A container image from a public registry.",
    }),
    field("Command (optional)", command, {
      field: "command",
      hint: "Split into arguments as a shell splits words (nothing is expanded): quote an argument with spaces, e.g. sh -c 'while true; do date; sleep 5; done'. Empty: the image's own command.",
    }),
    commandPreview,
    field("Environment variables (optional)", env, { field: "env", hint: "One NAME=value per line." }),
    field("Ports (optional)", ports, {
      field: "ports",
      hint: "The container's ports you will reach: 8888 is HTTP (opened in the browser), 22/tcp a TCP port, 8080/public an HTTP port anyone may open.",
    }),
  ];
  if (opts.privateImage) {
    parts.push(
      h(
        "fieldset",
        { class: "registry" },
        h("legend", null, "Private registry (optional)"),
        h(
          "p",
          { class: "small muted" },
          "Used for this image's pull only, then forgotten: never stored or shown. Prefer a read-only token to your password.",
        ),
        h(
          "div",
          { class: "row" },
          field("Registry user", registryUser, { field: "registry_auth.username" }),
          field("Password or token", registryPassword, { field: "registry_auth.password" }),
        ),
      ),
    );
  }
  const limits = h(
    "fieldset",
    { class: "limits" },
    h("legend", null, "Limits (optional)"),
    h(
      "div",
      { class: "row" },
      field("Max. duration", maxDuration, { field: "max_duration_s", hint: "e.g. 90 min, 2 h, 1 d" }),
      field("Max. cost (USDC)", maxCost, { field: "max_cost_micro", hint: "The rental ends when it has cost this" }),
    ),
  );
  return {
    parts,
    limits,
    image,
    onChange(fn) {
      maxDuration.addEventListener("input", fn);
      maxCost.addEventListener("input", fn);
    },
    maxDurationSeconds() {
      const d = maxDuration.value.trim() ? parseDuration(maxDuration.value) : null;
      return d && d.ok ? d.seconds : null;
    },
    read() {
      const errors: Record<string, string> = {};
      const body: WorkloadBody = { image: image.value.trim() };
      if (!body.image) errors.image = "is required: a container image such as ubuntu:24.04";
      const words = splitWords(command.value);
      if (!words.ok) errors.command = words.error;
      else if (words.args.length) body.command = words.args;
      const e = parseEnv(env.value);
      if (!e.ok) errors.env = e.error;
      else if (Object.keys(e.env).length) body.env = e.env;
      const p = parsePorts(ports.value);
      if (!p.ok) errors.ports = p.error;
      else if (p.ports.length) body.ports = p.ports;
      const user = registryUser.value.trim();
      if (user || registryPassword.value) {
        if (!user) errors["registry_auth.username"] = "is required with a password";
        if (!registryPassword.value) errors["registry_auth.password"] = "is required with a user";
        if (user && registryPassword.value) body.registry_auth = { username: user, password: registryPassword.value };
      }
      if (maxDuration.value.trim()) {
        const d = parseDuration(maxDuration.value);
        if (!d.ok) errors.max_duration_s = d.error;
        else body.max_duration_s = d.seconds;
      }
      if (maxCost.value.trim()) {
        const c = parseUsdc(maxCost.value);
        if (!c.ok) errors.max_cost_micro = c.error;
        else body.max_cost_micro = c.micro;
      }
      return Object.keys(errors).length ? { ok: false, errors } : { ok: true, body };
    },
  };
}

// In a rent or job form's balance, under the API's error when the balance does not cover
// the first hour: a link to top up.
export class TopUpHint {
  readonly el = h(
    "p",
    { class: "small topup-hint", hidden: true },
    "Not enough? ",
    h("a", { href: "#/balance/top-up" }, "Top up your balance"),
    ", then try again.",
  );

  // After a submission: shown when `err` names the balance, hidden otherwise.
  after(err: unknown): void {
    this.el.hidden = !(err instanceof api.ApiError && "balance" in err.fields);
  }
}

// Errors found before sending, shown as the API's are (beside their fields, listed in
// `slot`).
export function showLocalErrors(slot: StatusSlot, form: HTMLElement, errors: Record<string, string>, title: string) {
  slot.formError(form, new api.ApiError(422, "validation_failed", "a field is not valid", errors), "", title);
}

// One Idempotency-Key per submission attempt: the same key while the same body is sent
// again after a failure that gave no answer (the network, a 5xx), a new one for a changed
// body or after the server answered.
export class IdempotentSubmit {
  private key: string | null = null;
  private sent = "";

  keyFor(body: unknown): string {
    const text = JSON.stringify(body);
    if (!this.key || text !== this.sent) {
      this.key = api.newIdempotencyKey();
      this.sent = text;
    }
    return this.key;
  }

  // After the outcome of a request made with keyFor()'s key.
  settled(err: unknown): void {
    if (!unanswered(err)) this.key = null;
  }

  // After a request made with keyFor()'s key failed: `slot` says what was not done
  // (`nothing`), with the fields' errors beside them, and where no answer came that trying
  // again is safe (`again`). Returns whether the server answered (the form may be sent
  // anew).
  failed(err: unknown, slot: StatusSlot, form: HTMLElement, nothing: string, again: string): boolean {
    this.settled(err);
    slot.formError(form, err, nothing, nothing);
    if (!unanswered(err)) return true;
    append(slot.el, h("p", { class: "small" }, again));
    return false;
  }
}

// A failure that gave no answer (the network, a 5xx): the request may have been done.
function unanswered(err: unknown): boolean {
  return err instanceof api.ApiError && (err.status === 0 || err.status >= 500);
}
