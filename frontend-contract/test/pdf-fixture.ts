// A tiny PDF writer for tests: real PDF bytes that PDF.js parses, with the page boxes and /Rotate
// values chosen per test, so coordinates are checked on pages PDF.js itself loaded.

export interface FixturePage {
  mediaBox: [number, number, number, number];
  cropBox?: [number, number, number, number];
  rotate?: number;
  userUnit?: number;
  /** Words drawn in Helvetica at user-space baselines. */
  words?: { text: string; x: number; y: number; size: number }[];
}

const box = (b: number[]) => `[${b.join(" ")}]`;

/** Returns a complete PDF (header, objects, xref, trailer) as bytes. */
export function makePdf(pages: FixturePage[]): Uint8Array {
  // Object numbers: 1 catalog, 2 page tree, 3 font, then a page and its content stream per page.
  const objects: string[] = [];
  const pageRefs = pages.map((_, i) => `${4 + 2 * i} 0 R`);
  objects.push("<< /Type /Catalog /Pages 2 0 R >>");
  objects.push(`<< /Type /Pages /Kids [${pageRefs.join(" ")}] /Count ${pages.length} >>`);
  objects.push("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>");
  pages.forEach((page, i) => {
    const content = (page.words ?? [])
      .map((w) => `BT /F1 ${w.size} Tf ${w.x} ${w.y} Td (${w.text}) Tj ET`)
      .join("\n");
    const extra =
      (page.cropBox ? ` /CropBox ${box(page.cropBox)}` : "") +
      (page.rotate ? ` /Rotate ${page.rotate}` : "") +
      (page.userUnit ? ` /UserUnit ${page.userUnit}` : "");
    objects.push(
      `<< /Type /Page /Parent 2 0 R /MediaBox ${box(page.mediaBox)}${extra}` +
        ` /Resources << /Font << /F1 3 0 R >> >> /Contents ${5 + 2 * i} 0 R >>`,
    );
    objects.push(`<< /Length ${content.length} >>\nstream\n${content}\nendstream`);
  });

  let out = "%PDF-1.7\n";
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    offsets.push(out.length); // ASCII only, so string length == byte offset
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xrefAt = out.length;
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const offset of offsets) out += `${String(offset).padStart(10, "0")} 00000 n \n`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xrefAt}\n%%EOF\n`;
  return new TextEncoder().encode(out);
}
