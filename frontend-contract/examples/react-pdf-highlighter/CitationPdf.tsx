/**
 * One citation's PDF with its highlights, drawn by react-pdf-highlighter 7's own components.
 * The service's geometry becomes the library's `position` with `toScaledPosition` and nothing
 * else: no page sizes, no rotation handling here (the adapter's normalised rects already say
 * where on the displayed page each line piece is, on whichever page it is).
 */
import { useEffect, useMemo, useRef } from "react";
import { Highlight, PdfHighlighter, PdfLoader } from "react-pdf-highlighter";
import type { IHighlight } from "react-pdf-highlighter";
import { toScaledPosition } from "../../src/index.js";
import type { CitationResult } from "../../src/index.js";

type ApiHighlight = CitationResult["highlights"][number];

// The worker must be the build of the pdfjs-dist that react-pdf-highlighter itself imports (its
// own nested 4.x, not another copy in the app): PDF.js refuses a worker of another version. The
// build script copies that file next to the bundle.
const WORKER_SRC = new URL("pdf.worker.min.mjs", document.baseURI).href;

/** react-pdf-highlighter 7.0.0's PdfHighlighter, with three fixes for what a reader would meet. */
class Highlighter extends PdfHighlighter<IHighlight> {
  /**
   * PDF.js sizes the pages at "page-width" of the page shown first; a landscape or rotated page is
   * then wider than a phone's pane, and the library scrolls to a highlight only vertically. Bring
   * the highlight's middle into view across too.
   */
  constructor(props: ConstructorParameters<typeof PdfHighlighter<IHighlight>>[0]) {
    super(props);
    const scrollVertically = this.scrollTo;
    this.scrollTo = (highlight) => {
      scrollVertically(highlight);
      const { container } = this.viewer;
      const page: unknown = this.viewer.getPageView(highlight.position.pageNumber - 1)?.div;
      if (!(page instanceof HTMLElement)) return;
      const { x1, x2, width } = highlight.position.boundingRect;
      const middle = page.offsetLeft + ((x1 + x2) / 2 / width) * page.clientWidth;
      container.scrollLeft = Math.max(0, middle - container.clientWidth / 2);
    };
  }

  /**
   * The library draws into a page's text layer as soon as PDF.js has made it, before PDF.js puts
   * it in the page; asked to draw again meanwhile, it starts a second React root on the same
   * element (React warns). Skip the page until its text layer is in the document: PDF.js's
   * "textlayerrendered", which comes after, has the library draw it then.
   */
  override findOrCreateHighlightLayer(page: number): Element | null {
    const textLayer: unknown = this.viewer.getPageView(page - 1)?.textLayer?.div;
    if (!(textLayer instanceof HTMLElement) || !textLayer.isConnected) return null;
    return super.findOrCreateHighlightLayer(page);
  }

  /**
   * The library leaves its debounced resize handler pending when it unmounts (here: when the
   * reader opens a citation of another PDF); when it fires, PDF.js tries to scroll a page that
   * is no longer in the document and logs "offsetParent is not set -- cannot scroll". The
   * handler is a `debounce` function, which can be cancelled.
   */
  override componentWillUnmount(): void {
    super.componentWillUnmount();
    const pending: unknown = this.debouncedScaleValue;
    if (typeof pending === "function" && "clear" in pending && typeof pending.clear === "function") {
      pending.clear();
    }
  }
}

function toIHighlight(highlight: ApiHighlight): IHighlight {
  return {
    id: highlight.highlight_id,
    position: toScaledPosition(highlight),
    // display_text: the sentence as a reader quotes it (line-end hyphens joined).
    content: { text: highlight.display_text },
    // The library's Highlight shows `comment.emoji` beside the box: nothing to show there.
    comment: { text: "", emoji: "" },
  };
}

/**
 * Mounted once per PDF (the caller keys it by URL): another citation of the same PDF only
 * changes `highlights` and scrolls, as the library intends; remounting would reload the file and
 * leave the old PDF.js viewer's pending work running against a removed page.
 */
export function CitationPdf(props: { pdfUrl: string; highlights: ApiHighlight[] }) {
  const highlights = useMemo(() => props.highlights.map(toIHighlight), [props.highlights]);
  const first = highlights[0];
  // PdfHighlighter hands over its scroll function once the pages are laid out.
  const scrollTo = useRef<((highlight: IHighlight) => void) | null>(null);
  useEffect(() => {
    if (first && scrollTo.current) scrollTo.current(first);
  }, [first]);
  return (
    <PdfLoader
      url={props.pdfUrl}
      workerSrc={WORKER_SRC}
      beforeLoad={<p className="pdf-status">Opening the PDF…</p>}
      errorMessage={<p className="pdf-status notice-error">The PDF could not be opened.</p>}
    >
      {(pdfDocument) => (
        <Highlighter
          pdfDocument={pdfDocument}
          highlights={highlights}
          // Fit the page to the pane's width: at 390 px a whole page at 100% would be unreadable.
          pdfScaleValue="page-width"
          scrollRef={(scroll) => {
            scrollTo.current = scroll;
            if (first) scroll(first);
          }}
          onScrollChange={() => undefined}
          // Read-only: a citation viewer makes no new highlights.
          enableAreaSelection={() => false}
          onSelectionFinished={() => null}
          highlightTransform={(highlight, index, _setTip, _hideTip, _toScaled, _shot, isScrolledTo) => (
            // data-highlight-id lets tests (and analytics) tell whose box a part is.
            <div key={`${highlight.id}-${index}`} data-highlight-id={highlight.id}>
              <Highlight
                position={highlight.position}
                comment={highlight.comment}
                isScrolledTo={isScrolledTo}
              />
            </div>
          )}
        />
      )}
    </PdfLoader>
  );
}
