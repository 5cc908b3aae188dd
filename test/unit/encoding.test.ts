/** The byte codecs under tokens, secrets and Basic credentials: canonical in, canonical out. */
import { describe, expect, it } from "vitest";
import { base64Decode, base64Encode, base64UrlDecode, base64UrlEncode, hex } from "../../src/lib/encoding";

const bytes = (...b: number[]) => new Uint8Array(b);

describe("base64url (RFC 4648 section 5, unpadded)", () => {
  it("encodes without padding in the URL-safe alphabet", () => {
    expect(base64UrlEncode(bytes(0xfb, 0xff, 0xbf))).toBe("-_-_");
    expect(base64UrlEncode(bytes(1))).toBe("AQ");
    expect(base64UrlEncode(bytes())).toBe("");
  });

  it("round-trips every byte value", () => {
    const all = new Uint8Array(256).map((_, i) => i);
    expect(base64UrlDecode(base64UrlEncode(all))).toEqual(all);
  });

  it.each([
    ["non-zero trailing bits", "AR"],
    ["padding", "AQ=="],
    ["the standard alphabet's + and /", "+/+/"],
    ["whitespace", "AQ "],
    ["a length that is 1 mod 4", "AAAAA"],
    ["a character outside the alphabet", "A.B"],
  ])("refuses %s", (_, text) => {
    expect(base64UrlDecode(text)).toBeNull();
  });
});

describe("standard base64 (RFC 4648 section 4)", () => {
  it("encodes with padding and decodes with or without it", () => {
    expect(base64Encode(bytes(0xfb, 0xff))).toBe("+/8=");
    expect(base64Decode("+/8=")).toEqual(bytes(0xfb, 0xff));
    expect(base64Decode("+/8")).toEqual(bytes(0xfb, 0xff));
  });

  it.each([
    ["the URL-safe alphabet", "-_8="],
    ["whitespace", "+/8 ="],
    ["a length that is 1 mod 4", "AAAAA"],
  ])("refuses %s", (_, text) => {
    expect(base64Decode(text)).toBeNull();
  });
});

it("hex-encodes bytes and ArrayBuffers in lower case", () => {
  expect(hex(bytes(0, 0xab, 0xff))).toBe("00abff");
  expect(hex(bytes(0x0f).buffer)).toBe("0f");
});
