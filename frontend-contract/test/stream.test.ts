// The SSE helper against a real HTTP server on 127.0.0.1 and Node's real fetch: events must
// arrive one by one while the response is still open, whatever the chunking.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  type CitationResult,
  type HighlightStreamEvent,
  HighlightApiError,
  HighlightStreamState,
  parseSse,
  SseParser,
  streamHighlights,
} from "../src/stream.js";
import { gate, serve } from "./http-server.js";

// Every field: the generated type requires each one the service always sends.
const citation = (status: CitationResult["status"], text: string): CitationResult => ({
  chunk_id: "doc-c0001",
  citation_id: "1",
  document_id: "doc",
  document_title: "Doc",
  source_format: "pdf",
  original_name: null,
  link: "/v2/documents/doc/pdf#page=1",
  pdf_url: "/v2/documents/doc/pdf",
  viewer_link: null,
  reason: null,
  status,
  support: null,
  support_score: null,
  page_start: 1,
  page_end: 1,
  claims: [],
  highlights: [],
  message: text,
});

const sse = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

describe("SseParser", () => {
  const stream =
    "\uFEFF: keep-alive comment\r\n" +
    "event: citation\r\n" +
    'data: {"a":\r\n' +
    "data:1}\r\n" +
    "id: 7\r\n" +
    "\r\n" +
    "retry: 1500\n" +
    "data: no event name\n" +
    "\n" +
    "event: ignored-without-data\n" +
    "\n" +
    "event: summary\rdata: é ✓ done\r\r" +
    "event: cut-off\ndata: never dispatched";
  const expected = [
    { event: "citation", data: '{"a":\n1}', id: "7" },
    { event: "message", data: "no event name", id: "7", retry: 1500 },
    { event: "summary", data: "é ✓ done", id: "7" },
  ];

  test("whole input: fields, comments, BOM, CR/LF/CRLF, no dispatch without data or blank line", () => {
    const parser = new SseParser();
    assert.deepEqual([...parser.push(stream), ...parser.end()], expected);
  });

  test("split at every position, CRLF halves included, gives the same events", () => {
    for (let cut = 0; cut <= stream.length; cut++) {
      const parser = new SseParser();
      const got = [
        ...parser.push(stream.slice(0, cut)),
        ...parser.push(stream.slice(cut)),
        ...parser.end(),
      ];
      assert.deepEqual(got, expected, `cut at ${cut}`);
    }
  });

  test("a trailing CR at end of stream still ends the last line", () => {
    const parser = new SseParser();
    assert.deepEqual(
      [...parser.push("data: x\n\r"), ...parser.end()],
      [{ event: "message", data: "x" }],
    );
  });

  test("parseSse decodes UTF-8 split inside a character", async () => {
    const bytes = new TextEncoder().encode(sse("summary", { note: "naïve — ✓" }));
    const chunks = [...bytes].map((b) => new Uint8Array([b])); // one byte per chunk
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const c of chunks) controller.enqueue(c);
        controller.close();
      },
    });
    const events = [];
    for await (const e of parseSse(body)) events.push(e);
    assert.deepEqual(events, [{ event: "summary", data: '{"note":"naïve — ✓"}' }]);
  });
});

describe("streamHighlights over HTTP", () => {
  test("events arrive while the response is still open; provisional then final", async () => {
    const firstSeen = gate("first event reached the client");
    let request: unknown;
    const server = await serve(async (req, res, body) => {
      request = {
        method: req.method,
        url: req.url,
        accept: req.headers.accept,
        body: JSON.parse(body),
      };
      res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-store" });
      res.write(
        sse("citation", { index: 0, provisional: true, citation: citation("fallback", "guess") }),
      );
      // The server sends nothing more until the client has seen the first event: a helper that
      // waited for the whole body would time out here.
      await firstSeen.opened;
      res.write(": ping\n\n");
      res.write(sse("unknown-future-event", { x: 1 }));
      res.write(
        sse("citation", { index: 0, provisional: false, citation: citation("highlighted", "llm") }),
      );
      res.end(
        sse("summary", {
          status: "complete",
          method: "llm",
          llm_tier: "json_schema",
          total: 1,
          highlighted: 1,
        }),
      );
    });
    try {
      const state = new HighlightStreamState();
      const seen: HighlightStreamEvent[] = [];
      const req = {
        query: "q",
        answer: "a",
        citations: [{ chunk_id: "doc-c0001", citation_id: "1" }],
      };
      for await (const event of streamHighlights(req, { baseUrl: server.baseUrl })) {
        seen.push(event);
        state.apply(event);
        if (seen.length === 1) {
          assert.equal(state.results[0]?.status, "fallback");
          assert.equal(state.done, false);
          firstSeen.open();
        }
      }
      assert.deepEqual(request, {
        method: "POST",
        url: "/v2/highlights/stream",
        accept: "text/event-stream",
        body: req,
      });
      assert.deepEqual(
        seen.map((e) => e.event),
        ["citation", "citation", "summary"],
      );
      assert.equal(state.results[0]?.status, "highlighted");
      assert.deepEqual(state.provisional, [false]);
      assert.equal(state.summary?.highlighted, 1);
      assert.equal(state.done, true);
    } finally {
      server.close();
    }
  });

  test("a refused request throws the service's ErrorBody", async () => {
    const server = await serve(async (_req, res) => {
      res.writeHead(422, { "Content-Type": "application/json" });
      res.end(
        JSON.stringify({ error: { code: "validation_error", message: "citations: at least 1" } }),
      );
    });
    try {
      const run = async () => {
        for await (const _ of streamHighlights(
          { query: "q", answer: "a", citations: [] },
          { baseUrl: server.baseUrl },
        )) {
          assert.fail("no event expected");
        }
      };
      await assert.rejects(run, (e: unknown) => {
        assert.ok(e instanceof HighlightApiError);
        assert.deepEqual(
          [e.status, e.code, e.message],
          [422, "validation_error", "citations: at least 1"],
        );
        return true;
      });
    } finally {
      server.close();
    }
  });
});

describe("HighlightStreamState", () => {
  test("a late provisional event does not overwrite a final one", () => {
    const state = new HighlightStreamState();
    state.apply({
      event: "citation",
      data: { index: 1, provisional: false, citation: citation("highlighted", "final") },
    });
    const changed = state.apply({
      event: "citation",
      data: { index: 1, provisional: true, citation: citation("fallback", "late guess") },
    });
    assert.equal(changed, false);
    assert.equal(state.results[1]?.message, "final");
    assert.equal(state.results[0], undefined);
    assert.equal(state.done, false, "no summary yet");
  });
});
