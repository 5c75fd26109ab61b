import type { Rule, RuleOptions } from "../src/rules.js";

// The straightforward rule scans and the random pages the probing scans are compared on
// (rule-lines.test.ts).

/** A run of ink along one line (row or column), `from` to `to` inclusive. */
export interface Run {
  line: number;
  from: number;
  to: number;
}

/**
 * The straightforward scans as they were before the probing ones (`src/rules.ts` at the commit
 * before it), copied unchanged with the rest of the pipeline they feed: the oracle the faster code
 * must match exactly, rule for rule and pixel for pixel.
 */
export const reference = (() => {
  const INK = 128;
  const MIN_LENGTH_PER_LINE = 4;
  const MIN_LENGTH_PER_THICKNESS = 12;
  const MAX_INK_ALONG = 0.5;
  function referenceRowRuns(grey: Uint8Array, width: number, height: number, minLength: number): Run[] {
    const found: Run[] = [];
    for (let line = 0; line < height; line += 1) {
      const row = line * width;
      let start = -1;
      let gap = 0;
      for (let position = 0; position <= width; position += 1) {
        const value = position === width ? 255 : grey[row + position]!;
        if (value <= INK) {
          if (start === -1) start = position;
          gap = 0;
        } else if (start !== -1) {
          gap += 1;
          if (gap > 1 || position === width) {
            const end = position - gap;
            if (end - start + 1 >= minLength) found.push({ line, from: start, to: end });
            start = -1;
            gap = 0;
          }
        }
      }
    }
    return found;
  }

  function referenceColumnRuns(grey: Uint8Array, width: number, height: number, minLength: number): Run[] {
    const found: Run[] = [];
    const start = new Int32Array(width).fill(-1);
    const gap = new Int32Array(width);
    for (let position = 0; position <= height; position += 1) {
      const row = position * width;
      const last = position === height;
      for (let line = 0; line < width; line += 1) {
        const value = last ? 255 : grey[row + line]!;
        if (value <= INK) {
          if (start[line] === -1) start[line] = position;
          gap[line] = 0;
        } else if (start[line] !== -1) {
          const gapped = gap[line]! + 1;
          if (gapped > 1 || last) {
            const end = position - gapped;
            if (end - start[line]! + 1 >= minLength) found.push({ line, from: start[line]!, to: end });
            start[line] = -1;
            gap[line] = 0;
          } else gap[line] = gapped;
        }
      }
    }
    return found.sort((a, b) => a.line - b.line);
  }

  function referenceRuns(
    grey: Uint8Array,
    width: number,
    height: number,
    horizontal: boolean,
    minLength: number,
  ): Run[] {
    return horizontal
      ? referenceRowRuns(grey, width, height, minLength)
      : referenceColumnRuns(grey, width, height, minLength);
  }

  function merge(found: Run[]): Rule[] {
    const rules: (Rule & { first: number; last: number })[] = [];
    for (const run of found) {
      const rule = rules.find(
        (candidate) =>
          run.line - candidate.last <= 1 &&
          Math.min(candidate.to, run.to) - Math.max(candidate.from, run.from) >
            0.5 * Math.min(candidate.to - candidate.from, run.to - run.from),
      );
      if (rule === undefined) {
        rules.push({
          at: run.line,
          from: run.from,
          to: run.to,
          thickness: 1,
          first: run.line,
          last: run.line,
        });
      } else {
        rule.last = run.line;
        rule.from = Math.min(rule.from, run.from);
        rule.to = Math.max(rule.to, run.to);
      }
    }
    return rules.map(({ first, last, from, to }) => ({
      at: (first + last) / 2,
      from,
      to,
      thickness: last - first + 1,
    }));
  }

  function inkAlong(
    grey: Uint8Array,
    width: number,
    height: number,
    horizontal: boolean,
    rule: Rule,
    side: -1 | 1,
  ): number {
    const edge = Math.round(
      side < 0 ? rule.at - (rule.thickness - 1) / 2 : rule.at + (rule.thickness - 1) / 2,
    );
    const line = edge + 2 * side;
    if (line < 0 || line >= (horizontal ? height : width)) return 0;
    let ink = 0;
    for (let position = rule.from; position <= rule.to; position += 1) {
      const value = horizontal ? grey[line * width + position]! : grey[position * width + line]!;
      if (value <= INK) ink += 1;
    }
    return ink / (rule.to - rule.from + 1);
  }

  function referenceFindRuleLines(
    grey: Uint8Array,
    width: number,
    height: number,
    direction: "horizontal" | "vertical",
    options: RuleOptions = {},
  ): Rule[] {
    const minLength =
      options.minLength ??
      Math.max(
        40,
        Math.round(0.08 * Math.min(width, height)),
        Math.round(MIN_LENGTH_PER_LINE * (options.lineHeight ?? 0)),
      );
    const maxThickness = options.maxThickness ?? Math.max(8, Math.round(Math.min(width, height) / 60));
    const horizontal = direction === "horizontal";
    return merge(referenceRuns(grey, width, height, horizontal, minLength)).filter(
      (rule) =>
        rule.thickness <= maxThickness &&
        rule.to - rule.from + 1 >= MIN_LENGTH_PER_THICKNESS * rule.thickness &&
        inkAlong(grey, width, height, horizontal, rule, -1) <= MAX_INK_ALONG &&
        inkAlong(grey, width, height, horizontal, rule, 1) <= MAX_INK_ALONG,
    );
  }

  function referenceEraseRules(
    grey: Uint8Array,
    width: number,
    height: number,
    rules: { horizontal: Rule[]; vertical: Rule[] },
  ): void {
    for (const rule of rules.horizontal) {
      const top = Math.max(0, Math.floor(rule.at - rule.thickness / 2) - 1);
      const bottom = Math.min(height - 1, Math.ceil(rule.at + rule.thickness / 2) + 1);
      for (let y = top; y <= bottom; y += 1) {
        grey.fill(255, y * width + Math.max(0, rule.from - 1), y * width + Math.min(width, rule.to + 2));
      }
    }
    for (const rule of rules.vertical) {
      const left = Math.max(0, Math.floor(rule.at - rule.thickness / 2) - 1);
      const right = Math.min(width - 1, Math.ceil(rule.at + rule.thickness / 2) + 1);
      for (let y = Math.max(0, rule.from - 1); y <= Math.min(height - 1, rule.to + 1); y += 1) {
        grey.fill(255, y * width + left, y * width + right + 1);
      }
    }
  }

  return { referenceRuns, referenceFindRuleLines, referenceEraseRules };
})();

