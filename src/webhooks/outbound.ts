/**
 * The two outbound requests of a delivery attempt (spec 4.3, 6), under one deadline (the
 * attempt's AbortSignal): first the client-credentials grant at the receiver's token URL,
 * form-encoded (RFC 6749 4.4.2), redirects followed by hand so each hop passes the SSRF guard, at
 * most MAX_REDIRECTS, credentials never sent to another origin (307/308 keep the body, so only
 * same-origin; 301/302/303 become a GET without it); then the webhook itself, whose redirects are
 * not followed. Every read is capped and cut off by the deadline, a body that stalls included.
 * Each request of the token step waits for the attempt's go (`BeforeRequest`) as it leaves, so a
 * configuration ended while a hop or a nonce round was awaited gets nothing more.
 *
 * The delivery log holds only our words (issue 22; docs/webhooks.md, "What the delivery log
 * keeps"). Of the token endpoint: its HTTP status and, when it is one of RFC 6749's registered
 * error codes, its `error`; never any free text, in which a hostile endpoint could hide the client
 * secret in encodings no filter knows. Of the webhook URL's answer to a failed attempt: its
 * status, Content-Type and Retry-After, and a bounded excerpt of the body that is withheld when it
 * holds a secret of the attempt in any form checked here (`revealsSecret`). Failures are
 * DeliveryFailure values.
 */
import type { Deps } from "../deps";
import { base64Encode, base64UrlEncode, encodeUtf8, hex } from "../lib/encoding";
import { checkTarget } from "../lib/ssrf";
import { readCapped } from "../lib/streams";
import {
  type AttemptResponse,
  type ConnectionOutcome,
  type DeliveryAttempt,
  receiverOAuth,
  type WebhookConfigurationRecord,
} from "../schemas/webhooks";
import { dpopProof, nonceAsked, type TokenRequestParts, tokenRequest } from "./receiver-auth";
import type { OpenedKey } from "./receiver-keys";

export const MAX_REDIRECTS = 5;
const MAX_TOKEN_RESPONSE_BYTES = 64 * 1024;
const FORM = "application/x-www-form-urlencoded";
/**
 * The error codes a token endpoint may answer (RFC 6749 5.2), the two RFC 6749 4.1.2.1 codes
 * servers also use there, and RFC 9449's two (`invalid_dpop_proof`, `use_dpop_nonce`): only these
 * are kept, as our own words.
 */
const REGISTERED_ERRORS = new Set([
  "invalid_dpop_proof",
  "use_dpop_nonce",
  "invalid_request",
  "invalid_client",
  "invalid_grant",
  "unauthorized_client",
  "unsupported_grant_type",
  "invalid_scope",
  "server_error",
  "temporarily_unavailable",
]);
/** A run of this many characters of a secret counts as the secret. */
const SECRET_WINDOW = 8;
/** Of a failed webhook answer: bytes read for the excerpt, and characters kept. */
const EXCERPT_BYTES = 2048;
const EXCERPT_CHARS = 512;
const EXCERPT_WAIT_MS = 1_000;

type Step = Extract<DeliveryAttempt["step"], "token" | "webhook">;

export class DeliveryFailure extends Error {
  constructor(
    readonly step: Step,
    readonly httpStatus: number | null,
    message: string,
    /** Seconds the receiver asked us to wait (429/503 Retry-After). */
    readonly retryAfterSeconds: number | null = null,
    /** What kind of failure, for the connection test (issue 31). */
    readonly outcome: ConnectionOutcome = httpStatus === null ? "network_error" : "http_error",
    /** The token endpoint's RFC 6749 error code, when registered. */
    readonly errorCode: string | null = null,
  ) {
    super(message);
    this.name = "DeliveryFailure";
  }
}

export interface ReceiverToken {
  accessToken: string;
  /** From the token response's expires_in, when it gives one. */
  expiresInSeconds: number | null;
  /** The answer's token_type, as sent (`Bearer`, `DPoP`). */
  tokenType: string | null;
}

/** What signs and authenticates a token request: the client secret (or ""), the opened keys it needs. */
export interface TokenCredentials {
  clientSecret: string;
  assertionKey: (OpenedKey & { kid: string }) | null;
  dpopKey: OpenedKey | null;
}

