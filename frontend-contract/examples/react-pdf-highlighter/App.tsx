/**
 * The chat side: the answer with its markers, one call for all citations' highlights once the
 * answer is complete, each citation's status in a reader's words, and the cited PDF.
 */
import { useEffect, useRef, useState } from "react";
import { CitationPdf } from "./CitationPdf.js";
import type { ExampleInput } from "./input.js";
import { failureNotice, fetchHighlights, readerNotice, resolveLink } from "../../src/index.js";
import type { ReaderNotice } from "../../src/index.js";
import type { HighlightBatchResponse } from "../../src/index.js";
import type { CitationResult } from "../../src/index.js";

type Batch =
  | { state: "loading" }
  | { state: "failed"; notice: ReaderNotice }
  | { state: "done"; response: HighlightBatchResponse };

export function App({ input }: { input: ExampleInput }) {
  const [batch, setBatch] = useState<Batch>({ state: "loading" });
  const [selected, setSelected] = useState<string | null>(null);
  const pane = useRef<HTMLElement>(null);
  // On a phone the PDF is below the answer: a tapped citation brings it into view.
  const open = (citationId: string) => {
    setSelected(citationId);
    pane.current?.scrollIntoView({ block: "nearest" });
  };

  // In a chat UI this runs when the answer's stream has ended: the service places a highlight
  // by the claim its marker closes, so it needs the whole answer. Here the answer is complete
  // on load.
  useEffect(() => {
    const abort = new AbortController();
    const request = { query: input.question, answer: input.answer, citations: input.citations };
    fetchHighlights(request, { baseUrl: input.baseUrl, signal: abort.signal }).then(
      (response) => {
        setBatch({ state: "done", response });
        // Open the first citation that has boxes to draw.
        const first = response.results.find(hasHighlights);
        setSelected(first ? first.citation_id : null);
      },
      (error: unknown) => {
        // The error's message is for developers (the console); the reader gets words.
        if (abort.signal.aborted) return;
        console.warn("highlights unavailable:", error);
        setBatch({ state: "failed", notice: failureNotice(error) });
      },
    );
    return () => abort.abort();
  }, [input]);

  const results: CitationResult[] = batch.state === "done" ? batch.response.results : [];
  const shown = results.find((c) => c.citation_id !== null && c.citation_id === selected);
  return (
    <div className="layout">
      <section className="chat" aria-label="Answer">
        <p className="question">{input.question}</p>
        <Answer text={input.answer} results={results} onMarker={open} />
        {batch.state === "loading" && <p className="pdf-status">Finding the cited passages…</p>}
        {batch.state === "failed" && (
          <p className={`notice notice-${batch.notice.tone}`} role="alert">
            <strong>{batch.notice.title}</strong> {batch.notice.text}
          </p>
        )}
        <ol className="citations" aria-label="Sources">
          {results.map((citation, index) => (
            <CitationItem
              // Results come in request order, one per citation: the index is the stable key
              // (two citations may share a chunk, and citation_id is optional).
              key={index}
              baseUrl={input.baseUrl}
              citation={citation}
              selected={citation === shown}
              onSelect={open}
            />
          ))}
        </ol>
      </section>
      <section className="pdf-pane" aria-label="Cited PDF" ref={pane}>
        {shown ? (
          <OpenCitation baseUrl={input.baseUrl} citation={shown} />
        ) : (
          <p className="pdf-status">No source to show.</p>
        )}
      </section>
    </div>
  );
}

function OpenCitation({ baseUrl, citation }: { baseUrl: string; citation: CitationResult }) {
  // null only for a chunk the service does not know (and then nothing is highlighted either).
  if (citation.pdf_url === null) return <p className="pdf-status">This source has no PDF.</p>;
  // pdf_url is relative unless the service has HIGHLIGHT_PUBLIC_BASE_URL: resolve it against
  // the service (path included), not against this page's origin.
  const url = resolveLink(citation.pdf_url, baseUrl);
  return <CitationPdf key={url} pdfUrl={url} highlights={citation.highlights} />;
}

function hasHighlights(citation: CitationResult): boolean {
  return citation.highlights.length > 0;
}

// Markers the service recognises around a citation id: [1], [1, 2], [^1], 【1】 (ranges and
// <sup> left out to keep the example short).
const MARKER = /(\[\^?[^\]\n]{1,32}\]|【[^】\n]{1,32}】)/;

/** The answer as text, its markers as buttons that open their (first known) citation. */
function Answer(props: {
  text: string;
  results: CitationResult[];
  onMarker: (citationId: string) => void;
}) {
  const known = new Set(props.results.map((c) => c.citation_id));
  const parts = props.text.split(MARKER);
  return (
    <p className="answer">
      {parts.map((part, i) => {
        const ids = part.replace(/^[[【]\^?|[\]】]$/g, "").split(/[\s,]+/);
        const id = ids.find((candidate) => known.has(candidate));
        return i % 2 === 1 && id !== undefined ? (
          <button key={i} className="marker" onClick={() => props.onMarker(id)}>
            {part}
          </button>
        ) : (
          part
        );
      })}
    </p>
  );
}

function CitationItem(props: {
  baseUrl: string;
  citation: CitationResult;
  selected: boolean;
  onSelect: (citationId: string) => void;
}) {
  const { citation } = props;
  const notice = readerNotice(citation);
  const id = citation.citation_id;
  const pages =
    citation.page_start && citation.page_end && citation.page_end !== citation.page_start
      ? `pp. ${citation.page_start}-${citation.page_end}`
      : citation.page_start
        ? `p. ${citation.page_start}`
        : "";
  const label = (
    <>
      <span className="citation-id">[{id}]</span> {citation.document_title ?? citation.chunk_id}
      {pages && <span className="pages"> · {pages}</span>}
    </>
  );
  return (
    <li
      className={props.selected ? "citation selected" : "citation"}
      data-citation-id={id}
      data-status={citation.status}
      data-reason={citation.reason ?? ""}
    >
      {!hasHighlights(citation) || id === null ? (
        <span className="citation-label">{label}</span>
      ) : (
        <button
          className="citation-label"
          aria-current={props.selected}
          onClick={() => props.onSelect(id)}
        >
          {label}
        </button>
      )}
      {notice && (
        <div className={`notice notice-${notice.tone}`} role="status">
          <strong>{notice.title}</strong> {notice.text}
        </div>
      )}
      {/* Nothing to draw: the plain link still opens the cited page in the browser's viewer. */}
      {!hasHighlights(citation) && citation.link !== null && (
        <a className="page-link" href={resolveLink(citation.link, props.baseUrl)}>
          Open the cited page
        </a>
      )}
    </li>
  );
}
