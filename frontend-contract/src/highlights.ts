/**
 * Placing the service's highlights on a PDF.js page.
 *
 * The API's frame: every rect is in PDF points with the origin at the TOP-LEFT of the page as
 * displayed — its crop box after the page's own /Rotate — which is the frame of PDF.js's default
 * viewport, `page.getViewport({ scale: 1 })`. `normalized_rects` are the same rects as 0-1
 * fractions of their own page's displayed width and height.
 *
 * To draw on any other viewport (another scale, a user rotation on top of the page's /Rotate,
 * offsets) we go back to PDF user space and let the target viewport's own transform place the
 * rect, exactly as `viewport.convertToViewportRectangle` does:
 *
 *   displayed frame (page.rotate)  --pageFrameToUserSpace-->  PDF user space
 *   PDF user space                 --viewport.transform-->    target viewport pixels
 *
 * With the crop box `viewBox = [X0, Y0, X1, Y1]`, W = X1 - X0, H = Y1 - Y0, and a displayed point
 * (x, y) in points (x to the right, y down), the user-space point (X, Y) is, per page /Rotate
 * (PDF.js rotates clockwise, as the PDF spec says):
 *
 *   rotate   0: X = X0 + x,  Y = Y1 - y
 *   rotate  90: X = X0 + y,  Y = Y0 + x
 *   rotate 180: X = X1 - x,  Y = Y0 + y
 *   rotate 270: X = X1 - y,  Y = Y1 - x
 *
 * Only the viewBox and the page's /Rotate are needed, never the user's rotation: that one is in
 * the target viewport's transform. Nothing here depends on PDF.js at run time; the tests check
 * every case against PDF.js's own PageViewport.
 */
import type { components } from "../highlight-api.js";

/** One line piece of a highlight, in the API's frame (points, or 0-1 fractions). */
export type ApiRect = components["schemas"]["Rect"];

/**
 * The fields of a Highlight this module reads: a Highlight of the API fits it. normalized_rects
 * may be left out, for geometry from elsewhere: the points are used then.
 */
export interface HighlightGeometry {
  page: number;
  page_width: number;
  page_height: number;
  rects: ApiRect[];
  normalized_rects?: ApiRect[] | null;
}

/** A Highlight as the service returns it (every field always there). */
export type Highlight = components["schemas"]["Highlight"];

/**
 * GET /v2/highlights/{highlight_id}: one highlight with what a viewer needs to show it; its
 * pdf_url is pinned to pdf_sha256 (409 `pdf_changed` once the file or the document changed, so
 * old rectangles are never drawn on a new file) and signed when auth is on.
 */
export type HighlightResponse = components["schemas"]["StoredHighlightOut"];

/** What this module needs from a PDF.js `PageViewport` (a real one satisfies it). */
export interface ViewportLike {
  /** The page's crop box in PDF user space: [x0, y0, x1, y1]. */
  viewBox: number[];
  /** PDF user space -> viewport pixels: [a, b, c, d, e, f]. */
  transform: number[];
  width: number;
  height: number;
}

/** A rect in viewport pixels, ready for `position: absolute` inside the page element. */
export interface ViewportRect {
  page: number;
  left: number;
  top: number;
  width: number;
  height: number;
}

/** PDF.js `/Rotate` handling: any multiple of 90, negative included, folded into 0..270. */
export function normalizeRotation(rotation: number): 0 | 90 | 180 | 270 {
  const r = ((rotation % 360) + 360) % 360;
  if (r !== 0 && r !== 90 && r !== 180 && r !== 270) {
    throw new RangeError(`page rotation must be a multiple of 90, got ${rotation}`);
  }
  return r;
}

function viewBoxOf(viewport: ViewportLike): [number, number, number, number] {
  const [x0, y0, x1, y1] = viewport.viewBox;
  if (x0 === undefined || y0 === undefined || x1 === undefined || y1 === undefined) {
    throw new TypeError("viewport.viewBox must have four numbers");
  }
  return [x0, y0, x1, y1];
}

/** Width and height of the page as displayed at its own /Rotate, in points. */
export function displayedSize(viewBox: number[], pageRotation: number): [number, number] {
  const w = (viewBox[2] ?? 0) - (viewBox[0] ?? 0);
  const h = (viewBox[3] ?? 0) - (viewBox[1] ?? 0);
  return normalizeRotation(pageRotation) % 180 === 0 ? [w, h] : [h, w];
}

/** A point of the API's frame (points, origin top-left as displayed) -> PDF user space. */
export function pageFrameToUserSpace(
  x: number,
  y: number,
  viewBox: number[],
  pageRotation: number,
): [number, number] {
  const [x0, y0, x1, y1] = [viewBox[0] ?? 0, viewBox[1] ?? 0, viewBox[2] ?? 0, viewBox[3] ?? 0];
  switch (normalizeRotation(pageRotation)) {
    case 0:
      return [x0 + x, y1 - y];
    case 90:
      return [x0 + y, y0 + x];
    case 180:
      return [x1 - x, y0 + y];
    case 270:
      return [x1 - y, y1 - x];
  }
}

function applyTransform(m: number[], x: number, y: number): [number, number] {
  const [a = 1, b = 0, c = 0, d = 1, e = 0, f = 0] = m;
  return [a * x + c * y + e, b * x + d * y + f];
}

function userRectToViewport(
  ux0: number,
  uy0: number,
  ux1: number,
  uy1: number,
  viewport: ViewportLike,
  page: number,
): ViewportRect {
  const [ax, ay] = applyTransform(viewport.transform, ux0, uy0);
  const [bx, by] = applyTransform(viewport.transform, ux1, uy1);
  return {
    page,
    left: Math.min(ax, bx),
    top: Math.min(ay, by),
    width: Math.abs(bx - ax),
    height: Math.abs(by - ay),
  };
}

