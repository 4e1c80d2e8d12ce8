// A rental's SSH on its page (docs/access.md, "SSH"): the commands to copy, filled in
// with this platform's gateway (GET /api/v1/access/ssh), the rental's id and its declared
// ports, and the host key's fingerprint that ssh shows the first time.
import * as api from "../api";
import { h, replace } from "../dom";
import { StatusSlot } from "../errors";
import { copyable } from "./payout";

export interface SshAccess {
  enabled: boolean;
  host?: string;
  port?: number;
  host_key?: string;
  host_key_fingerprint?: string;
  known_hosts_line?: string;
}

// [what it does, the command] for `rental` through the gateway at host:port.
export function sshCommands(rental: api.Rental, host: string, port: number): Array<[string, string]> {
  const target = `${rental.id}@${host}`;
  const p = String(port);
  const rows: Array<[string, string]> = [
    ["A shell", `ssh -p ${p} ${target}`],
    ["A command", `ssh -p ${p} ${target} 'nvidia-smi'`],
    ["Files in, with rsync", `rsync -a -e 'ssh -p ${p}' ./data ${target}:/scratch/`],
    ["Files in, with scp", `scp -O -P ${p} ./model.pt ${target}:/scratch/`],
    ["sftp", `sftp -P ${p} ${target}`],
  ];
  for (const d of rental.ports ?? []) {
    rows.push([
      `Port ${d.port} on your localhost:${d.port}`,
      `ssh -p ${p} -N -L ${d.port}:localhost:${d.port} ${target}`,
    ]);
  }
  // A declared TCP port 22: the image's own SSH server, through the gateway (scp, sftp and
  // VS Code Remote-SSH end to end; docs/access.md). "USER" is the image's user.
  if ((rental.ports ?? []).some((d) => d.port === 22 && d.protocol === "tcp")) {
    rows.push(["The image's own SSH server", `ssh -J ${target}:${p} -p 22 USER@localhost`]);
  }
  return rows;
}

export function sshSection(rental: api.Rental): HTMLElement | null {
  if (rental.state !== "running") return null;
  const slot = new StatusSlot();
  const body = h("div", { class: "ssh-body" }, h("p", { class: "small muted" }, "Loading…"));
  const section = h(
    "section",
    { class: "card rental-ssh", "aria-labelledby": "ssh-title" },
    h("h2", { id: "ssh-title" }, "SSH"),
    slot.el,
    body,
  );
  void Promise.all([
    api.get<SshAccess>("/access/ssh"),
    api.get<api.Page<{ id: string }>>("/me/ssh-keys?limit=1").catch(() => null),
  ])
    .then(([access, keys]) => {
      if (!access.enabled || !access.host || !access.port) {
        replace(body, h("p", { class: "small muted" }, "This platform runs no SSH gateway: use the Terminal."));
        return;
      }
      replace(
        body,
        keys && keys.items.length === 0
          ? h(
              "p",
              { class: "banner banner-info ssh-no-key" },
              "Only your account's keys sign in: add your public key on the ",
              h("a", { href: "#/account" }, "Account page"),
              " first.",
            )
          : null,
        h(
          "p",
          { class: "small" },
          "Works with any image: commands run as in the Terminal. rsync, scp and sftp need those programs in the image; ",
          "-L reaches the ports the rental declared.",
        ),
        h(
          "dl",
          { class: "facts ssh-commands" },
          sshCommands(rental, access.host, access.port).map(([label, command]) => [
            h("dt", null, label),
            h("dd", null, copyable(command, `the command for ${label.toLowerCase()}`)),
          ]),
        ),
        h(
          "p",
          { class: "small ssh-host-key" },
          "The platform's host key, as ssh shows it the first time: ",
          h("code", { class: "mono" }, access.host_key_fingerprint ?? ""),
        ),
      );
    })
    .catch((e: unknown) => {
      replace(body);
      slot.error(e, "SSH details did not load");
    });
  return section;
}
