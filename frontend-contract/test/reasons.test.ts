// The reader's words: one for every reason the service can send (checked against openapi.json at
// run time too, in case the generated types are stale), the README's table equal to the code's,
// and readerNotice's rules.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import { HighlightApiError } from "../src/http.js";
import {
  COMPOSED_NOTICES,
  failureNotice,
  type CitationVerdict,
  NOTHING_BY_WORDS,
  PARTLY_SUPPORTS,
  READER_NOTICES,
  type ReaderNotice,
  readerNotice,
} from "../src/reasons.js";

// Run from build/test/: the sources sit two folders up.
const root = new URL("../../", import.meta.url);
const read = (name: string) => readFileSync(new URL(name, root), "utf8");

describe("READER_NOTICES", () => {
  test("has words for every reason in openapi.json, and no others", () => {
    const openapi = JSON.parse(read("openapi.json")) as {
      components: { schemas: { Reason: { enum: string[] } } };
    };
    assert.deepEqual(
      Object.keys(READER_NOTICES).sort(),
      [...openapi.components.schemas.Reason.enum].sort(),
    );
  });

  test("README.md shows the same tables", () => {
    const readme = read("README.md");
    const table = (marker: string) => {
      const start = readme.indexOf(`<!-- ${marker}`);
      const end = readme.indexOf(`<!-- /${marker} -->`);
      assert.ok(start >= 0 && end > start, `README.md lost its ${marker} markers`);
      return readme
        .slice(start, end)
        .split("\n")
        .filter((line) => line.startsWith("| `"))
        .map((line) =>
          line
            .slice(1, -1)
            .split(" | ")
            .map((cell) => cell.trim()),
        );
    };
    const rows = (notices: Record<string, ReaderNotice>) =>
      Object.entries(notices).map(([name, n]) => [
        `\`${name}\``,
        n.tone,
        n.title,
        n.text,
        n.retryLater ? "yes" : "no",
      ]);
    assert.deepEqual(table("reader-notices"), rows(READER_NOTICES));
    assert.deepEqual(table("composed-notices"), rows(COMPOSED_NOTICES));
  });

  test("no notice speaks the engineers' words", () => {
    for (const [reason, n] of Object.entries({ ...READER_NOTICES, ...COMPOSED_NOTICES })) {
      assert.doesNotMatch(
        `${n.title} ${n.text}`,
        /\b(LLM|chunk|ingest|OCR|index|lexical)\b/i,
        reason,
      );
    }
  });
});

describe("readerNotice", () => {
  const verdict = (v: Partial<CitationVerdict>): CitationVerdict => ({
    status: "highlighted",
    reason: null,
    support: "supported",
    ...v,
  });

  test("a supported citation highlighted by the LLM needs no words", () => {
    assert.equal(readerNotice(verdict({})), null);
  });

  test("partial support is said first, even when words chose the sentences", () => {
    assert.equal(readerNotice(verdict({ support: "partial" })), PARTLY_SUPPORTS);
    assert.equal(
      readerNotice(verdict({ support: "partial", reason: "llm_busy" })),
      PARTLY_SUPPORTS,
    );
  });

  test("highlighted without the LLM says so", () => {
    assert.equal(readerNotice(verdict({ reason: "llm_disabled" }))?.title, "Matched by words");
  });

  test("nothing drawn, judged unsupported by the LLM or where there is no LLM", () => {
    const unsupported = READER_NOTICES.unsupported;
    const cases: Partial<CitationVerdict>[] = [
      { status: "no_match", reason: "unsupported", support: "unsupported" },
      { status: "no_match", reason: "llm_disabled", support: "unsupported" },
      { status: "no_match", reason: "llm_disabled", support: null },
    ];
    for (const c of cases) assert.equal(readerNotice(verdict(c)), unsupported, JSON.stringify(c));
  });

  test("nothing drawn while the LLM failed: no verdict, and worth asking again", () => {
    for (const reason of ["llm_unavailable", "llm_busy", "llm_truncated"] as const) {
      const v = verdict({ status: "no_match", reason, support: "unsupported" });
      assert.equal(readerNotice(v), NOTHING_BY_WORDS, reason);
      assert.equal(readerNotice(v)?.retryLater, true);
    }
  });

  test("highlighted by words: asking again helps only when the LLM failed this time", () => {
    assert.equal(readerNotice(verdict({ reason: "llm_busy" }))?.retryLater, true);
    assert.equal(readerNotice(verdict({ reason: "llm_disabled" }))?.retryLater, false);
  });

  test("nothing drawn for another reason: that reason's words", () => {
    const fallback = verdict({ status: "fallback", reason: "storage_unavailable", support: null });
    assert.equal(readerNotice(fallback), READER_NOTICES.storage_unavailable);
    assert.equal(readerNotice(fallback)?.retryLater, true);
    const notFound = verdict({ status: "fallback", reason: "chunk_not_found", support: null });
    assert.equal(readerNotice(notFound)?.tone, "error");
  });

  test("a provisional stream event says the final highlights are coming", () => {
    for (const status of ["highlighted", "no_match"] as const) {
      const v = verdict({ status, reason: "llm_pending", support: "unsupported" });
      assert.equal(readerNotice(v), READER_NOTICES.llm_pending);
    }
  });
});

describe("failureNotice", () => {
  test("a refused request: the reader is not told to retry", () => {
    const n = failureNotice(new HighlightApiError(422, "validation_error", "answer: too long"));
    assert.deepEqual([n.tone, n.retryLater], ["error", false]);
    assert.doesNotMatch(n.text, /answer: too long|422/, "the developer's message stays out");
  });

  test("an outage: try again, when the service said when", () => {
    const later = failureNotice(new HighlightApiError(503, "busy", "x", 30));
    assert.equal(later.text, "Try again in 30 seconds.");
    assert.equal(later.retryLater, true);
    assert.equal(failureNotice(new TypeError("fetch failed")).text, "Try again in a moment.");
  });
});
