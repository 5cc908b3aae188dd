/**
 * SSRF guard for outbound URLs chosen by API users (a webhook `url`, an OAuth `token_url`). It
 * runs when the URL is configured and again at every redirect hop, and decides from the URL
 * alone: the scheme, credentials, length, well-known internal host names and literal IP
 * addresses in the special-purpose registries (RFC 6890), including IPv6 forms that embed an
 * IPv4 address (mapped, translated, NAT64, 6to4, Teredo). Host names are not resolved here (a
 * Worker has no DNS API); the second layer is the `global_fetch_strictly_public` compatibility
 * flag (wrangler.toml), which makes every outbound fetch of a deployed Worker reach only the
 * public internet, so a public name resolving to a private address, or the zone's own origin,
 * is refused by the platform. Addresses that can never be a legitimate target (link-local,
 * cloud metadata, multicast, unspecified) are refused even when the deployment allows insecure
 * targets for local development; loopback, private and documentation ranges are refused only
 * when it does not. Refusal reasons are short, fixed strings that never echo the URL, which may
 * carry secrets in its query.
 */

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
    const groups = parseIPv6(hostname.slice(1, -1));
    return groups === null ? { reason: REASON.badIp, always: true } : ipv6Verdict(groups);
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
// IPv4

/** `[first address, prefix length, verdict]`, addresses as unsigned 32-bit integers. */
type Range4 = readonly [number, number, Verdict];

const ALWAYS = (reason: string): Verdict => ({ reason, always: true });
const UNLESS_INSECURE = (reason: string): Verdict => ({ reason, always: false });

/**
 * Checked in order, first match wins, so the always-refused entries come first: 100.100.100.200
 * lies inside 100.64.0.0/10 and must not fall through to the weaker CGNAT rule.
 */
const IPV4_RANGES: readonly Range4[] = [
  // "This network" (RFC 6890 section 2.2.2, RFC 1122): 0.0.0.0 reaches the local host on Linux.
  [ip4(0, 0, 0, 0), 8, ALWAYS(REASON.unspecified)],
  // Link-local (RFC 3927); 169.254.169.254 is the AWS/GCP/Azure/OpenStack metadata service.
  [ip4(169, 254, 0, 0), 16, ALWAYS(REASON.linkLocal)],
  // Alibaba Cloud's metadata service, carved out of the CGNAT range.
  [ip4(100, 100, 100, 200), 32, ALWAYS(REASON.linkLocal)],
  // Multicast (RFC 5771).
  [ip4(224, 0, 0, 0), 4, ALWAYS(REASON.multicast)],
  // Limited broadcast (RFC 919, RFC 6890), before the reserved block that contains it.
  [ip4(255, 255, 255, 255), 32, ALWAYS(REASON.broadcast)],
  // Reserved for future use (RFC 1112 section 4, RFC 6890).
  [ip4(240, 0, 0, 0), 4, ALWAYS(REASON.reserved)],

  // Loopback (RFC 1122 section 3.2.1.3).
  [ip4(127, 0, 0, 0), 8, UNLESS_INSECURE(REASON.loopback)],
  // Private-use (RFC 1918).
  [ip4(10, 0, 0, 0), 8, UNLESS_INSECURE(REASON.private)],
  [ip4(172, 16, 0, 0), 12, UNLESS_INSECURE(REASON.private)],
  [ip4(192, 168, 0, 0), 16, UNLESS_INSECURE(REASON.private)],
  // Shared address space for carrier-grade NAT (RFC 6598): internal to a provider's network.
  [ip4(100, 64, 0, 0), 10, UNLESS_INSECURE(REASON.sharedCgnat)],
  // IETF protocol assignments (RFC 6890 section 2.2.2), not globally routable.
  [ip4(192, 0, 0, 0), 24, UNLESS_INSECURE(REASON.specialPurpose)],
  // Benchmarking (RFC 2544) and the three documentation TEST-NETs (RFC 5737).
  [ip4(198, 18, 0, 0), 15, UNLESS_INSECURE(REASON.documentation)],
  [ip4(192, 0, 2, 0), 24, UNLESS_INSECURE(REASON.documentation)],
  [ip4(198, 51, 100, 0), 24, UNLESS_INSECURE(REASON.documentation)],
  [ip4(203, 0, 113, 0), 24, UNLESS_INSECURE(REASON.documentation)],
];

function ip4(a: number, b: number, c: number, d: number): number {
  return ((a << 24) | (b << 16) | (c << 8) | d) >>> 0;
}

function inRange4(addr: number, base: number, prefix: number): boolean {
  // `>>> 0` keeps the arithmetic unsigned; a /0 mask would need a shift by 32, which JS wraps.
  const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  return (addr & mask) >>> 0 === (base & mask) >>> 0;
}

