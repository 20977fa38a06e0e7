// The rect conversion checked against PDF.js itself: real pages (crop boxes off the origin,
// /Rotate 0/90/180/270) loaded by pdfjs-dist, their real PageViewport objects, and PDF.js's own
// convertToViewportRectangle as the expected answer.
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { before, describe, test } from "node:test";
import { getDocument, type PDFDocumentProxy } from "pdfjs-dist/legacy/build/pdf.mjs";
import type { PageViewport } from "pdfjs-dist/types/src/display/display_utils.js";
import type { ScaledPosition as LibScaledPosition } from "react-pdf-highlighter/dist/types.js";
import {
  type ApiRect,
  type HighlightGeometry,
  type ViewportRect,
  highlightToViewportRects,
  normalizedRectToViewport,
  normalizeRotation,
  rectToViewport,
  toScaledPosition,
} from "../src/highlights.js";
import { type FixturePage, makePdf } from "./pdf-fixture.js";

const require = createRequire(import.meta.url);
const pdfjsRoot = dirname(require.resolve("pdfjs-dist/package.json"));

// One word per page; the boxes are chosen so that no two pages share an origin or a rotation.
const PAGES: FixturePage[] = [
  { mediaBox: [0, 0, 612, 792], words: [{ text: "Alpha", x: 100, y: 700, size: 12 }] },
  {
    mediaBox: [0, 0, 612, 792],
    cropBox: [36, 20, 576, 772],
    rotate: 90,
    words: [{ text: "Bravo", x: 120, y: 650, size: 14 }],
  },
  {
    mediaBox: [-100, -50, 500, 700],
    cropBox: [-80, -30, 480, 690],
    rotate: 180,
    words: [{ text: "Charlie", x: -20, y: 600, size: 10 }],
  },
  {
    mediaBox: [10, 20, 400, 600],
    rotate: 270,
    words: [{ text: "Delta", x: 50, y: 500, size: 16 }],
  },
  {
    // UserUnit 2: PDF.js draws each unit as two points; the normalized rects must not care.
    mediaBox: [0, 0, 300, 400],
    cropBox: [5, 10, 295, 390],
    rotate: 90,
    userUnit: 2,
    words: [{ text: "Echo", x: 40, y: 300, size: 12 }],
  },
];

type Box = [number, number, number, number];

/** PDF.js's answer, as left/top/width/height. */
function pdfjsRect(viewport: PageViewport, userBox: Box, page: number): ViewportRect {
  const [ax, ay, bx, by] = viewport.convertToViewportRectangle(userBox) as Box;
  return {
    page,
    left: Math.min(ax, bx),
    top: Math.min(ay, by),
    width: Math.abs(bx - ax),
    height: Math.abs(by - ay),
  };
}

function assertClose(actual: ViewportRect, expected: ViewportRect, what: string): void {
  for (const key of ["left", "top", "width", "height"] as const) {
    assert.ok(
      Math.abs(actual[key] - expected[key]) < 1e-9,
      `${what}: ${key} ${actual[key]} != ${expected[key]}\n${JSON.stringify({ actual, expected })}`,
    );
  }
  assert.equal(actual.page, expected.page, what);
}

/** A sentence across a page break: two rects on page 2, one on page 3 (a page of another size). */
function pageBreakSentence(): HighlightGeometry {
  return {
    page: 2,
    page_width: 752,
    page_height: 540,
    rects: [
      { page: 2, x0: 400, y0: 500, x1: 700, y1: 515 },
      { page: 2, x0: 50, y0: 515, x1: 300, y1: 530 },
      { page: 3, x0: 40, y0: 30, x1: 200, y1: 42 },
    ],
    normalized_rects: [
      { page: 2, x0: 400 / 752, y0: 500 / 540, x1: 700 / 752, y1: 515 / 540 },
      { page: 2, x0: 50 / 752, y0: 515 / 540, x1: 300 / 752, y1: 530 / 540 },
      { page: 3, x0: 40 / 560, y0: 30 / 720, x1: 200 / 560, y1: 42 / 720 },
    ],
  };
}

let doc: PDFDocumentProxy;

/** A word's box in PDF user space, from PDF.js's text content (baseline to baseline + size). */
async function wordBox(pageNumber: number): Promise<Box> {
  const page = await doc.getPage(pageNumber);
  const { items } = await page.getTextContent();
  const item = items.find((i) => "str" in i && i.str.length > 0);
  assert.ok(item && "str" in item, `no text on page ${pageNumber}`);
  const [, , , , x, y] = item.transform as number[];
  return [x!, y! - 0.2 * item.height, x! + item.width, y! + item.height];
}

/**
 * What the service reports for a user-space box, by the contract's definition: the box in the
 * frame of PDF.js's default viewport. `points` drops PDF.js's UserUnit factor (the service
 * measures in PDF units); `normalized` is the same rect over the displayed page size.
 */
