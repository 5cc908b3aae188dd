/**
 * Signed, self-contained values: `<prefix><kid>.<base64url JSON>.<base64url HMAC-SHA256>`, the
 * MAC covering everything before the last dot. Access tokens (`kw_at_`) and manager sessions
 * (`kw_session_`) use it with the same keyring; the prefix is inside the MAC, so one can never
 * pass as the other. Verification checks the MAC before parsing, so forged input never reaches
 * JSON.parse, and the kid selects the key, so keys rotate without invalidating live values.
 */
import type { z } from "zod";
import { IsolateCache } from "./cache";
import { hmacKey } from "./crypto";
import { base64UrlDecode, base64UrlEncode, decodeUtf8, encodeUtf8 } from "./encoding";
import type { VersionedKey } from "./keyring";

export type Opened<T> = { ok: true; value: T } | { ok: false; reason: "malformed" | "invalid" };

const shapes = new IsolateCache<RegExp>({ maxEntries: 16 });
/** Compiled once per prefix: open() is on the path of every bearer-authenticated request. */
function shapeOf(prefix: string): RegExp {
  let shape = shapes.get(prefix);
  if (shape === undefined) {
    shape = new RegExp(`^${prefix}([A-Za-z0-9-]{1,32})\\.([A-Za-z0-9_-]+)\\.([A-Za-z0-9_-]{43})$`);
    shapes.set(prefix, shape);
  }
  return shape;
}

const keyFor = (key: VersionedKey) => hmacKey(key.raw);

/** Signs `payload` with the first key; throws when no key is configured. */
export async function sign(keys: VersionedKey[], prefix: string, payload: unknown): Promise<string> {
  const key = keys[0];
  if (key === undefined) throw new Error("no signing key configured");
  const input = `${prefix}${key.kid}.${base64UrlEncode(encodeUtf8(JSON.stringify(payload)))}`;
  const mac = await crypto.subtle.sign("HMAC", await keyFor(key), encodeUtf8(input));
  return `${input}.${base64UrlEncode(new Uint8Array(mac))}`;
}

/**
 * "malformed": not the shape of such a value (or over `maxLength`); "invalid": unknown key, bad
 * MAC, or a payload its schema refuses (only possible for values we signed in an older format).
 */
export async function open<T extends z.ZodType>(
  keys: VersionedKey[],
  prefix: string,
  value: string,
  schema: T,
  maxLength: number,
): Promise<Opened<z.output<T>>> {
  const match = value.length <= maxLength ? shapeOf(prefix).exec(value) : null;
  if (!match) return { ok: false, reason: "malformed" };
  const [, kid, payload, macText] = match as unknown as [string, string, string, string];
  const key = keys.find((k) => k.kid === kid);
  const mac = base64UrlDecode(macText);
  if (key === undefined || mac === null) return { ok: false, reason: "invalid" };
  const genuine = await crypto.subtle.verify("HMAC", await keyFor(key), mac, encodeUtf8(`${prefix}${kid}.${payload}`));
  if (!genuine) return { ok: false, reason: "invalid" };
  try {
    // The MAC vouches for the payload: we encoded it, so it needs no canonical-form check.
    const json = decodeUtf8(Uint8Array.fromBase64(payload, { alphabet: "base64url" }));
    return { ok: true, value: schema.parse(JSON.parse(json ?? "")) };
  } catch {
    return { ok: false, reason: "invalid" };
  }
}