/**
 * Asked immediately before each request of a delivery attempt leaves for the receiver (its token
 * request's first hop, each redirect hop, the request again after a DPoP nonce challenge): null
 * to go, or why not. The consumer asks the endpoint's object there when it awaited anything since
 * the object last said go (consumer.ts `beforeRequest`); the connection test asks nothing.
 */
export type BeforeRequest = () => Promise<string | null>;

/** A request the attempt's check stopped before it left (the configuration deleted or disabled meanwhile): nothing was sent. */
export class RequestStopped extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = "RequestStopped";
  }
}

const go: BeforeRequest = () => Promise.resolve(null);

/** The attempt's deadline, shared by every request and read of the attempt. */
export interface Deadline {
  signal: AbortSignal;
  seconds: number;
}

/**
 * The attempt's deadline: the one the object set when the attempt began (its lease is measured
 * from it), or this Worker's own WEBHOOK_TIMEOUT_SECONDS from now if that is sooner.
 */
export function deadlineOf(deps: Deps, deadlineMs: number): Deadline {
  const ms = Math.max(1, Math.min(deadlineMs - deps.now(), deps.config.webhookTimeoutMs));
  return { signal: AbortSignal.timeout(ms), seconds: Math.ceil(ms / 1000) };
}

const what = (step: Step) => (step === "token" ? "token endpoint" : "webhook URL");

function timedOut(step: Step, deadline: Deadline, status: number | null, phase: string): DeliveryFailure {
  return new DeliveryFailure(
    step,
    status,
    `the attempt's ${deadline.seconds} s deadline passed ${phase} the ${what(step)}`,
    null,
    "timeout",
  );
}

async function timedFetch(step: Step, url: URL, init: RequestInit, deadline: Deadline): Promise<Response> {
  try {
    return await fetch(url, { ...init, redirect: "manual", signal: deadline.signal });
  } catch (err) {
    if (deadline.signal.aborted) throw timedOut(step, deadline, null, "waiting for");
    throw unreachable(step, url, err);
  }
}

/**
 * Why a request got no answer, in keyway's words (issue 31: "network error" said nothing). The
 * runtime's errors carry no code, only a message: a refused or dropped connection is "Network
 * connection lost", a name that does not resolve or a TLS handshake that fails say so when the
 * runtime does (DNS, certificate, TLS, SSL). Nothing of the message is kept beyond the kind.
 */
function unreachable(step: Step, url: URL, err: unknown): DeliveryFailure {
  const message = err instanceof Error ? err.message : String(err);
  const host = url.hostname;
  if (/dns|resolve|lookup|ENOTFOUND|name not known/i.test(message)) {
    return new DeliveryFailure(step, null, `${what(step)}'s host ${host} could not be resolved (DNS)`, null, "dns_failure");
  }
  if (/tls|ssl|certificate|handshake/i.test(message)) {
    return new DeliveryFailure(step, null, `${what(step)}: the TLS handshake with ${host} failed`, null, "tls_failure");
  }
  if (/connection lost|refused|ECONNREFUSED|ECONNRESET|reset|closed/i.test(message)) {
    return new DeliveryFailure(
      step,
      null,
      `${what(step)} at ${host} refused or dropped the connection (nothing listening, or a firewall)`,
      null,
      "connection_refused",
    );
  }
  return new DeliveryFailure(step, null, `${what(step)} at ${host} could not be reached (network error)`);
}

/**
 * Cloudflare's own answers when it could not reach an origin on the Worker's behalf (its 52x and
 * 530 statuses), said in words beside the status: the receiver did not send them.
 */
const EDGE_STATUS: Record<number, { words: string; outcome: ConnectionOutcome }> = {
  521: { words: "the origin refused the connection", outcome: "connection_refused" },
  522: { words: "the connection to the origin timed out", outcome: "timeout" },
  523: { words: "the origin is unreachable", outcome: "network_error" },
  524: { words: "the origin did not answer in time", outcome: "timeout" },
  525: { words: "the TLS handshake with the origin failed", outcome: "tls_failure" },
  526: { words: "the origin's TLS certificate is invalid", outcome: "tls_failure" },
  530: { words: "the origin's host could not be resolved or reached", outcome: "dns_failure" },
};
const edgeWords = (status: number): string => {
  const edge = EDGE_STATUS[status];
  return edge === undefined ? "" : ` (Cloudflare: ${edge.words})`;
};

