#!/usr/bin/env bash
# Build the reference viewer and Swagger UI's files into app/viewer/static/, which the service
# serves at /viewer/assets/ (and /docs from swagger/). The output is checked in, so a Python user
# needs no Node.js; it is byte-for-byte reproducible, and CI rebuilds it and fails on a diff:
#   scripts/build_viewer.sh && git diff --exit-code app/viewer/static
# Everything in app/viewer/static/ is generated: edit frontend-contract/viewer/ instead.
set -euo pipefail
cd "$(dirname "$0")/.."
src=frontend-contract
out=app/viewer/static

# npm ci only when node_modules is missing or older than the lock file (npm writes
# node_modules/.package-lock.json on every install).
if [ ! -f "$src/node_modules/.package-lock.json" ] \
  || [ "$src/package-lock.json" -nt "$src/node_modules/.package-lock.json" ]; then
  (cd "$src" && npm ci --no-audit --no-fund)
fi

rm -rf "$out"
mkdir -p "$out/swagger"
esbuild="$src/node_modules/.bin/esbuild"
pdfjs="$src/node_modules/pdfjs-dist"
swagger="$src/node_modules/swagger-ui-dist"

# One ES module with pdf.js and our helpers; licence comments kept at the end of the file.
"$esbuild" "$src/viewer/main.ts" --bundle --format=esm --target=es2020 --minify \
  --legal-comments=eof --log-level=warning --outfile="$out/viewer.js"
"$esbuild" "$src/viewer/viewer.css" --minify --log-level=warning --outfile="$out/viewer.css"
cp "$src/viewer/index.html" "$out/index.html"

# pdf.js's worker (the legacy build, like the bundle) and the WebAssembly decoders it asks the
# page for, at the viewer's wasmUrl (/viewer/assets/): openjpeg for JPEG 2000 scans, jbig2 for
# JBIG2 and CCITT fax ones (most scanners' black-and-white output). Without one, pdf.js logs a
# 404 and decodes in slower JavaScript. Each licence file is the library's, then pdf.js's
# wrapper's. Left out: qcms_bg.wasm (ICC colour), which pdf.js only fetches when the worker
# fetches for itself (useWorkerFetch, which wants the CMap and standard font URLs too), so ICC
# colour spaces use their device equivalent; and the standard fonts and the 1.7 MB of CMaps for
# non-embedded CJK fonts, since fonts come from the PDF or the system.
cp "$pdfjs/legacy/build/pdf.worker.min.mjs" "$out/"
cp "$pdfjs/LICENSE" "$out/pdfjs-LICENSE.txt"
for decoder in openjpeg jbig2; do
  cp "$pdfjs/wasm/$decoder.wasm" "$out/"
  licence=$(echo "$decoder" | tr a-z A-Z)
  cat "$pdfjs/wasm/LICENSE_$licence" "$pdfjs/wasm/LICENSE_PDFJS_$licence" \
    >"$out/$decoder-LICENSE.txt"
done

# Swagger UI for /docs, offline.
cp "$swagger/swagger-ui-bundle.js" "$swagger/swagger-ui-bundle.js.LICENSE.txt" \
  "$swagger/swagger-ui.css" "$swagger/favicon-32x32.png" "$out/swagger/"
cp "$swagger/LICENSE" "$out/swagger/LICENSE.txt"

du -ab "$out" | sort -k2 | awk '{ printf "%9d  %s\n", $1, $2 }'
