/** A rectangle of a page, in px from its top-left corner: what an engine is asked to read. */
export interface Region {
  left: number;
  top: number;
  width: number;
  height: number;
}

/** A pre-processed page: 8-bit grey pixels, one byte per pixel, row after row. */
export interface GreyPage {
  grey: Uint8Array;
  width: number;
  height: number;
}

/**
 * The header of a binary PGM of the given size: what both engines read (Leptonica decodes it),
 * with no compression to spend time on either side (a PNG cost 10-30 ms to write and as much to
 * read back per page). The native engine writes it and the pixels into the page's file side by
 * side, so a page is never copied to put a header in front of it (one page-sized buffer less per
 * page for the garbage collector to find: see `nativeReader`).
 */
export function pgmHeader(width: number, height: number): Buffer {
  return Buffer.from(`P5\n${width} ${height}\n255\n`, "latin1");
}

/**
 * The part of a page inside `area` (inside the page) as one binary PGM buffer, its pixels copied
 * once, straight behind the header (tesseract.js takes a single buffer).
 */
export function pgmOf(page: GreyPage, area: Region): Buffer {
  const header = pgmHeader(area.width, area.height);
  const pgm = Buffer.allocUnsafe(header.length + area.width * area.height);
  header.copy(pgm);
  copyArea(page, area, pgm.subarray(header.length));
  return pgm;
}

/** Paints `regions` (inside the page) white, in place. */
export function blank(page: GreyPage, regions: readonly Region[]): void {
  for (const region of regions) {
    for (let row = region.top; row < region.top + region.height; row++) {
      const start = row * page.width + region.left;
      page.grey.fill(255, start, start + region.width);
    }
  }
}

/** The part of `region` inside the page (what both engines are asked to read of it). */
export function clip(page: GreyPage, region: Region): Region {
  const left = Math.min(Math.max(0, region.left), page.width - 1);
  const top = Math.min(Math.max(0, region.top), page.height - 1);
  return {
    left,
    top,
    width: Math.max(1, Math.min(region.width, page.width - left)),
    height: Math.max(1, Math.min(region.height, page.height - top)),
  };
}

/** Copies the pixels of `region` (inside the page), row after row, into `out`. */
export function copyArea(page: GreyPage, region: Region, out: Uint8Array): void {
  for (let row = 0; row < region.height; row++) {
    const from = (region.top + row) * page.width + region.left;
    out.set(page.grey.subarray(from, from + region.width), row * region.width);
  }
}

/** The part of a page inside `region` (inside the page), copied once. */
export function cropPage(page: GreyPage, region: Region): GreyPage {
  const grey = new Uint8Array(region.width * region.height);
  copyArea(page, region, grey);
  return { grey, width: region.width, height: region.height };
}
