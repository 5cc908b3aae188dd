/**
 * An example webhook receiver for keyway, showing the two checks a real receiver should make on
 * every delivery: the Standard Webhooks signature (https://www.standardwebhooks.com/), which proves
 * the body came from keyway unmodified and recently, and the OAuth Bearer token, which proves keyway
 * holds client credentials issued by the receiver's own authorization server (here
 * examples/oauth-server.mjs, asked through its loopback introspection endpoint). It serves
 * `POST /webhooks` and answers 204 when both checks pass, 401 when the token is missing or not
 * active, 400 when the signature (or timestamp) is wrong, and 503 when it cannot ask the OAuth
 * server, so that keyway retries instead of recording a false rejection. Every request is logged
 * and kept in memory; `GET /received` returns them as JSON for scripts and tests. Node built-ins
 * only; it listens on 127.0.0.1.
 *
 * Environment: SIGNING_SECRET (required: the whsec_... value keyway returns when the webhook
 * configuration is created), OAUTH_SERVER (default http://127.0.0.1:9001), RECEIVER_PORT (default 9002;
 * not PORT, which is keyway's own under `npm start`).
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer } from "node:http";

const HOST = "127.0.0.1";
const WEBHOOK_PATH = "/webhooks";
const RECEIVED_PATH = "/received";
const MAX_BODY_BYTES = 1024 * 1024;
// The Standard Webhooks default tolerance: long enough for clock skew and slow networks, short
// enough that a captured delivery cannot be replayed later.
const TIMESTAMP_TOLERANCE_S = 5 * 60;
const INTROSPECT_TIMEOUT_MS = 5_000;
// Only the recent past matters for a demo; a cap keeps a long-running receiver's memory bounded.
const MAX_REMEMBERED = 200;

const port = parsePort(process.env.RECEIVER_PORT, 9002);
const signingKey = parseSigningSecret(process.env.SIGNING_SECRET);
const oauthServer = (process.env.OAUTH_SERVER || "http://127.0.0.1:9001").replace(/\/+$/, "");

/**
 * @typedef {object} Delivery
 * @property {string} received_at ISO time this receiver got the request
 * @property {number} status the HTTP status we answered
 * @property {string | null} webhook_id
 * @property {string | null} webhook_timestamp
 * @property {boolean} signature_ok
 * @property {boolean | null} token_ok null when the OAuth server could not be asked
 * @property {boolean} duplicate a webhook-id seen before with a good delivery (a retry or replay)
 * @property {string | null} reason why the delivery was rejected, null when accepted
 * @property {unknown} event the parsed body, null when it was not JSON
 */

/** @type {Delivery[]} */
const received = [];
/** webhook-ids already accepted: Standard Webhooks asks receivers to be idempotent on the id. */
const acceptedIds = new Set();

const server = createServer((req, res) => {
  const url = new URL(req.url ?? "/", `http://${HOST}`);
  if (url.pathname === WEBHOOK_PATH && req.method === "POST") {
    receive(req)
      .then(({ status, reason }) => sendJson(res, status, reason ? { error: reason.code, message: reason.message } : undefined))
      .catch((/** @type {unknown} */ err) => {
        console.error(`receiver: ${err instanceof Error ? err.message : String(err)}`);
        sendJson(res, 500, { error: "server_error", message: "internal error" });
      });
    return;
  }
  if (url.pathname === RECEIVED_PATH && req.method === "GET") {
    sendJson(res, 200, received);
    return;
  }
  if (url.pathname === WEBHOOK_PATH || url.pathname === RECEIVED_PATH) {
    sendJson(
      res,
      405,
      { error: "method_not_allowed", message: `use ${url.pathname === WEBHOOK_PATH ? "POST" : "GET"}` },
      {
        Allow: url.pathname === WEBHOOK_PATH ? "POST" : "GET",
      },
    );
    return;
  }
  sendJson(res, 404, { error: "not_found", message: `webhooks go to POST ${WEBHOOK_PATH}` });
});

/**
 * Checks one delivery, logs it, remembers it and decides the status.
 * @param {import("node:http").IncomingMessage} req
 * @returns {Promise<{status: number, reason: {code: string, message: string} | null}>}
 */