/**
 * A rect in the API's points -> target viewport pixels.
 *
 * @param viewport  any PDF.js PageViewport of the rect's page: `page.getViewport({ scale,
 *                  rotation })`, where `rotation` may include a user rotation.
 * @param pageRotation  the page's own /Rotate, `PDFPageProxy.rotate` (NOT viewport.rotation).
 */
export function rectToViewport(
  rect: ApiRect,
  viewport: ViewportLike,
  pageRotation: number,
): ViewportRect {
  const viewBox = viewBoxOf(viewport);
  const [ux0, uy0] = pageFrameToUserSpace(rect.x0, rect.y0, viewBox, pageRotation);
  const [ux1, uy1] = pageFrameToUserSpace(rect.x1, rect.y1, viewBox, pageRotation);
  return userRectToViewport(ux0, uy0, ux1, uy1, viewport, rect.page);
}

/**
 * A rect of `normalized_rects` (0-1 of the displayed page) -> target viewport pixels. Prefer this
 * one: it needs no page size from the API, so it holds for a rect on the next page of a sentence
 * that crosses a page break, whose page may differ in size from the highlight's first page.
 */
export function normalizedRectToViewport(
  rect: ApiRect,
  viewport: ViewportLike,
  pageRotation: number,
): ViewportRect {
  const [w, h] = displayedSize(viewBoxOf(viewport), pageRotation);
  return rectToViewport(
    { page: rect.page, x0: rect.x0 * w, y0: rect.y0 * h, x1: rect.x1 * w, y1: rect.y1 * h },
    viewport,
    pageRotation,
  );
}

/** The rects a highlight draws, one per line piece, each with its own page. */
export function highlightRects(highlight: HighlightGeometry): {
  rects: ApiRect[];
  normalized: boolean;
} {
  const normalized = highlight.normalized_rects;
  if (normalized && normalized.length === highlight.rects.length) {
    return { rects: normalized, normalized: true };
  }
  return { rects: highlight.rects, normalized: false };
}

/**
 * All rects of a highlight that lie on one page, in that page's viewport pixels, in API order.
 * `index` is the rect's position in `highlight.rects` (and `normalized_rects`).
 */
export function highlightToViewportRects(
  highlight: HighlightGeometry,
  pageNumber: number,
  viewport: ViewportLike,
  pageRotation: number,
): (ViewportRect & { index: number })[] {
  const { rects, normalized } = highlightRects(highlight);
  const convert = normalized ? normalizedRectToViewport : rectToViewport;
  return rects.flatMap((rect, index) =>
    rect.page === pageNumber ? [{ ...convert(rect, viewport, pageRotation), index }] : [],
  );
}

// ---- react-pdf-highlighter ------------------------------------------------------------------
//
// Matched against react-pdf-highlighter 7.0.0 (its npm "latest"), dist/types.d.ts. There a
// `Scaled` rect is drawn as `left = viewport.width * x1 / width` (and the same for y with height)
// on the viewport of its own `pageNumber` (or the position's, when a rect has none): that is our
// normalized frame with width = height = 1. The viewer's default viewport has rotation =
// page.rotate, which is the API's frame; a user rotation in PdfHighlighter (pagesRotation) is not
// applied to stored Scaled positions by the library itself.

/**
 * react-pdf-highlighter 7's `Scaled`, with `pageNumber` always set: 7 takes it as optional, the
 * -extended fork (8.x) requires it, so one adapter serves both.
 */
export interface Scaled {
  x1: number;
  y1: number;
  x2: number;
  y2: number;
  width: number;
  height: number;
  pageNumber: number;
}

/** react-pdf-highlighter 7's `ScaledPosition`. */
export interface ScaledPosition {
  boundingRect: Scaled;
  rects: Scaled[];
  pageNumber: number;
  usePdfCoordinates?: boolean;
}

const toScaled = (r: ApiRect, width: number, height: number): Scaled => ({
  x1: r.x0,
  y1: r.y0,
  x2: r.x1,
  y2: r.y1,
  width,
  height,
  pageNumber: r.page,
});

/**
 * A highlight -> react-pdf-highlighter's ScaledPosition. Each rect carries its own pageNumber so a
 * sentence across a page break is drawn on both pages; boundingRect spans the rects on the first
 * page (the library scrolls to it and anchors its tip there).
 */
export function toScaledPosition(highlight: HighlightGeometry): ScaledPosition {
  const { rects: source, normalized } = highlightRects(highlight);
  // Without normalized rects only the first page's size is known: points on other pages would
  // be scaled by the wrong page, so those rects are dropped rather than misplaced.
  const usable = normalized ? source : source.filter((r) => r.page === highlight.page);
  const [w, h] = normalized ? [1, 1] : [highlight.page_width, highlight.page_height];
  const rects = usable.map((r) => toScaled(r, w, h));
  const first = usable.filter((r) => r.page === highlight.page);
  const bounds = first.length > 0 ? first : usable.slice(0, 1);
  const bounding: ApiRect =
    bounds.length === 0
      ? { page: highlight.page, x0: 0, y0: 0, x1: 0, y1: 0 }
      : {
          page: bounds[0]!.page,
          x0: Math.min(...bounds.map((r) => r.x0)),
          y0: Math.min(...bounds.map((r) => r.y0)),
          x1: Math.max(...bounds.map((r) => r.x1)),
          y1: Math.max(...bounds.map((r) => r.y1)),
        };
  return {
    boundingRect: toScaled(bounding, w, h),
    rects,
    pageNumber: bounding.page,
  };
}
