/**
 * The viewer's toolbar and keys: which page is in view ("Page N of M", a page number to jump
 * to, previous/next page), zoom (out, in, fit width) and previous/next highlight. It owns the
 * pages' layout: their scale and which of them are painted.
 */
import type { HighlightResponse } from "../src/highlights.js";
import type { PageView } from "./page-view.js";

// Zoom steps as PDF.js's viewer shows them: 100% is the page at its printed size, a PDF point
// being 96/72 CSS pixels. The scale a PageView takes is CSS pixels per point.
const CSS_PER_POINT = 96 / 72;
const ZOOM_STEPS = [0.25, 0.5, 0.75, 1, 1.25, 1.5, 2, 3].map((z) => z * CSS_PER_POINT);
const MIN_SCALE = ZOOM_STEPS[0]!;
const MAX_SCALE = ZOOM_STEPS[ZOOM_STEPS.length - 1]!;

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

/** A control of the toolbar, found by id in index.html. */
const controls = () => ({
  toolbar: $("toolbar"),
  pagePrev: $<HTMLButtonElement>("page-prev"),
  pageInput: $<HTMLInputElement>("page-input"),
  pageCount: $("page-count"),
  pageNext: $<HTMLButtonElement>("page-next"),
  zoomOut: $<HTMLButtonElement>("zoom-out"),
  zoomLevel: $("zoom-level"),
  zoomIn: $<HTMLButtonElement>("zoom-in"),
  zoomFit: $<HTMLButtonElement>("zoom-fit"),
  highlightPrev: $<HTMLButtonElement>("highlight-prev"),
  highlightStatus: $("highlight-status"),
  highlightNext: $<HTMLButtonElement>("highlight-next"),
  more: $<HTMLButtonElement>("toolbar-more"),
});

/** Where the reader is, kept across a zoom: a point of a page, as fractions of its size. */
interface Anchor {
  index: number;
  fx: number;
  fy: number;
  x: number;
  y: number;
}

const clamp = (x: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, x));

/** The default zoom: the widest page (its width at scale 1) fits the pages' column. */
export function fitWidthScale(column: HTMLElement, widest: number): number {
  return clamp((column.clientWidth - 32) / widest, 0.5, 2);
}

function typingIn(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false;
  if (target.isContentEditable || target instanceof HTMLTextAreaElement) return true;
  if (target instanceof HTMLSelectElement) return true;
  return (
    target instanceof HTMLInputElement && !["button", "checkbox", "radio"].includes(target.type)
  );
}

export class Navigator {
  /** The page most of the reading area shows (1-based). */
  currentPage = 1;
  /** The highlight navigated to, 1-based in document order; 0 when there is none. */
  currentHighlight = 0;
  private readonly ui = controls();
  private readonly header = document.querySelector("header") as HTMLElement;
  private readonly pages: HTMLElement;
  /** Highlight ids in document order: a highlight across two pages is one stop. */
  private readonly stops: string[];
  private readonly observer: IntersectionObserver;
  private fitting = true;
  // A jump to a page that cannot reach the top (the last pages of the document) still shows
  // that page's number until the reader scrolls elsewhere.
  private jumped: { page: number; y: number } | null = null;
  private pageTyped = false;
  private pendingFrame = 0;

  constructor(
    private readonly views: PageView[],
    highlights: HighlightResponse[],
    private readonly onRenderError: (error: unknown) => void,
  ) {
    this.pages = views[0]!.frame.parentElement as HTMLElement;
    this.stops = this.documentOrder(highlights);
    this.observer = new IntersectionObserver(
      (entries) => {
        for (const entry of entries) {
          const view = this.views[Number((entry.target as HTMLElement).dataset.pageNumber) - 1];
          if (!entry.isIntersecting) view?.release();
          else view?.render().catch(this.onRenderError);
        }
      },
      // Paint the pages within a screen of the view; free the others' canvases.
      { rootMargin: "100% 0px" },
    );
    views.forEach((v) => this.observer.observe(v.div));
    this.bind();
    this.ui.toolbar.hidden = false;
    this.followHeader();
    this.update();
  }