async function receive(req) {
  const body = await readBody(req, MAX_BODY_BYTES);
  if (body === null) {
    // Nothing was verified, so there is nothing worth printing beyond the refusal itself.
    console.log(`${new Date().toISOString()} webhook rejected: body larger than ${MAX_BODY_BYTES} bytes -> 413`);
    return { status: 413, reason: { code: "payload_too_large", message: `body exceeds ${MAX_BODY_BYTES} bytes` } };
  }

  const id = headerValue(req, "webhook-id");
  const timestamp = headerValue(req, "webhook-timestamp");
  const signature = verifySignature(id, timestamp, headerValue(req, "webhook-signature"), body);
  // Both checks always run, even when the first fails, so the log shows everything wrong at once.
  const token = await checkToken(req.headers.authorization);

  /** @type {unknown} */
  let event = null;
  try {
    event = JSON.parse(body.toString("utf8"));
  } catch {
    event = null;
  }

  // Authentication before content: a caller without a valid token learns nothing about the
  // signature. An unreachable OAuth server is our problem, not the sender's, hence 503 (retryable).
  /** @type {{code: string, message: string} | null} */
  let reason = null;
  let status = 204;
  if (token.ok === null) {
    [status, reason] = [503, { code: "introspection_unavailable", message: token.message }];
  } else if (!token.ok) {
    [status, reason] = [401, { code: "invalid_token", message: token.message }];
  } else if (!signature.ok) {
    [status, reason] = [400, { code: "invalid_signature", message: signature.message }];
  } else if (event === null || typeof event !== "object" || Array.isArray(event)) {
    [status, reason] = [400, { code: "invalid_payload", message: "the signed body is not a JSON object" }];
  }

  // A retry of a delivery we already accepted is still answered 204 (so the sender stops), but is
  // flagged so that a real handler would not act on it twice.
  const duplicate = status === 204 && id !== null && acceptedIds.has(id);
  if (status === 204 && id !== null) acceptedIds.add(id);

  const type = event && typeof event === "object" && "type" in event && typeof event.type === "string" ? event.type : "?";
  const contentType = req.headers["content-type"] ?? "";
  console.log(
    `${new Date().toISOString()} webhook id=${printable(id)} type=${printable(type)} ` +
      `signature=${signature.ok ? "ok" : `BAD (${signature.message})`} ` +
      `token=${token.ok === null ? "UNKNOWN" : token.ok ? "ok" : `BAD (${token.message})`} -> ${status}` +
      (duplicate ? " (duplicate webhook-id)" : "") +
      (/^application\/json\b/i.test(contentType) ? "" : ` [warning: Content-Type is ${JSON.stringify(contentType)}]`),
  );
  // JSON.stringify escapes control characters, so even an unverified body cannot mess up the terminal.
  console.log(event === null ? `  (body is not JSON, ${body.length} bytes)` : indent(JSON.stringify(event, null, 2)));

  remember({
    received_at: new Date().toISOString(),
    status,
    webhook_id: id,
    webhook_timestamp: timestamp,
    signature_ok: signature.ok,
    token_ok: token.ok,
    duplicate,
    reason: reason?.message ?? null,
    event,
  });
  return { status, reason };
}

/**
 * Standard Webhooks verification: HMAC-SHA256 over `${id}.${timestamp}.${body}` with the decoded
 * secret, matched against every `v1,` entry of the space-separated header (a sender rotating its
 * secret signs with both, so any one matching is enough).
 * @param {string | null} id
 * @param {string | null} timestamp
 * @param {string | null} header
 * @param {Buffer} body the raw bytes: re-serialized JSON would not match what was signed
 * @returns {{ok: boolean, message: string}}
 */
function verifySignature(id, timestamp, header, body) {
  if (id === null || timestamp === null || header === null) {
    return { ok: false, message: "missing webhook-id, webhook-timestamp or webhook-signature header" };
  }
  if (!/^\d{1,12}$/.test(timestamp)) return { ok: false, message: "webhook-timestamp is not unix seconds" };
  // The timestamp is part of the signed content, so checking its age after a good HMAC is what
  // turns the signature into replay protection.
  const skew = Math.floor(Date.now() / 1000) - Number(timestamp);
  if (Math.abs(skew) > TIMESTAMP_TOLERANCE_S) {
    return {
      ok: false,
      message: `webhook-timestamp is ${Math.abs(skew)}s ${skew > 0 ? "old" : "in the future"} (tolerance ${TIMESTAMP_TOLERANCE_S}s)`,
    };
  }

  const expected = Buffer.from(
    createHmac("sha256", signingKey).update(`${id}.${timestamp}.`, "utf8").update(body).digest("base64"),
    "ascii",
  );
  let matched = false;
  for (const entry of header.split(" ")) {
    if (!entry.startsWith("v1,")) continue; // other schemes (v1a: asymmetric) are not ours to check
    // Comparing the base64 text rather than decoded bytes: Buffer's base64 decoder skips junk
    // characters, and only the canonical encoding should count. timingSafeEqual needs equal
    // lengths; the length of a correct signature is public anyway (always 44 characters).
    const candidate = Buffer.from(entry.slice(3), "utf8");
    if (candidate.length === expected.length && timingSafeEqual(candidate, expected)) matched = true;
  }
  return matched ? { ok: true, message: "" } : { ok: false, message: "no v1 signature matches" };
}

/**
 * Validates the Bearer token by asking the OAuth server. ok is null when it could not be asked.
 * @param {string | undefined} authorization
 * @returns {Promise<{ok: boolean | null, message: string}>}
 */
