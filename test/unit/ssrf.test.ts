/**
 * The SSRF guard for outbound URLs: scheme, credentials and length rules, every special-purpose
 * IPv4 range at its edges (first, last, and the neighbours just outside), the IPv4 spellings the
 * URL parser normalises, IPv6 literals including IPv4-mapped and NAT64 forms, and local or
 * metadata host names, in both the strict and the allow-insecure (local development) policy.
 */
import { describe, expect, it } from "vitest";
import { checkTarget, type TargetPolicy } from "../../src/lib/ssrf";

const strict: TargetPolicy = { allowInsecure: false };
const insecure: TargetPolicy = { allowInsecure: true };

/** The refusal reason, or null when the target is accepted. */
function reasonFor(raw: string | URL, policy: TargetPolicy): string | null {
  const result = checkTarget(raw, policy);
  return result.ok ? null : result.reason;
}

const R = {
  invalid: "url is not a valid absolute URL",
  tooLong: "url must be at most 2048 characters",
  https: "url must use https",
  httpOrHttps: "url must use https or http",
  credentials: "url must not contain credentials",
  localhost: "url host localhost is not allowed",
  metadataName: "url points to a cloud metadata host",
  unspecified: "url points to an unspecified address",
  linkLocal: "url points to a link-local or cloud metadata address",
  multicast: "url points to a multicast address",
  reserved: "url points to a reserved address",
  broadcast: "url points to a broadcast address",
  loopback: "url points to a loopback address",
  private: "url points to a private address",
  cgnat: "url points to a shared (carrier-grade NAT) address",
  special: "url points to a special-purpose address",
  documentation: "url points to a documentation or benchmarking address",
  nat64: "url points to a NAT64 address",
  mapped: "url points to an IPv4-mapped IPv6 address",
  translated: "url points to an IPv4-translated IPv6 address",
  sixToFour: "url points to a 6to4 address",
  teredo: "url points to a Teredo address",
} as const;

describe("public targets", () => {
  it.each([
    ["https://example.com/hook", "https://example.com/hook"],
    ["https://Example.COM:8443/a/b?x=1&y=2", "https://example.com:8443/a/b?x=1&y=2"],
    ["HTTPS://example.com", "https://example.com/"],
    ["https://8.8.8.8/", "https://8.8.8.8/"],
    ["https://1.1.1.1/dns-query", "https://1.1.1.1/dns-query"],
    ["https://[2606:4700::1111]/", "https://[2606:4700::1111]/"],
    ["https://[2001:4860:4860:0:0:0:0:8888]/", "https://[2001:4860:4860::8888]/"],
    ["https://localhost.example.com/", "https://localhost.example.com/"],
    ["https://notlocalhost/", "https://notlocalhost/"],
    ["https://metadata.google.internal.example.com/", "https://metadata.google.internal.example.com/"],
    ["https://mymetadata/", "https://mymetadata/"],
  ])("accepts %s with https in strict mode", (raw, href) => {
    const result = checkTarget(raw, strict);
    expect(result).toEqual({ ok: true, url: expect.any(URL) });
    if (result.ok) expect(result.url.href).toBe(href);
  });
});

describe("scheme", () => {
  it("refuses http unless insecure targets are allowed", () => {
    expect(reasonFor("http://example.com/hook", strict)).toBe(R.https);
    expect(reasonFor("http://example.com/hook", insecure)).toBeNull();
  });

  it.each([
    "ftp://example.com/file",
    "javascript:alert(1)",
    "file:///etc/passwd",
    "data:text/plain,hi",
    "ws://example.com/",
    "wss://example.com/",
    "gopher://example.com/",
  ])("refuses the non-http scheme of %s in both modes", (raw) => {
    expect(reasonFor(raw, strict)).toBe(R.https);
    expect(reasonFor(raw, insecure)).toBe(R.httpOrHttps);
  });
});

describe("malformed input", () => {
  it.each([
    "",
    "not a url",
    "/relative/path",
    "//example.com/hook",
    "example.com/hook",
    "https://",
    "https://[::1",
    "https://exa mple.com/",
    "https://1.2.3.4.5/",
    "https://256.0.0.1/",
    "https://[::ffff:1.2.3]/",
    "https://[1:2:3:4:5:6:7:8:9]/",
    "https://[fe80::1%25eth0]/",
  ])("refuses the unparsable or relative URL %j", (raw) => {
    expect(reasonFor(raw, strict)).toBe(R.invalid);
    expect(reasonFor(raw, insecure)).toBe(R.invalid);
  });
});

