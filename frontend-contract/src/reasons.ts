/**
 * What to tell a reader about a citation: the service's `status`, `reason` and `support` put in
 * a reader's words.
 *
 * The service's own `message` is written for the engineers who run it ("re-ingest the
 * document", "no LLM is configured"); a reader needs to know whether to trust the highlights and
 * what to do instead. READER_NOTICES has the words for every reason; it is typed by the
 * generated `Reason` union, so a reason the service adds fails the build until it has words.
 * frontend-contract/README.md shows the same table (a test keeps the two equal).
 */
import type { components } from "../highlight-api.js";
import { HighlightApiError } from "./http.js";

export type Reason = components["schemas"]["Reason"];
export type CitationStatus = components["schemas"]["CitationStatus"];
export type Support = components["schemas"]["Support"];

/**
 * How to show a notice. info: a footnote (the highlights can be read as they are); partial: the
 * source backs only part of the statement; warning: nothing is marked, the page link is the way
 * to the passage; error: the source cannot be shown at all.
 */
export type Tone = "info" | "partial" | "warning" | "error";

export interface ReaderNotice {
  tone: Tone;
  title: string;
  text: string;
  /** Asking again later (a retry button, or on the next view) may highlight it. */
  retryLater: boolean;
}

const notice = (tone: Tone, title: string, text: string, retryLater = false): ReaderNotice => ({
  tone,
  title,
  text,
  retryLater,
});

const BY_WORDS_TEXT =
  "These passages were found by matching the answer's words; check them against the statement.";
// No LLM is configured: matching words is how this deployment reads, asking again changes nothing.
const BY_WORDS = notice("info", "Matched by words", BY_WORDS_TEXT);
// The LLM failed this time (unreachable, busy, cut off): such answers are not cached, and asking
// again later may get the closer reading.
const BY_WORDS_FOR_NOW = notice("info", "Matched by words", BY_WORDS_TEXT, true);

export const READER_NOTICES: Readonly<Record<Reason, ReaderNotice>> = {
  chunk_not_found: notice(
    "error",
    "Source not found",
    "This source is no longer in the library, so it cannot be shown.",
  ),
  pdf_unavailable: notice(
    "error",
    "Document unavailable",
    "The document's file could not be opened, so the passage cannot be shown.",
  ),
  storage_unavailable: notice(
    "warning",
    "Document not reachable just now",
    "Open the cited page, or try again in a moment to see the passage marked.",
    true,
  ),
  pdf_changed: notice(
    "warning",
    "The document has changed",
    "It was updated after this answer was written; open the cited page to check the passage.",
  ),
  no_text_layer: notice(
    "warning",
    "Scanned page",
    "The cited page is a scan whose text could not be read; open the page to read the passage.",
  ),
  index_pending: notice(
    "info",
    "Still preparing the document",
    "Open the cited page, or try again in a moment to see the passage marked.",
    true,
  ),
  text_layer_pending: notice(
    "info",
    "Still reading the scanned pages",
    "Open the cited page, or try again in a minute to see the passage marked.",
    true,
  ),
  pdf_too_complex: notice(
    "warning",
    "Passage not marked",
    "The document is too large to mark; open the cited page to read the passage.",
  ),
  not_located: notice(
    "warning",
    "Passage not marked",
    "The passage could not be found exactly on the page; open the cited page to read it.",
  ),
  unsupported: notice(
    "warning",
    "Not supported by this source",
    "Nothing in this source supports the statement it is cited for.",
  ),
  no_sentences: notice("warning", "Nothing to mark", "This source has no text to mark."),
  chunk_not_in_pdf: notice(
    "warning",
    "Passage not in the document",
    "This source's text was not found in its document, so it cannot be marked or checked.",
  ),
  llm_disabled: BY_WORDS,
  llm_pending: notice(
    "info",
    "Refining the highlights",
    "These are first matches; the final highlights follow in a moment.",
  ),
  llm_unavailable: BY_WORDS_FOR_NOW,
  llm_busy: BY_WORDS_FOR_NOW,
  llm_rejected: BY_WORDS_FOR_NOW,
  llm_truncated: BY_WORDS_FOR_NOW,
  llm_invalid_output: BY_WORDS_FOR_NOW,
};

/** Shown for a highlighted citation that backs only part of what it is cited for. */
export const PARTLY_SUPPORTS: ReaderNotice = notice(
  "partial",
  "Partly supports the statement",
  "The highlighted sentences show the part this source supports.",
);

/**
 * Shown for a citation with nothing drawn because matching words found no support while the LLM
 * failed: not the verdict of a reading, and asking again later may get one.
 */
export const NOTHING_BY_WORDS: ReaderNotice = notice(
  "warning",
  "No supporting passage found",
  "Matching the answer's words found nothing here that supports the statement; a closer reading later may.",
  true,
);

/** The notices readerNotice composes beyond READER_NOTICES (the README's second table). */
export const COMPOSED_NOTICES = {
  partial_support: PARTLY_SUPPORTS,
  nothing_by_words: NOTHING_BY_WORDS,
} as const;

/** Shown when no highlight was drawn and the service gave no reason (not expected). */
export const NOT_MARKED: ReaderNotice = READER_NOTICES.not_located;

export interface CitationVerdict {
  status: CitationStatus;
  reason: Reason | null;
  support: Support | null;
}

/**
 * The notice to show beside a citation, or null when its highlights need no words.
 *
 * - highlighted: partial support first (the reader must know the source backs only part), then
 *   the reason when the sentences were chosen another way than by the LLM (by words, or first
 *   matches while the LLM answers); null otherwise.
 * - no_match / fallback: the reason's notice. "Not supported by this source" when the service
 *   judged the chunk unsupported: by the LLM, or by words where no LLM is configured. When the
 *   LLM failed and matching words found nothing (an llm_* failure reason on a citation with
 *   nothing highlighted), "No supporting passage found": no reading judged it, and asking again
 *   later may.
 * - llm_pending (a provisional stream event) always says the final answer is coming.
 */
export function readerNotice(citation: CitationVerdict): ReaderNotice | null {
  const { status, reason, support } = citation;
  if (reason === "llm_pending") return READER_NOTICES.llm_pending;
  if (status === "highlighted") {
    if (support === "partial") return PARTLY_SUPPORTS;
    return reason === null ? null : READER_NOTICES[reason];
  }
  if (reason !== null && READER_NOTICES[reason] === BY_WORDS_FOR_NOW) return NOTHING_BY_WORDS;
  if (support === "unsupported" || reason === "llm_disabled") return READER_NOTICES.unsupported;
  return reason === null ? NOT_MARKED : READER_NOTICES[reason];
}

/**
 * What to tell a reader when the batch call itself failed (fetchHighlights threw), in place of
 * the error's message, which is written for a developer. `retryLater` with the wait the service
 * asked for, when it asked.
 */
export function failureNotice(error: unknown): ReaderNotice {
  if (error instanceof HighlightApiError && error.status < 500) {
    // The request was refused (4xx): the frontend's bug or a lapsed session, not the reader's.
    return notice(
      "error",
      "Sources cannot be shown",
      "The cited passages could not be marked for this answer.",
    );
  }
  const wait =
    error instanceof HighlightApiError && error.retryAfterS !== null && error.retryAfterS > 5
      ? `in ${error.retryAfterS} seconds`
      : "in a moment";
  return notice("warning", "Sources not reachable just now", `Try again ${wait}.`, true);
}
