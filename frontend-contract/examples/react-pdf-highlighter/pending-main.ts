/**
 * TEMPORARY, removed when main's generated types have CitationResult.pdf_url (issue 32): the
 * field as announced, so the example is written against it already.
 */
import type { components } from "../../highlight-api.js";

export type CitationResult = components["schemas"]["CitationResult"] & { pdf_url?: string | null };
