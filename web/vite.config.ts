import { defineConfig } from "vite";

// The dashboard is served by gpunexd, which embeds dist/ at build time
// (src/platform/web). Everything must come from the same origin: the server's
// Content-Security-Policy allows no inline scripts or styles and no other hosts.
export default defineConfig({
  base: "/",
  build: {
    target: "es2020",
    outDir: "dist",
    emptyOutDir: true,
    assetsDir: "assets",
    // Keep every asset a file under /assets/ (hashed, cached as immutable).
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: false,
    reportCompressedSize: false,
  },
  server: {
    // `npm run dev` against a local gpunexd: `GPUNEX_DEV_API=http://127.0.0.1:8080 npm run dev`
    proxy: {
      "/api": process.env.GPUNEX_DEV_API ?? "http://127.0.0.1:8080",
      "/agent": process.env.GPUNEX_DEV_API ?? "http://127.0.0.1:8080",
    },
  },
});
