/**
 * The two outbound requests of a delivery attempt (spec 4.3, 6), under one deadline (the
 * attempt's AbortSignal): first the client-credentials grant at the receiver's token URL,
 * form-encoded (RFC 6749 4.4.2), redirects followed by hand so each hop passes the SSRF guard, at
 * most MAX_REDIRECTS, credentials never sent to another origin (307/308 keep the body, so only
 * same-origin; 301/302/303 become a GET without it); then the webhook itself, whose redirects are
 * not followed. Every read is capped and cut off by the deadline, a body that stalls included.
 *
 * What a receiver says is never stored as it came: a failure keeps only parsed, bounded fields
 * (the HTTP status, the OAuth `error` code, the spec's short `message`), each dropped if it holds
 * 8 characters in a row of the client secret, raw or encoded (percent, form, JSON, base64, hex).
 * Failures are DeliveryFailure values.
 */
import type { Deps } from "../deps";
import { base64Encode, base64UrlEncode, encodeUtf8, hex } from "../lib/encoding";
import { readCapped } from "../lib/streams";
import type { DeliveryAttempt, ReceiverTokenRequestBody, WebhookConfigurationRecord } from "../schemas/webhooks";
import { checkTarget } from "./ssrf";

export const MAX_REDIRECTS = 5;
const MAX_TOKEN_RESPONSE_BYTES = 64 * 1024;
const FORM = "application/x-www-form-urlencoded";
/** RFC 6749 5.2's registered codes and their like: lower-case words joined by `_`, at most 40. */
const OAUTH_ERROR_CODE = /^[a-z]+(_[a-z]+)*$/;
const MAX_ERROR_CODE_CHARS = 40;
const MAX_MESSAGE_CHARS = 120;
/** A longer `message` is not kept at all (it is not a short error message). */
const MAX_MESSAGE_SCANNED = 2_000;
/** A run of this many characters of a secret counts as the secret. */
const SECRET_WINDOW = 8;

type Step = Extract<DeliveryAttempt["step"], "token" | "webhook">;

export class DeliveryFailure extends Error {
  constructor(
    readonly step: Step,
    readonly httpStatus: number | null,
    message: string,
    /** Seconds the receiver asked us to wait (429/503 Retry-After). */
    readonly retryAfterSeconds: number | null = null,
  ) {
    super(message);
    this.name = "DeliveryFailure";
  }
}

export interface ReceiverToken {
  accessToken: string;
  /** From the token response's expires_in, when it gives one. */
  expiresInSeconds: number | null;
}

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
  return new DeliveryFailure(step, status, `the attempt's ${deadline.seconds} s deadline passed ${phase} the ${what(step)}`);
}

async function timedFetch(step: Step, url: URL, init: RequestInit, deadline: Deadline): Promise<Response> {
  try {
    return await fetch(url, { ...init, redirect: "manual", signal: deadline.signal });
  } catch {
    if (deadline.signal.aborted) throw timedOut(step, deadline, null, "waiting for");
    throw new DeliveryFailure(step, null, `${what(step)} could not be reached (network error)`);
  }
}

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
  if (!check.ok) throw new DeliveryFailure(step, null, `${what(step)} refused: ${check.reason}`);
  return check.url;
}

export async function requestReceiverToken(
  deps: Deps,
  config: WebhookConfigurationRecord,
  clientSecret: string,
  deadline: Deadline,
): Promise<ReceiverToken> {
  // Field order as in spec 4.3's table.
  const fields: ReceiverTokenRequestBody = {
    client_id: config.oauth.client_id,
    client_secret: clientSecret,
    grant_type: "client_credentials",
  };
  const form = new URLSearchParams(fields).toString();
  let url = guard(deps, "token", config.oauth.token_url);
  const origin = url.origin;
  let withCredentials = true;

  for (let hop = 0; ; hop++) {
    const res = await timedFetch(
      "token",
      url,
      {
        method: withCredentials ? "POST" : "GET",
        headers: withCredentials ? { "Content-Type": FORM, Accept: "application/json" } : { Accept: "application/json" },
        ...(withCredentials ? { body: form } : {}),
      },
      deadline,
    );
    const location = res.headers.get("location");
    if (res.status >= 300 && res.status < 400 && location !== null) {
      await res.body?.cancel();
      if (hop === MAX_REDIRECTS)
        throw new DeliveryFailure("token", res.status, `token endpoint redirected more than ${MAX_REDIRECTS} times`);
      let next: URL;
      try {
        next = new URL(location, url);
      } catch {
        throw new DeliveryFailure("token", res.status, "token endpoint redirected to an invalid URL");
      }
      if (res.status === 307 || res.status === 308) {
        // These repeat the POST with its body: the credentials must stay with the origin they were meant for.
        if (withCredentials && next.origin !== origin) {
          throw new DeliveryFailure("token", res.status, "token endpoint redirected to another origin; credentials are not forwarded");
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
      throw new DeliveryFailure(
        "token",
        res.status,
        `token endpoint answered ${res.status}${receiverSaid(body, clientSecret)}`,
        retryAfter(res),
      );
    }
    if (body === null) throw new DeliveryFailure("token", res.status, "token endpoint did not answer a JSON object");
    const accessToken = body.access_token;
    if (typeof accessToken !== "string" || accessToken === "") {
      throw new DeliveryFailure("token", res.status, "token endpoint answered without a non-empty string access_token");
    }
    const expiresIn = body.expires_in;
    return {
      accessToken,
      expiresInSeconds: typeof expiresIn === "number" && Number.isFinite(expiresIn) && expiresIn > 0 ? expiresIn : null,
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
): Promise<{ status: number; retryAfterSeconds: number | null }> {
  const url = guard(deps, "webhook", target);
  const res = await timedFetch("webhook", url, { method: "POST", headers, body }, deadline);
  // The status is the answer; the body is never used, so it is not waited for (a receiver that
  // stalls it after a 2xx has still received the webhook).
  await res.body?.cancel().catch(() => undefined);
  return { status: res.status, retryAfterSeconds: retryAfter(res) };
}

/**
 * ` (error: invalid_client; message: ...)` from a token endpoint's error body: the OAuth `error`
 * code (RFC 6749 5.2; lower-case words, at most 40 characters) and the spec's `message` (2.4; at
 * most 120 printable characters), each only when free of the secret. Nothing else of the body is
 * kept. The whole message is checked, before it is shortened.
 */
function receiverSaid(body: Record<string, unknown> | null, secret: string): string {
  const parts: string[] = [];
  const code = body?.error;
  if (typeof code === "string" && code.length <= MAX_ERROR_CODE_CHARS && OAUTH_ERROR_CODE.test(code) && !mentionsSecret(code, secret)) {
    parts.push(`error: ${code}`);
  }
  const message = body?.message;
  if (typeof message === "string" && message !== "" && message.length <= MAX_MESSAGE_SCANNED && !mentionsSecret(message, secret)) {
    parts.push(`message: ${message.replace(/[^\x20-\x7e]/g, "?").slice(0, MAX_MESSAGE_CHARS)}`);
  }
  return parts.length === 0 ? "" : ` (${parts.join("; ")})`;
}

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
