"""What each ``highlight-service`` command reads and writes, with an example: the text of
``--help``. Kept apart from the commands so the help reads as one page."""

from __future__ import annotations

SETTINGS = """settings from HIGHLIGHT_* environment variables or a .env file
         (docs/configuration.md)"""

SERVE = f"""\
Serve the HTTP API (POST /v2/highlights/batch, the viewer at /viewer, /docs) until Ctrl-C or
SIGTERM. Migrates the database first unless HIGHLIGHT_MIGRATE_ON_START=false or --no-migrate.

input:   none on stdin; {SETTINGS}
         An LLM provider set without its base URL, model or key stops it here (exit 2).
output:  HTTP on --host:--port; logs on stderr (JSON lines unless stderr is a terminal,
         HIGHLIGHT_LOG_FORMAT). Once up, one line names the address, the database (kind and
         file or database name), the LLM provider and whether auth is on.
"""
SERVE_EXAMPLE = """\
example:
  highlight-service serve --host 0.0.0.0 --port 8000
  curl -s localhost:8000/v2/highlights/batch -H 'content-type: application/json' \\
    -d @frontend-contract/examples/batch-request.json
"""

MIGRATE = f"""\
Bring the database schema up to date (idempotent; safe while servers run).

input:   none; {SETTINGS}
output:  one line on stdout naming the database, e.g.
           database SQLite highlight.db is up to date
"""
MIGRATE_EXAMPLE = """\
example:
  HIGHLIGHT_DATABASE_URL=postgresql+asyncpg://user:pass@db/highlight highlight-service migrate
"""

INGEST = """\
Split a PDF into page-aware chunks in reading order and store the document and its chunks
(idempotent: ingesting the same file again changes nothing). Scanned pages are read by OCR
first when Tesseract is installed. A PDF outside HIGHLIGHT_PDF_ROOT is copied there, named by
its SHA-256. An Office file (DOCX, PPTX, XLSX, ODT, ODP, ODS, RTF, and the legacy DOC, PPT,
XLS) is converted to PDF by LibreOffice first (once per content: the same file again gets the
same PDF) and stored beside it; the file's content decides its type, not its name. Runs
beside `serve` on the same database.

input:   FILE      path to a PDF or Office file
output:  one JSON object on stdout:
           document_id  the id to cite chunks by (--document-id, or the file name slugified)
           title        what results and the viewer show (--title, else the PDF's own title,
                        else the file name)
           source_path  where the PDF is stored, relative to HIGHLIGHT_PDF_ROOT
           source_format  pdf, or the Office format it was converted from (docx, ...)
           original_name  the file's name
           pages        page count
           chunks       chunk ids, "<document_id>-c0000", ... (the ids a batch cites)
           created      true the first time this document id is stored
           changed      false when the same file and chunks were already stored
         A PDF that cannot be indexed is refused before anything is stored: one
         "error: ..." line on stderr, exit code 1.
"""
INGEST_EXAMPLE = """\
example:
  highlight-service ingest reports/budget-2025.pdf --document-id budget-2025 \\
    --title "Budget Statement 2025"
  {
    "document_id": "budget-2025",
    "title": "Budget Statement 2025",
    "source_path": "ingested/3f5a...e1.pdf",
    "source_format": "pdf",
    "original_name": "budget-2025.pdf",
    "pages": 42,
    "chunks": ["budget-2025-c0000", "budget-2025-c0001", ...],
    "created": true,
    "changed": true
  }
"""

LOCATE = """\
Find quotes in a PDF and print where they are drawn: the locator the service uses, without a
database or an LLM. The PDF is indexed as the service indexes it (scanned pages read by OCR,
HIGHLIGHT_OCR_*). Reads JSON lines on stdin until end of input, answers each line at once.

input:   PDF       path to a PDF file
         stdin     one JSON object per line:
           id      anything; echoed back so answers can be paired with requests
           quote   the text to find (a sentence; line breaks, hyphenation and ligatures in
                   the PDF are matched)
           pages   optional: [first, last], the 1-based, inclusive range of pages to search,
                   e.g. [3, 3] for page 3 only or [1, 2] for pages 1 and 2; omit it (or null)
                   to search the whole document
output:  one JSON object per input line on stdout, in the same order:
           id, status   "found", "no_match" (not found reliably: never a guess) or
                        "no_text_layer" (the pages searched have no text)
           score        0-100, how closely the PDF's text matches the quote
           matched_text the PDF's text at the rectangles
           rects        one rectangle per line piece: {"page", "x0", "y0", "x1", "y1"}, page
                        1-based, in PDF points from the top-left of the page as displayed
         A line that is not such an object, or whose pages lie outside the PDF, answers
         {"id", "status": "error", "message"} ("pages [5, 6] is past the end: the PDF has
         3 pages").
         A PDF that cannot be read: one line on stderr, exit code 1.
"""
LOCATE_EXAMPLE = """\
example (the demo's sample PDF):
  echo '{"id": 1, "quote": "Eleven bids were received", "pages": [1, 2]}' \\
    | highlight-service locate var/pdfs/sample/sample-assembly.pdf
  {"id": 1, "status": "found", "score": 100.0, "matched_text": "Eleven bids were received",
   "rects": [{"page": 1, "x0": 115.41, "y0": 258.17, "x1": 243.79, "y1": 273.29}]}
"""

DEMO = f"""\
Migrate the database, generate a small sample PDF (a sentence across a page break, hyphenation,
a ligature) under HIGHLIGHT_PDF_ROOT/sample/, ingest it as document
sample-assembly-2025-11-20, then serve as `serve` does. Needs no LLM key.

input:   none; {SETTINGS}
output:  as `serve`; try POST /v2/highlights/batch with
         frontend-contract/examples/batch-request.json, and open the viewer_link it returns.
"""
DEMO_EXAMPLE = """\
example:
  highlight-service demo --port 8000
"""

OPENAPI = """\
Print the service's OpenAPI document (what frontend-contract/openapi.json holds) without
starting a server or touching the database.

input:   none
output:  the OpenAPI 3.1 JSON on stdout, or in the --output file
"""
OPENAPI_EXAMPLE = """\
example:
  highlight-service openapi --output openapi.json
"""

MAIN_EPILOG = """\
exit codes: 0 done; 1 an error (one "error: ..." line on stderr); 2 a configuration error or
bad arguments (names the variable or option, never shows a secret).
`highlight-service COMMAND --help` says what a command reads and writes, with an example.
"""