/** Reads at most `max` bytes of a body as text, within the deadline; larger bodies are a failure. */
async function readText(res: Response, max: number, step: Step, deadline: Deadline): Promise<string> {
  let bytes: Uint8Array | null;
  try {
    bytes = await readCapped(res.body, max, deadline.signal);
  } catch {
    if (deadline.signal.aborted) throw timedOut(step, deadline, res.status, "reading the answer of");
    throw new DeliveryFailure(step, res.status, `${what(step)}'s answer broke off (network error)`);
  }
  if (bytes === null) throw new DeliveryFailure(step, res.status, `${what(step)} answered more than ${max} bytes`);
  return new TextDecoder().decode(bytes);
}

function guard(deps: Deps, step: Step, url: URL | string): URL {
  const check = checkTarget(url, { allowInsecure: deps.config.allowInsecureTargets });
  if (!check.ok) throw new DeliveryFailure(step, null, `${what(step)} refused: ${check.reason}`, null, "refused_by_ssrf_guard");
  return check.url;
}

/**
 * The client-credentials grant at the receiver's token URL with the configuration's method
 * (receiver-auth.ts; spec 4.3's form by default), with a DPoP proof when the configuration asks
 * for DPoP-bound tokens: a `use_dpop_nonce` answer (RFC 9449 8) is answered once, with the nonce.
 * `beforeRequest` is asked before every request leaves (each hop, each round); a refusal throws
 * RequestStopped.
 */
export async function requestReceiverToken(
  deps: Deps,
  config: WebhookConfigurationRecord,
  credentials: TokenCredentials,
  deadline: Deadline,
  beforeRequest: BeforeRequest = go,
): Promise<ReceiverToken> {
  const o = receiverOAuth(config);
  let nonce: string | null = null;
  for (let round = 0; ; round++) {
    const parts = await tokenRequest(o, credentials.clientSecret, credentials.assertionKey, deps.now());
    const proof = credentials.dpopKey === null ? null : await dpopProof(credentials.dpopKey, "POST", o.token_url, deps.now(), { nonce });
    try {
      const token = await tokenExchange(deps, o.token_url, parts, proof, deadline, beforeRequest);
      if (credentials.dpopKey !== null && token.tokenType?.toLowerCase() !== "dpop") {
        throw new DeliveryFailure(
          "token",
          200,
          `token endpoint issued a ${token.tokenType ?? "token without token_type"} token, not a DPoP-bound one (the configuration asks for DPoP)`,
          null,
          "http_error",
        );
      }
      return token;
    } catch (err) {
      if (err instanceof NonceAsked && round === 0 && credentials.dpopKey !== null) {
        nonce = err.nonce;
        continue;
      }
      if (err instanceof NonceAsked) throw err.failure;
      throw err;
    }
  }
}

/** A token endpoint that asked for a DPoP nonce: the request is made once more with it. */
class NonceAsked extends Error {
  constructor(
    readonly nonce: string,
    readonly failure: DeliveryFailure,
  ) {
    super("use_dpop_nonce");
  }
}

