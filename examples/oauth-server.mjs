/**
 * A tiny OAuth 2.0 token endpoint for trying keyway's webhooks locally: before each delivery keyway
 * fetches a token with the client credentials grant (RFC 6749 4.4) from the URL configured on the
 * webhook, and this server plays that receiver-side authorization server. It serves
 * `POST /oauth/token` (form body, client_secret_post or client_secret_basic) and, for the example
 * receiver, `GET /introspect?token=...` answering `{"active": boolean}`. Issued tokens live in
 * memory only, so restarting the server revokes them all. It listens on 127.0.0.1 only and uses
 * nothing but Node built-ins, so `node examples/oauth-server.mjs` is all it takes.
 *
 * Environment: TOKEN_SERVER_PORT (default 9001; not PORT, which is keyway's own under `npm start`,
 * so a shell that sets it for keyway starts this server on its own port), CLIENT_ID (default demo-receiver), CLIENT_SECRET (default: a
 * random one generated and printed at start), TOKEN_TTL in seconds (default 300).
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { createServer } from "node:http";

const HOST = "127.0.0.1";
const TOKEN_PATH = "/oauth/token";
const INTROSPECT_PATH = "/introspect";
// A client credentials request is three short fields; anything near this size is not one.
const MAX_BODY_BYTES = 8 * 1024;

const port = parseIntEnv("TOKEN_SERVER_PORT", 9001, 1, 65_535);
const clientId = process.env.CLIENT_ID || "demo-receiver";
const tokenTtl = parseIntEnv("TOKEN_TTL", 300, 1, 86_400);
const generatedSecret = !process.env.CLIENT_SECRET;
// 32 random bytes: guessing it is hopeless, and base64url needs no quoting in JSON, forms or shells.
const clientSecret = process.env.CLIENT_SECRET || randomBytes(32).toString("base64url");

// Digests of the expected credentials, computed once; see credentialsMatch for why digests.
const expectedIdDigest = sha256(clientId);
const expectedSecretDigest = sha256(clientSecret);

/** @type {Map<string, number>} access token -> expiry (ms since epoch) */
const tokens = new Map();

/**
 * An OAuth error (RFC 6749 5.2). `message`/`description` mirror keyway's own envelope fields, and
 * `error_description` is the standard field that generic OAuth clients read.
 */
class OAuthError extends Error {
  /**
   * @param {number} status
   * @param {string} code
   * @param {string} description
   * @param {Record<string, string>} [headers]
   */
  constructor(status, code, description, headers = {}) {
    super(description);
    this.status = status;
    this.code = code;
    this.headers = headers;
  }
}

const server = createServer((req, res) => {
  const started = Date.now();
  /** @type {string} a short note for the log line: never a secret or a token */
  let note = "";
  res.on("finish", () => {
    // The path only: the introspection query string carries a token.
    const path = (req.url ?? "").split("?")[0];
    console.log(`${new Date().toISOString()} ${req.method} ${path} ${res.statusCode} ${Date.now() - started}ms${note ? ` ${note}` : ""}`);
  });

  handle(req)
    .then((result) => {
      note = result.note;
      sendJson(res, result.status, result.body, result.headers);
    })
    .catch((/** @type {unknown} */ err) => {
      if (err instanceof OAuthError) {
        note = `${err.code}: ${err.message}`;
        sendJson(
          res,
          err.status,
          { error: err.code, message: errorMessage(err.code), description: err.message, error_description: err.message },
          err.headers,
        );
        return;
      }
      note = `internal error: ${err instanceof Error ? err.message : String(err)}`;
      sendJson(res, 500, { error: "server_error", message: "internal error", description: "see the server log" });
    });
});

/**
 * Routes one request.
 * @param {import("node:http").IncomingMessage} req
 * @returns {Promise<{status: number, body: unknown, headers?: Record<string, string>, note: string}>}
 */
async function handle(req) {
  const url = new URL(req.url ?? "/", `http://${HOST}`);
  if (url.pathname === TOKEN_PATH) {
    if (req.method !== "POST") throw new OAuthError(405, "invalid_request", "Use POST for the token endpoint.", { Allow: "POST" });
    return issueToken(req);
  }
  if (url.pathname === INTROSPECT_PATH) {
    if (req.method !== "GET") throw new OAuthError(405, "invalid_request", "Use GET for introspection.", { Allow: "GET" });
    // Introspection tells anyone holding a token whether it works, which is the receiver's business
    // only. We bind to 127.0.0.1 anyway, but the check keeps that true if the bind is ever widened.
    if (!isLoopback(req.socket.remoteAddress))
      throw new OAuthError(403, "access_denied", "Introspection is only served to loopback callers.");
    const token = url.searchParams.get("token") ?? "";
    return { status: 200, body: { active: isActive(token) }, note: "" };
  }
  throw new OAuthError(404, "not_found", `No route for ${req.method} ${url.pathname}; the token endpoint is POST ${TOKEN_PATH}.`);
}

