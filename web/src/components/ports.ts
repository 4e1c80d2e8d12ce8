// A rental's ports on its page (docs/access.md): each declared port, with for its customer
// an Open button for an HTTP port (an access token is made and the port opened with it in
// a new tab, where it becomes a cookie of that host), the link of a public one, and the
// command line of a TCP port; and a button that makes an access token for programs, shown
// once.
import * as api from "../api";
import { button, h, replace } from "../dom";
import { StatusSlot } from "../errors";
import { when } from "../format";
import { copy } from "./copy";

// How long the token behind an Open button lasts: the tab's cookie lasts as long.
const kOpenTokenSeconds = 12 * 3600;

function protocolName(p: api.RentalPort): string {
  return p.protocol === "tcp" ? "TCP" : "HTTP";
}

// The WebSocket URL of a TCP port's connection, on this dashboard's own host.
function connectUrl(p: api.RentalPort): string {
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  return `${scheme}//${location.host}${p.connect_path ?? ""}`;
}

function tcpCommand(p: api.RentalPort): string {
  const header = `-H "Authorization: Bearer $GPUNEX_API_KEY"`;
  if (p.port === 22) {
    return `ssh -o ProxyCommand='websocat --binary ${header} ${connectUrl(p)}' root@rental`;
  }
  return `websocat --binary ${header} tcp-l:127.0.0.1:${p.port} ${connectUrl(p)}`;
}

function tokenPanel(t: api.AccessToken, onClose: () => void): HTMLElement {
  const copied = h("span", { class: "copied", role: "status", "aria-live": "polite" });
  const value = h("code", { class: "key-value" }, t.token ?? "");
  return h(
    "div",
    { class: "banner banner-ok new-token access-token", role: "region", "aria-label": "New access token" },
    h("h3", null, "Access token created"),
    h(
      "p",
      null,
      h("strong", null, "Copy it now: it will not be shown again."),
      ` It opens this rental's HTTP ports until ${when(t.expires_at)}, or until the rental ends.`,
    ),
    h("pre", { class: "code" }, value),
    h(
      "p",
      { class: "small" },
      "Send it in a header, ",
      h("code", null, "Authorization: Bearer <token>"),
      ", or add ",
      h("code", null, "?gpx_token=<token>"),
      " to a port's address.",
    ),
    h(
      "div",
      { class: "actions" },
      button("Copy token", () => void copy(t.token ?? "", value, copied), {
        kind: "primary",
        attrs: { "data-copy": "token" },
      }),
      copied,
    ),
    h("div", { class: "actions" }, button("Done, I have copied it", onClose)),
  );
}

// The Ports card of `rental`; `customer`: the viewer is its customer (others see the
// ports, not the ways in). Null when it declared none.
export function portsSection(rental: api.Rental, customer: boolean): HTMLElement | null {
  const ports = rental.ports ?? [];
  if (!ports.length) return null;
  const slot = new StatusSlot();
  const fresh = h("div");
  const running = rental.state === "running";
  const tokenUrl = `/rentals/${encodeURIComponent(rental.id)}/access-tokens`;

  const open = (p: api.RentalPort, el: HTMLButtonElement) => {
    // The tab opens on the click (a later one would be blocked), then goes to the port.
    const tab = window.open("about:blank", "_blank");
    el.disabled = true;
    void api
      .post<api.AccessToken>(tokenUrl, { ttl_s: kOpenTokenSeconds })
      .then((t) => {
        const link = t.links?.find((l) => l.port === p.port);
        if (!link) throw new Error("The platform gave no address for this port.");
        if (tab) {
          tab.opener = null;
          tab.location.href = link.url;
        } else {
          location.assign(link.url);
        }
      })
      .catch((e) => {
        tab?.close();
        slot.error(e, `Port ${p.port} was not opened`);
      })
      .finally(() => {
        el.disabled = false;
      });
  };

  const rows = ports.map((p) => {
    let how: HTMLElement | string = "";
    if (customer && p.protocol === "http" && p.url) {
      if (p.public) {
        how = h("a", { class: "btn btn-secondary", href: p.url, target: "_blank", rel: "noopener" }, "Open");
      } else {
        const b: HTMLButtonElement = button("Open", () => open(p, b), {
          kind: "secondary",
          attrs: { "aria-label": `Open port ${p.port}` },
        });
        b.disabled = !running;
        how = b;
      }
    } else if (customer && p.protocol === "http") {
      how = h("span", { class: "muted small" }, "This platform serves no HTTP ports.");
    } else if (customer && p.connect_path) {
      how = h("code", { class: "command-line" }, tcpCommand(p));
    }
    return h(
      "tr",
      { "data-port": String(p.port) },
      h("td", { class: "num", "data-label": "Port" }, String(p.port)),
      h("td", { "data-label": "Protocol" }, protocolName(p)),
      h(
        "td",
        { "data-label": "Access" },
        h("span", { class: `badge ${p.public ? "badge-warn" : ""}` }, p.public ? "Public" : "Private"),
      ),
      customer ? h("td", { class: "port-how", "data-label": "How to reach it" }, how) : null,
    );
  });

  const card = h(
    "section",
    { class: "card rental-ports", "aria-labelledby": "ports-title" },
    h("h2", { id: "ports-title" }, "Ports"),
    slot.el,
    h(
      "div",
      { class: "table-wrap" },
      h(
        "table",
        { class: "table ports-table" },
        h(
          "thead",
          null,
          h(
            "tr",
            null,
            h("th", { scope: "col" }, "Port"),
            h("th", { scope: "col" }, "Protocol"),
            h("th", { scope: "col" }, "Access"),
            customer ? h("th", { scope: "col" }, "How to reach it") : null,
          ),
        ),
        h("tbody", null, rows),
      ),
    ),
  );
  if (!customer) return card;
  card.append(
    h(
      "p",
      { class: "small muted" },
      running
        ? "A private port opens for you only: Open makes an access token for the new tab. TCP ports take your API key."
        : "The ports open while the rental runs.",
    ),
    fresh,
  );
  if (running && ports.some((p) => p.protocol === "http" && !p.public)) {
    const make: HTMLButtonElement = button("New access token", () => {
      make.disabled = true;
      void api
        .post<api.AccessToken>(tokenUrl, {})
        .then((t) =>
          replace(
            fresh,
            tokenPanel(t, () => {
              replace(fresh);
              make.focus();
            }),
          ),
        )
        .catch((e) => slot.error(e, "No token was made"))
        .finally(() => {
          make.disabled = false;
        });
    });
    card.append(h("div", { class: "actions" }, make));
  }
  return card;
}
