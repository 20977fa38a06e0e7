/**
 * One page of the reference viewer: a sized box with the highlight rects at once, and its
 * canvas and text layer painted on demand (when it is near the screen), again at each zoom.
 */
import {
  AbortException,
  type PDFPageProxy,
  RenderingCancelledException,
  TextLayer,
} from "pdfjs-dist/legacy/build/pdf.mjs";
import type { PageViewport } from "pdfjs-dist/types/src/display/display_utils.js";
import { type HighlightResponse, highlightToViewportRects } from "../src/highlights.js";

// Past this many canvas pixels a zoomed-in page on a high-density screen costs more memory than
// the sharpness is worth; PDF.js's own viewer stops at the same 2^24.
const MAX_CANVAS_PIXELS = 2 ** 24;

export class PageView {
  /** The page and its number label below it. */
  readonly frame = document.createElement("div");
  /** The page itself: the box the canvas, the text layer and the rects are placed in. */
  readonly div = document.createElement("div");
  private viewport: PageViewport;
  private readonly highlights: HighlightResponse[] = [];
  private currentId: string | null = null;
  private rendering: Promise<void> | null = null;
  private cancel: (() => void) | null = null;
  // Bumped whenever the painted pixels must go (released, or laid out at another scale): a paint
  // still under way then drops its result instead of showing a page at the old size.
  private generation = 0;
  private kept = false;

  constructor(
    private readonly page: PDFPageProxy,
    scale: number,
  ) {
    this.frame.className = "page-frame";
    this.div.className = "page";
    this.div.dataset.pageNumber = String(page.pageNumber);
    const label = document.createElement("div");
    label.className = "page-label";
    label.textContent = `Page ${page.pageNumber}`;
    this.frame.append(this.div, label);
    this.viewport = page.getViewport({ scale });
    this.size();
  }

  get scale(): number {
    return this.viewport.scale;
  }

  /** The page's width at scale 1, which fitting the window's width divides by. */
  get naturalWidth(): number {
    return this.viewport.width / this.viewport.scale;
  }

  drawHighlight(h: HighlightResponse): void {
    this.highlights.push(h);
    this.drawRects(h);
  }

  /** Marks the rects of highlight `id` as the one navigated to (none for null). */
  markCurrent(id: string | null): void {
    this.currentId = id;
    this.div.querySelectorAll<HTMLElement>(".hl-rect").forEach((el) => {
      el.classList.toggle("current", el.dataset.highlightId === id);
    });
  }

  /**
   * Lays the page out at `scale`: its box and rects at once, its pixels again when it is next
   * rendered (the caller re-renders what is on screen).
   */
  setScale(scale: number): void {
    if (scale === this.viewport.scale) return;
    this.viewport = this.page.getViewport({ scale });
    this.clear();
    this.size();
    this.div.querySelectorAll(".hl-rect").forEach((el) => el.remove());
    for (const h of this.highlights) this.drawRects(h);
  }

  /** Pages with highlights stay painted: readers and tests come back to them. */
  keep(kept: boolean): void {
    this.kept = kept;
  }

  get isKept(): boolean {
    return this.kept;
  }

  render(): Promise<void> {
    this.rendering ??= this.paint(this.generation).catch((error: unknown) => {
      // A page scrolled away or re-zoomed mid-render was cancelled on purpose (see clear).
      if (!(error instanceof RenderingCancelledException || error instanceof AbortException)) {
        throw error;
      }
    });
    return this.rendering;
  }

  /** Resolves when the paint under way, if any, has finished. */
  painted(): Promise<void> {
    return this.rendering ?? Promise.resolve();
  }

  /**
   * Frees the canvas of a page far off screen, so scrolling through a long document does not
   * keep every page's pixels; it is painted again when it comes back.
   */
  release(): void {
    if (!this.kept) this.clear();
  }

  private size(): void {
    const s = this.div.style;
    s.width = `${this.viewport.width}px`;
    s.height = `${this.viewport.height}px`;
    // The variables PDF.js's text layer sizes itself with (see its pdf_viewer.css).
    s.setProperty("--scale-factor", String(this.viewport.scale));
    s.setProperty("--user-unit", String(this.page.userUnit));
  }

  private drawRects(h: HighlightResponse): void {
    const n = this.page.pageNumber;
    for (const r of highlightToViewportRects(h.highlight, n, this.viewport, this.page.rotate)) {
      const el = document.createElement("div");
      el.className = h.highlight_id === this.currentId ? "hl-rect current" : "hl-rect";
      Object.assign(el.style, {
        left: `${r.left}px`,
        top: `${r.top}px`,
        width: `${r.width}px`,
        height: `${r.height}px`,
      });
      // The current highlight's mark sits in the page's left margin (viewer.css), away from the
      // words: placed from the page's edge, not the rect's.
      el.style.setProperty("--rect-left", `${r.left}px`);
      el.dataset.highlightId = h.highlight_id;
      el.dataset.rectIndex = String(r.index);
      el.dataset.page = String(n);
      el.title = h.highlight.text;
      this.div.append(el);
    }
  }

  private clear(): void {
    this.generation += 1;
    this.cancel?.();
    this.cancel = null;
    this.rendering = null;
    this.div.querySelectorAll("canvas, .textLayer").forEach((el) => el.remove());
    delete this.div.dataset.rendered;
  }

  private async paint(generation: number): Promise<void> {
    const viewport = this.viewport;
    const room = Math.sqrt(MAX_CANVAS_PIXELS / (viewport.width * viewport.height));
    const ratio = Math.min(window.devicePixelRatio || 1, room);
    const canvas = document.createElement("canvas");
    const sharp = viewport.clone({ scale: viewport.scale * ratio });
    canvas.width = Math.floor(sharp.width);
    canvas.height = Math.floor(sharp.height);
    const text = document.createElement("div");
    text.className = "textLayer";
    this.div.prepend(canvas, text);
    const task = this.page.render({ canvas, viewport: sharp });
    let textLayer: TextLayer | null = null;
    this.cancel = () => {
      task.cancel();
      textLayer?.cancel();
      canvas.width = canvas.height = 0; // the pixels go now, not at the next garbage collection
    };
    await task.promise;
    if (generation !== this.generation) return;
    textLayer = new TextLayer({
      textContentSource: this.page.streamTextContent(),
      container: text,
      viewport,
    });
    await textLayer.render();
    if (generation !== this.generation) return;
    this.div.dataset.rendered = "true";
  }
}
