/**
 * The two outbound requests of a delivery (spec 4.3, 6). First the client-credentials grant at
 * the receiver's token URL: form-encoded (RFC 6749 4.4.2), redirects followed by hand so each
 * hop passes the SSRF guard, at most MAX_REDIRECTS, credentials never sent to another origin
 * (307/308 keep the body, so only same-origin; 301/302/303 become a GET without it). Then the
 * webhook itself, whose redirects are not followed. Every fetch has a timeout and a capped read;
 * failures are DeliveryFailure values with a short, secret-free reason.
 */
import type { Deps } from "../deps";
import { readCapped } from "../lib/streams";
import type { WebhookConfigurationRecord } from "../schemas/webhooks";
import { checkTarget } from "./ssrf";

export const MAX_REDIRECTS = 5;
const MAX_TOKEN_RESPONSE_BYTES = 64 * 1024;
const MAX_WEBHOOK_RESPONSE_BYTES = 16 * 1024;
const FORM = "application/x-www-form-urlencoded";

export class DeliveryFailure extends Error {
  constructor(
    readonly step: "token" | "webhook",
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

async function timedFetch(deps: Deps, step: DeliveryFailure["step"], url: URL, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, { ...init, redirect: "manual", signal: AbortSignal.timeout(deps.config.webhookTimeoutMs) });
  } catch (err) {
    const name = err instanceof Error ? err.name : "";
    if (name === "TimeoutError" || name === "AbortError") {
      throw new DeliveryFailure(step, null, `${what(step)} timed out after ${deps.config.webhookTimeoutMs / 1000} s`);
    }
    throw new DeliveryFailure(step, null, `${what(step)} could not be reached (network error)`);
  }
}

const what = (step: DeliveryFailure["step"]) => (step === "token" ? "token endpoint" : "webhook URL");

/** Reads at most `max` bytes of a body as text; larger bodies are a failure, not a truncation. */
async function readText(res: Response, max: number, step: DeliveryFailure["step"]): Promise<string> {
  const bytes = await readCapped(res.body, max);
  if (bytes === null) throw new DeliveryFailure(step, res.status, `${what(step)} answered more than ${max} bytes`);
  return new TextDecoder().decode(bytes);
}

function guard(deps: Deps, step: DeliveryFailure["step"], url: URL | string): URL {
  const check = checkTarget(url, { allowInsecure: deps.config.allowInsecureTargets });
  if (!check.ok) throw new DeliveryFailure(step, null, `${what(step)} refused: ${check.reason}`);
  return check.url;
}

/** Printable, bounded, and free of the secret we sent (a receiver might echo it). */
function clean(text: unknown, secret: string): string | null {
  if (typeof text !== "string" || text === "") return null;
  return text
    .replaceAll(secret, "[redacted]")
    .replace(/[^\x20-\x7e]/g, "?")
    .slice(0, 200);
}

export async function requestReceiverToken(deps: Deps, config: WebhookConfigurationRecord, clientSecret: string): Promise<ReceiverToken> {
  // Field order as in spec 4.3's table.
  const form = new URLSearchParams({
    client_id: config.oauth.client_id,
    client_secret: clientSecret,
    grant_type: "client_credentials",
  }).toString();
  let url = guard(deps, "token", config.oauth.token_url);
  const origin = url.origin;
  let withCredentials = true;

  for (let hop = 0; ; hop++) {
    const res = await timedFetch(deps, "token", url, {
      method: withCredentials ? "POST" : "GET",
      headers: withCredentials ? { "Content-Type": FORM, Accept: "application/json" } : { Accept: "application/json" },
      ...(withCredentials ? { body: form } : {}),
    });
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

    const text = await readText(res, MAX_TOKEN_RESPONSE_BYTES, "token");
    let json: unknown = null;
    try {
      json = JSON.parse(text);
    } catch {
      // Reported below with the status.
    }
    const body = typeof json === "object" && json !== null ? (json as Record<string, unknown>) : null;
    if (!res.ok) {
      // Spec 2.4: error replies carry `message` (and `description`).
      const reason = clean(body?.message, clientSecret) ?? clean(body?.error_description, clientSecret) ?? clean(body?.error, clientSecret);
      const detail = [reason, clean(body?.description, clientSecret)].filter(Boolean).join(" - ");
      throw new DeliveryFailure(
        "token",
        res.status,
        `token endpoint answered ${res.status}${detail ? `: ${detail}` : ""}`,
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

/** POSTs the webhook; returns the receiver's status (redirects are not followed). */
export async function postWebhook(
  deps: Deps,
  target: string,
  headers: Record<string, string>,
  body: string,
): Promise<{ status: number; retryAfterSeconds: number | null }> {
  const url = guard(deps, "webhook", target);
  const res = await timedFetch(deps, "webhook", url, { method: "POST", headers, body });
  // The body is not used, but reading (a bounded amount of) it lets the connection be reused.
  await readText(res, MAX_WEBHOOK_RESPONSE_BYTES, "webhook").catch(() => undefined);
  return { status: res.status, retryAfterSeconds: retryAfter(res) };
}

/** Retry-After as delay-seconds or an HTTP date (RFC 9110 10.2.3); null when absent or bad. */
function retryAfter(res: Response): number | null {
  const value = res.headers.get("retry-after");
  if (value === null) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}
