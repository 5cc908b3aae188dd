/**
 * The SSRF guard against the IANA special-purpose address registries, block by block
 * (iana-ipv4-special-registry and iana-ipv6-special-registry, as of 2026-11): every block that is
 * not globally reachable is refused in production's mode, at its first, a middle and its last
 * address, and the globally reachable ones are let through unless keyway refuses them by policy
 * (said per block). The list is data kept by hand from the registries, so that a block the
 * guard's source (ipaddr.js) does not know makes this test fail instead of passing silently.
 */
import ipaddr from "ipaddr.js";
import { describe, expect, it } from "vitest";
import { checkTarget } from "../../src/lib/ssrf";

type Block = { cidr: string; name: string; rfc: string; global: boolean; policy?: string };

const IPV4: Block[] = [
  { cidr: "0.0.0.0/8", name: "This network", rfc: "RFC 791", global: false },
  { cidr: "10.0.0.0/8", name: "Private-Use", rfc: "RFC 1918", global: false },
  { cidr: "100.64.0.0/10", name: "Shared Address Space", rfc: "RFC 6598", global: false },
  { cidr: "127.0.0.0/8", name: "Loopback", rfc: "RFC 1122", global: false },
  { cidr: "169.254.0.0/16", name: "Link Local", rfc: "RFC 3927", global: false },
  { cidr: "172.16.0.0/12", name: "Private-Use", rfc: "RFC 1918", global: false },
  { cidr: "192.0.0.0/24", name: "IETF Protocol Assignments", rfc: "RFC 6890", global: false },
  { cidr: "192.0.0.0/29", name: "DS-Lite", rfc: "RFC 7335", global: false },
  { cidr: "192.0.0.8/32", name: "IPv4 dummy address", rfc: "RFC 7600", global: false },
  { cidr: "192.0.0.9/32", name: "Port Control Protocol Anycast", rfc: "RFC 7723", global: true },
  { cidr: "192.0.0.10/32", name: "TURN Anycast", rfc: "RFC 8155", global: true },
  { cidr: "192.0.0.170/32", name: "NAT64/DNS64 Discovery", rfc: "RFC 8880", global: false },
  { cidr: "192.0.0.171/32", name: "NAT64/DNS64 Discovery", rfc: "RFC 8880", global: false },
  { cidr: "192.0.2.0/24", name: "Documentation (TEST-NET-1)", rfc: "RFC 5737", global: false },
  { cidr: "192.31.196.0/24", name: "AS112-v4", rfc: "RFC 7535", global: true },
  { cidr: "192.52.193.0/24", name: "AMT", rfc: "RFC 7450", global: true },
  { cidr: "192.88.99.0/24", name: "Deprecated (6to4 Relay Anycast)", rfc: "RFC 7526", global: false },
  { cidr: "192.168.0.0/16", name: "Private-Use", rfc: "RFC 1918", global: false },
  { cidr: "192.175.48.0/24", name: "Direct Delegation AS112 Service", rfc: "RFC 7534", global: true },
  { cidr: "198.18.0.0/15", name: "Benchmarking", rfc: "RFC 2544", global: false },
  { cidr: "198.51.100.0/24", name: "Documentation (TEST-NET-2)", rfc: "RFC 5737", global: false },
  { cidr: "203.0.113.0/24", name: "Documentation (TEST-NET-3)", rfc: "RFC 5737", global: false },
  { cidr: "240.0.0.0/4", name: "Reserved", rfc: "RFC 1112", global: false },
  { cidr: "255.255.255.255/32", name: "Limited Broadcast", rfc: "RFC 919", global: false },
];

