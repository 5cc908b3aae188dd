/**
 * Reading request bodies defensively: a byte cap enforced by Content-Length and, for bodies
 * without one, while streaming; strict UTF-8; JSON that must be an object nested at most
 * MAX_JSON_DEPTH levels (checked on the text, before parsing); form bodies without repeated
 * parameters (RFC 6749 3.2). Every failure is a 4xx ApiError.
 */
import { ApiError } from "../errors";
import { base64Decode, decodeUtf8 } from "../lib/encoding";
import { findDuplicateKey, jsonNestsDeeperThan, MAX_JSON_DEPTH } from "../lib/json";
import { readCapped } from "../lib/streams";

export type BodyFormat = "json" | "form" | "multipart";

const MEDIA_TYPES: Record<BodyFormat, string> = {
  json: "application/json",
  form: "application/x-www-form-urlencoded",
  multipart: "multipart/form-data",
};

/**
 * A file of a multipart form (RFC 7578): its bytes, read within the form's byte cap. The file
 * name and the part's Content-Type are the sender's claims, kept for messages only: what a file
 * is must be decided from its bytes.
 */
export class UploadedFile {
  constructor(
    readonly name: string,
    readonly bytes: Uint8Array,
  ) {}
}

export async function readBytes(request: Request, maxBytes: number): Promise<Uint8Array> {
  const declared = request.headers.get("content-length");
  if (declared !== null && /^\d{1,15}$/.test(declared)) {
    if (Number(declared) > maxBytes) throw tooLarge(maxBytes);
    // HTTP framing (RFC 9112 6.2) stops the body at the declared length, so one native read is
    // bounded; the check after it covers a Request built in code with a header that understates.
    const bytes = new Uint8Array(await request.arrayBuffer());
    if (bytes.byteLength > maxBytes) throw tooLarge(maxBytes);
    return bytes;
  }
  // No usable length (chunked): the cap is enforced while streaming.
  const bytes = await readCapped(request.body, maxBytes);
  if (bytes === null) throw tooLarge(maxBytes);
  return bytes;
}

/**
 * Parses a JSON or form body into a plain object of fields. An empty body is `{}` whatever its
 * Content-Type, so optional-body POSTs work from curl without headers.
 */
export async function readFields(request: Request, accepted: readonly BodyFormat[], maxBytes: number): Promise<Record<string, unknown>> {
  const bytes = await readBytes(request, maxBytes);
  if (bytes.byteLength === 0) return {};
  const format = formatOf(request.headers.get("content-type"), accepted);
  if (format === "multipart") return parseMultipart(bytes, request.headers.get("content-type") ?? "");
  const text = decodeUtf8(bytes);
  if (text === null) throw new ApiError("invalid_request", "The request body is not valid UTF-8.");
  return format === "json" ? parseJsonObject(text) : parseForm(text);
}

function formatOf(contentType: string | null, accepted: readonly BodyFormat[]): BodyFormat {
  const mediaType = contentType?.split(";")[0]?.trim().toLowerCase() ?? "";
  const format = accepted.find((f) => MEDIA_TYPES[f] === mediaType);
  if (format === undefined) {
    const expected = accepted.map((f) => MEDIA_TYPES[f]).join(" or ");
    throw new ApiError(
      "unsupported_media_type",
      contentType === null
        ? `The Content-Type header is missing; send ${expected}.`
        : `Content-Type ${JSON.stringify(mediaType.slice(0, 80))} is not supported; send ${expected}.`,
    );
  }
  return format;
}

function parseJsonObject(text: string): Record<string, unknown> {
  if (jsonNestsDeeperThan(text, MAX_JSON_DEPTH)) throw tooDeep("The request body");
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ApiError("invalid_request", "The request body is not valid JSON.");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ApiError("invalid_request", "The request body must be a JSON object.");
  }
  refuseDuplicateKeys(text, "The request body");
  return value as Record<string, unknown>;
}

