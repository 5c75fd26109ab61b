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
 * along each column. A run is ink joined across single light pixels (anti-aliasing, grain): it
 * ends at the last ink before two light pixels in a row or the page's edge, so it reads the same
 * from either end. Runs come out by line, then position.
 *
 * Neither scan reads every pixel (that took 13 ms for the rows and 17 ms for the columns of a
 * 2400x1788 page, most of it on paper). Inside a run no two neighbouring pixels are both light, so
 * the pixel pair (p, p + 1) holds ink for every p from a run's `from - 1` to its `to`: a run of L px
 * is met by L + 1 such pairs, and a pair of two light pixels meets no run. The scans probe pairs
 * `ceil(minLength) + 1` px apart ({@link probeStride}), which no run of `minLength` px can slip
 * between, and follow only a pair with ink both ways to its run's ends (a shorter run found so is
 * dropped). With the suite's `minLength`s (40 to 272 px) that reads a few % of a page: over its 44
 * pages, 40x less time for the rows and 55x for the columns, 0.2 ms each on the 2400x1788 page. A
 * page all in runs (a dark picture) is still read once per pixel, a third faster than before.
 *
 * Both scans probe row by row, in memory order (a column walked top to bottom touches one cache
 * line per row: 3x slower on a 2400 px page); only the columns with ink at a probe are walked.
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

/**
 * The distance between probes along lines `length` px long: `ceil(minLength) + 1` (see
 * {@link runs}), 2 when every run counts (`minLength` of 1 or less) or none does (`NaN`), and no
 * more than `length + 1` (a first probe and no second when no run is long enough).
 */
function probeStride(minLength: number, length: number): number {
  return minLength > 1 ? Math.min(Math.ceil(minLength) + 1, length + 1) : 2;
}

/**
 * The first position of the run through the ink at `at` on a line whose position 0 is at `origin`
 * in `grey` and whose positions are `step` apart.
 */
function runStart(grey: Uint8Array, origin: number, step: number, at: number): number {
  let from = at;
  let index = origin + at * step;
  for (;;) {
    if (from >= 1 && grey[index - step]! <= INK) {
      from -= 1;
      index -= step;
    } else if (from >= 2 && grey[index - 2 * step]! <= INK) {
      // One light pixel, then ink: bridged.
      from -= 2;
      index -= 2 * step;
    } else return from;
  }
}

/** The last position of the run through the ink at `at` (as {@link runStart}, on `length` px). */
function runEnd(grey: Uint8Array, origin: number, step: number, length: number, at: number): number {
  let to = at;
  let index = origin + at * step;
  for (;;) {
    if (to + 1 < length && grey[index + step]! <= INK) {
      to += 1;
      index += step;
    } else if (to + 2 < length && grey[index + 2 * step]! <= INK) {
      to += 2;
      index += 2 * step;
    } else return to;
  }
}

function rowRuns(grey: Uint8Array, width: number, height: number, minLength: number): Run[] {
  const found: Run[] = [];
  const stride = probeStride(minLength, width);
  for (let line = 0; line < height; line += 1) {
    const row = line * width;
    for (let probe = 0; probe < width; probe += stride) {
      let at: number;
      if (grey[row + probe]! <= INK) at = probe;
      else if (probe + 1 < width && grey[row + probe + 1]! <= INK) at = probe + 1;
      else continue;
      const from = runStart(grey, row, 1, at);
      const to = runEnd(grey, row, 1, width, at);
      if (to - from + 1 >= minLength) found.push({ line, from, to });
      // The pair (to + 1, to + 2) is light (or past the row's end): the probes go on from there.
      probe = to + 1;
    }
  }
  return found;
}

/**
 * The same runs as {@link rowRuns} down every column: probes on every `stride`-th row, each
 * column's runs followed from the first probe that meets them.
 */
function columnRuns(grey: Uint8Array, width: number, height: number, minLength: number): Run[] {
  const found: Run[] = [];
  const stride = probeStride(minLength, height);
  // Each column's last run's end: a probe at or above it is in that run, found already.
  const end = new Int32Array(width).fill(-1);
  for (let probe = 0; probe < height; probe += stride) {
    const row = probe * width;
    const below = probe + 1 < height;
    for (let line = 0; line < width; line += 1) {
      let at: number;
      if (grey[row + line]! <= INK) at = probe;
      else if (below && grey[row + width + line]! <= INK) at = probe + 1;
      else continue;
      if (probe <= end[line]!) continue;
      const from = runStart(grey, line, width, at);
      const to = runEnd(grey, line, width, height, at);
      if (to - from + 1 >= minLength) found.push({ line, from, to });
      end[line] = to;
    }
  }
  // Found probe by probe; by column (a stable sort keeps each column's top-down order).
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