function apiRects(base: PageViewport, userBox: Box, page: number) {
  const r = pdfjsRect(base, userBox, page);
  const unit = base.userUnit;
  const points: ApiRect = {
    page,
    x0: r.left / unit,
    y0: r.top / unit,
    x1: (r.left + r.width) / unit,
    y1: (r.top + r.height) / unit,
  };
  const normalized: ApiRect = {
    page,
    x0: r.left / base.width,
    y0: r.top / base.height,
    x1: (r.left + r.width) / base.width,
    y1: (r.top + r.height) / base.height,
  };
  return { points, normalized };
}

before(async () => {
  doc = await getDocument({
    data: makePdf(PAGES),
    standardFontDataUrl: join(pdfjsRoot, "standard_fonts") + "/",
    verbosity: 0,
  }).promise;
});

describe("the fixture is what the tests think it is", () => {
  test("PDF.js reads the crop boxes, rotations and user units", async () => {
    const seen = [];
    for (let n = 1; n <= PAGES.length; n++) {
      const page = await doc.getPage(n);
      seen.push({ view: page.view, rotate: page.rotate, userUnit: page.userUnit });
    }
    assert.deepEqual(seen, [
      { view: [0, 0, 612, 792], rotate: 0, userUnit: 1 },
      { view: [36, 20, 576, 772], rotate: 90, userUnit: 1 },
      { view: [-80, -30, 480, 690], rotate: 180, userUnit: 1 },
      { view: [10, 20, 400, 600], rotate: 270, userUnit: 1 },
      { view: [5, 10, 295, 390], rotate: 90, userUnit: 2 },
    ]);
  });
});

describe("rects land where PDF.js puts the same user-space box", () => {
  const userRotations = [0, 90, 180, 270, -90, 450];
  const scales = [1, 1.5, 0.37];
  for (let n = 1; n <= PAGES.length; n++) {
    test(`page ${n} (/Rotate ${PAGES[n - 1]!.rotate ?? 0}): every user rotation and scale`, async () => {
      const page = await doc.getPage(n);
      const box = await wordBox(n);
      const base = page.getViewport({ scale: 1 });
      const { points, normalized } = apiRects(base, box, n);
      for (const userRotation of userRotations) {
        for (const scale of scales) {
          const viewport = page.getViewport({ scale, rotation: page.rotate + userRotation });
          const expected = pdfjsRect(viewport, box, n);
          const what = `page ${n} rotation +${userRotation} scale ${scale}`;
          assertClose(normalizedRectToViewport(normalized, viewport, page.rotate), expected, what);
          if (page.userUnit === 1) {
            assertClose(
              rectToViewport(points, viewport, page.rotate),
              expected,
              `${what} (points)`,
            );
          }
        }
      }
    });
  }

  test("viewports built directly with PageViewport: offsets and odd view boxes", async () => {
    // The class of PDF.js's own viewports (pdfjs-dist does not export it by name).
    const page = await doc.getPage(1);
    const Viewport = page.getViewport({ scale: 1 }).constructor as new (o: object) => PageViewport;
    const viewBoxes: Box[] = [
      [0, 0, 612, 792],
      [-300, 125.5, 100, 725],
      [1000, 2000, 1300.25, 2100],
    ];
    const userBox: Box = [20, 30, 60, 45];
    for (const [i, viewBox] of viewBoxes.entries()) {
      const shifted: Box = [
        viewBox[0] + userBox[0],
        viewBox[1] + userBox[1],
        viewBox[0] + userBox[2],
        viewBox[1] + userBox[3],
      ];
      for (const pageRotation of [0, 90, 180, 270]) {
        const base = new Viewport({ viewBox, userUnit: 1, scale: 1, rotation: pageRotation });
        const { points, normalized } = apiRects(base, shifted, 1);
        for (const userRotation of [0, 90, 180, 270]) {
          const viewport = new Viewport({
            viewBox,
            userUnit: 1,
            scale: 2.25,
            rotation: pageRotation + userRotation,
            offsetX: 13,
            offsetY: -7,
          });
          const expected = pdfjsRect(viewport, shifted, 1);
          const what = `viewBox #${i} /Rotate ${pageRotation} +${userRotation}`;
          assertClose(rectToViewport(points, viewport, pageRotation), expected, what);
          assertClose(normalizedRectToViewport(normalized, viewport, pageRotation), expected, what);
        }
      }
    }
  });

  test("the page's /Rotate matters: using the viewport's rotation instead is caught", async () => {
    // Guards the documented pitfall: viewport.rotation includes the user's rotation.
    const page = await doc.getPage(2);
    const base = page.getViewport({ scale: 1 });
    const box = await wordBox(2);
    const { points } = apiRects(base, box, 2);
    const viewport = page.getViewport({ scale: 1, rotation: page.rotate + 90 });
    const wrong = rectToViewport(points, viewport, viewport.rotation);
    const right = rectToViewport(points, viewport, page.rotate);
    assertClose(right, pdfjsRect(viewport, box, 2), "with page.rotate");
    assert.notDeepEqual(wrong, right);
  });
});

