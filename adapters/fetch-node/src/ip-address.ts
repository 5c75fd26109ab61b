import { isIP } from "node:net";

/*
 * A small IP classifier on parsed bytes. It never classifies a string by pattern: the text is first
 * validated by `node:net` `isIP` (which accepts only canonical dotted-quad IPv4, so `0177.0.0.1`,
 * `0x7f.1` or `2130706433` are not IPs here; they never reach a socket as such either) and then
 * turned into 4 or 16 bytes. IPv6 forms that embed an IPv4 address are unwrapped and the IPv4
 * address is classified (the lessons of the `ip`, `private-ip` and `ip-address` npm packages' CVEs).
 */

/** Parses a textual IP address (IPv6 may carry a `%zone` and brackets) into 4 or 16 bytes, or `null`. */
export function parseIpAddress(text: string): Uint8Array | null {
  let value = text;
  if (value.startsWith("[") && value.endsWith("]")) value = value.slice(1, -1);
  const version = isIP(value);
  if (version === 4) return Uint8Array.from(value.split(".").map(Number));
  if (version !== 6) return null;
  const zone = value.indexOf("%");
  if (zone !== -1) value = value.slice(0, zone);
  let tail: number[] = [];
  const lastColon = value.lastIndexOf(":");
  const last = value.slice(lastColon + 1);
  if (last.includes(".")) {
    tail = last.split(".").map(Number);
    value = `${value.slice(0, lastColon + 1)}0:0`;
  }
  const [head, rest] = value.includes("::") ? value.split("::") : [value, undefined];
  const groups = (part: string | undefined) => (part === undefined || part === "" ? [] : part.split(":"));
  const before = groups(head);
  const after = groups(rest);
  const missing = 8 - before.length - after.length;
  const all = [...before, ...(rest === undefined ? [] : new Array<string>(missing).fill("0")), ...after];
  if (all.length !== 8) return null;
  const bytes = new Uint8Array(16);
  all.forEach((group, index) => {
    const number = Number.parseInt(group, 16);
    bytes[index * 2] = number >> 8;
    bytes[index * 2 + 1] = number & 0xff;
  });
  if (tail.length === 4) bytes.set(tail, 12);
  return bytes;
}

type Range = readonly [prefix: readonly number[], bits: number, reason: string];

/** IPv4 ranges that are not public unicast (IANA special-purpose registry and friends). */
const IPV4_BLOCKED: readonly Range[] = [
  [[0], 8, "unspecified/this-network"],
  [[10], 8, "private"],
  [[100, 64], 10, "shared/CGNAT"],
  [[127], 8, "loopback"],
  [[169, 254], 16, "link-local"],
  [[172, 16], 12, "private"],
  [[192, 0, 0], 24, "IETF protocol assignments"],
  [[192, 0, 2], 24, "documentation"],
  [[192, 31, 196], 24, "AS112"],
  [[192, 52, 193], 24, "AMT"],
  [[192, 88, 99], 24, "6to4 relay anycast"],
  [[192, 168], 16, "private"],
  [[192, 175, 48], 24, "AS112"],
  [[198, 18], 15, "benchmarking"],
  [[198, 51, 100], 24, "documentation"],
  [[203, 0, 113], 24, "documentation"],
  [[224], 4, "multicast"],
  [[240], 4, "reserved/broadcast"],
];

/** IPv6 ranges refused outright (checked after the IPv4 embeddings are unwrapped). */
const IPV6_BLOCKED: readonly Range[] = [
  [[0x01, 0x00, 0, 0, 0, 0, 0, 0], 64, "discard-only"],
  [[0x01, 0x00, 0, 0, 0, 0, 0, 1], 64, "dummy prefix"],
  [[0x20, 0x01, 0x00], 23, "IETF protocol assignments (Teredo, ORCHID, benchmarking)"],
  [[0x20, 0x01, 0x0d, 0xb8], 32, "documentation"],
  [[0x3f, 0xff], 20, "documentation"],
  [[0x5f, 0x00], 16, "segment routing"],
  [[0xfc], 7, "unique local"],
  [[0xfe, 0x80], 10, "link-local"],
  [[0xfe, 0xc0], 10, "site-local"],
  [[0xff], 8, "multicast"],
];

function inRange(bytes: Uint8Array, [prefix, bits]: Range): boolean {
  for (let bit = 0; bit < bits; bit++) {
    const byte = bit >> 3;
    const mask = 0x80 >> (bit & 7);
    if (((bytes[byte] ?? 0) & mask) !== ((prefix[byte] ?? 0) & mask)) return false;
  }
  return true;
}

const allZero = (bytes: Uint8Array, start: number, end: number) =>
  bytes.subarray(start, end).every((byte) => byte === 0);

/**
 * Why an address may not be connected to, or `null` for a public unicast address. Unparseable input
 * is refused (fail closed).
 */
export function blockedAddressReason(address: string | Uint8Array): string | null {
  const bytes = typeof address === "string" ? parseIpAddress(address) : address;
  if (bytes === null) return "not an IP address";
  if (bytes.length === 4) {
    const range = IPV4_BLOCKED.find((candidate) => inRange(bytes, candidate));
    return range === undefined ? null : range[2];
  }
  if (bytes.length !== 16) return "not an IP address";
  if (allZero(bytes, 0, 15) && bytes[15] === 0) return "unspecified";
  if (allZero(bytes, 0, 15) && bytes[15] === 1) return "loopback";
  const embedded = (reason: string, v4: Uint8Array) => {
    const inner = blockedAddressReason(v4);
    return inner === null ? null : `${reason} of ${inner}`;
  };
  // ::ffff:a.b.c.d (IPv4-mapped): the socket really talks IPv4 to a.b.c.d.
  if (allZero(bytes, 0, 10) && bytes[10] === 0xff && bytes[11] === 0xff) {
    return embedded("IPv4-mapped", bytes.subarray(12));
  }
  // ::a.b.c.d (IPv4-compatible, deprecated) and ::ffff:0:a.b.c.d (SIIT IPv4-translated): never
  // legitimate answers, refused whatever they embed.
  if (allZero(bytes, 0, 12)) return "IPv4-compatible (deprecated)";
  if (allZero(bytes, 0, 8) && bytes[8] === 0xff && bytes[9] === 0xff && allZero(bytes, 10, 12)) {
    return "IPv4-translated (SIIT)";
  }
  // 64:ff9b::/96 (well-known NAT64 prefix): the gateway connects to the embedded IPv4 address.
  if (inRange(bytes, [[0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0], 96, ""])) {
    return embedded("NAT64", bytes.subarray(12));
  }
  // 64:ff9b:1::/48 (local-use NAT64): its mapping is site-specific, so it cannot be checked.
  if (inRange(bytes, [[0x00, 0x64, 0xff, 0x9b, 0x00, 0x01], 48, ""])) return "local-use NAT64";
  // 2002::/16 (6to4): the relay connects to the IPv4 address in bytes 2..5.
  if (bytes[0] === 0x20 && bytes[1] === 0x02) return embedded("6to4", bytes.subarray(2, 6));
  const range = IPV6_BLOCKED.find((candidate) => inRange(bytes, candidate));
  if (range !== undefined) return range[2];
  // Everything outside 2000::/3 (global unicast) is unallocated or special.
  if ((bytes[0] as number) >> 5 !== 0b001) return "not global unicast";
  return null;
}

/** True for a public unicast address (the default address policy of the fetcher). */
export function isPublicAddress(address: string): boolean {
  return blockedAddressReason(address) === null;
}
