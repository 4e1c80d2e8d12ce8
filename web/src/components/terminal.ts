// A shell in a running rental, on its page (docs/access.md, "Exec"; issue 26): xterm.js
// on the exec WebSocket, GET /api/v1/rentals/{id}/exec with Kubernetes' v5.channel.k8s.io
// (a channel byte, then the bytes): keys go to stdin (0), the terminal's size goes as a
// resize (4) whenever it changes, stdout (1) and stderr (2) are written to the terminal,
// and the status (3) says how the shell ended. The shell is bash where the image has it,
// else sh. The session cookie opens the socket (the platform checks the page's origin).
import type { FitAddon } from "@xterm/addon-fit";
import type { Terminal } from "@xterm/xterm";

import * as api from "../api";
import { button, h, replace } from "../dom";

const kProtocol = "v5.channel.k8s.io";
// bash where the image has it, else sh, in a terminal of the screen's size from its first
// instant (the engine starts a command before it can be told the size; the resize
// messages follow the screen afterwards).
function shellCommand(columns: number, rows: number): string[] {
  return [
    "/bin/sh",
    "-c",
    `stty rows ${rows} cols ${columns} 2>/dev/null; ` +
      "if command -v bash >/dev/null 2>&1; then exec bash -l; else exec sh -l; fi",
  ];
}

const enum Channel {
  Stdin = 0,
  Stdout = 1,
  Stderr = 2,
  Status = 3,
  Resize = 4,
}

// xterm.js styles itself with <style> elements, which the dashboard's Content Security
// Policy refuses (style-src 'self', no inline styles). Here its style elements are inert
// stand-ins whose text goes into constructed style sheets instead, which that policy
// allows: nothing inline is ever applied.
let adoptingStyles = false;
function adoptXtermStyles(): void {
  if (adoptingStyles) return;
  adoptingStyles = true;
  const create = document.createElement.bind(document);
  document.createElement = ((tag: string, options?: ElementCreationOptions) => {
    if (tag.toLowerCase() !== "style") return create(tag, options);
    const sheet = new CSSStyleSheet();
    document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
    const standIn = create("gpx-style");
    standIn.hidden = true;
    let text = "";
    Object.defineProperty(standIn, "textContent", {
      get: () => text,
      set: (v: string | null) => {
        text = v ?? "";
        sheet.replaceSync(text);
      },
    });
    const remove = standIn.remove.bind(standIn);
    standIn.remove = () => {
      document.adoptedStyleSheets = document.adoptedStyleSheets.filter((s) => s !== sheet);
      remove();
    };
    return standIn;
  }) as typeof document.createElement;
}

// The exec WebSocket's URL, on this dashboard's own host.
function execUrl(rentalId: string, columns: number, rows: number): string {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  const q = new URLSearchParams();
  for (const arg of shellCommand(columns, rows)) q.append("command", arg);
  q.set("tty", "true");
  return `${scheme}//${location.host}/api/v1/rentals/${encodeURIComponent(rentalId)}/exec?${q}`;
}

function frame(channel: Channel, payload: Uint8Array | string): Uint8Array {
  const bytes = typeof payload === "string" ? new TextEncoder().encode(payload) : payload;
  const out = new Uint8Array(bytes.length + 1);
  out[0] = channel;
  out.set(bytes, 1);
  return out;
}

// How the shell ended, from the Kubernetes status of channel 3.
function endedText(status: string): string {
  try {
    const s = JSON.parse(status) as {
      status?: string;
      message?: string;
      details?: { causes?: { reason?: string; message?: string }[] };
    };
    if (s.status === "Success") return "The shell exited (code 0).";
    const code = s.details?.causes?.find((c) => c.reason === "ExitCode")?.message;
    return code ? `The shell exited with code ${code}.` : `The shell ended: ${s.message ?? "unknown"}.`;
  } catch {
    return "The shell ended.";
  }
}

// Why the socket closed, for a close without a status.
function closedText(ev: CloseEvent): string {
  if (ev.code === 4410) return "The rental has ended.";
  if (ev.code === 4503) return "The machine's agent is not reachable; try again shortly.";
  if (ev.code === 4429) return "Too many shells are open on this machine; close one and try again.";
  if (ev.reason) return `The connection closed: ${ev.reason}.`;
  return "The connection closed.";
}

