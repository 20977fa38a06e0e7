/**
 * The viewer for a web or text source (HTML, Markdown, plain text): its text from
 * GET /v2/documents/{id}/text, laid out by its blocks (headings, paragraphs, list items, quotes,
 * preformatted runs, table rows), with each highlight's sentence in a <mark> at its
 * TextPositionSelector's offsets.
 *
 * The page is built from text nodes and a fixed set of elements only, never from the source's
 * markup: nothing the document holds can run a script or load anything (the service extracted
 * the text and its blocks from the file; the viewer never sees the file's HTML).
 */
import type { components } from "../highlight-api.js";
import type { HighlightResponse } from "../src/highlights.js";

export type DocumentText = components["schemas"]["DocumentText"];
type TextBlock = components["schemas"]["TextBlock"];

/** A highlight's span in the text, in code points (TextPositionSelector), or null. */
export function positionOf(h: HighlightResponse): [number, number] | null {
  for (const selector of h.highlight.selectors) {
    if (selector.type === "TextPositionSelector") return [selector.start, selector.end];
  }
  return null;
}

/**
 * Code point offsets (the service's, as the W3C model counts) to UTF-16 indices (JavaScript's):
 * they differ after a character outside the Basic Multilingual Plane, such as an emoji.
 */
export function utf16Offsets(text: string): (codePoint: number) => number {
  const table: number[] = [];
  let unit = 0;
  for (const char of text) {
    table.push(unit);
    unit += char.length;
  }
  table.push(unit);
  return (codePoint) => table[Math.max(0, Math.min(codePoint, table.length - 1))] ?? unit;
}

interface Span {
  start: number;
  end: number;
  id: string;
}

/** text[start, end) as text nodes, with the parts inside a highlight's span in <mark>s. */
function appendMarked(
  parent: HTMLElement,
  text: string,
  start: number,
  end: number,
  spans: Span[],
): void {
  let at = start;
  for (const span of spans) {
    const from = Math.max(span.start, at);
    const to = Math.min(span.end, end);
    if (from >= to) continue;
    if (from > at) parent.append(text.slice(at, from));
    const mark = document.createElement("mark");
    mark.className = "hl-mark";
    mark.dataset.highlightId = span.id;
    mark.textContent = text.slice(from, to);
    parent.append(mark);
    at = to;
  }
  if (at < end) parent.append(text.slice(at, end));
}

const TAGS: Record<string, string> = {
  paragraph: "p",
  item: "li",
  quote: "blockquote",
  code: "pre",
};

/** The document's text as elements, highlighted; returns the marks in document order. */
export function renderText(
  container: HTMLElement,
  body: DocumentText,
  highlights: HighlightResponse[],
): HTMLElement[] {
  const text = body.text;
  const toUnit = utf16Offsets(text);
  const spans: Span[] = [];
  for (const h of highlights) {
    const position = positionOf(h);
    if (position) {
      spans.push({ start: toUnit(position[0]), end: toUnit(position[1]), id: h.highlight_id });
    }
  }
  spans.sort((a, b) => a.start - b.start || a.end - b.end);
  const article = document.createElement("article");
  article.className = "text-source";
  let list: HTMLElement | null = null;
  let table: HTMLElement | null = null;
  for (const block of body.blocks as TextBlock[]) {
    const start = toUnit(block.start);
    const end = toUnit(block.end);
    if (block.kind !== "item") list = null;
    if (block.kind !== "row") table = null;
    if (block.kind === "row") {
      if (!table) {
        table = document.createElement("table");
        article.append(table);
      }
      const row = document.createElement("tr");
      let cellStart = start;
      for (const cell of text.slice(start, end).split("\t")) {
        const td = document.createElement("td");
        appendMarked(td, text, cellStart, cellStart + cell.length, spans);
        row.append(td);
        cellStart += cell.length + 1;
      }
      table.append(row);
      continue;
    }
    const tag =
      block.kind === "heading" ? `h${Math.min(6, Math.max(1, block.level))}` : TAGS[block.kind];
    const element = document.createElement(tag ?? "p");
    appendMarked(element, text, start, end, spans);
    if (block.kind === "item") {
      if (!list) {
        list = document.createElement("ul");
        article.append(list);
      }
      list.append(element);
    } else {
      article.append(element);
    }
  }
  container.append(article);
  return [...article.querySelectorAll<HTMLElement>("mark.hl-mark")];
}