async function checkToken(authorization) {
  const match = authorization === undefined ? null : /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(authorization);
  if (!match) return { ok: false, message: "no Bearer token in Authorization" };
  const introspectUrl = `${oauthServer}/introspect?token=${encodeURIComponent(match[1] ?? "")}`;
  try {
    const res = await fetch(introspectUrl, { signal: AbortSignal.timeout(INTROSPECT_TIMEOUT_MS) });
    if (res.status !== 200) {
      await res.body?.cancel();
      return { ok: null, message: `introspection answered ${res.status}` };
    }
    const answer = /** @type {{active?: unknown} | null} */ (await res.json());
    return answer?.active === true ? { ok: true, message: "" } : { ok: false, message: "token is not active (unknown or expired)" };
  } catch (err) {
    return { ok: null, message: `cannot reach ${oauthServer}: ${err instanceof Error ? err.message : String(err)}` };
  }
}

/**
 * Reads the raw body, or returns null once it exceeds `limit` (without buffering the excess).
 * @param {import("node:http").IncomingMessage} req
 * @param {number} limit
 * @returns {Promise<Buffer | null>}
 */
function readBody(req, limit) {
  return new Promise((resolve, reject) => {
    if (Number(req.headers["content-length"] ?? 0) > limit) {
      req.resume();
      resolve(null);
      return;
    }
    /** @type {Buffer[]} */
    const chunks = [];
    let size = 0;
    req.on("data", (/** @type {Buffer} */ chunk) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners("data");
        req.resume(); // discard the rest; the 413 closes the connection
        resolve(null);
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

/**
 * A single header value; a repeated header is treated as missing, since which copy was signed
 * would be ambiguous.
 * @param {import("node:http").IncomingMessage} req
 * @param {string} name lower-case
 * @returns {string | null}
 */
function headerValue(req, name) {
  const values = [];
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    if (req.rawHeaders[i]?.toLowerCase() === name) values.push(req.rawHeaders[i + 1] ?? "");
  }
  return values.length === 1 && values[0] !== "" ? (values[0] ?? null) : null;
}

/** @param {Delivery} delivery */
function remember(delivery) {
  received.push(delivery);
  if (received.length > MAX_REMEMBERED) received.splice(0, received.length - MAX_REMEMBERED);
}

/**
 * @param {import("node:http").ServerResponse} res
 * @param {number} status
 * @param {unknown} body undefined for no body (204)
 * @param {Record<string, string>} [headers]
 */
function sendJson(res, status, body, headers = {}) {
  if (res.headersSent) return;
  if (body === undefined) {
    res.writeHead(status, headers).end();
    return;
  }
  const text = `${JSON.stringify(body, null, 2)}\n`;
  res.writeHead(status, {
    "Content-Type": "application/json; charset=utf-8",
    "Content-Length": Buffer.byteLength(text),
    ...(status === 413 ? { Connection: "close" } : {}),
    ...headers,
  });
  res.end(text);
}

/**
 * Header values come from the network: quote them so that control characters cannot forge log lines.
 * @param {string | null} value
 */
function printable(value) {
  if (value === null) return "(none)";
  return /^[\x21-\x7e]{1,200}$/.test(value) ? value : JSON.stringify(value.slice(0, 200));
}

/** @param {string} text */
function indent(text) {
  return text.replace(/^/gm, "  ");
}

/**
 * The whsec_ prefix marks a Standard Webhooks secret; the key is the base64 text after it.
 * @param {string | undefined} value
 */
function parseSigningSecret(value) {
  const fail = (/** @type {string} */ message) => {
    console.error(`receiver: ${message}`);
    console.error("Usage: SIGNING_SECRET=whsec_... node examples/receiver.mjs   (the signing_secret keyway returned at creation)");
    process.exit(1);
  };
  if (!value) return fail("SIGNING_SECRET is required.");
  const encoded = value.startsWith("whsec_") ? value.slice("whsec_".length) : fail("SIGNING_SECRET must start with whsec_.");
  // Strict base64: a truncated or mangled paste should fail here, not as "bad signature" later.
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded) || encoded.length % 4 !== 0) return fail("SIGNING_SECRET is not whsec_ followed by base64.");
  const key = Buffer.from(encoded, "base64");
  if (key.length < 16) return fail(`SIGNING_SECRET decodes to only ${key.length} bytes; expected at least 16.`);
  return key;
}

/**
 * @param {string | undefined} value
 * @param {number} fallback
 */
function parsePort(value, fallback) {
  if (value === undefined || value === "") return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 65_535) {
    console.error(`receiver: RECEIVER_PORT must be an integer in 1..65535, got ${JSON.stringify(value)}.`);
    process.exit(1);
  }
  return n;
}

server.on("error", (err) => {
  console.error(`receiver: ${err.message}`);
  process.exit(1);
});

server.listen(port, HOST, () => {
  console.log(`Webhook receiver listening on http://${HOST}:${port}${WEBHOOK_PATH}`);
  console.log(`  tokens checked at ${oauthServer}/introspect; deliveries listed at http://${HOST}:${port}${RECEIVED_PATH}`);
});

for (const signal of /** @type {const} */ (["SIGINT", "SIGTERM"])) {
  process.on(signal, () => {
    server.close();
    server.closeAllConnections();
    process.exit(0);
  });
}