function ipv4Verdict(addr: number): Verdict | null {
  for (const [base, prefix, verdict] of IPV4_RANGES) {
    if (inRange4(addr, base, prefix)) return verdict;
  }
  return null;
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

function ipv6Verdict(g: readonly number[]): Verdict | null {
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = g;
  const upper64Zero = g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0;
  const upper96Zero = upper64Zero && g4 === 0 && g5 === 0;

  // Unspecified `::` (RFC 4291 section 2.5.2) and loopback `::1` (section 2.5.3) sit inside
  // ::/96, so they are told apart before the IPv4-compatible rule below sees them.
  if (upper96Zero && g6 === 0 && g7 === 0) return ALWAYS(REASON.unspecified);
  if (upper96Zero && g6 === 0 && g7 === 1) return UNLESS_INSECURE(REASON.loopback);

  // IPv4-mapped ::ffff:0:0/96 (RFC 4291 section 2.5.5.2), in any spelling (`::ffff:7f00:1` is
  // `::ffff:127.0.0.1`): dual-stack sockets deliver these to the embedded IPv4 address, so its
  // rules apply; and there is no reason for a real target to be written this way, so the form
  // itself is refused outside local development.
  if (upper64Zero && g4 === 0 && g5 === 0xffff) return ipv4Verdict(low32(g)) ?? UNLESS_INSECURE(REASON.ipv4Mapped);
  // IPv4-translated ::ffff:0:0:0/96 (RFC 2765 SIIT): a stateless translator delivers these to the
  // embedded IPv4 address too.
  if (upper64Zero && g4 === 0xffff && g5 === 0) return ipv4Verdict(low32(g)) ?? UNLESS_INSECURE(REASON.ipv4Translated);
  // IPv4-compatible ::a.b.c.d (RFC 4291 section 2.5.5.1, deprecated): judged by the embedded
  // IPv4 address, since some stacks still translate it.
  if (upper96Zero) return ipv4Verdict(low32(g));

  // AWS instance metadata over IPv6 (Nitro), inside fc00::/7, so checked before it.
  if (g0 === 0xfd00 && g1 === 0x0ec2 && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0 && g6 === 0 && g7 === 0x254) {
    return ALWAYS(REASON.linkLocal);
  }
  // Link-local fe80::/10 (RFC 4291 section 2.5.6).
  if ((g0 & 0xffc0) === 0xfe80) return ALWAYS(REASON.linkLocal);
  // Multicast ff00::/8 (RFC 4291 section 2.7).
  if ((g0 & 0xff00) === 0xff00) return ALWAYS(REASON.multicast);

  // NAT64 well-known prefix 64:ff9b::/96 (RFC 6052) and the local-use 64:ff9b:1::/48 (RFC 8215),
  // whose translators forward to the IPv4 address in the low 32 bits (of a /96 within it).
  if (g0 === 0x64 && g1 === 0xff9b && ((g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) || g2 === 1)) {
    return relayed(REASON.nat64, low32(g));
  }
  // 6to4 2002::/16 (RFC 3056, deprecated by RFC 7526): relays tunnel to the IPv4 address in
  // bits 16-47.
  if (g0 === 0x2002) return relayed(REASON.sixToFour, ((g1 << 16) | g2) >>> 0);
  // Teredo 2001::/32 (RFC 4380): the server's IPv4 address in bits 32-63, the client's in the
  // low 32 bits with every bit inverted.
  if (g0 === 0x2001 && g1 === 0) return relayed(REASON.teredo, ((g2 << 16) | g3) >>> 0, ~low32(g) >>> 0);
  // Unique local fc00::/7 (RFC 4193): the IPv6 counterpart of RFC 1918.
  if ((g0 & 0xfe00) === 0xfc00) return UNLESS_INSECURE(REASON.private);
  // Documentation 2001:db8::/32 (RFC 3849).
  if (g0 === 0x2001 && g1 === 0x0db8) return UNLESS_INSECURE(REASON.documentation);
  return null;
}

/**
 * Parses IPv6 text (RFC 4291 section 2.2: `::` compression and a dotted IPv4 tail) into eight
 * 16-bit groups; null when malformed. Zone identifiers are refused: a URL cannot carry one.
 */
function parseIPv6(text: string): number[] | null {
  if (text === "" || text.includes("%")) return null;
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const compressed = halves.length === 2;

  const head = parseGroups(halves[0] ?? "", !compressed);
  const tail = compressed ? parseGroups(halves[1] ?? "", true) : [];
  if (head === null || tail === null) return null;

  const count = head.length + tail.length;
  if (compressed ? count > 7 : count !== 8) return null;
  return [...head, ...new Array<number>(8 - count).fill(0), ...tail];
}

/** Colon-separated hex groups; the last one may be a dotted IPv4 address (two groups). */
function parseGroups(text: string, mayEndInIPv4: boolean): number[] | null {
  if (text === "") return [];
  const parts = text.split(":");
  const groups: number[] = [];
  for (const [i, part] of parts.entries()) {
    if (i === parts.length - 1 && mayEndInIPv4 && part.includes(".")) {
      const v4 = parseDottedQuad(part);
      if (v4 === null) return null;
      groups.push(v4 >>> 16, v4 & 0xffff);
    } else if (/^[0-9a-f]{1,4}$/i.test(part)) {
      groups.push(Number.parseInt(part, 16));
    } else {
      return null;
    }
  }
  return groups;
}