const IPV6: Block[] = [
  { cidr: "::1/128", name: "Loopback Address", rfc: "RFC 4291", global: false },
  { cidr: "::/128", name: "Unspecified Address", rfc: "RFC 4291", global: false },
  { cidr: "::ffff:0:0/96", name: "IPv4-mapped Address", rfc: "RFC 4291", global: false },
  {
    cidr: "64:ff9b::/96",
    name: "IPv4-IPv6 Translat.",
    rfc: "RFC 6052",
    global: true,
    policy: "refused as a form: a translator forwards it to the IPv4 address it embeds",
  },
  { cidr: "64:ff9b:1::/48", name: "IPv4-IPv6 Translat.", rfc: "RFC 8215", global: false },
  { cidr: "100::/64", name: "Discard-Only Address Block", rfc: "RFC 6666", global: false },
  { cidr: "100:0:0:1::/64", name: "Dummy IPv6 Prefix", rfc: "RFC 9780", global: false },
  { cidr: "2001::/23", name: "IETF Protocol Assignments", rfc: "RFC 2928", global: false },
  { cidr: "2001::/32", name: "TEREDO", rfc: "RFC 4380", global: false },
  { cidr: "2001:1::1/128", name: "Port Control Protocol Anycast", rfc: "RFC 7723", global: true },
  { cidr: "2001:1::2/128", name: "TURN Anycast", rfc: "RFC 8155", global: true },
  { cidr: "2001:1::3/128", name: "DNS-SD Service Registration Protocol Anycast", rfc: "RFC 9665", global: true },
  { cidr: "2001:2::/48", name: "Benchmarking", rfc: "RFC 5180", global: false },
  { cidr: "2001:3::/32", name: "AMT", rfc: "RFC 7450", global: true },
  { cidr: "2001:4:112::/48", name: "AS112-v6", rfc: "RFC 7535", global: true },
  { cidr: "2001:10::/28", name: "Deprecated (previously ORCHID)", rfc: "RFC 4843", global: false },
  { cidr: "2001:20::/28", name: "ORCHIDv2", rfc: "RFC 7343", global: true, policy: "refused: identifiers, not locators" },
  {
    cidr: "2001:30::/28",
    name: "Drone Remote ID Protocol Entity Tags",
    rfc: "RFC 9374",
    global: true,
    policy: "refused: identifiers, not locators",
  },
  { cidr: "2001:db8::/32", name: "Documentation", rfc: "RFC 3849", global: false },
  { cidr: "2002::/16", name: "6to4", rfc: "RFC 3056", global: false },
  { cidr: "2620:4f:8000::/48", name: "Direct Delegation AS112 Service", rfc: "RFC 7534", global: true },
  { cidr: "3fff::/20", name: "Documentation", rfc: "RFC 9637", global: false },
  { cidr: "5f00::/16", name: "Segment Routing (SRv6) SIDs", rfc: "RFC 9602", global: false },
  { cidr: "fc00::/7", name: "Unique-Local", rfc: "RFC 4193", global: false },
  { cidr: "fe80::/10", name: "Link-Local Unicast", rfc: "RFC 4291", global: false },
  // Not in the registry any more, but reserved by the IETF and still routed inside some networks.
  { cidr: "fec0::/10", name: "Site-Local (deprecated)", rfc: "RFC 3879", global: false },
];

/** First, middle and last address of a block, as URL hosts. */
function samples(cidr: string): string[] {
  const [base, prefix] = ipaddr.parseCIDR(cidr);
  const bytes = base.toByteArray();
  const bits = bytes.length * 8;
  const at = (fill: "first" | "middle" | "last") =>
    bytes.map((byte, i) => {
      let b = byte;
      for (let bit = 0; bit < 8; bit++) {
        const index = i * 8 + bit;
        if (index < prefix) continue;
        const mask = 0x80 >> bit;
        const set = fill === "last" || (fill === "middle" && index === prefix);
        b = set ? b | mask : b & ~mask;
      }
      return b;
    });
  const fills = prefix === bits ? (["first"] as const) : (["first", "middle", "last"] as const);
  return fills.map((fill) => {
    const addr = ipaddr.fromByteArray(at(fill));
    return addr.kind() === "ipv6" ? `[${addr.toString()}]` : addr.toString();
  });
}

const strict = { allowInsecure: false };

describe.each([
  ["IPv4", IPV4],
  ["IPv6", IPV6],
])("the %s special-purpose registry", (_family, blocks) => {
  const refused = blocks.filter((b) => !b.global || b.policy !== undefined);
  const allowed = blocks.filter((b) => b.global && b.policy === undefined);

  it.each(refused.map((b) => [b.cidr, b.name, b.rfc, b] as const))("refuses %s (%s, %s) in production", (_cidr, _name, _rfc, block) => {
    for (const host of samples(block.cidr)) {
      const check = checkTarget(`https://${host}/hook`, strict);
      expect(check.ok, `${host} in ${block.cidr}`).toBe(false);
    }
  });

  if (allowed.length > 0) {
    it.each(allowed.map((b) => [b.cidr, b.name, b.rfc, b] as const))(
      "lets %s (%s, %s, globally reachable) through",
      (_cidr, _name, _rfc, block) => {
        for (const host of samples(block.cidr)) {
          expect(checkTarget(`https://${host}/hook`, strict).ok, `${host} in ${block.cidr}`).toBe(true);
        }
      },
    );
  }
});

describe("the five blocks the hand-kept tables let through (issue 22)", () => {
  it.each(["[fec0::1]", "[100::1]", "192.88.99.1", "[2001:2::1]", "[2001:10::1]"])("refuses %s", (host) => {
    expect(checkTarget(`https://${host}/`, strict).ok).toBe(false);
  });
});
