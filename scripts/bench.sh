#!/usr/bin/env bash
# The benchmarks CI prints (numbers, not gates), and the gates of make bench-gates (ingest every
# PDF, hostile inputs, replicas). Uses ../shared/pdfs when present; otherwise the generated PDFs
# only. Needs pdftotext (Debian's poppler-utils), the locator's independent ground truth.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
# The shared work folder of the benches that read the FinanceBench filings (bench/filings.py).
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
gates=0
# Each section's title, after the time the one before took (the CI log shows where time goes).
last=$(date +%s)
section() {
  local now
  now=$(date +%s)
  [ "$last" = "$now" ] || echo "(the section above took $((now - last)) s)"
  last=$now
  echo "=== $*"
}

section "locator: ../shared/pdfs plus generated layouts"
if [ -f ../shared/pdfs/MANIFEST.tsv ]; then
  pdf_dir=../shared/pdfs
else
  echo "../shared/pdfs is absent: generated PDFs only"
  pdf_dir="$(mktemp -d)"
fi
# One run, two reports: the quotes searched in the whole document (against PyMuPDF's search),
# then with the chunk's pages as a hint (--then-page-hint: the corpus read and indexed once).
# Printed: each report from its "Per kind" table on, the second after the "---" line it prints.
$PY bench/locate_eval.py "$pdf_dir" --then-page-hint | awk '
  part == 0 && /^Per kind/ { part = 1 }
  part == 1 { print }
  part == 1 && /^--- with the chunk/ { part = 2; next }
  part == 2 && /^Per kind/ { part = 3 }
  part == 3 { print }'

section "OCR: image-only copies of the text PDFs (200/300 dpi, degraded) against the text layer"
$PY bench/ocr_eval.py "$pdf_dir"

section "OCR speed: ocr_page against tesseract run directly on the same 300-dpi image (goal <= 1.2x)"
$PY bench/ocr_speed.py --repeat 2

section "chunks in reading order: poppler's word 8-grams found in order in the chunks, before/after"
$PY bench/reading_order.py

section "Office files: LibreOffice's conversion per page, and ingest of a DOCX/PPTX against its PDF alone"
$PY bench/office_convert.py --repeat 2

# The ingest gate first: every PDF, each in its own process with a fresh database, building its
# index as a user's first ingest does; the filings' indexes it builds are left in $work/index,
# so the three benches below, which ingest the same filings, build none.
section "gate: ingest every PDF (its indexes kept for the filings' benches below)"
$PY bench/ingest_all.py --index-cache "$work/index" || gates=1

section "support and selection on ../shared/pdfs/qa (one ingest of the filings for all three)"
if [ -f ../shared/pdfs/qa/financebench_dev.jsonl ]; then
  # Verdicts on positives and negatives, hit and lift over random per row and per company fold.
  $PY bench/support_eval.py --work "$work"
  echo "--- selection (the seven, then the 53 more over 20 filings)"
  $PY bench/selection_eval.py --work "$work"
  if [ -f ../shared/pdfs/qa/financebench_more.jsonl ]; then
    $PY bench/selection_eval.py --work "$work" --qa ../shared/pdfs/qa/financebench_more.jsonl
  fi
  echo "--- claims: each marker's highlights against its own claim (multi-claim answers)"
  $PY bench/claims_eval.py --work "$work"
else
  echo "../shared/pdfs/qa is absent: support and selection benchmarks skipped"
fi

section "chunkers: LangChain, LlamaIndex, PyMuPDF4LLM, pdfminer against the service's own chunks and search_for; pages given, missing, 0-based"
# Skips, saying so, without ../shared/pdfs; the chunkers' output is cached in bench/results.
$PY bench/chunkers_eval.py

section "start-up: import of the app and of a worker against import fastapi, uvicorn (goal <= 1.5 s)"
$PY bench/import_time.py --repeat 5 --top 10

section "sentences: pySBD's golden rules (this splitter, pySBD, sentencex), through the API, the chunkers' cases, cost"
$PY bench/sentence_bench.py

section "long chunks: ten 100k-character chunks split to the 200-sentence cap, before/after/floor"
$PY bench/long_chunks.py

section "Markdown: the CommonMark spec against Chromium, extraction on bombs at 1x/4x/16x, a bomb's upload against /healthz"
$PY bench/markdown_bench.py

section "LLM schemas: distinct schemas among 2,000 realistic batches, before and after buckets"
$PY bench/grammar_bench.py

section "claims: answers full of markers (what one request can cost)"
$PY bench/claim_storm.py

section "request CPU: lexical and LLM paths at 64 clients, latency against /healthz, DB round trips"
$PY bench/request_cpu.py --seconds 8 --workers 2

section "text index: cold build vs rawdict (goal <= 1.5x), reload vs reading the blob (<= 3x), first batch on the largest 10-K; cache formats"
$PY bench/index_cache_bench.py --repeat 3

section "gates: hostile inputs; 3 replicas behind HAProxy, one killed under load (ingest: above)"
$PY bench/hostile.py || gates=1
$PY bench/replicas_bench.py || gates=1
section "done"
exit "$gates"