describe("highlights", () => {
  const highlight = pageBreakSentence();

  test("each page gets its own rects, with their index in the highlight", async () => {
    for (const n of [2, 3]) {
      const page = await doc.getPage(n);
      const viewport = page.getViewport({ scale: 1.25 });
      const got = highlightToViewportRects(highlight, n, viewport, page.rotate);
      const expectedIndexes = n === 2 ? [0, 1] : [2];
      assert.deepEqual(
        got.map((r) => r.index),
        expectedIndexes,
      );
      for (const r of got) {
        const points = highlight.rects[r.index]!;
        // At the default rotation, the target frame is the API frame scaled: x * 1.25.
        assertClose(
          r,
          {
            page: n,
            left: points.x0 * 1.25,
            top: points.y0 * 1.25,
            width: (points.x1 - points.x0) * 1.25,
            height: (points.y1 - points.y0) * 1.25,
          },
          `rect ${r.index}`,
        );
      }
    }
  });

  test("without normalized_rects the points are used", async () => {
    const page = await doc.getPage(3);
    const viewport = page.getViewport({ scale: 2 });
    const got = highlightToViewportRects(
      { ...highlight, normalized_rects: undefined },
      3,
      viewport,
      page.rotate,
    );
    assert.deepEqual(got, [{ page: 3, left: 80, top: 60, width: 320, height: 24, index: 2 }]);
  });

  test("rotations fold like PDF.js's", () => {
    assert.deepEqual([0, 90, -90, 450, 720].map(normalizeRotation), [0, 90, 270, 90, 0]);
    assert.throws(() => normalizeRotation(45), RangeError);
  });
});

describe("react-pdf-highlighter 7.0.0", () => {
  // The library's own conversion (dist/lib/coordinates.js has no React import), on the viewport
  // its PdfHighlighter gives each page: the default one, rotation = page.rotate.
  test("its scaledToViewport draws our ScaledPosition where our module does", async () => {
    const { scaledToViewport } = await import("react-pdf-highlighter/dist/lib/coordinates.js");
    const position: LibScaledPosition = toScaledPosition(pageBreakSentence());
    assert.equal(position.pageNumber, 2);
    assert.deepEqual(
      position.rects.map((r) => r.pageNumber),
      [2, 2, 3],
    );
    for (const [i, scaled] of position.rects.entries()) {
      const page = await doc.getPage(scaled.pageNumber!);
      const viewport = page.getViewport({ scale: 1.5 });
      const theirs = scaledToViewport(scaled, viewport, position.usePdfCoordinates);
      const ours = normalizedRectToViewport(
        pageBreakSentence().normalized_rects![i]!,
        viewport,
        page.rotate,
      );
      assertClose({ ...theirs, page: theirs.pageNumber! } as ViewportRect, ours, `rect ${i}`);
    }
    // boundingRect: the first page's rects only.
    const b = scaledToViewport(
      position.boundingRect,
      (await doc.getPage(2)).getViewport({ scale: 1 }),
    );
    assert.ok(Math.abs(b.left - 50) < 1e-9 && Math.abs(b.top - 500) < 1e-9, JSON.stringify(b));
    assert.ok(Math.abs(b.width - 650) < 1e-9 && Math.abs(b.height - 30) < 1e-9, JSON.stringify(b));
  });

  test("without normalized rects, only the first page's rects, scaled by its size", () => {
    const position = toScaledPosition({ ...pageBreakSentence(), normalized_rects: null });
    assert.equal(position.rects.length, 2);
    assert.deepEqual(position.rects[0], {
      x1: 400,
      y1: 500,
      x2: 700,
      y2: 515,
      width: 752,
      height: 540,
      pageNumber: 2,
    });
  });
});

// react-pdf-highlighter-extended 8.1.0's types (dist/esm/types.d.ts), copied: the fork is not a
// dependency here (its types resolve only under moduleResolution "Bundler"). This file stops
// compiling when toScaledPosition's output is not assignable to them.
interface ExtendedScaled {
  x1: number;
  y1: number;
  x2: number;
  y2: number;
  width: number;
  height: number;
  pageNumber: number;
}
interface ExtendedScaledPosition {
  boundingRect: ExtendedScaled;
  rects: Array<ExtendedScaled>;
  usePdfCoordinates?: boolean;
}

describe("react-pdf-highlighter-extended 8.1.0", () => {
  test("toScaledPosition's output has the fork's shape, every rect with its page", () => {
    const position: ExtendedScaledPosition = toScaledPosition(pageBreakSentence());
    assert.ok(position.rects.length > 1);
    assert.deepEqual(
      [...new Set(position.rects.map((r) => r.pageNumber))].sort(),
      [2, 3],
      "a sentence across a page break names both pages",
    );
  });
});