describe("credentials", () => {
  it.each([
    "https://user:pass@example.com/",
    "https://user@example.com/",
    "https://:pass@example.com/",
    "https://example.com@evil.example/",
  ])("refuses %s even when insecure targets are allowed", (raw) => {
    expect(reasonFor(raw, strict)).toBe(R.credentials);
    expect(reasonFor(raw, insecure)).toBe(R.credentials);
  });
});

describe("length", () => {
  const prefix = "https://example.com/";

  it("accepts a URL of exactly 2048 characters", () => {
    const raw = prefix + "a".repeat(2048 - prefix.length);
    expect(raw).toHaveLength(2048);
    expect(reasonFor(raw, strict)).toBeNull();
  });

  it("refuses a URL of 2049 characters, as a string or a URL object", () => {
    const raw = prefix + "a".repeat(2049 - prefix.length);
    expect(reasonFor(raw, strict)).toBe(R.tooLong);
    expect(reasonFor(new URL(raw), strict)).toBe(R.tooLong);
  });

  it("refuses a URL that grows past 2048 characters when percent-encoded", () => {
    const raw = prefix + "{".repeat(1000);
    expect(raw.length).toBeLessThanOrEqual(2048);
    expect(reasonFor(raw, strict)).toBe(R.tooLong);
  });
});

describe("literal IPv4 addresses", () => {
  // [address, reason]: refused in both modes.
  it.each([
    ["0.0.0.0", R.unspecified],
    ["0.255.255.255", R.unspecified],
    ["169.254.0.0", R.linkLocal],
    ["169.254.169.254", R.linkLocal],
    ["169.254.255.255", R.linkLocal],
    ["100.100.100.200", R.linkLocal],
    ["224.0.0.0", R.multicast],
    ["239.255.255.255", R.multicast],
    ["240.0.0.0", R.reserved],
    ["255.255.255.254", R.reserved],
    ["255.255.255.255", R.broadcast],
  ])("refuses %s even when insecure targets are allowed", (ip, reason) => {
    expect(reasonFor(`https://${ip}/`, strict)).toBe(reason);
    expect(reasonFor(`http://${ip}/`, insecure)).toBe(reason);
  });

  // [address, reason]: refused in strict mode only.
  it.each([
    ["127.0.0.0", R.loopback],
    ["127.0.0.1", R.loopback],
    ["127.255.255.255", R.loopback],
    ["10.0.0.0", R.private],
    ["10.255.255.255", R.private],
    ["172.16.0.0", R.private],
    ["172.31.255.255", R.private],
    ["192.168.0.0", R.private],
    ["192.168.255.255", R.private],
    ["100.64.0.0", R.cgnat],
    ["100.100.100.199", R.cgnat],
    ["100.100.100.201", R.cgnat],
    ["100.127.255.255", R.cgnat],
    ["192.0.0.0", R.special],
    ["192.0.0.255", R.special],
    ["198.18.0.0", R.documentation],
    ["198.19.255.255", R.documentation],
    ["192.0.2.0", R.documentation],
    ["192.0.2.255", R.documentation],
    ["198.51.100.0", R.documentation],
    ["198.51.100.255", R.documentation],
    ["203.0.113.0", R.documentation],
    ["203.0.113.255", R.documentation],
  ])("refuses %s unless insecure targets are allowed", (ip, reason) => {
    expect(reasonFor(`https://${ip}/`, strict)).toBe(reason);
    expect(reasonFor(`http://${ip}/`, insecure)).toBeNull();
  });

  it.each([
    "1.0.0.0",
    "9.255.255.255",
    "11.0.0.0",
    "100.63.255.255",
    "100.128.0.0",
    "126.255.255.255",
    "128.0.0.0",
    "169.253.255.255",
    "169.255.0.0",
    "172.15.255.255",
    "172.32.0.0",
    "191.255.255.255",
    "192.0.1.0",
    "192.0.1.255",
    "192.0.3.0",
    "192.167.255.255",
    "192.169.0.0",
    "198.17.255.255",
    "198.20.0.0",
    "198.51.99.255",
    "198.51.101.0",
    "203.0.112.255",
    "203.0.114.0",
    "223.255.255.255",
  ])("accepts the public neighbour %s in strict mode", (ip) => {
    expect(reasonFor(`https://${ip}/`, strict)).toBeNull();
  });

  it.each([
    "2130706433",
    "0x7f000001",
    "0177.0.0.1",
    "127.1",
    "0x7f.1",
    "127.0.0.1.",
    "127.000.000.001",
    "\uff11\uff12\uff17.\uff10.\uff10.\uff11",
  ])("refuses the loopback spelling %s as loopback", (host) => {
    expect(reasonFor(`https://${host}/`, strict)).toBe(R.loopback);
  });

  it.each(["2852039166", "0xa9fea9fe", "0251.0376.0251.0376", "169.254.43518", "0xa9.0xfe.0xa9.0xfe"])(
    "refuses the metadata spelling %s even when insecure targets are allowed",
    (host) => {
      expect(reasonFor(`http://${host}/latest/meta-data`, insecure)).toBe(R.linkLocal);
    },
  );
});

