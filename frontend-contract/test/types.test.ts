// The generated types say what the service always sends: a field it always sends is required
// (null where it may be null), so a strict build needs no `?? []` or `!` on them. Checked by tsc:
// a type with an optional field does not extend its own Required<>, and this file stops
// compiling.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { components } from "../highlight-api.js";
import type { Highlight, HighlightResponse } from "../src/highlights.js";
import type { CitationEventData, CitationResult, SummaryEventData } from "../src/stream.js";

type Schemas = components["schemas"];
type AllRequired<T> = T extends Required<T> ? true : false;

// One AllRequired per type: over a union it would distribute, and `boolean` would pass.
const responses: [
  AllRequired<CitationResult>,
  AllRequired<Highlight>,
  AllRequired<HighlightResponse>,
  AllRequired<CitationEventData>,
  AllRequired<SummaryEventData>,
  AllRequired<Schemas["HighlightBatchResponse"]>,
  AllRequired<Schemas["Claim"]>,
  AllRequired<Schemas["DocumentOut"]>,
  AllRequired<Schemas["ChunkOut"]>,
  AllRequired<Schemas["PdfUploadResult"]>,
] = [true, true, true, true, true, true, true, true, true, true];

// Request fields with defaults stay optional: a request may leave them out.
const requests: AllRequired<Schemas["CitationIn"]> = false;

test("response types have no optional fields; request types keep theirs", () => {
  assert.ok(responses.every(Boolean));
  assert.equal(requests, false);
});

// pdf_url is its own field (no cutting "#page=N" off link), a string or null: this line stops
// compiling when the generated CitationResult loses it or makes it optional.
const pdfUrl: AllRequired<Pick<CitationResult, "pdf_url" | "link">> = true;
test("pdf_url and link are both required", () => assert.equal(pdfUrl, true));
