// fetchHighlights (and the stream's opening) against a real HTTP server on 127.0.0.1 and Node's
// real fetch, scripted to answer as the service does when it cannot answer right now: 503 with
// Retry-After. Waits are checked through onRetry (what the helper decided), never by a clock.
import assert from "node:assert/strict";
import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { describe, test } from "node:test";
import { fetchHighlights } from "../src/batch.js";
import { HighlightApiError, parseRetryAfter, resolveLink, type RetryInfo } from "../src/http.js";
import { streamHighlights } from "../src/stream.js";
import { serve } from "./http-server.js";

const request = {
  query: "What did the minister say?",
  answer: "The deficit fell [1].",
  citations: [{ chunk_id: "doc-c0001", citation_id: "1" }],
};
const answer = { status: "fallback", method: "lexical", llm_tier: null, results: [] };
const unavailable = { error: { code: "busy", message: "draining; retry" } };

type Reply = { status: number; headers?: Record<string, string>; body: unknown };

/** A server answering each POST with the next scripted reply (the last one repeats). */
async function scripted(replies: Reply[]) {
  const seen: { url: string | undefined; auth: string | undefined; body: unknown }[] = [];
  const server = await serve(async (req, res, body) => {
    seen.push({ url: req.url, auth: req.headers.authorization, body: JSON.parse(body) });
    const reply = replies[Math.min(seen.length, replies.length) - 1];
    assert.ok(reply);
    res.writeHead(reply.status, { "Content-Type": "application/json", ...reply.headers });
    res.end(JSON.stringify(reply.body));
  });
  return { ...server, seen };
}

