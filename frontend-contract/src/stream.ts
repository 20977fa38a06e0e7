/**
 * `POST /v2/highlights/stream`: the batch's results as Server-Sent Events, one citation at a time.
 *
 * EventSource can only GET, so a frontend POSTs with `fetch` and reads the body as a stream; this
 * module parses it (the WHATWG "text/event-stream" rules) and types the two events:
 *
 *   event: citation   data: {"index": 0, "provisional": true,  "citation": CitationResult}
 *   event: summary    data: {"status", "method", "llm_tier", "total", "highlighted"}
 *
 * A provisional citation (chosen by word overlap while the LLM is still answering) is replaced by
 * the non-provisional event with the same index; `HighlightStreamState` keeps that rule.
 */
import type { components } from "../highlight-api.js";
import { HighlightApiError, postWithRetries, type RequestOptions } from "./http.js";

export { HighlightApiError } from "./http.js";

export type CitationResult = components["schemas"]["CitationResult"];
export type HighlightBatchRequest = components["schemas"]["HighlightBatchRequest"];

/** Data of a `citation` event: `{index, provisional, citation}` (generated from the service). */
export type CitationEventData = components["schemas"]["CitationEvent"];

/** Data of the `summary` event, the stream's last (generated from the service). */
export type SummaryEventData = components["schemas"]["BatchSummary"];

export type HighlightStreamEvent =
  { event: "citation"; data: CitationEventData } | { event: "summary"; data: SummaryEventData };

/** One dispatched Server-Sent Event, untyped. */
export interface ServerSentEvent {
  /** "message" when the event had no `event:` field, as in EventSource. */
  event: string;
  data: string;
  id?: string;
  retry?: number;
}

/**
 * Incremental text/event-stream parser: feed it decoded text in chunks of any size (a chunk may
 * end mid-line, or between the CR and LF of a CRLF); it returns the events completed so far.
 */
export class SseParser {
  private buffer = "";
  private data: string[] = [];
  private eventType = "";
  private id: string | undefined;
  private retry: number | undefined;
  private started = false;

  push(text: string): ServerSentEvent[] {
    if (!this.started && text.length > 0) {
      this.started = true;
      if (text.charCodeAt(0) === 0xfeff) text = text.slice(1); // a leading BOM is not data
    }
    this.buffer += text;
    const events: ServerSentEvent[] = [];
    // A lone CR at the very end may be the first half of CRLF: wait for the next chunk.
    const lineEnd = /\r\n|\r(?!$)|\n/g;
    let start = 0;
    for (let m = lineEnd.exec(this.buffer); m; m = lineEnd.exec(this.buffer)) {
      const event = this.line(this.buffer.slice(start, m.index));
      if (event) events.push(event);
      start = m.index + m[0].length;
    }
    this.buffer = this.buffer.slice(start);
    return events;
  }

  /** End of stream: a trailing CR ends its line; an event with no blank line after it is dropped. */
  end(): ServerSentEvent[] {
    const events = this.buffer.endsWith("\r") ? this.push("\n") : [];
    this.buffer = "";
    return events;
  }

  private line(line: string): ServerSentEvent | undefined {
    if (line === "") return this.dispatch();
    if (line.startsWith(":")) return undefined; // comment, e.g. a keep-alive
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") this.data.push(value);
    else if (field === "event") this.eventType = value;
    else if (field === "id" && !value.includes("\0")) this.id = value;
    else if (field === "retry" && /^\d+$/.test(value)) this.retry = Number(value);
    return undefined;
  }

  private dispatch(): ServerSentEvent | undefined {
    const hadData = this.data.length > 0;
    const event: ServerSentEvent = {
      event: this.eventType || "message",
      data: this.data.join("\n"),
    };
    if (this.id !== undefined) event.id = this.id;
    if (this.retry !== undefined) event.retry = this.retry;
    this.data = [];
    this.eventType = "";
    this.retry = undefined;
    return hadData ? event : undefined; // the spec dispatches nothing for an event without data
  }
}

/** Parses a response body (e.g. `response.body` of a fetch) into events as bytes arrive. */
export async function* parseSse(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerSentEvent> {
  const parser = new SseParser();
  const decoder = new TextDecoder("utf-8"); // stream: true keeps multi-byte characters whole
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      yield* parser.push(decoder.decode(value, { stream: true }));
    }
    yield* parser.push(decoder.decode());
    yield* parser.end();
  } finally {
    reader.releaseLock();
  }
}

/** Types an event of the highlight stream; unknown event names give undefined (forward-compatible). */
export function toHighlightStreamEvent(event: ServerSentEvent): HighlightStreamEvent | undefined {
  if (event.event === "citation") {
    return { event: "citation", data: JSON.parse(event.data) as CitationEventData };
  }
  if (event.event === "summary") {
    return { event: "summary", data: JSON.parse(event.data) as SummaryEventData };
  }
  return undefined;
}

/** What streamHighlights takes: the batch helper's options (retries apply until the stream opens). */
export type StreamOptions = RequestOptions;

/**
 * POSTs the request and yields the typed events as they arrive. Throws HighlightApiError when the
 * service refuses the request (4xx/5xx), before any event; a 503 (with its Retry-After), 502
 * or network failure before the stream opens is retried first, as fetchHighlights does. A stream
 * cut off midway is not retried: call again (the answer is cached) or keep what came.
 */
export async function* streamHighlights(
  request: HighlightBatchRequest,
  options: StreamOptions = {},
): AsyncGenerator<HighlightStreamEvent> {
  const response = await postWithRetries(
    "/v2/highlights/stream",
    request,
    "text/event-stream",
    options,
  );
  if (!response.body) throw new HighlightApiError(response.status, "http_error", "no body");
  for await (const raw of parseSse(response.body)) {
    const event = toHighlightStreamEvent(raw);
    if (event) yield event;
  }
}

/**
 * The latest known result per citation index. A provisional event never overwrites a final one,
 * so the state is right whatever order the events come in.
 */
export class HighlightStreamState {
  readonly results: (CitationResult | undefined)[] = [];
  readonly provisional: boolean[] = [];
  summary: SummaryEventData | undefined;

  /** Applies an event; returns true when it changed what should be shown. */
  apply(event: HighlightStreamEvent): boolean {
    if (event.event === "summary") {
      this.summary = event.data;
      return true;
    }
    const { index, provisional, citation } = event.data;
    if (provisional && this.results[index] !== undefined && !this.provisional[index]) return false;
    this.results[index] = citation;
    this.provisional[index] = provisional;
    return true;
  }

  /** True once the summary came and no citation is still provisional. */
  get done(): boolean {
    return this.summary !== undefined && !this.provisional.some(Boolean);
  }
}
