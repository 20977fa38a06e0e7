/**
 * `POST /v2/highlights/batch`: every citation's highlights in one JSON answer.
 *
 * Call it once the chat answer's own stream has ended (the answer text must be final: claims are
 * offsets into it), with the question, the answer and the cited chunk ids. For results one
 * citation at a time instead, see stream.ts; both take the same request.
 *
 *   const result = await fetchHighlights(
 *     { query, answer, citations: [{ chunk_id: "doc-c0003", citation_id: "1" }] },
 *     { baseUrl, signal: controller.signal },
 *   );
 *   for (const citation of result.results) … citation.status, citation.highlights, citation.pdf_url
 *
 * Retries 503/502 and network failures as the service asks (its Retry-After), then throws
 * HighlightApiError; a 4xx (its `code` and `message` say what to fix) and a 504 are thrown at once. Abort
 * with the signal when the reader leaves the answer.
 */
import type { components } from "../highlight-api.js";
import { postWithRetries, type RequestOptions } from "./http.js";
import type { HighlightBatchRequest } from "./stream.js";

export type HighlightBatchResponse = components["schemas"]["HighlightBatchResponse"];

export type FetchHighlightsOptions = RequestOptions;

export async function fetchHighlights(
  request: HighlightBatchRequest,
  options: FetchHighlightsOptions = {},
): Promise<HighlightBatchResponse> {
  const response = await postWithRetries(
    "/v2/highlights/batch",
    request,
    "application/json",
    options,
  );
  return (await response.json()) as HighlightBatchResponse;
}