async function tokenExchange(
  deps: Deps,
  tokenUrl: string,
  parts: TokenRequestParts,
  proof: string | null,
  deadline: Deadline,
  beforeRequest: BeforeRequest,
): Promise<ReceiverToken> {
  let url = guard(deps, "token", tokenUrl);
  const origin = url.origin;
  let withCredentials = true;

  for (let hop = 0; ; hop++) {
    const headers: Record<string, string> = withCredentials
      ? { "Content-Type": FORM, Accept: "application/json" }
      : { Accept: "application/json" };
    if (withCredentials && parts.authorization !== null) headers.Authorization = parts.authorization;
    if (withCredentials && proof !== null) headers.DPoP = proof;
    // The last step before the request leaves: a redirect's hop, like the first, waits for a go.
    const stopped = await beforeRequest();
    if (stopped !== null) throw new RequestStopped(stopped);
    const res = await timedFetch(
      "token",
      url,
      { method: withCredentials ? "POST" : "GET", headers, ...(withCredentials ? { body: parts.form } : {}) },
      deadline,
    );
    const location = res.headers.get("location");
    if (res.status >= 300 && res.status < 400 && location !== null) {
      await res.body?.cancel();
      if (hop === MAX_REDIRECTS)
        throw new DeliveryFailure(
          "token",
          res.status,
          `token endpoint redirected more than ${MAX_REDIRECTS} times`,
          null,
          "redirect_refused",
        );
      let next: URL;
      try {
        next = new URL(location, url);
      } catch {
        throw new DeliveryFailure("token", res.status, "token endpoint redirected to an invalid URL", null, "redirect_refused");
      }
      if (res.status === 307 || res.status === 308) {
        // These repeat the POST with its body: the credentials must stay with the origin they were meant for.
        if (withCredentials && next.origin !== origin) {
          throw new DeliveryFailure(
            "token",
            res.status,
            "token endpoint redirected to another origin; credentials are not forwarded",
            null,
            "redirect_refused",
          );
        }
      } else {
        withCredentials = false; // RFC 9110 15.4: 301/302/303 after POST continue as GET, without the body
      }
      url = guard(deps, "token", next);
      continue;
    }

    const text = await readText(res, MAX_TOKEN_RESPONSE_BYTES, "token", deadline);
    let json: unknown = null;
    try {
      json = JSON.parse(text);
    } catch {
      // Reported below with the status.
    }
    const body = typeof json === "object" && json !== null && !Array.isArray(json) ? (json as Record<string, unknown>) : null;
    if (!res.ok) {
      const code = registeredError(body);
      const said = code === null ? null : receiverDescription(body, requestSecrets(parts));
      const failure = new DeliveryFailure(
        "token",
        res.status,
        `token endpoint answered ${res.status}${edgeWords(res.status)}${code === null ? "" : ` (error: ${code}${said === null ? "" : `: "${said}"`})`}`,
        retryAfter(res),
        EDGE_STATUS[res.status]?.outcome ?? "http_error",
        code,
      );
      const nonce = proof === null ? null : nonceAsked(res.status, res.headers, typeof body?.error === "string" ? body.error : null);
      if (nonce !== null) throw new NonceAsked(nonce, failure);
      throw failure;
    }
    if (body === null) throw new DeliveryFailure("token", res.status, "token endpoint did not answer a JSON object", null, "not_json");
    const accessToken = body.access_token;
    if (typeof accessToken !== "string" || accessToken === "") {
      throw new DeliveryFailure(
        "token",
        res.status,
        "token endpoint answered without a non-empty string access_token",
        null,
        "no_access_token",
      );
    }
    const expiresIn = body.expires_in;
    const tokenType = body.token_type;
    return {
      accessToken,
      expiresInSeconds: typeof expiresIn === "number" && Number.isFinite(expiresIn) && expiresIn > 0 ? expiresIn : null,
      tokenType: typeof tokenType === "string" && /^[A-Za-z][A-Za-z0-9_-]{0,31}$/.test(tokenType) ? tokenType : null,
    };
  }
}

/** POSTs the webhook within the deadline; returns the receiver's status (redirects are not followed). */
export async function postWebhook(
  deps: Deps,
  target: string,
  headers: Record<string, string>,
  body: string,
  deadline: Deadline,
  secrets: () => Promise<string[]>,
): Promise<{
  status: number;
  retryAfterSeconds: number | null;
  response: AttemptResponse | null;
  dpopNonce: string | null;
  directive: ReceiverDirective | null;
}> {
  const url = guard(deps, "webhook", target);
  const res = await timedFetch("webhook", url, { method: "POST", headers, body }, deadline);
  const directive = directiveOf(res.headers);
  if (res.status >= 200 && res.status < 300) {
    // Delivered: the body is not wanted, so it is not waited for (a receiver that stalls it after
    // a 2xx has still received the webhook).
    await res.body?.cancel().catch(() => undefined);
    return { status: res.status, retryAfterSeconds: retryAfter(res), response: null, dpopNonce: null, directive };
  }
  // A resource server's nonce challenge (RFC 9449 9) to a DPoP-bound webhook: answered once by the caller.
  const dpopNonce = "DPoP" in headers ? nonceAsked(res.status, res.headers, null) : null;
  return {
    status: res.status,
    retryAfterSeconds: retryAfter(res),
    response: await responseOf(res, secrets, deadline),
    dpopNonce,
    directive,
  };
}

