/*
 * Host patterns, matched label by label on the parsed, normalised host name: never on strings, so
 * `storage.googleapis.com.evil.com`, `evilstorage.googleapis.com` or `x.com/.s3.amazonaws.com` can
 * never match (known bypasses of host allow-lists: trailing dots, mixed case, IDN look-alikes).
 */

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const GLOB_LABEL = /^[a-z0-9-]*\*[a-z0-9-]*$/;

/**
 * Normalises a host name as the allow-list compares it: lower case and one trailing dot removed.
 * The WHATWG URL parser has already lower-cased it, turned IDNs into punycode and full-width dots
 * into dots. Returns `null` for a host that is not a plain DNS name (IP literal, empty label,
 * label longer than 63, characters outside letters, digits and `-`).
 */
export function normalizeHostName(host: string): string | null {
  let name = host.toLowerCase();
  if (name.endsWith(".")) name = name.slice(0, -1);
  if (name.length === 0 || name.length > 253) return null;
  const labels = name.split(".");
  if (labels.length < 2 || !labels.every((label) => LABEL.test(label))) return null;
  // The last label of a DNS name is never all digits; such hosts are IPv4 forms.
  if (/^[0-9]+$/.test(labels[labels.length - 1] ?? "")) return null;
  return name;
}

/**
 * Checks a host pattern: DNS labels where `*` is exactly one whole label (`*.r2.dev`) or, inside
 * one label, stands for one or more letters, digits or `-` (`doc-*-docs.googleusercontent.com`).
 * The two rightmost labels must be literal, so `*.com` or `*.*` can never be configured. Returns a
 * problem sentence or `null`.
 */
export function hostPatternProblem(pattern: string): string | null {
  if (pattern !== pattern.toLowerCase()) return "must be lower case";
  const labels = pattern.split(".");
  if (labels.length < 2) return "must have at least two labels";
  for (const label of labels) {
    if (label === "*") continue;
    if (label.includes("*")) {
      if (!GLOB_LABEL.test(label)) return `has an invalid label ${JSON.stringify(label)}`;
      continue;
    }
    if (!LABEL.test(label)) return `has an invalid label ${JSON.stringify(label)}`;
  }
  if (labels.slice(-2).some((label) => label.includes("*"))) {
    return "must end with two literal labels (a wildcard may not stand for the registrable domain)";
  }
  return null;
}

function labelMatches(pattern: string, label: string): boolean {
  if (pattern === "*") return true;
  const star = pattern.indexOf("*");
  if (star === -1) return pattern === label;
  const prefix = pattern.slice(0, star);
  const suffix = pattern.slice(star + 1);
  return label.length > prefix.length + suffix.length && label.startsWith(prefix) && label.endsWith(suffix);
}

/**
 * True when the normalised `host` matches `pattern`: same number of labels, each label equal or
 * matched by its wildcard. `*` never stands for several labels and never for an empty one.
 */
export function hostMatches(pattern: string, host: string): boolean {
  const patternLabels = pattern.split(".");
  const hostLabels = host.split(".");
  if (patternLabels.length !== hostLabels.length) return false;
  return patternLabels.every((label, index) => labelMatches(label, hostLabels[index] as string));
}