describe("literal IPv6 addresses", () => {
  it.each([
    ["::", R.unspecified],
    ["0:0:0:0:0:0:0:0", R.unspecified],
    ["fe80::1", R.linkLocal],
    ["febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", R.linkLocal],
    ["ff00::", R.multicast],
    ["ff02::1", R.multicast],
    ["fd00:ec2::254", R.linkLocal],
    ["fd00:0ec2:0:0:0:0:0:0254", R.linkLocal],
    ["::ffff:169.254.169.254", R.linkLocal],
    ["::ffff:a9fe:a9fe", R.linkLocal],
    ["::ffff:0.0.0.0", R.unspecified],
    ["::ffff:224.0.0.1", R.multicast],
    ["::169.254.169.254", R.linkLocal],
    ["64:ff9b::169.254.169.254", R.linkLocal],
    // IPv4 transition forms whose embedded address is always refused.
    ["::ffff:0:169.254.169.254", R.linkLocal],
    ["::ffff:0:a9fe:a9fe", R.linkLocal],
    ["64:ff9b:1::a9fe:a9fe", R.linkLocal],
    ["2002:a9fe:a9fe::", R.linkLocal],
    ["2002:a9fe:a9fe:1:2:3:4:5", R.linkLocal],
    ["2002:e000:1::", R.multicast],
    ["2002:0:1::", R.unspecified],
    // Teredo: the server address in bits 32-63, the client's inverted in the low 32 bits.
    ["2001:0:a9fe:a9fe::1", R.linkLocal],
    ["2001:0:4136:e378:8000:63bf:5601:5601", R.linkLocal],
    ["2001:0:a00:1::", R.broadcast],
    ["2001::7f00:1", R.unspecified],
  ])("refuses [%s] even when insecure targets are allowed", (ip, reason) => {
    expect(reasonFor(`https://[${ip}]/`, strict)).toBe(reason);
    expect(reasonFor(`http://[${ip}]/`, insecure)).toBe(reason);
  });

  it.each([
    ["::1", R.loopback],
    ["0:0:0:0:0:0:0:1", R.loopback],
    ["fc00::", R.private],
    ["fc00::1", R.private],
    ["fd12:3456::1", R.private],
    ["fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", R.private],
    ["fd00:ec2::253", R.private],
    ["::ffff:127.0.0.1", R.loopback],
    ["::ffff:7f00:1", R.loopback],
    ["::ffff:10.0.0.1", R.private],
    ["::ffff:8.8.8.8", R.mapped],
    ["::127.0.0.1", R.loopback],
    ["::10.0.0.1", R.private],
    ["64:ff9b::8.8.8.8", R.nat64],
    ["64:ff9b::127.0.0.1", R.nat64],
    ["2001:db8::", R.documentation],
    ["2001:db8::1", R.documentation],
    ["2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", R.documentation],
    // IPv4-translated (SIIT) addresses are delivered to the embedded address: its rules apply.
    ["::ffff:0:127.0.0.1", R.loopback],
    ["::ffff:0:7f00:1", R.loopback],
    ["::ffff:0:10.0.0.1", R.private],
    ["::ffff:0:8.8.8.8", R.translated],
    // Relayed forms are refused as such, whatever (not always-refused) address they embed.
    ["64:ff9b:1::10.0.0.1", R.nat64],
    ["64:ff9b:1:ffff::8.8.8.8", R.nat64],
    ["2002:7f00:1::", R.sixToFour],
    ["2002:a00:1::1", R.sixToFour],
    ["2002:c0a8:101::", R.sixToFour],
    ["2002:808:808::1", R.sixToFour],
    ["2001:0:a00:1::f7f7:f7f7", R.teredo],
    ["2001:0:7f00:1::f7f7:f7f7", R.teredo],
    ["2001:0:4136:e378:8000:63bf:3fff:fdd2", R.teredo],
  ])("refuses [%s] unless insecure targets are allowed", (ip, reason) => {
    expect(reasonFor(`https://[${ip}]/`, strict)).toBe(reason);
    expect(reasonFor(`http://[${ip}]/`, insecure)).toBeNull();
  });

  it.each([
    "2606:4700::1111",
    "2001:4860:4860::8888",
    "2001:db7:ffff:ffff:ffff:ffff:ffff:ffff",
    "2001:db9::",
    "fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
    // Just outside the transition prefixes: 6to4 is 2002::/16, Teredo 2001:0::/32, NAT64 local use 64:ff9b:1::/48.
    "2001:1::1",
    "2003::1",
    "2001:200::1",
    "64:ff9b:2::808:808",
    "::fffe:0:7f00:1",
  ])("accepts [%s] in strict mode", (ip) => {
    expect(reasonFor(`https://[${ip}]/`, strict)).toBeNull();
  });
});

