/**
 * Ruling lines (table borders) found in a greyscale page, and their removal before recognition.
 *
 * Tesseract's page layout treats a ruled table as a picture or splits it into one block per cell,
 * and a rule touching a glyph spoils the glyph. So the extractor finds long straight dark runs,
 * paints them white before recognition, and hands the rules to the layout step, which uses them as
 * the table's grid (rows between horizontal rules, columns between vertical rules).
 */

/** One straight rule in page px: horizontal (`y` fixed, `from`..`to` along x) or vertical. */
export interface Rule {
  /** The row (horizontal rule) or column (vertical rule) at the rule's centre. */
  at: number;
  from: number;
  to: number;
  /** Thickness in px. */
  thickness: number;
}

export interface Rules {
  horizontal: Rule[];
  vertical: Rule[];
}

/** Greyscale value at or below which a pixel counts as ink. */
const INK = 128;

interface Run {
  line: number;
  from: number;
  to: number;
}

/**
 * Dark runs of at least `minLength` px along each line: along each row when `horizontal`, else
 * along each column. Both scan the page row by row, in memory order (a column walked top to bottom
 * touches one cache line per row: 3x slower on a 2400 px page); runs come out by line, then
 * position.
 */
function runs(
  grey: Uint8Array,
  width: number,
  height: number,
  horizontal: boolean,
  minLength: number,
): Run[] {
  return horizontal ? rowRuns(grey, width, height, minLength) : columnRuns(grey, width, height, minLength);
}

function rowRuns(grey: Uint8Array, width: number, height: number, minLength: number): Run[] {
  const found: Run[] = [];
  for (let line = 0; line < height; line += 1) {
    const row = line * width;
    let start = -1;
    // One light pixel inside a run (anti-aliasing, grain) does not break it.
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

/** The same rule as {@link rowRuns} down every column, each column's state kept in an array. */
function columnRuns(grey: Uint8Array, width: number, height: number, minLength: number): Run[] {
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
  // Found in the order they ended; by column (a stable sort keeps each column's top-down order).
  return found.sort((a, b) => a.line - b.line);
}

/** Merges runs on adjacent lines that overlap along their length into one rule each. */
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
      rules.push({ at: run.line, from: run.from, to: run.to, thickness: 1, first: run.line, last: run.line });
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

/** The limits of {@link findRules}; each has a default. */
export interface RuleOptions {
  /** The shortest rule, px. */
  minLength?: number;
  /** The thickest rule, px. */
  maxThickness?: number;
  /**
   * The page's text line height (px, as `estimateLineHeight` measures it), when known: rules
   * shorter than {@link MIN_LENGTH_PER_LINE} lines are then strokes of larger print (a title's
   * letters), not rules.
   */
  lineHeight?: number;
}

/**
 * How many of the page's text lines long a rule is at least, when the line height is known (the
 * ink's height: about 0.75 of the font size). A table's rule spans rows or cells of text: a row of
 * text with its padding is 2 to 3 lines, and the document suite's rules are 9 or more lines long.
 * A title's letters are not: an `l` three times the body's size is about 3 lines long.
 */
const MIN_LENGTH_PER_LINE = 4;

/**
 * The ruling lines of a page: dark straight runs at least `minLength` px long (default: 8 % of the
 * page's smaller side, at least 40 px and {@link MIN_LENGTH_PER_LINE} text lines) and at most
 * `maxThickness` px thick (default: a 60th of the smaller side, at least 8 px; thicker dark areas
 * are pictures or bold blocks, not rules), at least {@link MIN_LENGTH_PER_THICKNESS} times as long
 * as thick, with paper along them. A letter's stroke fails one of these: in body text it is short;
 * in large print it is thick for its length, or has the rest of its glyph along it, or is short
 * for the page's text lines. (Thin letters of large print on a page without smaller text are the
 * case left: a light font's `l` above 40 px has none of these marks.)
 */
export function findRules(grey: Uint8Array, width: number, height: number, options: RuleOptions = {}): Rules {
  return {
    horizontal: findRuleLines(grey, width, height, "horizontal", options),
    vertical: findRuleLines(grey, width, height, "vertical", options),
  };
}

/** One direction of {@link findRules} (the extractor lets its event loop run between the two). */
export function findRuleLines(
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
  return merge(runs(grey, width, height, horizontal, minLength)).filter(
    (rule) =>
      rule.thickness <= maxThickness &&
      rule.to - rule.from + 1 >= MIN_LENGTH_PER_THICKNESS * rule.thickness &&
      inkAlong(grey, width, height, horizontal, rule, -1) <= MAX_INK_ALONG &&
      inkAlong(grey, width, height, horizontal, rule, 1) <= MAX_INK_ALONG,
  );
}

/**
 * A rule is at least this many times as long as it is thick. A glyph's straight stroke is not: the
 * stem of an `l` or the bar of a `T` is 6 to 10 times its thickness in regular and bold fonts (DejaVu
 * and Liberation measured), and in large print (a title, a banner) it is long enough to pass
 * `minLength`. The document suite's rules are 20 to several hundred times their thickness.
 */
const MIN_LENGTH_PER_THICKNESS = 12;

/**
 * The largest share of a rule's length along which ink may continue past its edge (see
 * {@link inkAlong}). A table's rule has paper along both sides, met only by the rules that cross
 * it (a double border's second line lies a gap of paper away); the edge of a large glyph's stroke
 * or bowl, which the run search also finds, has the rest of its glyph right there.
 */
const MAX_INK_ALONG = 0.5;

/**
 * The share of the positions along `rule` (rows of a vertical rule, columns of a horizontal one)
 * where the pixel 2 px beyond its edge on `side` (-1: above or left), past the anti-aliasing its
 * erasure also takes, is ink.
 */
function inkAlong(
  grey: Uint8Array,
  width: number,
  height: number,
  horizontal: boolean,
  rule: Rule,
  side: -1 | 1,
): number {
  const edge = Math.round(side < 0 ? rule.at - (rule.thickness - 1) / 2 : rule.at + (rule.thickness - 1) / 2);
  const line = edge + 2 * side;
  if (line < 0 || line >= (horizontal ? height : width)) return 0;
  let ink = 0;
  for (let position = rule.from; position <= rule.to; position += 1) {
    const value = horizontal ? grey[line * width + position]! : grey[position * width + line]!;
    if (value <= INK) ink += 1;
  }
  return ink / (rule.to - rule.from + 1);
}

/** Paints every rule white in place (with a 1 px margin for anti-aliased edges). */
export function eraseRules(grey: Uint8Array, width: number, height: number, rules: Rules): void {
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

/** Rules scaled by `factor` (the page was resized after they were found). */
export function scaleRules(rules: Rules, factor: number): Rules {
  const scale = (rule: Rule): Rule => ({
    at: rule.at * factor,
    from: rule.from * factor,
    to: rule.to * factor,
    thickness: rule.thickness * factor,
  });
  return { horizontal: rules.horizontal.map(scale), vertical: rules.vertical.map(scale) };
}

/** Rules moved by (`dx`, `dy`) px (the page was cut: its origin moved to (-dx, -dy)). */
export function moveRules(rules: Rules, dx: number, dy: number): Rules {
  return {
    horizontal: rules.horizontal.map((rule) => ({
      ...rule,
      at: rule.at + dy,
      from: rule.from + dx,
      to: rule.to + dx,
    })),
    vertical: rules.vertical.map((rule) => ({
      ...rule,
      at: rule.at + dx,
      from: rule.from + dy,
      to: rule.to + dy,
    })),
  };
}
