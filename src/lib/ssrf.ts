/**
 * SSRF guard for outbound URLs chosen by API users (a webhook `url`, an OAuth `token_url`, a JWK Set
 * or issuer URL: lib/key-sets.ts). It runs when the URL is configured and again at every redirect
 * hop, and decides from the URL alone: the scheme, credentials, length, well-known internal host names and literal IP
 * addresses in the IANA special-purpose registries (RFC 6890), classified by ipaddr.js (its
 * `range()` keeps the registries; the few blocks it does not know are listed here), including
 * IPv6 forms that embed an IPv4 address (mapped, translated, NAT64, 6to4, Teredo), decoded here. Host names are not resolved here (a
 * Worker has no DNS API); the second layer is the `global_fetch_strictly_public` compatibility
 * flag (wrangler.toml), which makes every outbound fetch of a deployed Worker reach only the
 * public internet, so a public name resolving to a private address, or the zone's own origin,
 * is refused by the platform. Addresses that can never be a legitimate target (link-local,
 * cloud metadata, multicast, unspecified) are refused even when the deployment allows insecure
 * targets for local development; loopback, private and documentation ranges are refused only
 * when it does not. Refusal reasons are short, fixed strings that never echo the URL, which may
 * carry secrets in its query.
 */

import ipaddr from "ipaddr.js";

export type TargetCheck = { ok: true; url: URL } | { ok: false; reason: string };

export interface TargetPolicy {
  /** Local development only: allow `http:`, localhost, loopback and private ranges. */
  allowInsecure: boolean;
}

/** Longest URL accepted, before and after normalisation (a common de facto limit). */
const MAX_URL_LENGTH = 2048;

/** A refusal, and whether it stands even when insecure targets are allowed. */
type Verdict = { reason: string; always: boolean };

const REASON = {
  invalid: "url is not a valid absolute URL",
  tooLong: `url must be at most ${MAX_URL_LENGTH} characters`,
  https: "url must use https",
  httpOrHttps: "url must use https or http",
  credentials: "url must not contain credentials",
  noHost: "url must have a host",
  badIp: "url host is not a valid IP address",
  localhost: "url host localhost is not allowed",
  metadataName: "url points to a cloud metadata host",
  unspecified: "url points to an unspecified address",
  linkLocal: "url points to a link-local or cloud metadata address",
  multicast: "url points to a multicast address",
  reserved: "url points to a reserved address",
  broadcast: "url points to a broadcast address",
  loopback: "url points to a loopback address",
  private: "url points to a private address",
  sharedCgnat: "url points to a shared (carrier-grade NAT) address",
  specialPurpose: "url points to a special-purpose address",
  documentation: "url points to a documentation or benchmarking address",
  nat64: "url points to a NAT64 address",
  ipv4Mapped: "url points to an IPv4-mapped IPv6 address",
  ipv4Translated: "url points to an IPv4-translated IPv6 address",
  sixToFour: "url points to a 6to4 address",
  teredo: "url points to a Teredo address",
} as const;

/**
 * Cloud instance metadata services reachable by name from inside a VM (GCP, AWS). They serve
 * credentials, so they are refused in every mode. Compared lower-case, trailing dots removed.
 */
const METADATA_NAMES = new Set(["metadata.google.internal", "metadata", "instance-data", "instance-data.ec2.internal"]);

export function checkTarget(raw: string | URL, policy: TargetPolicy): TargetCheck {
  // Checked before parsing so a huge string costs nothing, and after, because normalisation
  // (percent-encoding, IDNA) can lengthen it.
  if (typeof raw === "string" && raw.length > MAX_URL_LENGTH) return refuse(REASON.tooLong);

  let url: URL;
  try {
    // A fresh copy even for a URL argument: the caller's object is never mutated.
    url = new URL(typeof raw === "string" ? raw : raw.href);
  } catch {
    return refuse(REASON.invalid);
  }
  if (url.href.length > MAX_URL_LENGTH) return refuse(REASON.tooLong);

  if (url.protocol !== "https:" && !(url.protocol === "http:" && policy.allowInsecure)) {
    return refuse(policy.allowInsecure ? REASON.httpOrHttps : REASON.https);
  }
  // Userinfo would be sent as Basic credentials by some clients and makes URLs that read as one
  // host but go to another (`https://trusted.example@evil.example/`).
  if (url.username !== "" || url.password !== "") return refuse(REASON.credentials);

  const verdict = hostVerdict(url.hostname);
  if (verdict !== null && (verdict.always || !policy.allowInsecure)) return refuse(verdict.reason);

  url.hash = "";
  return { ok: true, url };
}