export function terminalSection(rental: api.Rental): HTMLElement | null {
  if (rental.state !== "running") return null;
  const screen = h("div", { class: "terminal-screen", role: "region", "aria-label": "Shell in the container" });
  const status = h("p", { class: "terminal-status small", role: "status", "aria-live": "polite" });
  let term: Terminal | null = null;
  let fit: FitAddon | null = null;
  let socket: WebSocket | null = null;
  let resizeObserver: ResizeObserver | null = null;
  const encoder = new TextEncoder();

  const send = (channel: Channel, payload: Uint8Array | string) => {
    if (socket?.readyState === WebSocket.OPEN) socket.send(frame(channel, payload));
  };
  const sendSize = () => {
    if (term) send(Channel.Resize, JSON.stringify({ Width: term.cols, Height: term.rows }));
  };

  const disconnect = () => {
    socket?.close(1000, "");
    socket = null;
  };

  // xterm.js is loaded the first time a shell opens, not with the dashboard.
  const connect = async () => {
    disconnect();
    if (!term) {
      replace(status, "Loading the terminal…");
      const xterm = await import("./xterm");
      if (term) return connect(); // another click loaded it meanwhile
      adoptXtermStyles();
      term = new xterm.Terminal({
        cursorBlink: true,
        fontFamily: "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace",
        fontSize: 14,
        scrollback: 5000,
        convertEol: false,
      });
      fit = new xterm.FitAddon();
      term.loadAddon(fit);
      term.open(screen);
      // Ctrl+Shift+C copies the selection, Ctrl+Shift+V pastes (Ctrl+C stays the shell's).
      term.attachCustomKeyEventHandler((ev) => {
        if (ev.type !== "keydown" || !ev.ctrlKey || !ev.shiftKey) return true;
        if (ev.code === "KeyC") {
          void navigator.clipboard?.writeText(term?.getSelection() ?? "").catch(() => undefined);
          return false;
        }
        if (ev.code === "KeyV") {
          void navigator.clipboard
            ?.readText()
            .then((text) => term?.paste(text))
            .catch(() => undefined);
          return false;
        }
        return true;
      });
      term.onData((data) => send(Channel.Stdin, encoder.encode(data)));
      term.onBinary((data) =>
        send(
          Channel.Stdin,
          Uint8Array.from(data, (c) => c.charCodeAt(0) & 0xff),
        ),
      );
      term.onResize(() => sendSize());
      resizeObserver = new ResizeObserver(() => fit?.fit());
      resizeObserver.observe(screen);
    }
    fit?.fit();
    term.reset();
    replace(status, "Connecting…");
    const ws = new WebSocket(execUrl(rental.id, term.cols, term.rows), [kProtocol]);
    ws.binaryType = "arraybuffer";
    socket = ws;
    let ended = false;
    ws.onopen = () => {
      replace(status, "Connected: a shell in the container.");
      sendSize();
      term?.focus();
    };
    ws.onmessage = (ev: MessageEvent) => {
      if (!(ev.data instanceof ArrayBuffer) || ev.data.byteLength === 0) return;
      const bytes = new Uint8Array(ev.data);
      const payload = bytes.subarray(1);
      if (bytes[0] === Channel.Stdout || bytes[0] === Channel.Stderr) {
        term?.write(payload);
      } else if (bytes[0] === Channel.Status) {
        ended = true;
        replace(status, endedText(new TextDecoder().decode(payload)) + " Reconnect for a new one.");
      }
    };
    ws.onclose = (ev: CloseEvent) => {
      // A socket closed here (Disconnect, Reconnect) has said so already.
      if (socket !== ws) return;
      socket = null;
      if (!ended) replace(status, closedText(ev) + " Reconnect for a new shell.");
    };
  };

  const start = () => void connect().catch((e: unknown) => replace(status, `The terminal did not load: ${String(e)}.`));
  const open = button("Open a shell", start, { kind: "primary" });
  const reconnect = button("Reconnect", start);
  const close = button("Disconnect", () => {
    disconnect();
    replace(status, "Disconnected.");
  });

  const section = h(
    "section",
    { class: "card rental-terminal", "aria-labelledby": "terminal-title" },
    h("h2", { id: "terminal-title" }, "Terminal"),
    h(
      "p",
      { class: "small" },
      "A shell in the running container, as root. Ctrl+Shift+C copies the selection, Ctrl+Shift+V pastes. ",
      "From a program: ",
      h("code", null, `GET /api/v1/rentals/${rental.id}/exec?command=…`),
      " (Kubernetes' exec protocol).",
    ),
    h("div", { class: "actions" }, open, reconnect, close),
    status,
    screen,
  );
  // The shell ends with the page section (the rental's page moved on, or the rental ended).
  const gone = new MutationObserver(() => {
    if (section.isConnected) return;
    disconnect();
    resizeObserver?.disconnect();
    term?.dispose();
    term = null;
    gone.disconnect();
  });
  queueMicrotask(() => {
    if (section.parentNode) gone.observe(document.body, { childList: true, subtree: true });
  });
  return section;
}
