/**
 * What the batch and stream helpers share: one POST to the service, retried the way the service
 * asks, and its errors typed.
 *
 * The service answers 503 with a `Retry-After` header (seconds) when it cannot answer right now:
 * its database or PDF store unreachable, its workers all busy. Both endpoints only read, so
 * the helpers wait the seconds it asks for and ask again, up to `retries` times. A network
 * failure (the fetch itself throws) and a 502 from a proxy in front of the service are retried
 * the same way, with a short backoff. Anything else is thrown at once: a 4xx (the request is
 * wrong) or a 500 would get the same answer again, and a 504 (a proxy gave up waiting) means
 * the service may still be working on it: asking again at once would start the same work a
 * second time rather than join it.
 */
import type { components } from "../highlight-api.js";

export type ErrorBody = components["schemas"]["ErrorBody"];

/** A non-2xx answer of the service, with its ErrorBody's code and message when it sent one. */
export class HighlightApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** Seconds the service asked to wait (its Retry-After), when it asked; else null. */
    readonly retryAfterS: number | null = null,
  ) {
    super(message);
    this.name = "HighlightApiError";
  }
}

export interface RequestOptions {
  /** Service root, e.g. "https://highlights.example.org"; default "" (same origin). */
  baseUrl?: string;
  /** Extra headers, e.g. { Authorization: "Bearer …" } when the browser holds a token. */
  headers?: Record<string, string>;
  /** Aborts the request and any wait between attempts; the promise rejects with its reason. */
  signal?: AbortSignal;
  /** Attempts after the first, for 503/502 and network failures; default 2. */
  retries?: number;
  /**
   * The longest Retry-After honoured, in seconds (default 20): a longer one is thrown at once
   * as a HighlightApiError with `retryAfterS` set, so the UI can say when to try again rather
   * than keep a reader waiting.
   */
  maxRetryAfterS?: number;
  /** Told before each wait: to show "retrying…", or to log. */
  onRetry?: (retry: RetryInfo) => void;
  /** Injected for tests or other runtimes; default globalThis.fetch. */
  fetch?: typeof fetch;
}

export interface RetryInfo {
  /** 1 for the first retry. */
  attempt: number;
  waitMs: number;
  /** The status that made us retry; null after a network failure. */
  status: number | null;
}

const RETRYABLE = new Set([502, 503]);
// setTimeout's longest delay; a longer one fires at once.
const MAX_TIMER_MS = 2 ** 31 - 1;
const BACKOFF_MS = 500;

/**
 * Retry-After in either of its forms (RFC 9110): delay-seconds or an HTTP date. Null when absent
 * or unreadable; never negative.
 */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | null {
  if (value === null) return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text);
  // An HTTP date names its day and month; Date.parse alone would take "-5" for a year.
  const date = /[a-z]/i.test(text) ? Date.parse(text) : Number.NaN;
  return Number.isNaN(date) ? null : Math.max(0, Math.ceil((date - now) / 1000));
}

/** Reads an error answer into a HighlightApiError; a body that is not an ErrorBody keeps the status. */
export async function apiError(response: Response): Promise<HighlightApiError> {
  let code = "http_error";
  let message = `HTTP ${response.status}`;
  try {
    const body = (await response.json()) as ErrorBody;
    code = body.error.code;
    message = body.error.message;
  } catch {
    // not an ErrorBody (a proxy's HTML page): keep the status line
  }
  const retryAfter = parseRetryAfter(response.headers.get("Retry-After"));
  return new HighlightApiError(response.status, code, message, retryAfter);
}

function wait(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * POSTs `body` as JSON to `path` and returns the first 2xx response, retrying as the module
 * comment says. Throws HighlightApiError for an answer it will not retry (or the last one), the
 * fetch's own error after the last network failure, and the signal's reason when aborted.
 */
export async function postWithRetries(
  path: string,
  body: unknown,
  accept: string,
  options: RequestOptions,
): Promise<Response> {
  const doFetch = options.fetch ?? globalThis.fetch;
  const retries = options.retries ?? 2;
  const maxRetryAfterS = options.maxRetryAfterS ?? 20;
  const init: RequestInit = {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: accept, ...options.headers },
    body: JSON.stringify(body),
  };
  if (options.signal) init.signal = options.signal;
  for (let attempt = 0; ; attempt++) {
    let waitMs: number;
    let status: number | null = null;
    try {
      const response = await doFetch(`${options.baseUrl ?? ""}${path}`, init);
      if (response.ok) return response;
      const error = await apiError(response);
      // Aborted while the error's body was read: the caller asked for the abort, not the error.
      if (options.signal?.aborted) throw options.signal.reason;
      const tooLong = error.retryAfterS !== null && error.retryAfterS > maxRetryAfterS;
      if (!RETRYABLE.has(response.status) || attempt >= retries || tooLong) throw error;
      status = response.status;
      waitMs = (error.retryAfterS ?? 0) * 1000 || BACKOFF_MS * 2 ** attempt;
    } catch (error) {
      // An abort surfaces here as the fetch's rejection (or the reason thrown above): never retried.
      if (error instanceof HighlightApiError || options.signal?.aborted) throw error;
      if (attempt >= retries) throw error;
      waitMs = BACKOFF_MS * 2 ** attempt;
    }
    // Up to a fifth more, so the readers an outage turned away do not all come back at once;
    // never past the longest wait the caller accepts.
    waitMs = Math.min(Math.round(waitMs * (1 + Math.random() / 5)), maxRetryAfterS * 1000);
    waitMs = Math.min(waitMs, MAX_TIMER_MS);
    options.onRetry?.({ attempt: attempt + 1, waitMs, status });
    await wait(waitMs, options.signal);
  }
}

/**
 * A link of the service's answer (`pdf_url`, `link`, `viewer_link`) as the browser must open it.
 * Links are relative ("/v2/documents/…") unless the service has HIGHLIGHT_PUBLIC_BASE_URL; a
 * relative one is appended to `baseUrl`, the address the frontend calls the service at, path
 * included ("https://chat.example.org/highlights" + "/v2/…"): `new URL(link, baseUrl)` would
 * drop that path.
 */
export function resolveLink(link: string, baseUrl: string): string {
  if (/^[a-z][a-z0-9+.-]*:/i.test(link)) return link; // already absolute
  return `${baseUrl.replace(/\/+$/, "")}${link}`;
}