function refuse(reason: string): TargetCheck {
  return { ok: false, reason };
}

/** Classifies the parsed (already lower-cased, IDNA-mapped, IPv4-normalised) host. */
function hostVerdict(hostname: string): Verdict | null {
  if (hostname.startsWith("[")) {
    if (!hostname.endsWith("]")) return { reason: REASON.badIp, always: true };
    const address = parseIPv6(hostname.slice(1, -1));
    return address === null ? { reason: REASON.badIp, always: true } : ipv6Verdict(address);
  }

  // The WHATWG parser turns every numeric host form (`2130706433`, `0x7f.1`, `0177.0.0.1`,
  // `127.1`, a trailing dot) into canonical dotted-decimal, or fails. Anything else whose last
  // label looks numeric means a parser that did not normalise: refuse rather than guess how the
  // fetch layer would read it.
  const ipv4 = parseDottedQuad(hostname);
  if (ipv4 !== null) return ipv4Verdict(ipv4);
  const name = hostname.toLowerCase().replace(/\.+$/, "");
  if (name === "") return { reason: REASON.noHost, always: true };
  const lastLabel = name.slice(name.lastIndexOf(".") + 1);
  if (/^(?:0x[0-9a-f]*|[0-9]+)$/.test(lastLabel)) return { reason: REASON.badIp, always: true };

  if (METADATA_NAMES.has(name)) return { reason: REASON.metadataName, always: true };
  // RFC 6761 section 6.3: `localhost` and every name under it resolve to loopback.
  if (name === "localhost" || name.endsWith(".localhost")) return { reason: REASON.localhost, always: false };
  return null;
}

// ---------------------------------------------------------------------------------------------
// Classification: ipaddr.js names the special-purpose block an address is in; these tables only
// say what keyway does with each name.

const ALWAYS = (reason: string): Verdict => ({ reason, always: true });
const UNLESS_INSECURE = (reason: string): Verdict => ({ reason, always: false });

/**
 * What each of ipaddr.js's IPv4 range names means here. `null`: globally reachable (AS112 and AMT
 * are anycast services on the public internet, IANA's "Globally Reachable: True"). A name not
 * listed (a later ipaddr.js release) is refused as special-purpose: the guard fails closed.
 */
const IPV4_NAMES: Record<string, Verdict | null> = {
  unicast: null,
  as112: null,
  amt: null,
  // "This network" (RFC 6890 2.2.2, RFC 1122): 0.0.0.0 reaches the local host on Linux.
  unspecified: ALWAYS(REASON.unspecified),
  broadcast: ALWAYS(REASON.broadcast),
  multicast: ALWAYS(REASON.multicast),
  // 169.254.169.254 is the AWS/GCP/Azure/OpenStack metadata service (RFC 3927).
  linkLocal: ALWAYS(REASON.linkLocal),
  loopback: UNLESS_INSECURE(REASON.loopback),
  private: UNLESS_INSECURE(REASON.private),
  // RFC 6598: internal to a provider's network.
  carrierGradeNat: UNLESS_INSECURE(REASON.sharedCgnat),
  // IETF protocol assignments 192.0.0.0/24, 6to4 relay anycast 192.88.99.0/24 (RFC 7526), and
  // the blocks below, refined for their reason.
  reserved: UNLESS_INSECURE(REASON.specialPurpose),
};