/**
 * The client credentials grant: authenticate the client, then mint an opaque random token.
 * @param {import("node:http").IncomingMessage} req
 */
async function issueToken(req) {
  // RFC 6749 4.4.2 defines the request as application/x-www-form-urlencoded; keyway sends exactly
  // that, so a JSON body here means a misconfigured client and deserves a clear error, not a guess.
  const mediaType = (req.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase();
  if (mediaType !== "application/x-www-form-urlencoded") {
    throw new OAuthError(400, "invalid_request", "The body must be application/x-www-form-urlencoded (RFC 6749 4.4.2).");
  }
  const fields = parseForm((await readBody(req, MAX_BODY_BYTES)).toString("utf8"));

  // Client authentication first: RFC 6749 5.2 lets an unauthenticated caller learn nothing else.
  const basic = parseBasic(req.headers.authorization);
  const posted = fields.client_id !== undefined || fields.client_secret !== undefined;
  if (basic && posted) {
    // RFC 6749 2.3: a client MUST NOT use more than one authentication method in a request.
    throw new OAuthError(400, "invalid_request", "Send the client credentials either in the Basic header or in the body, not both.");
  }
  const credentials = basic ?? { id: fields.client_id ?? "", secret: fields.client_secret ?? "" };
  if (!credentialsMatch(credentials.id, credentials.secret)) {
    // RFC 6749 5.2: a client that tried the Authorization header gets 401 plus a challenge.
    const challenge = basic ? { "WWW-Authenticate": 'Basic realm="oauth", charset="UTF-8"' } : undefined;
    throw new OAuthError(401, "invalid_client", "Unknown client_id or wrong client_secret.", challenge);
  }

  if (fields.grant_type !== "client_credentials") {
    throw new OAuthError(
      400,
      fields.grant_type === undefined ? "invalid_request" : "unsupported_grant_type",
      "grant_type must be client_credentials.",
    );
  }

  pruneExpired();
  // Opaque on purpose: the receiver validates tokens by introspection, so they need no structure.
  const accessToken = randomBytes(32).toString("base64url");
  tokens.set(accessToken, Date.now() + tokenTtl * 1000);
  return {
    status: 200,
    body: { access_token: accessToken, token_type: "Bearer", expires_in: tokenTtl, message: "ok", description: "token issued" },
    note: `issued to ${clientId} (${basic ? "client_secret_basic" : "client_secret_post"}), ${tokens.size} active`,
  };
}

/**
 * Compares both credentials in constant time. Hashing first gives timingSafeEqual equal-length
 * inputs, so neither the secret's length nor the position of the first wrong byte leaks, and both
 * comparisons always run, so a right id with a wrong secret takes as long as a wrong id.
 * @param {string} id
 * @param {string} secret
 */
function credentialsMatch(id, secret) {
  const idOk = timingSafeEqual(sha256(id), expectedIdDigest);
  const secretOk = timingSafeEqual(sha256(secret), expectedSecretDigest);
  return idOk && secretOk;
}

/** @param {string} token */
function isActive(token) {
  const expiresAt = tokens.get(token);
  if (expiresAt === undefined) return false;
  if (expiresAt <= Date.now()) {
    tokens.delete(token);
    return false;
  }
  return true;
}

/** Drops expired tokens so that a long-running demo does not grow without bound. */
function pruneExpired() {
  const now = Date.now();
  for (const [token, expiresAt] of tokens) if (expiresAt <= now) tokens.delete(token);
}

/**
 * Parses a form body, refusing repeated parameters as RFC 6749 3.2 requires: with two client_ids,
 * which one was authenticated would be ambiguous.
 * @param {string} text
 * @returns {Record<string, string>}
 */
function parseForm(text) {
  /** @type {Record<string, string>} */
  const fields = Object.create(null);
  for (const [name, value] of new URLSearchParams(text)) {
    if (name in fields) throw new OAuthError(400, "invalid_request", `Parameter ${JSON.stringify(name.slice(0, 40))} is repeated.`);
    fields[name] = value;
  }
  return fields;
}

/**
 * HTTP Basic client authentication (RFC 6749 2.3.1): returns null without a Basic header. The id
 * and secret are form-urlencoded before base64, so they are decoded once more.
 * @param {string | undefined} header
 * @returns {{id: string, secret: string} | null}
 */
function parseBasic(header) {
  const match = header === undefined ? null : /^Basic +([A-Za-z0-9+/]+=*) *$/i.exec(header);
  if (!match) {
    if (header !== undefined && /^Basic\b/i.test(header))
      throw new OAuthError(400, "invalid_request", "Malformed Basic Authorization header.");
    return null;
  }
  const decoded = Buffer.from(match[1] ?? "", "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon < 0)
    throw new OAuthError(400, "invalid_request", "Malformed Basic Authorization header: expected base64(client_id:client_secret).");
  try {
    const formDecode = (/** @type {string} */ value) => decodeURIComponent(value.replaceAll("+", " "));
    return { id: formDecode(decoded.slice(0, colon)), secret: formDecode(decoded.slice(colon + 1)) };
  } catch {
    throw new OAuthError(400, "invalid_request", "Malformed Basic Authorization header: bad percent-encoding.");
  }
}

/**
 * Reads the whole body, refusing more than `limit` bytes without buffering them.
 * @param {import("node:http").IncomingMessage} req
 * @param {number} limit
 * @returns {Promise<Buffer>}
 */
function readBody(req, limit) {
  return new Promise((resolve, reject) => {
    const tooLarge = () => new OAuthError(413, "invalid_request", `The body exceeds ${limit} bytes.`, { Connection: "close" });
    if (Number(req.headers["content-length"] ?? 0) > limit) {
      req.resume(); // discard; Connection: close then ends the socket after the answer
      reject(tooLarge());
      return;
    }
    /** @type {Buffer[]} */
    const chunks = [];
    let size = 0;
    req.on("data", (/** @type {Buffer} */ chunk) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners("data");
        req.resume();
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

/**
 * @param {import("node:http").ServerResponse} res
 * @param {number} status
 * @param {unknown} body
 * @param {Record<string, string>} [headers]
 */
function sendJson(res, status, body, headers = {}) {
  if (res.headersSent) return;
  const text = `${JSON.stringify(body)}\n`;
  res.writeHead(status, {
    "Content-Type": "application/json; charset=utf-8",
    "Content-Length": Buffer.byteLength(text),
    // RFC 6749 5.1: token responses MUST NOT be cached; harmless for the other answers too.
    "Cache-Control": "no-store",
    Pragma: "no-cache",
    ...headers,
  });
  res.end(text);
}

/** @param {string} code */
function errorMessage(code) {
  if (code === "invalid_client") return "invalid client credentials";
  if (code === "unsupported_grant_type") return "unsupported grant type";
  if (code === "access_denied") return "access denied";
  if (code === "not_found") return "not found";
  return "invalid request";
}

/** @param {string | undefined} address */
function isLoopback(address) {
  return address === "::1" || /^(::ffff:)?127\./.test(address ?? "");
}

/** @param {string} value */
function sha256(value) {
  return createHash("sha256").update(value, "utf8").digest();
}

/**
 * @param {string} name
 * @param {number} fallback
 * @param {number} min
 * @param {number} max
 */
function parseIntEnv(name, fallback, min, max) {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    console.error(`oauth-server: ${name} must be an integer in ${min}..${max}, got ${JSON.stringify(raw)}.`);
    process.exit(1);
  }
  return value;
}

server.on("error", (err) => {
  console.error(`oauth-server: ${err.message}`);
  process.exit(1);
});

server.listen(port, HOST, () => {
  const base = `http://${HOST}:${port}`;
  console.log(`OAuth token endpoint listening on ${base}${TOKEN_PATH} (tokens live ${tokenTtl}s)`);
  console.log(`  client_id      ${clientId}`);
  // Printed only when we made it up: a secret the user chose is already known to them and should
  // not end up in terminal scrollback or CI logs.
  console.log(`  client_secret  ${generatedSecret ? clientSecret : "(from CLIENT_SECRET, not shown)"}`);
  console.log(`  token_url      ${base}${TOKEN_PATH}`);
});

for (const signal of /** @type {const} */ (["SIGINT", "SIGTERM"])) {
  process.on(signal, () => {
    server.close();
    server.closeAllConnections();
    process.exit(0);
  });
}