  get scale(): number {
    return this.views[0]!.scale;
  }

  /** The scale at which the widest page fits the window: the default zoom. */
  fitScale(): number {
    return fitWidthScale(this.pages, Math.max(...this.views.map((v) => v.naturalWidth)));
  }

  /** Resolves once the pages painting now (those on screen after a zoom) are painted. */
  async settled(): Promise<void> {
    // The intersection observer starts the paints of newly visible pages at the next frames.
    await new Promise((next) => requestAnimationFrame(() => requestAnimationFrame(next)));
    await Promise.all(this.views.map((v) => v.painted()));
  }

  zoomTo(scale: number, fit = false): void {
    this.fitting = fit;
    const next = clamp(scale, MIN_SCALE, MAX_SCALE);
    if (Math.abs(next - this.scale) > 1e-9) {
      const anchor = this.anchor();
      for (const v of this.views) {
        v.setScale(next);
        if (v.isKept) v.render().catch(this.onRenderError);
      }
      // Re-observing reports every page's intersection afresh, so the other pages on screen
      // are painted at the new scale and the rest released.
      this.observer.disconnect();
      this.views.forEach((v) => this.observer.observe(v.div));
      this.restore(anchor);
    }
    this.update();
  }

  // From a fitted scale between two steps, the nearer step would be a change too small to see:
  // a step is taken only when it is 5% away or more.
  zoomIn(): void {
    this.zoomTo(ZOOM_STEPS.find((s) => s > this.scale * 1.05) ?? MAX_SCALE);
  }

  zoomOut(): void {
    this.zoomTo([...ZOOM_STEPS].reverse().find((s) => s < this.scale / 1.05) ?? MIN_SCALE);
  }

  goToPage(n: number): void {
    const page = clamp(Math.round(n), 1, this.views.length);
    this.views[page - 1]!.frame.scrollIntoView({ block: "start", inline: "nearest" });
    this.currentPage = page;
    this.jumped = { page, y: window.scrollY };
    this.pageTyped = false;
    this.update();
  }

  /** Scrolls to stop `i` (wrapping around at either end) and marks it as the current one. */
  goToHighlight(i: number): void {
    const n = this.stops.length;
    if (n === 0) return;
    const index = ((i % n) + n) % n;
    const id = this.stops[index]!;
    this.currentHighlight = index + 1;
    this.views.forEach((v) => v.markCurrent(id));
    // A highlight across a page break starts with its first rect, on the earlier page.
    const first = document.querySelector(`.hl-rect[data-highlight-id="${CSS.escape(id)}"]`);
    first?.scrollIntoView({ block: "center", inline: "nearest" });
    this.jumped = null;
    this.currentPage = this.pageInView();
    this.update();
  }

  /** Goes to the highlight with this id (the URL's first, at load). */
  goToHighlightId(id: string): void {
    const index = this.stops.indexOf(id);
    if (index >= 0) this.goToHighlight(index);
  }

  private documentOrder(highlights: HighlightResponse[]): string[] {
    const starts = highlights.flatMap((h) => {
      const first = document.querySelector<HTMLElement>(
        `.hl-rect[data-highlight-id="${CSS.escape(h.highlight_id)}"]`,
      );
      if (!first) return []; // no rect on any page of this PDF: nothing to go to
      const key = [Number(first.dataset.page), first.offsetTop, first.offsetLeft];
      return [{ id: h.highlight_id, key }];
    });
    const before = (a: number[], b: number[]) =>
      a.map((x, i) => x - b[i]!).find((d) => d !== 0) ?? 0;
    return starts.sort((a, b) => before(a.key, b.key)).map((s) => s.id);
  }