/** ipaddr.js's IPv6 range names; embedded-IPv4 forms are decoded before these are consulted. */
const IPV6_NAMES: Record<string, Verdict | null> = {
  unicast: null,
  // Anycast services IANA lists as globally reachable (RFC 7450 AMT, RFC 7535 AS112).
  amt: null,
  as112v6: null,
  unspecified: ALWAYS(REASON.unspecified),
  linkLocal: ALWAYS(REASON.linkLocal),
  multicast: ALWAYS(REASON.multicast),
  loopback: UNLESS_INSECURE(REASON.loopback),
  // Unique local fc00::/7 (RFC 4193), and site-local fec0::/10 (RFC 3879, deprecated but still
  // routed inside some networks): the IPv6 counterparts of RFC 1918.
  uniqueLocal: UNLESS_INSECURE(REASON.private),
  deprecatedSiteLocal: UNLESS_INSECURE(REASON.private),
  // Discard-only 100::/64 (RFC 6666), benchmarking 2001:2::/48 (RFC 5180), ORCHID 2001:10::/28
  // and ORCHIDv2 2001:20::/28 (RFC 4843, RFC 7343: identifiers, not locators), drone remote ID
  // tags 2001:30::/28 (RFC 9374), SRv6 SIDs 5f00::/16 (RFC 9602), IETF protocol assignments
  // 2001::/23 (RFC 2928), documentation 2001:db8::/32 and 3fff::/20 (RFC 3849, RFC 9637).
  discard: UNLESS_INSECURE(REASON.specialPurpose),
  benchmarking: UNLESS_INSECURE(REASON.documentation),
  deprecatedOrchid: UNLESS_INSECURE(REASON.specialPurpose),
  orchid2: UNLESS_INSECURE(REASON.specialPurpose),
  droneRemoteIdProtocolEntityTags: UNLESS_INSECURE(REASON.specialPurpose),
  segmentRouting: UNLESS_INSECURE(REASON.specialPurpose),
  reserved: UNLESS_INSECURE(REASON.specialPurpose),
};

/**
 * Blocks checked before ipaddr.js's classification, first match wins: addresses refused in every
 * mode that sit inside a weaker block (cloud metadata services), the reasons ipaddr.js's
 * "reserved" does not tell apart, and the registry entries it does not know (2.5.0).
 */
const REFINEMENTS: readonly (readonly [ReturnType<typeof ipaddr.parseCIDR>, Verdict | null])[] = (
  [
    // Alibaba Cloud's metadata service, inside the CGNAT range.
    ["100.100.100.200/32", ALWAYS(REASON.linkLocal)],
    // AWS instance metadata over IPv6 (Nitro), inside fc00::/7.
    ["fd00:ec2::254/128", ALWAYS(REASON.linkLocal)],
    // Limited broadcast (RFC 919), inside the reserved block below.
    ["255.255.255.255/32", ALWAYS(REASON.broadcast)],
    // Reserved for future use (RFC 1112 4): never a host, in any mode.
    ["240.0.0.0/4", ALWAYS(REASON.reserved)],
    // Globally reachable anycast services inside blocks ipaddr.js calls reserved (IANA's
    // registries): PCP and TURN anycast (RFC 7723, RFC 8155), port control and NAT-PMP anycast,
    // and DNS-SD SRP anycast (RFC 9665) in 2001::/23.
    ["192.0.0.9/32", null],
    ["192.0.0.10/32", null],
    ["2001:1::1/128", null],
    ["2001:1::2/128", null],
    ["2001:1::3/128", null],
    // Benchmarking (RFC 2544) and the documentation TEST-NETs (RFC 5737, RFC 3849, RFC 9637).
    ["198.18.0.0/15", UNLESS_INSECURE(REASON.documentation)],
    ["192.0.2.0/24", UNLESS_INSECURE(REASON.documentation)],
    ["198.51.100.0/24", UNLESS_INSECURE(REASON.documentation)],
    ["203.0.113.0/24", UNLESS_INSECURE(REASON.documentation)],
    ["2001:db8::/32", UNLESS_INSECURE(REASON.documentation)],
    ["3fff::/20", UNLESS_INSECURE(REASON.documentation)],
    // Not in ipaddr.js 2.5.0: the dummy IPv6 prefix 100:0:0:1::/64 (RFC 9780, not globally reachable).
    ["100:0:0:1::/64", UNLESS_INSECURE(REASON.specialPurpose)],
  ] as const
).map(([cidr, verdict]) => [ipaddr.parseCIDR(cidr), verdict] as const);

function classify(addr: ipaddr.IPv4 | ipaddr.IPv6): Verdict | null {
  for (const [[base, prefix], verdict] of REFINEMENTS) {
    if (addr.kind() === base.kind() && addr.match(base, prefix)) return verdict;
  }
  const names = addr.kind() === "ipv4" ? IPV4_NAMES : IPV6_NAMES;
  const verdict = names[addr.range()];
  return verdict === undefined ? UNLESS_INSECURE(REASON.specialPurpose) : verdict;
}

// ---------------------------------------------------------------------------------------------
// IPv4

function ipv4Verdict(addr: number): Verdict | null {
  return classify(ipaddr.fromByteArray([addr >>> 24, (addr >>> 16) & 0xff, (addr >>> 8) & 0xff, addr & 0xff]));
}