/** `length` bytes at an odd offset into a bigger buffer (no aligned word view of it exists). */
function unaligned(length: number, offset: number): Uint8Array {
  return new Uint8Array(length + offset + 5).fill(7).subarray(offset, offset + length);
}

/** A value the scan counts as ink (`<= 128`), often exactly 128. */
const inkValue = (random: () => number) => (random() < 0.3 ? 128 : Math.floor(random() * 129));
/** A light value (`> 128`), often exactly 129 or 255 (paper). */
const lightValue = (random: () => number) => {
  const pick = random();
  return pick < 0.2 ? 129 : pick < 0.6 ? 255 : 129 + Math.floor(random() * 127);
};

/**
 * Along one line: paper, noise, dark stretches (some from or to the line's ends) with single light
 * pixels inside (bridged) and pairs of them (breaks), and lone 128s and 129s.
 */
function fillLine(
  set: (position: number, value: number) => void,
  length: number,
  random: () => number,
): void {
  for (let position = 0; position < length; position += 1) set(position, 255);
  const stretches = Math.floor(random() * 4);
  for (let stretch = 0; stretch < stretches; stretch += 1) {
    const edge = random();
    const span = 1 + Math.floor(random() * length);
    const from = edge < 0.2 ? 0 : Math.floor(random() * length);
    const to = edge > 0.8 ? length - 1 : Math.min(length - 1, from + span);
    for (let position = from; position <= to; position += 1) set(position, inkValue(random));
    for (let hole = Math.floor(random() * 4); hole > 0; hole -= 1) {
      const at = from + Math.floor(random() * (to - from + 1));
      set(at, lightValue(random));
      if (random() < 0.3 && at + 1 <= to) set(at + 1, lightValue(random));
    }
  }
  if (random() < 0.2) {
    const from = Math.floor(random() * length);
    const to = Math.min(length, from + Math.floor(random() * 40));
    for (let position = from; position < to; position += 1)
      set(position, random() < 0.5 ? inkValue(random) : lightValue(random));
  }
  // A train of clean runs of many exact lengths, two light pixels apart: each next run starts at
  // the first position the last one leaves free.
  if (random() < 0.5) {
    let position = Math.floor(random() * length);
    for (let run = Math.floor(random() * 6); run > 0 && position < length; run -= 1) {
      const end = Math.min(length, position + 1 + Math.floor(random() ** 2 * 60));
      for (; position < end; position += 1) set(position, inkValue(random));
      for (let gap = 0; gap < 2 && position < length; gap += 1, position += 1)
        set(position, lightValue(random));
    }
  }
  for (let lone = Math.floor(random() * 3); lone > 0; lone -= 1)
    set(Math.floor(random() * length), random() < 0.5 ? 128 : 129);
}

