import { describe, expect, it } from "vitest";
import { parseHocr } from "../src/hocr.js";

/** The hOCR reader of the native engine: tesseract's hOCR as the layout the converter reads. */
describe("parseHocr", () => {
  const hocr = `<?xml version="1.0" encoding="UTF-8"?>
<body>
  <div class='ocr_page' id='page_1' title='image "stdin"; bbox 0 0 1200 800; ppageno 0'>
   <div class='ocr_carea' id='block_1_1' title="bbox 84 101 754 169">
    <p class='ocr_par' id='par_1_1' lang='eng' title="bbox 84 101 754 169">
     <span class='ocr_header' id='line_1_1' title="bbox 84 101 754 169; baseline 0.01 -12; x_size 60.5; x_descenders 12; x_ascenders 18">
      <span class='ocrx_word' id='word_1_1' title='bbox 84 101 300 169; x_wconf 96'>Fish</span>
      <span class='ocrx_word' id='word_1_2' title='bbox 320 101 754 169; x_wconf 95'>&amp;&#39;Chips&lt;&quot;&gt;</span>
     </span>
    </p>
   </div>
   <div class='ocr_photo' id='block_1_2' title="bbox 10 300 500 600"></div>
   <div class='ocr_carea' id='block_1_3' title="bbox 84 700 400 740">
    <p class='ocr_par' id='par_1_2' lang='eng' title="bbox 84 700 400 740">
     <span class='ocr_line' id='line_1_2' title="bbox 84 700 400 740; baseline 0 0; x_size 30">
      <span class='ocrx_word' id='word_1_3' title='bbox 84 700 150 740; x_wconf 90'><strong>one</strong></span>
      <span class='ocrx_word' id='word_1_4' title='bbox 160 700 400 740; x_wconf 10'> </span>
     </span>
     <span class='ocr_line' id='line_1_3' title="bbox 84 745 400 780">
      <span class='ocrx_word' id='word_1_5' title='bbox 84 745 150 780; x_wconf 90'>two</span>
     </span>
    </p>
   </div>
  </div>
</body>`;

  it("reads blocks, paragraphs, lines (headers too) and words with boxes, row heights and baselines", () => {
    const blocks = parseHocr(hocr);
    expect(blocks).toHaveLength(2);
    const header = blocks[0]!.paragraphs[0]!.lines[0]!;
    expect(header.words.map((word) => word.text)).toEqual(["Fish", "&'Chips<\">"]);
    expect(header.bbox).toEqual({ x0: 84, y0: 101, x1: 754, y1: 169 });
    expect(header.rowAttributes).toEqual({ rowHeight: 60.5 });
    // From the bottom-left corner (84, 169): offset -12, slope 0.01 over 670 px.
    expect(header.baseline?.x0).toBe(84);
    expect(header.baseline?.y0).toBe(157);
    expect(header.baseline?.x1).toBe(754);
    expect(header.baseline?.y1).toBeCloseTo(157 + 6.7, 6);
    const lines = blocks[1]!.paragraphs[0]!.lines;
    // Markup inside a word is dropped, blank words are left out; a line without x_size has none.
    expect(lines.map((line) => line.words.map((word) => word.text))).toEqual([["one"], ["two"]]);
    expect(lines[1]!.rowAttributes).toBeNull();
    expect(lines[1]!.baseline).toBeNull();
  });

  it("shifts every box by the region's offset", () => {
    const [block] = parseHocr(hocr, 1000, 2000);
    const line = block!.paragraphs[0]!.lines[0]!;
    expect(line.bbox).toEqual({ x0: 1084, y0: 2101, x1: 1754, y1: 2169 });
    expect(line.words[0]!.bbox).toEqual({ x0: 1084, y0: 2101, x1: 1300, y1: 2169 });
    expect(line.baseline?.y0).toBe(2157);
  });

  it("answers no blocks for a page without text", () => {
    expect(parseHocr("<div class='ocr_page' id='page_1' title='bbox 0 0 10 10'></div>")).toEqual([]);
  });
});