/**
 * Strict dotted-decimal `a.b.c.d`, each 0..255 without leading zeros (which some stacks read as
 * octal), as an unsigned 32-bit integer; null for anything else.
 */
function parseDottedQuad(text: string): number | null {
  const m = /^(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})\.(0|[1-9][0-9]{0,2})$/.exec(text);
  if (m === null) return null;
  let addr = 0;
  for (let i = 1; i <= 4; i++) {
    const octet = Number(m[i]);
    if (octet > 255) return null;
    addr = addr * 256 + octet;
  }
  return addr;
}

// ---------------------------------------------------------------------------------------------
// IPv6

/** The embedded IPv4 address in the low 32 bits of an IPv6 address. */
function low32(groups: readonly number[]): number {
  return ((groups[6] ?? 0) * 0x10000 + (groups[7] ?? 0)) >>> 0;
}

/**
 * An address that a relay or translator forwards to the IPv4 addresses it embeds (NAT64, 6to4,
 * Teredo): refused in every mode when an embedded address is, and otherwise refused as a form
 * outside local development, since no real webhook target is written this way.
 */
function relayed(reason: string, ...embedded: number[]): Verdict {
  for (const addr of embedded) {
    const inner = ipv4Verdict(addr);
    if (inner?.always) return inner;
  }
  return UNLESS_INSECURE(reason);
}

/**
 * The forms that carry an IPv4 address, which ipaddr.js names but does not decode, judged by
 * what they carry; every other address by its special-purpose block.
 */
function ipv6Verdict(address: ipaddr.IPv6): Verdict | null {
  const g = address.parts;
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = g;
  const upper64Zero = g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0;
  const upper96Zero = upper64Zero && g4 === 0 && g5 === 0;

  // Unspecified `::` and loopback `::1` (RFC 4291 2.5.2, 2.5.3) sit inside ::/96: by their block.
  if (upper96Zero && g6 === 0 && (g7 === 0 || g7 === 1)) return classify(address);
  // IPv4-mapped ::ffff:0:0/96 (RFC 4291 2.5.5.2), in any spelling (`::ffff:7f00:1` is
  // `::ffff:127.0.0.1`): dual-stack sockets deliver these to the embedded IPv4 address, so its
  // rules apply; and no real target is written this way, so the form itself is refused outside
  // local development.
  if (upper64Zero && g4 === 0 && g5 === 0xffff) return ipv4Verdict(low32(g)) ?? UNLESS_INSECURE(REASON.ipv4Mapped);
  // IPv4-translated ::ffff:0:0:0/96 (RFC 2765 SIIT): a stateless translator delivers these too.
  if (upper64Zero && g4 === 0xffff && g5 === 0) return ipv4Verdict(low32(g)) ?? UNLESS_INSECURE(REASON.ipv4Translated);
  // IPv4-compatible ::a.b.c.d (RFC 4291 2.5.5.1, deprecated): some stacks still translate it.
  if (upper96Zero) return ipv4Verdict(low32(g));
  // NAT64 64:ff9b::/96 (RFC 6052) and local-use 64:ff9b:1::/48 (RFC 8215): translators forward
  // to the IPv4 address in the low 32 bits (of a /96 within it).
  if (g0 === 0x64 && g1 === 0xff9b && ((g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) || g2 === 1)) {
    return relayed(REASON.nat64, low32(g));
  }
  // 6to4 2002::/16 (RFC 3056, deprecated by RFC 7526): relays tunnel to the IPv4 address in bits 16-47.
  if (g0 === 0x2002) return relayed(REASON.sixToFour, ((g1 << 16) | g2) >>> 0);
  // Teredo 2001::/32 (RFC 4380): the server's IPv4 address in bits 32-63, the client's in the
  // low 32 bits with every bit inverted.
  if (g0 === 0x2001 && g1 === 0) return relayed(REASON.teredo, ((g2 << 16) | g3) >>> 0, ~low32(g) >>> 0);
  return classify(address);
}

/**
 * IPv6 text as the URL parser leaves it (RFC 4291 2.2), parsed by ipaddr.js; null when malformed.
 * Zone identifiers are refused: a URL cannot carry one.
 */
function parseIPv6(text: string): ipaddr.IPv6 | null {
  if (text === "" || text.includes("%") || !ipaddr.IPv6.isValid(text)) return null;
  return ipaddr.IPv6.parse(text);
}