describe("fetchHighlights", () => {
  test("posts the request with the caller's headers and returns the answer", async () => {
    const server = await scripted([{ status: 200, body: answer }]);
    try {
      const got = await fetchHighlights(request, {
        baseUrl: server.baseUrl,
        headers: { Authorization: "Bearer t0k" },
      });
      assert.deepEqual(got, answer);
      assert.deepEqual(server.seen, [
        { url: "/v2/highlights/batch", auth: "Bearer t0k", body: request },
      ]);
    } finally {
      server.close();
    }
  });

  test("a 503 is asked again after the Retry-After the service sent", async () => {
    const server = await scripted([
      { status: 503, headers: { "Retry-After": "1" }, body: unavailable },
      { status: 200, body: answer },
    ]);
    const retries: RetryInfo[] = [];
    try {
      const got = await fetchHighlights(request, {
        baseUrl: server.baseUrl,
        onRetry: (r) => retries.push(r),
      });
      assert.deepEqual(got, answer);
      assert.equal(server.seen.length, 2);
      assert.equal(retries.length, 1);
      const [retry] = retries;
      assert.deepEqual([retry?.attempt, retry?.status], [1, 503]);
      // The second asked for, plus at most a fifth of jitter.
      assert.ok(retry && retry.waitMs >= 1000 && retry.waitMs <= 1200, `${retry?.waitMs}`);
    } finally {
      server.close();
    }
  });

  test("gives up after `retries` and throws the last 503 with its Retry-After", async () => {
    const server = await scripted([
      { status: 503, headers: { "Retry-After": "0" }, body: unavailable },
    ]);
    try {
      await assert.rejects(
        fetchHighlights(request, { baseUrl: server.baseUrl, retries: 1 }),
        (e: unknown) =>
          e instanceof HighlightApiError &&
          e.status === 503 &&
          e.code === "busy" &&
          e.retryAfterS === 0,
      );
      assert.equal(server.seen.length, 2, "the first attempt and one retry");
    } finally {
      server.close();
    }
  });

  test("a Retry-After longer than maxRetryAfterS is thrown at once, for the UI to show", async () => {
    const server = await scripted([
      { status: 503, headers: { "Retry-After": "60" }, body: unavailable },
    ]);
    try {
      await assert.rejects(
        fetchHighlights(request, { baseUrl: server.baseUrl, maxRetryAfterS: 30 }),
        (e: unknown) => e instanceof HighlightApiError && e.retryAfterS === 60,
      );
      assert.equal(server.seen.length, 1);
    } finally {
      server.close();
    }
  });

  test("a 504 is thrown at once: the service may still be working on the first call", async () => {
    const server = await scripted([{ status: 504, body: "gateway timeout" }]);
    try {
      await assert.rejects(
        fetchHighlights(request, { baseUrl: server.baseUrl }),
        (e: unknown) => e instanceof HighlightApiError && e.status === 504,
      );
      assert.equal(server.seen.length, 1);
    } finally {
      server.close();
    }
  });

  test("the jitter never takes a wait past maxRetryAfterS", async () => {
    const server = await scripted([
      { status: 503, headers: { "Retry-After": "20" }, body: unavailable },
    ]);
    const controller = new AbortController();
    const waits: number[] = [];
    try {
      await assert.rejects(
        fetchHighlights(request, {
          baseUrl: server.baseUrl,
          maxRetryAfterS: 20,
          signal: controller.signal,
          onRetry: (r) => {
            waits.push(r.waitMs);
            controller.abort(); // the decision is what is checked, not the wait
          },
        }),
      );
      assert.deepEqual(waits, [20_000], "20 s asked, 20 s accepted: no jitter past it");
    } finally {
      server.close();
    }
  });

  test("a 4xx is thrown at once with the service's code and message", async () => {
    const refusal = { error: { code: "validation_error", message: "citations: at least 1" } };
    const server = await scripted([{ status: 422, body: refusal }]);
    try {
      await assert.rejects(
        fetchHighlights(request, { baseUrl: server.baseUrl }),
        (e: unknown) =>
          e instanceof HighlightApiError &&
          e.status === 422 &&
          e.code === "validation_error" &&
          e.message === "citations: at least 1" &&
          e.retryAfterS === null,
      );
      assert.equal(server.seen.length, 1);
    } finally {
      server.close();
    }
  });

  test("a refused connection is retried with backoff, then its error thrown", async () => {
    // A port that was free a moment ago and has nothing listening now.
    const probe = createServer().listen(0, "127.0.0.1");
    await new Promise((resolve) => probe.once("listening", resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise((resolve) => probe.close(resolve));
    const retries: RetryInfo[] = [];
    await assert.rejects(
      fetchHighlights(request, {
        baseUrl: `http://127.0.0.1:${port}`,
        retries: 2,
        onRetry: (r) => retries.push(r),
      }),
      (e: unknown) => e instanceof TypeError, // fetch's own network error
    );
    assert.deepEqual(
      retries.map((r) => [r.attempt, r.status]),
      [
        [1, null],
        [2, null],
      ],
    );
    assert.ok(retries[1] && retries[0] && retries[1].waitMs > retries[0].waitMs, "backs off");
  });

  test("aborting while it waits to retry rejects with the abort at once", async () => {
    const server = await scripted([
      { status: 503, headers: { "Retry-After": "15" }, body: unavailable },
    ]);
    const controller = new AbortController();
    try {
      await assert.rejects(
        fetchHighlights(request, {
          baseUrl: server.baseUrl,
          signal: controller.signal,
          onRetry: () => controller.abort(),
        }),
        (e: unknown) => e instanceof DOMException && e.name === "AbortError",
      );
      assert.equal(server.seen.length, 1, "no second request after the abort");
    } finally {
      server.close();
    }
  });

  test("aborting while the service is answering rejects with the abort", async () => {
    const controller = new AbortController();
    const server = await serve(async () => {
      controller.abort(); // the request reached the service; it never answers
    });
    try {
      await assert.rejects(
        fetchHighlights(request, { baseUrl: server.baseUrl, signal: controller.signal }),
        (e: unknown) => e instanceof DOMException && e.name === "AbortError",
      );
    } finally {
      server.close();
    }
  });
});

describe("streamHighlights opening", () => {
  test("a 503 before the stream opens is retried like the batch", async () => {
    let calls = 0;
    const server = await serve(async (_req, res) => {
      calls += 1;
      if (calls === 1) {
        res.writeHead(503, { "Content-Type": "application/json", "Retry-After": "1" });
        res.end(JSON.stringify(unavailable));
        return;
      }
      res.writeHead(200, { "Content-Type": "text/event-stream" });
      const summary = { status: "fallback", method: "lexical", llm_tier: null, total: 1 };
      res.end(`event: summary\ndata: ${JSON.stringify({ ...summary, highlighted: 0 })}\n\n`);
    });
    try {
      const events = [];
      for await (const e of streamHighlights(request, { baseUrl: server.baseUrl })) events.push(e);
      assert.deepEqual(
        events.map((e) => e.event),
        ["summary"],
      );
      assert.equal(calls, 2);
    } finally {
      server.close();
    }
  });
});

describe("parseRetryAfter", () => {
  test("seconds, an HTTP date, and nonsense", () => {
    const now = Date.parse("2026-11-28T12:00:00Z");
    assert.equal(parseRetryAfter("7", now), 7);
    assert.equal(parseRetryAfter(" 120 ", now), 120);
    assert.equal(parseRetryAfter("Sat, 28 Nov 2026 12:00:30 GMT", now), 30);
    assert.equal(parseRetryAfter("Sat, 28 Nov 2026 11:00:00 GMT", now), 0, "a past date");
    assert.equal(parseRetryAfter("-5", now), null);
    assert.equal(parseRetryAfter("soon", now), null);
    assert.equal(parseRetryAfter(null, now), null);
  });
});

describe("resolveLink", () => {
  test("a relative link goes under the base URL, path prefix kept; an absolute one is kept", () => {
    const pdf = "/v2/documents/d/pdf?expires=1&signature=s";
    assert.equal(
      resolveLink(pdf, "https://chat.example.org/highlights/"),
      `https://chat.example.org/highlights${pdf}`,
    );
    assert.equal(resolveLink(pdf, ""), pdf, "same origin: as it is");
    const absolute = `https://h.example.org${pdf}`;
    assert.equal(resolveLink(absolute, "https://chat.example.org/highlights"), absolute);
  });
});