/**
 * A page whose every third line (rows, or columns when `!horizontal`) is a random {@link fillLine}
 * and the rest light but for ink at either end now and then (where a row scan that ran past its
 * row's end would meet it). Runs of these lines never merge, nor have more than 2 ink pixels 2 px
 * beside them, and the 1 px runs between merge with nothing, so each run of 12 px or more is one
 * rule of its own, and the rules are the scan's runs laid bare.
 */
export function stripedPage(
  width: number,
  height: number,
  horizontal: boolean,
  random: () => number,
): Uint8Array {
  const grey = unaligned(width * height, 1 + Math.floor(random() * 7));
  const lines = horizontal ? height : width;
  const length = horizontal ? width : height;
  for (let line = 0; line < lines; line += 1) {
    const set = horizontal
      ? (position: number, value: number) => {
          grey[line * width + position] = value;
        }
      : (position: number, value: number) => {
          grey[position * width + line] = value;
        };
    if (line % 3 === 0) fillLine(set, length, random);
    else {
      for (let position = 0; position < length; position += 1)
        set(position, random() < 0.8 ? 255 : lightValue(random));
      if (random() < 0.5) set(0, inkValue(random));
      if (random() < 0.5) set(length - 1, inkValue(random));
    }
  }
  return grey;
}

/**
 * A page of everything at once: paper, noise patches, dark blocks, rules of 1 to 3 px (some edge to
 * edge) with light pixels in them, and random lines across it.
 */
export function mixedPage(width: number, height: number, random: () => number): Uint8Array {
  const grey = unaligned(width * height, 1 + Math.floor(random() * 7));
  grey.fill(255);
  const box = (x: number, y: number, w: number, h: number, value: () => number) => {
    for (let row = Math.max(0, y); row < Math.min(height, y + h); row += 1)
      for (let column = Math.max(0, x); column < Math.min(width, x + w); column += 1)
        grey[row * width + column] = value();
  };
  const at = (limit: number) => Math.floor(random() * limit);
  for (let patch = at(4); patch > 0; patch -= 1)
    box(at(width), at(height), at(width / 2 + 1), at(height / 2 + 1), () => Math.floor(random() * 256));
  for (let block = at(3); block > 0; block -= 1)
    box(at(width), at(height), at(width / 3 + 1), at(height / 3 + 1), () => inkValue(random));
  for (let rule = at(6); rule > 0; rule -= 1) {
    const thickness = 1 + at(3);
    const whole = random() < 0.3;
    if (random() < 0.5) {
      const from = whole ? 0 : at(width);
      box(from, at(height), whole ? width : at(width - from + 1), thickness, () => inkValue(random));
    } else {
      const from = whole ? 0 : at(height);
      box(at(width), from, thickness, whole ? height : at(height - from + 1), () => inkValue(random));
    }
  }
  for (let line = at(6); line > 0; line -= 1) {
    if (random() < 0.5 && height > 0) {
      const y = at(height);
      fillLine((x, value) => (grey[y * width + x] = value), width, random);
    } else if (width > 0) {
      const x = at(width);
      fillLine((y, value) => (grey[y * width + x] = value), height, random);
    }
  }
  for (let speck = at(width * height * 0.01 + 1); speck > 0; speck -= 1)
    grey[at(width * height)] = random() < 0.5 ? 128 : 129;
  return grey;
}
