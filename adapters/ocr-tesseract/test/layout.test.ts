import { describe, expect, it } from "vitest";
import { layoutToMarkdown, layoutToPlain, type OcrBlock, type OcrLine } from "../src/index.js";

/** A line of words laid out left to right from `x`, each word `width` px per character. */
function line(
  text: string,
  x: number,
  y: number,
  height: number,
  gaps: Record<number, number> = {},
): OcrLine {
  let cursor = x;
  const words = text.split(" ").map((word, index) => {
    cursor += gaps[index] ?? 0;
    const box = { x0: cursor, y0: y, x1: cursor + word.length * height * 0.5, y1: y + height };
    cursor = box.x1 + height * 0.3;
    return { text: word, bbox: box };
  });
  return {
    words,
    bbox: { x0: x, y0: y, x1: cursor, y1: y + height },
    rowAttributes: { rowHeight: height },
  };
}
const block = (...paragraphs: OcrLine[][]): OcrBlock => ({
  paragraphs: paragraphs.map((lines) => ({ lines })),
});

describe("layoutToMarkdown", () => {
  it("turns tall lines into headings, joins paragraph lines, and reads lists", () => {
    const blocks = [
      block([line("Quarterly Report", 40, 20, 44)]),
      block([line("Sales rose this quarter", 40, 100, 20), line("in every region.", 40, 125, 20)]),
      block([line("Next Steps", 40, 180, 32)]),
      block([line("• Apples arrive Monday", 60, 230, 20), line("« Pears arrive Tuesday", 60, 260, 20)]),
      block([line("1. Open the crate", 60, 320, 20), line("2. Count the fruit", 60, 350, 20)]),
    ];
    expect(layoutToMarkdown(blocks)).toBe(
      [
        "# Quarterly Report",
        "",
        "Sales rose this quarter in every region.",
        "",
        "## Next Steps",
        "",
        "- Apples arrive Monday",
        "- Pears arrive Tuesday",
        "",
        "1. Open the crate",
        "2. Count the fruit",
      ].join("\n"),
    );
  });

  it("renders rows of aligned short cells as a markdown table", () => {
    // Columns at x = 40, 240 and 440, even when tesseract puts each column in its own block.
    const rows = [
      ["Fruit", "Price", "Stock"],
      ["Apple", "1.20", "40"],
      ["Pear", "0.90", "12"],
    ];
    const columns = [0, 1, 2].map((column) =>
      block(rows.map((row, index) => line(row[column]!, 40 + column * 200, 100 + index * 30, 20))),
    );
    const markdown = layoutToMarkdown([block([line("Price list", 40, 40, 20)]), ...columns]);
    expect(markdown).toBe(
      [
        "Price list",
        "",
        "| Fruit | Price | Stock |",
        "| --- | --- | --- |",
        "| Apple | 1.20 | 40 |",
        "| Pear | 0.90 | 12 |",
      ].join("\n"),
    );
  });

  it("keeps ordinary prose with normal word spacing out of tables", () => {
    const blocks = [
      block([line("one two three four five", 40, 40, 20), line("six seven eight nine", 40, 65, 20)]),
    ];
    expect(layoutToMarkdown(blocks)).toBe("one two three four five six seven eight nine");
  });

  it("answers an empty string for a page without text", () => {
    expect(layoutToMarkdown([])).toBe("");
    expect(layoutToPlain([])).toBe("");
  });
});

describe("layoutToPlain", () => {
  it("keeps line breaks and separates paragraphs with a blank line", () => {
    const blocks = [
      block([line("First line", 0, 0, 20), line("second line", 0, 25, 20)], [line("Next", 0, 80, 20)]),
    ];
    expect(layoutToPlain(blocks)).toBe("First line\nsecond line\n\nNext");
  });

  it("writes bullets misread as *, « or a capital-led e as • and keeps real characters", () => {
    const blocks = [
      block([
        line("* Apples arrive Monday", 60, 0, 20),
        line("« Pears arrive Tuesday", 60, 30, 20),
        line("e Plums arrive Friday", 60, 60, 20),
        line("e mail is read daily", 60, 90, 20),
        line("- 5 degrees at night", 60, 120, 20),
        line("▪ Figs", 60, 150, 20),
        line("*", 60, 180, 20),
      ]),
    ];
    expect(layoutToPlain(blocks).split("\n")).toEqual([
      "• Apples arrive Monday",
      "• Pears arrive Tuesday",
      "• Plums arrive Friday",
      "e mail is read daily",
      "- 5 degrees at night",
      "▪ Figs",
      "*",
    ]);
  });
});
