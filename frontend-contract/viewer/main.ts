/**
 * The reference viewer:
 * GET /viewer?document_id=D&highlight=h_1&highlight=h_2[&claim=…][&expires=…&signature=…]
 *
 * Shows the claims of the answer that the citation supports (`claim` parameters) above the
 * pages, then loads the PDF with PDF.js, renders pages lazily (canvas + text layer, so the words
 * are real DOM text), fetches each highlight from GET /v2/highlights/{id}, draws every rect with
 * the frontend-contract helpers, scrolls to the first one, and shows failures in the page.
 * The toolbar (navigation.ts) moves between pages, zoom levels and highlights.
 * A web or text source (`view=text`, or highlights with a text_url) has no PDF: its text is
 * shown by its blocks with the sentences in <mark>s (text-view.ts), scrolled to the first.
 * `window.__viewer` tells a browser test when all that is done, and where the reader is.
 */
import {
  GlobalWorkerOptions,
  getDocument,
  type PDFDocumentProxy,
} from "pdfjs-dist/legacy/build/pdf.mjs";
import { type HighlightResponse, highlightRects } from "../src/highlights.js";
import { fitWidthScale, Navigator } from "./navigation.js";
import { PageView } from "./page-view.js";
import { type DocumentText, renderText } from "./text-view.js";

// The legacy build runs in browsers a few years old too: a viewer link goes to any reader.
// The worker and the wasm decoders pdf.js asks for at wasmUrl (openjpeg.wasm, jbig2.wasm) sit
// beside this bundle in /viewer/assets/, copied there by scripts/build_viewer.sh.
const ASSETS = new URL("./", import.meta.url).href;
GlobalWorkerOptions.workerSrc = `${ASSETS}pdf.worker.min.mjs`;

export interface ViewerError {
  /** The highlight id the error is about; null for the document itself. */
  highlightId: string | null;
  code: string;
  message: string;
}

export interface ViewerState {
  /** "ready": the PDF is shown (some highlights may still have failed: see errors). */
  status: "loading" | "ready" | "error";
  /** "text": a web or text source, shown as text with <mark>s (no pages, no rects). */
  view: "pdf" | "text";
  documentId: string | null;
  /** The claims shown above the pages (the URL's `claim` parameters, in order). */
  claims: string[];
  /**
   * The citation's verdict on each claim (the URL's `support` parameters, in the claims' order:
   * "supported", "partial", "unsupported"; "" when the link gives none). A link without claims
   * may give one, on the whole answer.
   */
  supports: string[];
  pageCount: number;
  /** The highlights that loaded, in URL order. */
  highlights: HighlightResponse[];
  errors: ViewerError[];
}

declare global {
  interface Window {
    __viewer: {
      /** Resolves (never rejects) once the outcome is final: pages with highlights rendered. */
      ready: Promise<ViewerState>;
      state: ViewerState;
      /** Every drawn rect, in document order. */
      rectElements: () => HTMLElement[];
      /** A text source's <mark>s, in document order. */
      markElements: () => HTMLElement[];
      /** The page the toolbar shows as "Page N of M" (0 until pages are shown). */
      readonly currentPage: number;
      /** CSS pixels per PDF point of the pages as laid out now (0 until pages are shown). */
      readonly scale: number;
      /** The highlight navigated to, as "Highlight i of n" counts it (1-based; 0: none). */
      readonly currentHighlight: number;
      /** Resolves once the pages on screen are painted at the current scale (after a zoom). */
      settled: () => Promise<void>;
    };
  }
}

const $ = (id: string) => document.getElementById(id) as HTMLElement;
const ui = { title: $("title"), claims: $("claims"), errors: $("errors"), pages: $("pages") };
const params = new URLSearchParams(location.search);
const claimed = params.getAll("claim").map((claim, i) => ({
  claim,
  support: params.getAll("support")[i] ?? "",
}));
const state: ViewerState = {
  status: "loading",
  view: params.get("view") === "text" ? "text" : "pdf",
  documentId: params.get("document_id"),
  claims: claimed.filter((c) => c.claim.trim() !== "").map((c) => c.claim),
  supports:
    claimed.length === 0
      ? params.getAll("support").slice(0, 1)
      : claimed.filter((c) => c.claim.trim() !== "").map((c) => c.support),
  pageCount: 0,
  highlights: [],
  errors: [],
};
let markReady!: (s: ViewerState) => void;
let nav: Navigator | null = null;
window.__viewer = {
  ready: new Promise((resolve) => (markReady = resolve)),
  state,
  rectElements: () => [...document.querySelectorAll<HTMLElement>(".hl-rect")],
  markElements: () => [...document.querySelectorAll<HTMLElement>("mark.hl-mark")],
  get currentPage() {
    return nav?.currentPage ?? 0;
  },
  get scale() {
    return nav?.scale ?? 0;
  },
  get currentHighlight() {
    return nav?.currentHighlight ?? 0;
  },
  settled: () => nav?.settled() ?? Promise.resolve(),
};

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

