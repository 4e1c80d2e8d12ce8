// A rental's files on its page (docs/access.md, "Files"): its customer downloads a path of
// the running container as a tar, and uploads a file into one of its directories (sent as
// a tar of that one file, built here without reading the file into memory).
import * as api from "../api";
import { button, field, h } from "../dom";
import { StatusSlot } from "../errors";

// The 512-byte ustar header of one regular file: `name` (at most 100 bytes of UTF-8).
export function tarHeader(name: string, size: number, mtimeS: number): Uint8Array<ArrayBuffer> {
  const b = new Uint8Array(new ArrayBuffer(512));
  const put = (offset: number, text: string) => b.set(new TextEncoder().encode(text), offset);
  const octal = (n: number, width: number) => n.toString(8).padStart(width - 1, "0") + "\0";
  put(0, name);
  put(100, octal(0o644, 8));
  put(108, octal(0, 8));
  put(116, octal(0, 8));
  put(124, octal(size, 12));
  put(136, octal(Math.floor(mtimeS), 12));
  put(148, "        "); // the checksum counts itself as spaces
  put(156, "0");
  put(257, "ustar\0");
  put(263, "00");
  let sum = 0;
  for (const x of b) sum += x;
  put(148, sum.toString(8).padStart(6, "0") + "\0 ");
  return b;
}

// A tar holding `file` alone, as a Blob that reads the file only when sent.
export function tarOf(file: File): Blob {
  const pad = (512 - (file.size % 512)) % 512;
  return new Blob(
    [tarHeader(file.name, file.size, file.lastModified / 1000), file, new Uint8Array(pad), new Uint8Array(1024)],
    { type: "application/x-tar" },
  );
}

export function filesSection(rental: api.Rental): HTMLElement | null {
  if (rental.state !== "running") return null;
  const slot = new StatusSlot();
  const base = `/api/v1/rentals/${encodeURIComponent(rental.id)}/files`;

  const outPath = h("input", { type: "text", value: "/scratch", spellcheck: false, class: "mono", maxlength: 4096 });
  const download = button("Download as tar", () => {
    const path = outPath.value.trim();
    if (!path.startsWith("/")) {
      slot.error(new api.ApiError(422, "invalid", "Name an absolute path, such as /scratch/out."));
      return;
    }
    // The browser saves the answer itself (streamed to disk, whatever its size).
    const a = h("a", { href: `${base}?path=${encodeURIComponent(path)}`, download: "" });
    document.body.append(a);
    a.click();
    a.remove();
  });

  const inDir = h("input", { type: "text", value: "/scratch", spellcheck: false, class: "mono", maxlength: 4096 });
  const file = h("input", { type: "file" });
  const upload: HTMLButtonElement = button("Upload", () => {
    const f = file.files?.[0];
    if (!f) {
      slot.error(new api.ApiError(422, "invalid", "Choose a file to upload first."));
      return;
    }
    if (new TextEncoder().encode(f.name).length > 100) {
      slot.error(new api.ApiError(422, "invalid", "The file's name is longer than 100 bytes: rename it first."));
      return;
    }
    upload.disabled = true;
    void api
      .put<unknown>(
        `/rentals/${encodeURIComponent(rental.id)}/files?path=${encodeURIComponent(inDir.value.trim())}`,
        tarOf(f),
      )
      .then(() => slot.ok(`${f.name} is in ${inDir.value.trim()} of the container.`))
      .catch((e) => slot.error(e, "The file was not uploaded"))
      .finally(() => {
        upload.disabled = false;
      });
  });

  return h(
    "section",
    { class: "card rental-files", "aria-labelledby": "files-title" },
    h("h2", { id: "files-title" }, "Files"),
    slot.el,
    h(
      "div",
      { class: "files-grid" },
      h(
        "div",
        null,
        field("Path in the container", outPath, { field: "path", hint: "A file or a directory: saved as a tar." }),
        h("div", { class: "actions" }, download),
      ),
      h(
        "div",
        null,
        field("Upload into", inDir, { hint: "A directory that exists; /scratch and below are writable." }),
        field("File", file),
        h("div", { class: "actions" }, upload),
      ),
    ),
  );
}