/**
 * What a receiver asks of its own deliveries with a `webhook-delivery` answer header
 * (docs/receivers.md, "The receiver's say"): `disable` its configuration, or `abort-message` (stop
 * retrying this delivery). Anything else, or no header, asks nothing.
 */
export type ReceiverDirective = "disable" | "abort";
function directiveOf(headers: Headers): ReceiverDirective | null {
  const value = headers.get("webhook-delivery")?.trim().toLowerCase();
  return value === "disable" ? "disable" : value === "abort-message" ? "abort" : null;
}

/**
 * `invalid_client` from a token endpoint's error body: its `error` only when it is a registered
 * code (a code made up to carry the secret, `invalid_client_<secret>`, is not). Nothing else of
 * the body is kept.
 */
function registeredError(body: Record<string, unknown> | null): string | null {
  const code = body?.error;
  return typeof code === "string" && REGISTERED_ERRORS.has(code) ? code : null;
}

/** Of a token endpoint's `error_description`, the characters kept. */
const DESCRIPTION_CHARS = 200;

/**
 * The token endpoint's `error_description`, which says why it refused (an assertion's `aud`, a
 * client it does not know): kept beside a registered code only, when it is RFC 6749 5.2's
 * charset (printable ASCII without `"` and `\`), at most DESCRIPTION_CHARS, and reveals none of
 * the request's secrets by the body excerpt's rule (`revealsSecret`: raw, encoded, split,
 * reversed or escaped). Anything else is dropped whole, never trimmed into shape.
 */
function receiverDescription(body: Record<string, unknown> | null, secrets: readonly string[]): string | null {
  const text = body?.error_description;
  if (typeof text !== "string" || text === "" || text.length > DESCRIPTION_CHARS) return null;
  if (!/^[\x20-\x21\x23-\x5b\x5d-\x7e]+$/.test(text)) return null;
  return revealsSecret(text, secrets) ? null : text;
}

/** What of a token request is secret: the client secret, in the form or in HTTP Basic, and an assertion. */
function requestSecrets(parts: TokenRequestParts): string[] {
  const form = new URLSearchParams(parts.form);
  const found = [form.get("client_secret"), form.get("client_assertion")];
  const basic = parts.authorization?.startsWith("Basic ") ? parts.authorization.slice(6) : null;
  if (basic !== null) {
    found.push(basic);
    try {
      const pair = atob(basic);
      const colon = pair.indexOf(":");
      found.push(decodeURIComponent(pair.slice(colon + 1).replace(/\+/g, " ")));
    } catch {
      // Not ours to judge: the header was made by tokenRequest.
    }
  }
  return found.filter((v): v is string => v !== null && v !== "");
}

/**
 * Whether `text` reveals any of `secrets`: any SECRET_WINDOW characters in a row of one, raw or
 * encoded (`mentionsSecret`), or once both are flattened (HTML entities and `\u`, `\x` and
 * percent escapes decoded, then only letters and digits kept, lower-cased), forwards or reversed.
 * The flattening finds a secret split into chunks, spaced out, reversed, re-cased or escaped.
 */
export function revealsSecret(text: string, secrets: readonly string[]): boolean {
  const flat = flatten(text);
  for (const secret of secrets) {
    if (secret === "") continue;
    if (mentionsSecret(text, secret)) return true;
    const forward = flatten(secret);
    for (const form of [forward, [...forward].reverse().join("")]) {
      if (form.length <= SECRET_WINDOW) {
        if (form !== "" && flat.includes(form)) return true;
        continue;
      }
      for (let i = 0; i + SECRET_WINDOW <= form.length; i++) {
        if (flat.includes(form.slice(i, i + SECRET_WINDOW))) return true;
      }
    }
  }
  return false;
}

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: " " };