describe("host names", () => {
  it.each(["localhost", "LOCALHOST.", "localhost.", "api.localhost", "a.b.LocalHost.", "localhost:8443"])(
    "refuses %s unless insecure targets are allowed",
    (host) => {
      expect(reasonFor(`https://${host}/`, strict)).toBe(R.localhost);
      expect(reasonFor(`http://${host}/`, insecure)).toBeNull();
    },
  );

  it.each([
    "metadata.google.internal",
    "METADATA.Google.Internal.",
    "metadata",
    "metadata.",
    "instance-data",
    "instance-data.ec2.internal",
    "Instance-Data.EC2.Internal.",
  ])("refuses the metadata name %s even when insecure targets are allowed", (host) => {
    expect(reasonFor(`https://${host}/`, strict)).toBe(R.metadataName);
    expect(reasonFor(`http://${host}/computeMetadata/v1/`, insecure)).toBe(R.metadataName);
  });
});

describe("local development (insecure targets allowed)", () => {
  it.each(["http://127.0.0.1:8080/x", "http://localhost:3000", "http://10.0.0.5", "http://[::1]:8787/hook", "https://192.168.1.10/"])(
    "accepts %s",
    (raw) => {
      expect(reasonFor(raw, insecure)).toBeNull();
    },
  );

  it.each([
    ["http://169.254.169.254/latest/meta-data", R.linkLocal],
    ["http://[fe80::1]", R.linkLocal],
    ["http://metadata.google.internal", R.metadataName],
    ["http://[fd00:ec2::254]/latest/meta-data", R.linkLocal],
    ["http://100.100.100.200/latest/meta-data", R.linkLocal],
    ["http://0.0.0.0:8080/", R.unspecified],
  ])("still refuses %s", (raw, reason) => {
    expect(reasonFor(raw, insecure)).toBe(reason);
  });
});

describe("the returned URL", () => {
  it.each([
    ["https://example.com/hook?x=1#frag", "https://example.com/hook?x=1"],
    ["https://example.com/#", "https://example.com/"],
    ["https://example.com/a#b#c", "https://example.com/a"],
  ])("drops the fragment of %s", (raw, href) => {
    const result = checkTarget(raw, strict);
    expect(result.ok && result.url.href).toBe(href);
  });

  it("is a copy: a URL argument is not mutated", () => {
    const input = new URL("https://example.com/hook#frag");
    const result = checkTarget(input, strict);
    expect(result.ok && result.url.href).toBe("https://example.com/hook");
    expect(result.ok && result.url).not.toBe(input);
    expect(input.href).toBe("https://example.com/hook#frag");
  });
});

describe("refusal reasons", () => {
  it.each([
    ["http://example.com/hook", strict],
    ["ftp://example.com/hook", insecure],
    ["https://user:pw@example.com/hook", strict],
    ["https://127.0.0.1/hook", strict],
    ["https://[::1]/hook", strict],
    ["https://[::ffff:8.8.8.8]/hook", strict],
    ["https://169.254.169.254/hook", insecure],
    ["https://localhost/hook", strict],
    ["https://metadata.google.internal/hook", insecure],
    [`https://example.com/${"a".repeat(2100)}`, strict],
    ["https://exa mple.com/hook", strict],
  ] as const)("never echo the query string of %s", (raw, policy) => {
    const reason = reasonFor(`${raw}?token=supersecret`, policy);
    expect(reason).not.toBeNull();
    expect(reason).not.toContain("supersecret");
    expect(reason).not.toContain("token");
    expect(reason).not.toContain("/hook");
    expect(reason).toMatch(/^url [\w ()-]+$/);
  });
});
