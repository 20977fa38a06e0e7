/**
 * TEMPORARY, removed when main has them: the signatures of fetchHighlights (src/batch.ts),
 * readerNotice (src/reasons.ts) and CitationResult.pdf_url, as announced for issue 32.
 */
import type { components } from "../../highlight-api.js";

export type HighlightBatchRequest = components["schemas"]["HighlightBatchRequest"];
export type CitationResult = components["schemas"]["CitationResult"] & { pdf_url?: string | null };
export type HighlightBatchResponse = Omit<components["schemas"]["HighlightBatchResponse"], "results"> & {
  results: CitationResult[];
};

export class HighlightServiceError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    super(`highlight service answered ${status}`);
  }
}

export async function fetchHighlights(
  request: HighlightBatchRequest,
  options: { baseUrl?: string; headers?: HeadersInit; signal?: AbortSignal } = {},
): Promise<HighlightBatchResponse> {
  const init: RequestInit = {
    method: "POST",
    headers: { "Content-Type": "application/json", ...options.headers },
    body: JSON.stringify(request),
  };
  if (options.signal) init.signal = options.signal;
  const response = await fetch(`${options.baseUrl ?? ""}/v2/highlights/batch`, init);
  const body: unknown = await response.json();
  if (!response.ok) throw new HighlightServiceError(response.status, body);
  return body as HighlightBatchResponse;
}

export function readerNotice(
  citation: CitationResult,
): { tone: "ok" | "partial" | "warning" | "error"; title: string; text: string } | null {
  if (citation.status === "highlighted") return null;
  if (citation.reason === "chunk_not_found") {
    return { tone: "error", title: "Source not found", text: "This source is not in the library." };
  }
  return { tone: "warning", title: "Not highlighted", text: citation.message ?? "" };
}