/** Escapes decoded (HTML numeric and named entities, `\uXXXX`, `\xXX`, `%XX`), then letters and digits only, lower-cased. */
function flatten(text: string): string {
  const decoded = text
    .replace(/&#x([0-9a-f]{1,6});?/gi, (_, h: string) => safeChar(Number.parseInt(h, 16)))
    .replace(/&#([0-9]{1,7});?/g, (_, d: string) => safeChar(Number.parseInt(d, 10)))
    .replace(/&([a-z]+);/gi, (m, name: string) => ENTITIES[name.toLowerCase()] ?? m)
    .replace(/\\u\{?([0-9a-f]{1,6})\}?/gi, (_, h: string) => safeChar(Number.parseInt(h, 16)))
    .replace(/\\x([0-9a-f]{2})/gi, (_, h: string) => safeChar(Number.parseInt(h, 16)))
    .replace(/%([0-9a-f]{2})/gi, (_, h: string) => safeChar(Number.parseInt(h, 16)));
  return decoded.toLowerCase().replace(/[^a-z0-9]/g, "");
}

const safeChar = (code: number): string => (code >= 0 && code <= 0x10ffff ? String.fromCodePoint(code) : "");

/**
 * What keyway keeps of the webhook URL's answer to a failed attempt: Content-Type and Retry-After
 * (bounded, printable), and the body's first EXCERPT_CHARS characters, withheld when it reveals a
 * secret. Read within the attempt's deadline, at most EXCERPT_BYTES.
 */
async function responseOf(res: Response, secrets: () => Promise<string[]>, deadline: Deadline): Promise<AttemptResponse> {
  const header = (name: string, max: number) => {
    const value = res.headers.get(name);
    return value === null ? null : printable(value).slice(0, max);
  };
  let text = "";
  try {
    // Its own short wait inside the attempt's deadline: a receiver that stalls the body of an
    // error costs the log its excerpt, never the attempt its outcome.
    const signal = AbortSignal.any([deadline.signal, AbortSignal.timeout(EXCERPT_WAIT_MS)]);
    const bytes = await readCapped(res.body, EXCERPT_BYTES, signal, { truncate: true });
    text = bytes === null ? "" : new TextDecoder().decode(bytes);
  } catch {
    text = "";
  }
  const withheld = text !== "" && revealsSecret(text, await secrets());
  const excerpt = withheld || text === "" ? null : printable(text).slice(0, EXCERPT_CHARS);
  return {
    content_type: header("content-type", 100),
    retry_after: header("retry-after", 64),
    body_excerpt: excerpt,
    body_withheld: withheld,
  };
}

/** Printable ASCII and ordinary Unicode kept; control characters (terminal escapes included) as `?`. */
const printable = (value: string): string => [...value].map((c) => (isControl(c.codePointAt(0) ?? 0) ? "?" : c)).join("");

/** C0 controls but tab and newline, DEL, and C1 controls. */
const isControl = (code: number): boolean => (code < 0x20 && code !== 0x09 && code !== 0x0a) || (code >= 0x7f && code <= 0x9f);

/**
 * Whether `text` holds any SECRET_WINDOW characters in a row of the secret, raw or in an encoding
 * a server might echo it in: percent- or form-encoded, JSON-escaped, hex, base64 or base64url
 * (from each of the three byte alignments, so a piece of an encoded secret is found too).
 * Percent and hex are compared without regard to case. Short secrets are looked for whole.
 */
export function mentionsSecret(text: string, secret: string): boolean {
  if (secret === "") return false;
  const lower = text.toLowerCase();
  const bytes = encodeUtf8(secret);
  const forms: [string, boolean][] = [
    [secret, false],
    [encodeURIComponent(secret), true],
    [new URLSearchParams({ s: secret }).toString().slice(2), true],
    [JSON.stringify(secret).slice(1, -1), false],
    [hex(bytes), true],
  ];
  for (let shift = 0; shift < 3 && shift < bytes.byteLength; shift++) {
    forms.push([base64Encode(bytes.subarray(shift)).replace(/=+$/, ""), false], [base64UrlEncode(bytes.subarray(shift)), false]);
  }
  for (const [form, anyCase] of forms) {
    const haystack = anyCase ? lower : text;
    const needle = anyCase ? form.toLowerCase() : form;
    if (needle.length <= SECRET_WINDOW) {
      if (haystack.includes(needle)) return true;
      continue;
    }
    for (let i = 0; i + SECRET_WINDOW <= needle.length; i++) {
      if (haystack.includes(needle.slice(i, i + SECRET_WINDOW))) return true;
    }
  }
  return false;
}

/** Retry-After as delay-seconds or an HTTP date (RFC 9110 10.2.3); null when absent or bad. */
function retryAfter(res: Response): number | null {
  const value = res.headers.get("retry-after");
  if (value === null) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}
