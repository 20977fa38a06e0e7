// Bundles the react-pdf-highlighter example with esbuild:
//   node examples/build.mjs [--outdir DIR] [--production]
// DIR (default build/example, gitignored) gets index.html, main.js, main.css, the images the CSS
// uses, PDF.js's worker and input.json (the answer to show). Serve DIR with any static server; see examples/README.md.
import { copyFileSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import * as esbuild from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
const source = join(here, "react-pdf-highlighter");
const { values } = parseArgs({
  options: { outdir: { type: "string" }, production: { type: "boolean", default: false } },
});
const outdir = resolve(values.outdir ?? join(here, "..", "build", "example"));
mkdirSync(outdir, { recursive: true });

await esbuild.build({
  entryPoints: { main: join(source, "main.tsx") },
  outdir,
  bundle: true,
  format: "esm",
  target: "es2022",
  jsx: "automatic",
  sourcemap: true,
  minify: values.production,
  // React's development build warns (console.error) about misuse; the browser test fails on
  // any console error, so it runs this build.
  define: { "process.env.NODE_ENV": values.production ? '"production"' : '"development"' },
  // pdf_viewer.css (imported by react-pdf-highlighter) points at its toolbar images.
  loader: { ".svg": "file", ".png": "file", ".gif": "file" },
  logLevel: "warning",
});

// The worker of the pdfjs-dist that react-pdf-highlighter resolves (its nested 4.x), which is
// the copy esbuild bundled above: PDF.js checks that the worker's version is its own.
const fromHighlighter = createRequire(createRequire(import.meta.url).resolve("react-pdf-highlighter"));
copyFileSync(fromHighlighter.resolve("pdfjs-dist/build/pdf.worker.min.mjs"), join(outdir, "pdf.worker.min.mjs"));
copyFileSync(join(source, "index.html"), join(outdir, "index.html"));
// The answer the page shows unless its URL names another (?input=other.json): the README's demo.
copyFileSync(join(source, "input.json"), join(outdir, "input.json"));
console.log(`example built in ${outdir}`);