function withAuth(path: string): string {
  const url = new URL(path, location.href);
  const present = new Set(url.searchParams.keys());
  const extra = authParams.filter((p) => !present.has(keyOf(p)));
  if (extra.length > 0) url.search = [url.search.slice(1), ...extra].filter(Boolean).join("&");
  return url.href;
}

function fail(highlightId: string | null, code: string, message: string): void {
  state.errors.push({ highlightId, code, message });
  const item = document.createElement("li");
  item.textContent = highlightId ? `Highlight ${highlightId}: ${message}` : message;
  item.dataset.code = code;
  if (highlightId) item.dataset.highlightId = highlightId;
  ui.errors.querySelector("ul")!.append(item);
  ui.errors.hidden = false;
}

/** What the chunk does for a claim, as the reader is told it (the `support` values). */
const SUPPORT_WORDS: Record<string, string> = {
  supported: "Supports",
  partial: "Partly supports",
  unsupported: "Does not support",
};

/**
 * The claims, one line each, with the chunk's verdict on each ("Supports: “…”", "Partly
 * supports: “…”"), or one line on the whole answer for a link without claims. They come from
 * the URL, which anyone can write: text nodes only (textContent), never markup, and an unknown
 * verdict is not shown.
 */
function showClaims(claims: string[], supports: string[]): void {
  const list = ui.claims.querySelector("ul")!;
  const lines = claims.map((claim, i) => {
    const word = SUPPORT_WORDS[supports[i] ?? ""];
    return word ? `${word}: “${claim}”` : `“${claim}”`;
  });
  const whole = SUPPORT_WORDS[supports[0] ?? ""];
  if (claims.length === 0 && whole) lines.push(`${whole} the answer`);
  for (const line of lines) {
    const item = document.createElement("li");
    item.textContent = line;
    list.append(item);
  }
  ui.claims.hidden = lines.length === 0;
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

function readerMessage(status: number, code: string | undefined): [string, string] | null {
  if (code === "link_expired") return ["link_expired", LINK_EXPIRED];
  if (code === "link_invalid" || status === 401) return [code ?? "link_invalid", LINK_INVALID];
  if (status === 410) return ["pdf_changed", DOCUMENT_CHANGED];
  if (status === 503) return [code ?? "unavailable", STORE_DOWN];
  return null;
}

/** A page-level failure said once, however many requests met it. */
function failOnce(code: string, message: string): void {
  if (!state.errors.some((e) => e.highlightId === null && e.message === message)) {
    fail(null, code, message);
  }
}

async function fetchHighlight(id: string): Promise<HighlightResponse | null> {
  try {
    const response = await fetch(withAuth(`/v2/highlights/${encodeURIComponent(id)}`));
    const body: unknown = await response.json().catch(() => null);
    if (!response.ok) {
      const error = (body as { error?: { code?: string; message?: string } } | null)?.error;
      const told = readerMessage(response.status, error?.code);
      if (told) {
        failOnce(...told);
        return null;
      }
      fail(
        id,
        error?.code ?? `http_${response.status}`,
        error?.message ?? `HTTP ${response.status}`,
      );
      return null;
    }
    const found = body as HighlightResponse | null;
    if (!found?.highlight || !Array.isArray(found.highlight.rects)) {
      fail(id, "bad_response", "the service's answer is not a highlight");
      return null;
    }
    return found;
  } catch (error) {
    fail(id, "network_error", `could not be loaded (${String(error)})`);
    return null;
  }
}

async function openPdf(url: string): Promise<PDFDocumentProxy | null> {
  try {
    return await getDocument({ url: withAuth(url), wasmUrl: ASSETS, isEvalSupported: false })
      .promise;
  } catch (error) {
    const e = error as { name?: string; status?: number; message?: string };
    if (e.status === 409) {
      // The pinned PDF (see HighlightResponse.pdf_url) is no longer the content the highlights
      // were made from: drawing them would mark other words.
      fail(
        null,
        "pdf_changed",
        "The PDF changed since these highlights were made, so none is drawn; ask again for " +
          "highlights on the current file.",
      );
      return null;
    }
    const linkTold = state.errors.some(
      (x) => x.code === "link_expired" || x.code === "link_invalid",
    );
    if (e.status === 401 && linkTold) return null; // the highlights' answer already said why
    const told = e.status ? readerMessage(e.status, undefined) : null;
    if (told) {
      failOnce(...told);
      return null;
    }
    // PDF.js's own message names the URL, signature and all: the status alone is shown.
    const code = e.status ? `http_${e.status}` : (e.name ?? "pdf_error");
    const why = e.status === 404 ? "it is no longer stored" : e.status ? `HTTP ${e.status}` : "";
    fail(null, code, `The PDF could not be loaded${why ? ` (${why})` : ""}.`);
    return null;
  }
}

async function main(): Promise<void> {
  showClaims(state.claims, state.supports);
  const ids = params.getAll("highlight");
  if (state.documentId === null && ids.length === 0) {
    fail(
      null,
      "bad_request",
      "The link has no document_id: open the viewer_link of a batch result, " +
        "/viewer?document_id=…&highlight=h_…",
    );
    return;
  }
  const all = await Promise.all(ids.map(fetchHighlight));
  // Without document_id, the document is the first highlight's; others are not drawn on it.
  state.documentId ??= all.find((h) => h !== null)?.document_id ?? null;
  const content = all.find((h) => h?.document_id === state.documentId)?.pdf_sha256;
  const loaded = all.filter((h): h is HighlightResponse => {
    if (h === null) return false;
    if (h.document_id !== state.documentId) {
      fail(
        h.highlight_id,
        "other_document",
        `belongs to document ${h.document_id}, not ${state.documentId}`,
      );
      return false;
    }
    if (h.pdf_sha256 !== content) {
      fail(h.highlight_id, "other_content", "was made on another version of this PDF");
      return false;
    }
    return true;
  });
  if (loaded.some((h) => h.text_url)) state.view = "text";
  if (state.view === "text") {
    state.highlights = loaded;
    await showText(loaded[0]?.text_url ?? null);
    return;
  }
  // The highlights' own PDF link is pinned to the content their rectangles belong to: a file
  // replaced since is refused (409) rather than drawn on.
  const docUrl = state.documentId && `/v2/documents/${encodeURIComponent(state.documentId)}/pdf`;
  const pdfUrl = loaded[0]?.pdf_url ?? docUrl;
  const pdf = pdfUrl ? await openPdf(pdfUrl) : null;
  state.highlights = loaded;
  const first = state.highlights[0];
  ui.title.textContent = first?.document_title ?? state.documentId ?? "";
  document.title = `${ui.title.textContent} – highlights`;
  if (!pdf) {
    if (!pdfUrl) fail(null, "not_found", "No highlight could be loaded, so there is no document.");
    return;
  }
  state.pageCount = pdf.numPages;

  const pages = await Promise.all(
    Array.from({ length: pdf.numPages }, (_, i) => pdf.getPage(i + 1)),
  );
  // One scale for the document, the one "Fit width" comes back to.
  const widest = Math.max(...pages.map((p) => p.getViewport({ scale: 1 }).width));
  const scale = fitWidthScale(ui.pages, widest);
  const views = pages.map((p) => new PageView(p, scale));
  ui.pages.append(...views.map((v) => v.frame));

  const withRects = new Set<number>();
  for (const h of state.highlights) {
    const onPages = highlightRects(h.highlight).rects.map((r) => r.page);
    const outside = onPages.filter((n) => !views[n - 1]);
    if (outside.length > 0) {
      fail(
        h.highlight_id,
        "page_out_of_range",
        `page ${outside[0]} is not in this ${pdf.numPages}-page PDF`,
      );
    }
    for (const view of views) view.drawHighlight(h);
    onPages.forEach((n) => withRects.add(n));
  }
  for (const n of withRects) views[n - 1]?.keep(true);

  nav = new Navigator(views, state.highlights, (e) => fail(null, "render_error", String(e)));
  // The pages with highlights are rendered before `ready`, so a test can read their words.
  await Promise.all([...withRects].map((n) => views[n - 1]?.render()));
  if (first) nav.goToHighlightId(first.highlight_id);
  state.status = "ready";
}

/** A web or text source: its text by blocks, the highlights' sentences marked. */
async function showText(textUrl: string | null): Promise<void> {
  const id = state.documentId;
  const url = textUrl ?? (id ? `/v2/documents/${encodeURIComponent(id)}/text` : null);
  if (!url) {
    fail(null, "not_found", "No highlight could be loaded, so there is no document.");
    return;
  }
  let body: DocumentText;
  try {
    const response = await fetch(withAuth(url));
    const json: unknown = await response.json().catch(() => null);
    if (!response.ok) {
      const error = (json as { error?: { code?: string } } | null)?.error;
      const told = readerMessage(response.status, error?.code);
      if (told) failOnce(...told);
      else fail(null, `http_${response.status}`, "The document's text could not be loaded.");
      return;
    }
    body = json as DocumentText;
  } catch (error) {
    fail(null, "network_error", `The document's text could not be loaded (${String(error)}).`);
    return;
  }
  ui.title.textContent = state.highlights[0]?.document_title ?? body.title;
  document.title = `${ui.title.textContent} – highlights`;
  const marks = renderText(ui.pages, body, state.highlights);
  state.pageCount = 1;
  marks[0]?.scrollIntoView({ block: "center" });
  state.status = "ready";
}

/** A failed load says so in the title too, where "Loading…" stood. */
function showFailure(): void {
  const name = state.highlights[0]?.document_title ?? state.documentId;
  ui.title.textContent = name ? `Could not show “${name}”` : "No document to show";
  document.title = `${ui.title.textContent} – highlights`;
}

main()
  .catch((error: unknown) => fail(null, "viewer_error", `The viewer failed: ${String(error)}`))
  .finally(() => {
    if (state.status === "loading") state.status = state.pageCount > 0 ? "ready" : "error";
    if (state.status === "error") showFailure();
    document.body.dataset.status = state.status;
    markReady(state);
  });