/** 400 for JSON with a member name twice in one object (lib/json.ts `findDuplicateKey`); `what` names where it came from. */
export function refuseDuplicateKeys(text: string, what: string): void {
  const duplicate = findDuplicateKey(text);
  if (duplicate !== null) {
    throw new ApiError(
      "invalid_request",
      `${what} has the key ${JSON.stringify(duplicate.key.slice(0, 64))} twice in one object (at ${duplicate.path.slice(0, 200)}); each key may appear once.`,
    );
  }
}

function parseForm(text: string): Record<string, unknown> {
  const fields: Record<string, string> = {};
  const seen = new Set<string>();
  for (const [name, value] of new URLSearchParams(text)) {
    if (seen.has(name)) {
      throw new ApiError("invalid_request", `Parameter ${JSON.stringify(name.slice(0, 40))} is repeated (RFC 6749 3.2).`);
    }
    seen.add(name);
    // defineProperty, not assignment: a field named __proto__ stays an ordinary field.
    Object.defineProperty(fields, name, { value, enumerable: true, configurable: true, writable: true });
  }
  return fields;
}

/**
 * A multipart form already read within its cap: text fields as strings (strict UTF-8), files as
 * UploadedFile, a name given twice refused as for urlencoded forms. A malformed body is a 400.
 */
async function parseMultipart(bytes: Uint8Array, contentType: string): Promise<Record<string, unknown>> {
  let parsed: FormData;
  try {
    parsed = await new Response(bytes, { headers: { "Content-Type": contentType } }).formData();
  } catch {
    throw new ApiError("invalid_request", "The request body is not a valid multipart/form-data body.");
  }
  const fields: Record<string, unknown> = {};
  const seen = new Set<string>();
  for (const [name, value] of parsed.entries()) {
    if (seen.has(name)) {
      throw new ApiError("invalid_request", `Parameter ${JSON.stringify(name.slice(0, 40))} is repeated (RFC 6749 3.2).`);
    }
    seen.add(name);
    const field = typeof value === "string" ? value : new UploadedFile(value.name, new Uint8Array(await value.arrayBuffer()));
    Object.defineProperty(fields, name, { value: field, enumerable: true, configurable: true, writable: true });
  }
  return fields;
}

/**
 * HTTP Basic client authentication (RFC 6749 2.3.1, RFC 7617): returns null when the header is
 * not Basic. The id and secret are form-urlencoded inside the base64, so they are decoded again.
 */
export function parseBasicCredentials(authorization: string | undefined): { client_id: string; client_secret: string } | null {
  if (authorization === undefined) return null;
  const match = /^Basic +([^ ]*) *$/i.exec(authorization);
  if (!match) return null;
  const malformed = () =>
    new ApiError("invalid_request", "The Basic Authorization header is malformed: expected base64(client_id:client_secret).");
  const encoded = match[1] ?? "";
  const bytes = encoded.length <= 2048 ? base64Decode(encoded) : null;
  const decoded = bytes === null ? null : decodeUtf8(bytes);
  const colon = decoded?.indexOf(":") ?? -1;
  if (decoded == null || colon < 0) throw malformed();
  try {
    return {
      client_id: formDecode(decoded.slice(0, colon)),
      client_secret: formDecode(decoded.slice(colon + 1)),
    };
  } catch {
    throw malformed();
  }
}

const formDecode = (value: string): string => decodeURIComponent(value.replaceAll("+", " "));

/** Refusal of JSON nested deeper than MAX_JSON_DEPTH (lib/json.ts); `what` names where it came from. */
export function tooDeep(what: string): ApiError {
  return new ApiError("invalid_request", `${what} nests JSON objects and arrays deeper than ${MAX_JSON_DEPTH} levels.`);
}

function tooLarge(maxBytes: number): ApiError {
  return new ApiError("payload_too_large", `The request body exceeds ${maxBytes} bytes.`);
}