  private bind(): void {
    const ui = this.ui;
    ui.pagePrev.addEventListener("click", () => this.goToPage(this.currentPage - 1));
    ui.pageNext.addEventListener("click", () => this.goToPage(this.currentPage + 1));
    ui.pageInput.max = String(this.views.length);
    ui.pageInput.addEventListener("input", () => (this.pageTyped = true));
    ui.pageInput.addEventListener("keydown", (e) => {
      if (e.key === "Enter") {
        e.preventDefault();
        this.jumpToTypedPage();
      } else if (e.key === "Escape") {
        this.pageTyped = false;
        this.update();
      }
    });
    ui.pageInput.addEventListener("change", () => this.jumpToTypedPage());
    ui.pageInput.addEventListener("blur", () => {
      this.pageTyped = false;
      this.update();
    });
    ui.zoomOut.addEventListener("click", () => this.zoomOut());
    ui.zoomIn.addEventListener("click", () => this.zoomIn());
    ui.zoomFit.addEventListener("click", () => this.zoomTo(this.fitScale(), true));
    ui.highlightPrev.addEventListener("click", () => this.step(-1));
    ui.highlightNext.addEventListener("click", () => this.step(1));
    ui.more.addEventListener("click", () => {
      const open = ui.more.getAttribute("aria-expanded") !== "true";
      ui.more.setAttribute("aria-expanded", String(open));
      ui.toolbar.classList.toggle("open", open);
      // The controls it shows sit before it in the document: Tab would leave the header.
      if (open) {
        const revealed = [ui.pagePrev, ui.pageNext, ui.zoomOut, ui.zoomIn, ui.zoomFit];
        revealed.find((button) => !button.disabled)?.focus();
      }
    });
    document.addEventListener("keydown", (e) => this.onKey(e));
    window.addEventListener("scroll", () => this.schedule(), { passive: true });
    let resized = 0;
    window.addEventListener("resize", () => {
      clearTimeout(resized);
      resized = window.setTimeout(() => {
        if (this.fitting) this.zoomTo(this.fitScale(), true);
        else this.schedule();
      }, 150);
    });
  }

