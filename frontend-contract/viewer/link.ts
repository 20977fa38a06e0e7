/**
 * The viewer's link: the auth parameters every request repeats, and what a reader is told when
 * the link (expired, cut) or the document (changed, storage down) is the problem.
 */

// With auth on, the viewer's own URL carries a signature that every request must repeat. Taken
// from the raw query string so it goes out byte for byte as it came.
const AUTH_KEYS = new Set(["expires", "signature"]);
function keyOf(pair: string): string {
  try {
    return decodeURIComponent(pair.split("=")[0] ?? "");
  } catch {
    return ""; // a malformed escape is no auth parameter
  }
}
const authParams = location.search
  .slice(1)
  .split("&")
  .filter((pair) => AUTH_KEYS.has(keyOf(pair)));

export function withAuth(path: string): string {
  const url = new URL(path, location.href);
  const present = new Set(url.searchParams.keys());
  const extra = authParams.filter((p) => !present.has(keyOf(p)));
  if (extra.length > 0) url.search = [url.search.slice(1), ...extra].filter(Boolean).join("&");
  return url.href;
}

/**
 * What a reader is told when the link itself or the document is the problem, once for the page
 * rather than per highlight, in a reader's words: never about tokens, never the URL (it holds
 * the link's signature). `null`: a failure of one highlight, shown as the service words it.
 */
const LINK_EXPIRED =
  "This link has expired: links to a document are valid for a limited time. Open the citation " +
  "again from the chat answer to get a fresh link.";
const LINK_INVALID =
  "This link is not valid: it was changed or cut when it was copied. Open the citation again " +
  "from the chat answer.";
const DOCUMENT_CHANGED =
  "The document changed since this answer was written, so its highlights no longer apply. " +
  "Ask the question again to highlight the current document.";
const STORE_DOWN =
  "The document cannot be loaded right now (its storage is unavailable). Try again in a minute.";

export function readerMessage(status: number, code: string | undefined): [string, string] | null {
  if (code === "link_expired") return ["link_expired", LINK_EXPIRED];
  if (code === "link_invalid" || status === 401) return [code ?? "link_invalid", LINK_INVALID];
  if (status === 410) return ["pdf_changed", DOCUMENT_CHANGED];
  if (status === 503) return [code ?? "unavailable", STORE_DOWN];
  return null;
}
