import { describe, expect, it } from "vitest";
import { blockedAddressReason, isPublicAddress, parseIpAddress } from "../src/index.js";

describe("parseIpAddress", () => {
  it("parses canonical IPv4 and every IPv6 notation into bytes", () => {
    expect([...(parseIpAddress("10.1.2.3") ?? [])]).toEqual([10, 1, 2, 3]);
    expect([...(parseIpAddress("::1") ?? [])]).toEqual([...new Array(15).fill(0), 1]);
    expect([...(parseIpAddress("[::ffff:127.0.0.1]") ?? [])].slice(10)).toEqual([0xff, 0xff, 127, 0, 0, 1]);
    expect(parseIpAddress("000:0:0000::01")).toEqual(parseIpAddress("::1"));
    expect(parseIpAddress("::fFFf:127.0.0.1")).toEqual(parseIpAddress("::ffff:7f00:1"));
    expect(parseIpAddress("fe80::1%eth0")).toEqual(parseIpAddress("fe80::1"));
    expect(parseIpAddress("1:2:3:4:5:6:7:8")?.[15]).toBe(8);
  });

  it("refuses non-canonical IPv4 forms and garbage (they are never IPs to a socket either)", () => {
    for (const text of [
      "0177.0.0.1",
      "0x7f.1",
      "127.1",
      "2130706433",
      "012.0.0.1",
      "10.0.0.1:8080",
      "",
      "a.b.c.d",
      "1::2::3",
    ]) {
      expect(parseIpAddress(text), text).toBeNull();
      expect(blockedAddressReason(text), text).toBe("not an IP address");
    }
  });
});

// The SSRF address table of unjs/ipx's tests plus the IANA special-purpose registries.
const BLOCKED = [
  "0.0.0.0",
  "0.255.255.255",
  "10.0.0.1",
  "10.255.255.255",
  "100.64.0.1",
  "100.127.255.255",
  "127.0.0.1",
  "127.255.255.254",
  "169.254.169.254",
  "169.254.0.1",
  "172.16.0.1",
  "172.31.255.255",
  "192.0.0.1",
  "192.0.0.8",
  "192.0.2.1",
  "192.31.196.1",
  "192.52.193.1",
  "192.88.99.1",
  "192.168.0.1",
  "192.168.255.255",
  "192.175.48.1",
  "198.18.0.1",
  "198.19.255.255",
  "198.51.100.1",
  "203.0.113.1",
  "224.0.0.1",
  "239.255.255.250",
  "240.0.0.1",
  "255.255.255.255",
  "::",
  "::1",
  "::ffff:127.0.0.1",
  "::ffff:10.0.0.1",
  "::ffff:169.254.169.254",
  "::ffff:a9fe:a9fe",
  "::127.0.0.1",
  "::8.8.8.8",
  "::ffff:0:127.0.0.1",
  "::ffff:0:8.8.8.8",
  "64:ff9b::127.0.0.1",
  "64:ff9b::a9fe:a9fe",
  "64:ff9b::10.0.0.1",
  "64:ff9b:1::1",
  "64:ff9b:1::8.8.8.8",
  "2002:7f00:1::",
  "2002:a9fe:a9fe::",
  "2002:c0a8:101::1",
  "fc00::1",
  "fd12:3456::1",
  "fe80::1",
  "fe80::1%eth0",
  "febf::1",
  "fec0::1",
  "ff02::1",
  "ff05::1:3",
  "2001:db8::1",
  "2001::1",
  "2001:0:4136:e378:8000:63bf:3fff:fdd2",
  "2001:10::1",
  "2001:20::1",
  "2001:2::1",
  "100::1",
  "100::1:0:0:1",
  "3fff::1",
  "5f00::1",
  "4000::1",
  "::2",
  "1::1",
  "e000::1",
];

const PUBLIC = [
  "1.1.1.1",
  "8.8.8.8",
  "93.184.216.34",
  "100.63.255.255",
  "100.128.0.1",
  "169.253.0.1",
  "169.255.0.1",
  "172.15.0.1",
  "172.32.0.1",
  "192.169.0.1",
  "192.0.1.1",
  "198.17.255.255",
  "198.20.0.1",
  "223.255.255.255",
  "9.255.255.255",
  "11.0.0.1",
  "2606:4700:4700::1111",
  "2001:4860:4860::8888",
  "2a00:1450:4001:80b::200e",
  "::ffff:8.8.8.8",
  "64:ff9b::8.8.8.8",
  "2002:808:808::1",
  "2001:200::1",
];

describe("blockedAddressReason", () => {
  it.each(BLOCKED)("blocks %s", (address) => {
    expect(blockedAddressReason(address)).not.toBeNull();
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each(PUBLIC)("allows %s", (address) => {
    expect(blockedAddressReason(address)).toBeNull();
    expect(isPublicAddress(address)).toBe(true);
  });

  it("names the embedded problem of IPv6 wrappers", () => {
    expect(blockedAddressReason("::ffff:169.254.169.254")).toBe("IPv4-mapped of link-local");
    expect(blockedAddressReason("64:ff9b::7f00:1")).toBe("NAT64 of loopback");
    expect(blockedAddressReason("2002:0a00:0001::")).toBe("6to4 of private");
    expect(blockedAddressReason("100.64.0.1")).toBe("shared/CGNAT");
  });
});
