/**
 * The portal's logo image (an organization's branding): what keyway accepts and how it fetches
 * one from a URL. Only PNG, JPEG and WebP, recognised by their magic bytes, never by a file name
 * or a sent Content-Type (SVG is refused: it is a document that can carry script), at most
 * MAX_LOGO_BYTES. A URL is fetched once, when saved, through the SSRF guard (lib/ssrf.ts) with
 * the caller's policy: redirects are not followed (a 3xx is a refusal, so no hop escapes the
 * guard), one deadline covers the request and the body, the body is read with the byte cap
 * whatever Content-Length says. keyway keeps the bytes and serves them itself, so the portal
 * never loads a third party's URL. Refusal reasons are short fixed strings that never echo the
 * URL (which may carry secrets in its query).
 */
import { checkTarget, type TargetPolicy } from "./ssrf";
import { readCapped } from "./streams";

/** The largest logo kept: a header image 32 px high needs far less. */
export const MAX_LOGO_BYTES = 64 * 1024;
/** The whole fetch of a logo URL, request and body. */
export const LOGO_FETCH_TIMEOUT_MS = 5_000;

export const LOGO_TYPES = ["image/png", "image/jpeg", "image/webp"] as const;
export type LogoType = (typeof LOGO_TYPES)[number];

export type ImageCheck = { ok: true; contentType: LogoType } | { ok: false; reason: string };

const startsWith = (bytes: Uint8Array, prefix: readonly number[], at = 0): boolean =>
  bytes.byteLength >= at + prefix.length && prefix.every((b, i) => bytes[at + i] === b);

const PNG = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a] as const;
const JPEG = [0xff, 0xd8, 0xff] as const;
const RIFF = [0x52, 0x49, 0x46, 0x46] as const;
const WEBP = [0x57, 0x45, 0x42, 0x50] as const;

/** The image type its first bytes say, or null: PNG's signature, JPEG's SOI marker, WebP's RIFF/WEBP header. */
export function sniffImage(bytes: Uint8Array): LogoType | null {
  if (startsWith(bytes, PNG)) return "image/png";
  if (startsWith(bytes, JPEG)) return "image/jpeg";
  if (startsWith(bytes, RIFF) && startsWith(bytes, WEBP, 8)) return "image/webp";
  return null;
}

export const LOGO_REFUSALS = {
  empty: "is empty",
  tooLarge: `is larger than ${MAX_LOGO_BYTES / 1024} KiB`,
  type: "is not a PNG, JPEG or WebP image (SVG is not accepted)",
} as const;

/** Whether these bytes may be the logo: their type, or why not. */
export function checkLogo(bytes: Uint8Array): ImageCheck {
  if (bytes.byteLength === 0) return { ok: false, reason: LOGO_REFUSALS.empty };
  if (bytes.byteLength > MAX_LOGO_BYTES) return { ok: false, reason: LOGO_REFUSALS.tooLarge };
  const contentType = sniffImage(bytes);
  return contentType === null ? { ok: false, reason: LOGO_REFUSALS.type } : { ok: true, contentType };
}

export type FetchedLogo = { ok: true; bytes: Uint8Array; contentType: LogoType } | { ok: false; reason: string };

/** The image at `url`, fetched once through the guard, with the byte cap and one deadline; or why not. */
export async function fetchLogo(url: string, policy: TargetPolicy & { timeoutMs?: number }): Promise<FetchedLogo> {
  const target = checkTarget(url, policy);
  if (!target.ok) return { ok: false, reason: target.reason };
  const signal = AbortSignal.timeout(policy.timeoutMs ?? LOGO_FETCH_TIMEOUT_MS);
  let res: Response;
  try {
    res = await fetch(target.url.href, { method: "GET", redirect: "manual", headers: { Accept: LOGO_TYPES.join(", ") }, signal });
  } catch {
    return { ok: false, reason: signal.aborted ? "logo request timed out" : "logo request failed" };
  }
  if (res.status < 200 || res.status > 299) {
    await res.body?.cancel().catch(() => undefined);
    return { ok: false, reason: res.status >= 300 && res.status <= 399 ? "logo URL redirected" : `logo URL answered ${res.status}` };
  }
  let bytes: Uint8Array | null;
  try {
    bytes = await readCapped(res.body, MAX_LOGO_BYTES, signal);
  } catch {
    return { ok: false, reason: signal.aborted ? "logo request timed out" : "logo request failed" };
  }
  if (bytes === null) return { ok: false, reason: `logo ${LOGO_REFUSALS.tooLarge}` };
  const checked = checkLogo(bytes);
  return checked.ok ? { ok: true, bytes, contentType: checked.contentType } : { ok: false, reason: `logo ${checked.reason}` };
}