  private onKey(e: KeyboardEvent): void {
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || typingIn(e.target)) return;
    const actions: Record<string, () => void> = {
      n: () => this.step(1),
      p: () => this.step(-1),
      j: () => this.goToPage(this.currentPage + 1),
      k: () => this.goToPage(this.currentPage - 1),
      "+": () => this.zoomIn(),
      "=": () => this.zoomIn(),
      "-": () => this.zoomOut(),
      "0": () => this.zoomTo(this.fitScale(), true),
    };
    const action = actions[e.key];
    if (!action) return;
    e.preventDefault();
    action();
  }

  private step(by: number): void {
    // Before any highlight is current, "next" is the first and "previous" the last.
    const from = this.currentHighlight === 0 ? (by > 0 ? -1 : 0) : this.currentHighlight - 1;
    this.goToHighlight(from + by);
  }

  private jumpToTypedPage(): void {
    if (!this.pageTyped) return;
    const typed = Number(this.ui.pageInput.value);
    if (this.ui.pageInput.value.trim() === "" || !Number.isFinite(typed)) {
      this.pageTyped = false;
      this.update();
      return;
    }
    this.goToPage(typed);
  }

  /** The area of the window the pages show in: below the sticky header. */
  private readingArea(): { top: number; bottom: number } {
    return { top: this.header.getBoundingClientRect().bottom, bottom: window.innerHeight };
  }

  /** The page most of the reading area shows; the earlier one on a tie. */
  private pageInView(): number {
    const { top, bottom } = this.readingArea();
    // Pages are stacked top to bottom: find the first one not wholly above the area.
    let lo = 0;
    let hi = this.views.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.views[mid]!.div.getBoundingClientRect().bottom <= top) lo = mid + 1;
      else hi = mid;
    }
    let best = lo;
    let seen = -1;
    for (let i = lo; i < this.views.length; i++) {
      const r = this.views[i]!.div.getBoundingClientRect();
      if (r.top >= bottom) break;
      const shown = Math.min(r.bottom, bottom) - Math.max(r.top, top);
      if (shown > seen + 0.5) [best, seen] = [i, shown];
    }
    return best + 1;
  }

  private schedule(): void {
    if (this.pendingFrame) return;
    this.pendingFrame = requestAnimationFrame(() => {
      this.pendingFrame = 0;
      if (this.jumped && Math.abs(window.scrollY - this.jumped.y) < 2) return;
      this.jumped = null;
      this.currentPage = this.pageInView();
      this.update();
    });
  }

  private anchor(): Anchor {
    const { top, bottom } = this.readingArea();
    const box = this.pages.getBoundingClientRect();
    const x = (Math.max(box.left, 0) + Math.min(box.right, window.innerWidth)) / 2;
    const y = (top + bottom) / 2;
    const index = this.views.findIndex((v) => v.frame.getBoundingClientRect().bottom > y);
    const at = index < 0 ? this.views.length - 1 : index;
    const r = this.views[at]!.div.getBoundingClientRect();
    return {
      index: at,
      fx: clamp((x - r.left) / r.width, 0, 1),
      fy: clamp((y - r.top) / r.height, 0, 1),
      x,
      y,
    };
  }

  private restore(a: Anchor): void {
    const r = this.views[a.index]!.div.getBoundingClientRect();
    window.scrollBy(0, r.top + a.fy * r.height - a.y);
    this.pages.scrollLeft += r.left + a.fx * r.width - a.x;
    this.jumped = null;
    this.currentPage = this.pageInView();
  }

  /**
   * Keeps a scrolled-to page or highlight clear of the sticky header, whatever its height (the
   * targets' scroll-margin in viewer.css). Not the root's scroll-padding: with it Chrome scrolls
   * the document whenever a toolbar control takes the focus, the header being in the padding.
   */
  private followHeader(): void {
    const pad = () => {
      document.documentElement.style.setProperty(
        "--header-height",
        `${this.header.offsetHeight}px`,
      );
    };
    new ResizeObserver(pad).observe(this.header);
    pad();
  }

  private update(): void {
    const ui = this.ui;
    const focused = document.activeElement;
    const count = this.views.length;
    if (!this.pageTyped) ui.pageInput.value = String(this.currentPage);
    ui.pageCount.textContent = `of ${count}`;
    ui.pagePrev.disabled = this.currentPage <= 1;
    ui.pageNext.disabled = this.currentPage >= count;
    ui.zoomLevel.textContent = `${Math.round((this.scale / CSS_PER_POINT) * 100)}%`;
    ui.zoomOut.disabled = this.scale <= MIN_SCALE + 1e-9;
    ui.zoomIn.disabled = this.scale >= MAX_SCALE - 1e-9;
    const n = this.stops.length;
    ui.highlightPrev.disabled = ui.highlightNext.disabled = n === 0;
    // On a phone "Highlight 2 of 3" is "2 of 3" (viewer.css hides the first word there).
    const word = document.createElement("span");
    word.className = "wide-only";
    word.textContent = "Highlight ";
    const status =
      n === 0
        ? ["No highlights"]
        : this.currentHighlight === 0
          ? [`${n} highlight${n === 1 ? "" : "s"}`]
          : [word, `${this.currentHighlight} of ${n}`];
    // A live region: rewritten only when its words change, not on every scroll.
    const text = status
      .map((part) => (typeof part === "string" ? part : part.textContent))
      .join("");
    if (ui.highlightStatus.textContent !== text) ui.highlightStatus.replaceChildren(...status);
    // A button disabled under the keyboard's focus would drop the focus to the page's start.
    const pairs: [HTMLButtonElement, HTMLButtonElement][] = [
      [ui.pagePrev, ui.pageNext],
      [ui.zoomOut, ui.zoomIn],
    ];
    for (const [a, b] of pairs) {
      if (focused === a && a.disabled) b.focus();
      if (focused === b && b.disabled) a.focus();
    }
  }
}
