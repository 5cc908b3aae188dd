/**
 * A webhook receiver's side of issue 31, real enough to test keyway against: node-oidc-provider
 * (the `oidc-provider` devDependency) on 127.0.0.1 as the receiver's OAuth authorization server,
 * issuing client-credentials tokens (RFC 6749 4.4) to clients registered for `client_secret_basic`,
 * `client_secret_post` (RFC 6749 2.3.1), `private_key_jwt` (RFC 7523, the client's keys fetched
 * from a `jwks_uri` such as a configuration's `GET /v1/receiver-jwks/{org_id}/{config_id}`) and a DPoP-only client
 * (RFC 9449), with `scope`, `resource` (RFC 8707) and an Auth0-style `audience`; its access tokens
 * are RFC 9068 JWTs for the resource asked for, so a receiver verifies them offline with the
 * server's JWKS. Every token request is recorded (raw form, headers, the method of client
 * authentication used, the DPoP proof and its nonce, the answer). Beside it, a webhook receiver
 * (the resource server) checks each webhook's `Authorization` (Bearer, or DPoP with the proof
 * checks of RFC 9449 4.3 and 7.1, optionally demanding a nonce as section 9 allows) and records
 * the verdict. Used by test/oidc-receiver.test.ts (oauth4webapi as the client) and by the
 * end-to-end tests against `npm start`; docs/receiver-oauth.md shows this configuration.
 *
 * tsconfig.json (Workers types, no @types/node) type-checks test/*.test.ts and therefore this file
 * too, and the package ships no types: so the two Node-only modules (`node:http`, `oidc-provider`)
 * are loaded at run time by name and described by the narrow interfaces below; everything else is
 * Web API (fetch, WebCrypto) and `jose`.
 */
import {
  base64url,
  calculateJwkThumbprint,
  createRemoteJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  EmbeddedJWK,
  exportJWK,
  generateKeyPair,
  type JSONWebKeySet,
  type JWK,
  type JWTPayload,
  jwtVerify,
} from "jose";

// ---------------------------------------------------------------------------------------------
// The little of node:http and node-oidc-provider this file uses.

interface NodeRequest extends AsyncIterable<Uint8Array> {
  method?: string;
  url?: string;
  headers: Record<string, string | string[] | undefined>;
}
interface NodeResponse {
  writeHead(status: number, headers: Record<string, string>): NodeResponse;
  end(body?: string): void;
}
type NodeHandler = (req: NodeRequest, res: NodeResponse) => void;
interface NodeServer {
  listen(port: number, host: string, callback: () => void): NodeServer;
  address(): { port: number } | string | null;
  close(callback: (err?: Error) => void): NodeServer;
  closeAllConnections(): void;
}
interface NodeHttp {
  createServer(handler: NodeHandler): NodeServer;
}
interface NodeCrypto {
  /** A Buffer at run time, which node-oidc-provider requires of `features.dPoP.nonceSecret`. */
  randomBytes(size: number): Uint8Array;
}

/** The parts of a Koa context (node-oidc-provider is a Koa application) read here. */
interface KoaContext {
  method: string;
  path: string;
  req: NodeRequest;
  request: { body?: unknown };
  response: { get(field: string): string };
  status: number;
  body: unknown;
  get(field: string): string;
  oidc?: { body?: Record<string, string | string[] | undefined>; client?: { clientId: string } };
}
interface ProviderInstance {
  use(middleware: (ctx: KoaContext, next: () => Promise<void>) => Promise<void>): ProviderInstance;
  callback(): NodeHandler;
  on(event: "server_error", listener: (ctx: unknown, err: Error) => void): ProviderInstance;
}
interface ProviderModule {
  default: new (issuer: string, configuration: Record<string, unknown>) => ProviderInstance;
  errors: { InvalidTarget: new (description?: string) => Error };
}

const NODE_HTTP: string = "node:http";
const NODE_CRYPTO: string = "node:crypto";
const OIDC_PROVIDER: string = "oidc-provider";

// ---------------------------------------------------------------------------------------------
// Public API.

/** Scopes the receiver's server knows (RFC 6749 3.3); every client may ask for any of them. */
export const RECEIVER_SCOPES = ["webhooks:write", "webhooks:read"] as const;
/** `audience` values accepted by default (the Auth0-style parameter; see `audiences`). */
export const DEFAULT_AUDIENCE = "https://api.receiver.example";
/** An extra resource indicator (RFC 8707) accepted by default besides the webhook receiver's own. */
export const EXTRA_RESOURCE = "https://receiver.example/webhooks";

export type TokenAuthMethod = "client_secret_basic" | "client_secret_post" | "private_key_jwt" | "client_secret_jwt" | "none";

/** A client registered at the receiver's server. */
export interface ReceiverClient {
  client_id: string;
  /** Absent for private_key_jwt. */
  client_secret?: string;
  token_endpoint_auth_method: "client_secret_basic" | "client_secret_post" | "private_key_jwt";
  /** RFC 9449 5.2: the server refuses this client a token without a DPoP proof. */
  dpop_bound_access_tokens?: boolean;
  jwks_uri?: string;
}

/**
 * The registered clients. The secrets hold characters RFC 6749 2.3.1 makes a client form-urlencode
 * before Basic (space, `+`, `:`, `%`), so a client that skips that step is refused.
 */
export const RECEIVER_CLIENTS = {
  basic: {
    client_id: "keyway-basic",
    client_secret: "basic secret+with:reserved%chars/0123456789",
    token_endpoint_auth_method: "client_secret_basic",
  },
  post: {
    client_id: "keyway-post",
    client_secret: "post secret+with:reserved%chars/0123456789",
    token_endpoint_auth_method: "client_secret_post",
  },
  dpop: {
    client_id: "keyway-dpop",
    client_secret: "dpop secret+with:reserved%chars/0123456789",
    token_endpoint_auth_method: "client_secret_basic",
    dpop_bound_access_tokens: true,
  },
} as const satisfies Record<string, ReceiverClient>;
/** The private_key_jwt client's default id (registered only when `jwksUri` is given; see `privateKeyJwtClientId`). */
export const PRIVATE_KEY_JWT_CLIENT_ID = "keyway-pkjwt";

export interface OidcReceiverOptions {
  /**
   * The private_key_jwt client's `jwks_uri` (RFC 7591 2): a configuration's `oauth.jwks_uri`
   * (`GET /v1/receiver-jwks/{org_id}/{config_id}`) or any JWKS URL. Without it no private_key_jwt client is registered.
   */
  jwksUri?: string;
  /**
   * The private_key_jwt client's id (default PRIVATE_KEY_JWT_CLIENT_ID): two servers in one test
   * register clients of different ids, as two receivers' servers would.
   */
  privateKeyJwtClientId?: string;
  /** RFC 9449 8: the token endpoint demands a server nonce in every DPoP proof. Default false. */
  requireDpopNonce?: boolean;
  /** RFC 9449 9: the webhook receiver demands a nonce in every DPoP proof. Default false. */
  webhookDpopNonce?: boolean;
  /** Resource indicators (RFC 8707) accepted besides the webhook receiver's origin. Default [EXTRA_RESOURCE]. */
  resources?: string[];
  /** `audience` values accepted. Default [DEFAULT_AUDIENCE]. */
  audiences?: string[];
  /** Access token lifetime, seconds. Default 300. */
  accessTokenTtl?: number;
}

/** One request the token endpoint got, as it arrived and as it was answered. */
export interface TokenRequestRecord {
  at: number;
  /** HTTP method. */
  method: string;
  /** The raw form body, byte for byte. */
  rawBody: string;
  /** The parsed form (repeated names, like `resource`, as arrays). */
  form: Record<string, string | string[]>;
  contentType: string | null;
  authorization: string | null;
  /** Which client authentication the request used, read off the request itself. */
  authMethod: TokenAuthMethod;
  /** The client id the request named (Basic user, form `client_id`, or the assertion's `sub`). */
  clientId: string | null;
  grantType: string | null;
  scope: string | null;
  resource: string[];
  audience: string | null;
  /** A `DPoP` header came (RFC 9449 4.1). */
  dpop: boolean;
  /** The proof's `nonce` claim (RFC 9449 8), if any. */
  dpopNonce: string | null;
  /** The JWK thumbprint (RFC 7638) of the proof's key, if a proof came. */
  dpopJkt: string | null;
  /** The private_key_jwt assertion's claims and header, if one came (decoded, not verified here). */
  assertion: { header: Record<string, unknown>; claims: JWTPayload } | null;
  status: number;
  /** RFC 6749 5.2 `error` of a refusal. */
  error: string | null;
  errorDescription: string | null;
  tokenType: string | null;
  /** `DPoP-Nonce` the answer carried. */
  nonceIssued: string | null;
}

/** The access token claims node-oidc-provider puts in its RFC 9068 JWTs. */
export interface AccessTokenClaims extends JWTPayload {
  client_id: string;
  scope?: string;
  cnf?: { jkt?: string };
}

export interface VerifiedAccessToken {
  claims: AccessTokenClaims;
  /** `cnf.jkt` (RFC 9449 6.1) when the token is DPoP-bound. */
  jkt: string | null;
}

export type WebhookVerdict =
  | { ok: true; scheme: "Bearer" | "DPoP"; claims: AccessTokenClaims; proof: DpopProofCheck | null }
  | { ok: false; status: 401; error: "invalid_token" | "invalid_dpop_proof" | "use_dpop_nonce" | "no_credentials"; reason: string };

/** One request the webhook receiver got, and what it decided. */
export interface WebhookRecord {
  at: number;
  method: string;
  /** The URL as the receiver reconstructs it: `http://` + Host + path (with the query). */
  url: string;
  headers: Record<string, string>;
  body: string;
  verdict: WebhookVerdict;
  /** The status and headers it answered. */
  answered: { status: number; headers: Record<string, string> };
}

export interface DpopProofCheck {
  jkt: string;
  jti: string;
  iat: number;
  htm: string;
  htu: string;
  nonce: string | null;
}

export class DpopProofError extends Error {
  constructor(
    readonly error: "invalid_dpop_proof" | "use_dpop_nonce",
    message: string,
  ) {
    super(message);
  }
}

export interface OidcReceiver {
  /** The authorization server's issuer identifier, `http://127.0.0.1:<port>`. */
  readonly issuer: string;
  readonly tokenEndpoint: string;
  /** The server's own JWKS (the keys its access tokens are signed with). */
  readonly jwksUri: string;
  /** The webhook receiver: POST anything under it; its origin + "/" is the default resource. */
  readonly webhookUrl: string;
  /** The resource indicator tokens are for when no `resource` is asked (RFC 8707 2). */
  readonly defaultResource: string;
  /** Every audience (`aud`) a token of this server may carry. */
  readonly audiences: readonly string[];
  readonly clients: typeof RECEIVER_CLIENTS & { privateKeyJwt: ReceiverClient | null };
  readonly tokenRequests: TokenRequestRecord[];
  readonly webhooks: WebhookRecord[];
  /** URLs node-oidc-provider fetched as a client's `jwks_uri`. */
  readonly jwksFetches: string[];
  setRequireDpopNonce(on: boolean): void;
  /** Turns the webhook nonce on or off; turning it on (again) makes a new nonce. */
  setWebhookDpopNonce(on: boolean): void;
  /** The nonce the webhook receiver currently demands, if it does. */
  webhookNonce(): string | null;
  /**
   * RFC 9068 4: signature with the server's JWKS, `typ` at+jwt, `iss`, `aud` (one of this
   * server's, or `options.audience`), `exp`; with `options.jkt`, the token must be DPoP-bound to
   * that key (`cnf.jkt`, RFC 9449 6.1).
   */
  verifyAccessToken(token: string, options?: { audience?: string | string[]; jkt?: string }): Promise<VerifiedAccessToken>;
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// The authorization server.

/** RFC 9449 11.1: how old a proof's `iat` may be, and how far in the future (clock skew). */
const PROOF_MAX_AGE_S = 60;
const PROOF_MAX_SKEW_S = 5;
const DPOP_ALGS = ["ES256", "ES384", "EdDSA", "Ed25519", "PS256", "RS256"];

async function loadNode(): Promise<{ http: NodeHttp; crypto: NodeCrypto; oidc: ProviderModule }> {
  const [http, crypto, oidc] = await Promise.all([import(NODE_HTTP), import(NODE_CRYPTO), import(OIDC_PROVIDER)]);
  return { http: http as NodeHttp, crypto: crypto as NodeCrypto, oidc: oidc as ProviderModule };
}

async function listen(http: NodeHttp, handler: NodeHandler): Promise<{ server: NodeServer; origin: string }> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("server has no port");
  return { server, origin: `http://127.0.0.1:${address.port}` };
}

function closeServer(server: NodeServer): Promise<void> {
  return new Promise((resolve, reject) => {
    server.close((err) => (err ? reject(err) : resolve()));
    server.closeAllConnections();
  });
}

async function readAll(req: NodeRequest): Promise<string> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of req) chunks.push(chunk);
  const total = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0));
  let offset = 0;
  for (const c of chunks) {
    total.set(c, offset);
    offset += c.byteLength;
  }
  return new TextDecoder().decode(total);
}

function header(headers: Record<string, string | string[] | undefined>, name: string): string | null {
  const value = headers[name];
  if (value === undefined) return null;
  return Array.isArray(value) ? value.join(", ") : value;
}

function formOf(raw: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of new URLSearchParams(raw)) {
    const prev = out[k];
    out[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  return out;
}

const one = (v: string | string[] | undefined): string | null => (v === undefined ? null : Array.isArray(v) ? (v[0] ?? null) : v);
const many = (v: string | string[] | undefined): string[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/** RFC 6749 2.3.1: Basic's user and password are form-urlencoded (`+` is a space). */
function basicUser(authorization: string): string | null {
  const m = /^Basic\s+(\S+)$/i.exec(authorization);
  if (!m?.[1]) return null;
  const decoded = atob(m[1]);
  const i = decoded.indexOf(":");
  return i < 0 ? null : decodeURIComponent(decoded.slice(0, i).replaceAll("+", " "));
}

async function recordTokenRequest(ctx: KoaContext, rawBody: string, at: number): Promise<TokenRequestRecord> {
  const form = formOf(rawBody);
  const authorization = ctx.get("authorization") || null;
  const assertionJwt = one(form.client_assertion);
  let assertion: TokenRequestRecord["assertion"] = null;
  if (assertionJwt !== null) {
    try {
      assertion = { header: { ...decodeProtectedHeader(assertionJwt) }, claims: decodeJwt(assertionJwt) };
    } catch {
      assertion = null;
    }
  }
  let authMethod: TokenAuthMethod = "none";
  let clientId = one(form.client_id);
  if (authorization !== null && /^basic\s/i.test(authorization)) {
    authMethod = "client_secret_basic";
    clientId = basicUser(authorization);
  } else if (assertionJwt !== null) {
    authMethod = String(assertion?.header.alg ?? "").startsWith("HS") ? "client_secret_jwt" : "private_key_jwt";
    clientId = clientId ?? (typeof assertion?.claims.sub === "string" ? assertion.claims.sub : null);
  } else if (form.client_secret !== undefined) {
    authMethod = "client_secret_post";
  }
  const proof = ctx.get("dpop") || null;
  let dpopNonce: string | null = null;
  let dpopJkt: string | null = null;
  if (proof !== null) {
    try {
      const claims = decodeJwt(proof);
      dpopNonce = typeof claims.nonce === "string" ? claims.nonce : null;
      const { jwk } = decodeProtectedHeader(proof);
      dpopJkt = jwk ? await calculateJwkThumbprint(jwk) : null;
    } catch {
      // A malformed proof: node-oidc-provider refuses it; the record keeps dpop: true.
    }
  }
  const answer = typeof ctx.body === "object" && ctx.body !== null ? (ctx.body as Record<string, unknown>) : {};
  const str = (v: unknown): string | null => (typeof v === "string" ? v : null);
  return {
    at,
    method: ctx.method,
    rawBody,
    form,
    contentType: ctx.get("content-type") || null,
    authorization,
    authMethod,
    clientId,
    grantType: one(form.grant_type),
    scope: one(form.scope),
    resource: many(form.resource),
    audience: one(form.audience),
    dpop: proof !== null,
    dpopNonce,
    dpopJkt,
    assertion,
    status: ctx.status,
    error: str(answer.error),
    errorDescription: str(answer.error_description),
    tokenType: str(answer.token_type),
    nonceIssued: ctx.response.get("dpop-nonce") || null,
  };
}

/**
 * Starts the receiver's authorization server and webhook receiver on 127.0.0.1 (free ports).
 */
export async function startOidcReceiver(options: OidcReceiverOptions = {}): Promise<OidcReceiver> {
  const { http, crypto: nodeCrypto, oidc } = await loadNode();
  const tokenRequests: TokenRequestRecord[] = [];
  const webhooks: WebhookRecord[] = [];
  const jwksFetches: string[] = [];
  let requireDpopNonce = options.requireDpopNonce ?? false;

  // Both servers listen first so that their URLs (the issuer, the resource) are known to the
  // configuration; requests are handed to the provider and the receiver once they exist.
  let asHandler: NodeHandler = (_req, res) => void res.writeHead(503, {}).end();
  let rsHandler: NodeHandler = (_req, res) => void res.writeHead(503, {}).end();
  const as = await listen(http, (req, res) => asHandler(req, res));
  const rs = await listen(http, (req, res) => rsHandler(req, res));
  const issuer = as.origin;
  const defaultResource = `${rs.origin}/`;
  const resources = new Set([defaultResource, ...(options.resources ?? [EXTRA_RESOURCE])]);
  const acceptedAudiences = new Set(options.audiences ?? [DEFAULT_AUDIENCE]);
  const jwksUri = `${issuer}/jwks`;

  // The server's signing key for its access tokens (RFC 9068 2.1 wants asymmetric signatures).
  const { privateKey } = await generateKeyPair("ES256", { extractable: true });
  const signingJwk = { ...(await exportJWK(privateKey)), kid: "receiver-as-1", use: "sig", alg: "ES256" };

  const privateKeyJwt: ReceiverClient | null =
    options.jwksUri === undefined
      ? null
      : {
          client_id: options.privateKeyJwtClientId ?? PRIVATE_KEY_JWT_CLIENT_ID,
          token_endpoint_auth_method: "private_key_jwt",
          jwks_uri: options.jwksUri,
        };
  const registered = [...Object.values(RECEIVER_CLIENTS), ...(privateKeyJwt ? [privateKeyJwt] : [])].map((c) => ({
    ...c,
    grant_types: ["client_credentials"],
    redirect_uris: [],
    response_types: [],
    scope: RECEIVER_SCOPES.join(" "),
  }));

  const provider = new oidc.default(issuer, {
    jwks: { keys: [signingJwk] },
    clients: registered,
    scopes: [...RECEIVER_SCOPES],
    clientDefaults: { id_token_signed_response_alg: "ES256" },
    // The lifetime comes from the resource server (accessTokenTTL below); this is node-oidc-provider's fallback.
    ttl: {
      ClientCredentials: (_ctx: unknown, token: { resourceServer?: { accessTokenTTL?: number } }) =>
        token.resourceServer?.accessTokenTTL ?? 300,
    },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      // RFC 8707: a client-credentials token is for one resource server; an RFC 9068 JWT.
      resourceIndicators: {
        enabled: true,
        defaultResource: async (_ctx: KoaContext, _client: unknown, oneOf?: string[]) => oneOf ?? defaultResource,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (ctx: KoaContext, indicator: string) => {
          if (!resources.has(indicator)) throw new oidc.errors.InvalidTarget(`unknown resource ${indicator}`);
          // node-oidc-provider has no `audience` parameter: the form's value (kept in ctx.oidc.body)
          // picks the token's `aud`, as Auth0 does, when it is one this server knows.
          const audience = one(ctx.oidc?.body?.audience);
          if (audience !== null && !acceptedAudiences.has(audience)) throw new oidc.errors.InvalidTarget(`unknown audience ${audience}`);
          return {
            scope: RECEIVER_SCOPES.join(" "),
            audience: audience ?? indicator,
            accessTokenTTL: options.accessTokenTtl ?? 300,
            accessTokenFormat: "jwt",
            jwt: { sign: { alg: "ES256" } },
          };
        },
      },
      // RFC 9449: proofs at the token endpoint; a nonce (section 8) when requireDpopNonce is on.
      dPoP: { enabled: true, nonceSecret: nodeCrypto.randomBytes(32), requireNonce: () => requireDpopNonce },
    },
    // node-oidc-provider fetches a client's jwks_uri through an SSRF-guarded dispatcher that refuses
    // loopback and private addresses; the guard is lifted for loopback only, so 127.0.0.1 works.
    fetch: (url: string | URL, init: RequestInit & { dispatcher?: unknown }) => {
      const target = new URL(String(url));
      jwksFetches.push(target.href);
      if (["127.0.0.1", "localhost", "[::1]"].includes(target.hostname)) {
        const { dispatcher: _ssrfGuard, ...rest } = init;
        return fetch(target, rest);
      }
      return fetch(target, init);
    },
  });
  provider.on("server_error", (_ctx, err) => console.error("oidc-receiver server_error", err));
  provider.use(async (ctx, next) => {
    if (ctx.method !== "POST" || ctx.path !== "/token") return next();
    const at = Date.now();
    // Read the form ourselves to keep it byte for byte; node-oidc-provider then parses the copy.
    const rawBody = await readAll(ctx.req);
    ctx.request.body = rawBody;
    await next();
    tokenRequests.push(await recordTokenRequest(ctx, rawBody, at));
  });
  asHandler = provider.callback();

  const remoteJwks = createRemoteJWKSet(new URL(jwksUri));
  const audiences = [...resources, ...acceptedAudiences];
  const verifyAccessToken = async (token: string, o: { audience?: string | string[]; jkt?: string } = {}): Promise<VerifiedAccessToken> => {
    const { payload } = await jwtVerify(token, remoteJwks, {
      issuer,
      audience: o.audience ?? audiences,
      typ: "at+jwt",
      algorithms: ["ES256"],
    });
    if (typeof payload.client_id !== "string") throw new Error("access token without client_id");
    const claims = payload as AccessTokenClaims;
    const jkt = typeof claims.cnf?.jkt === "string" ? claims.cnf.jkt : null;
    if (o.jkt !== undefined && jkt !== o.jkt) throw new Error("access token is not bound to this key (cnf.jkt)");
    return { claims, jkt };
  };

  // -------------------------------------------------------------------------------------------
  // The webhook receiver (the resource server).
  let nonce: string | null = options.webhookDpopNonce ? base64url.encode(crypto.getRandomValues(new Uint8Array(16))) : null;
  const seenJti = new Set<string>();

  rsHandler = (req, res) => {
    void (async () => {
      const at = Date.now();
      const body = await readAll(req);
      const headers: Record<string, string> = {};
      for (const name of Object.keys(req.headers)) headers[name] = header(req.headers, name) ?? "";
      const method = req.method ?? "GET";
      const url = `http://${headers.host ?? rs.origin.slice(7)}${req.url ?? "/"}`;
      const verdict = await judgeWebhook(
        { method, url, authorization: headers.authorization ?? null, dpop: headers.dpop ?? null },
        {
          verifyAccessToken,
          nonce,
          seenJti,
        },
      );
      const answered = answerFor(verdict, nonce);
      webhooks.push({ at, method, url, headers, body, verdict, answered });
      res
        .writeHead(answered.status, answered.headers)
        .end(answered.status === 401 ? JSON.stringify({ error: verdict.ok ? "" : verdict.error }) : "");
    })().catch((err: unknown) => {
      console.error("oidc-receiver webhook error", err);
      res.writeHead(500, {}).end();
    });
  };

  return {
    issuer,
    tokenEndpoint: `${issuer}/token`,
    jwksUri,
    webhookUrl: `${rs.origin}/webhook`,
    defaultResource,
    audiences,
    clients: { ...RECEIVER_CLIENTS, privateKeyJwt },
    tokenRequests,
    webhooks,
    jwksFetches,
    setRequireDpopNonce: (on) => {
      requireDpopNonce = on;
    },
    setWebhookDpopNonce: (on) => {
      nonce = on ? base64url.encode(crypto.getRandomValues(new Uint8Array(16))) : null;
    },
    webhookNonce: () => nonce,
    verifyAccessToken,
    close: async () => {
      await Promise.all([closeServer(as.server), closeServer(rs.server)]);
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Verifying a webhook (RFC 6750 2.1 Bearer; RFC 9449 7.1 DPoP).

/**
 * RFC 9449 4.3: checks one DPoP proof for a request carrying `accessToken`: one well-formed JWT,
 * `typ` dpop+jwt, an asymmetric `alg`, a public `jwk` in the header that verifies the signature;
 * `jti`; `htm` = the method; `htu` = the URL without query and fragment; `iat` within the window
 * (11.1); `ath` = base64url(SHA-256(token)) (4.2); the key's thumbprint = the token's `cnf.jkt`
 * (6.1); the server's nonce when it demands one (9); and the `jti` not seen before (11.1).
 */
export async function verifyDpopProof(
  proof: string,
  request: { method: string; url: string; accessToken: string; jkt: string },
  options: { nonce?: string | null; seenJti?: Set<string>; now?: number } = {},
): Promise<DpopProofCheck> {
  if (proof.includes(",") || proof.split(".").length !== 3) throw new DpopProofError("invalid_dpop_proof", "not exactly one JWT");
  let payload: JWTPayload;
  let jwk: JWK | undefined;
  try {
    const verified = await jwtVerify(proof, EmbeddedJWK, { typ: "dpop+jwt", algorithms: DPOP_ALGS });
    payload = verified.payload;
    jwk = verified.protectedHeader.jwk;
  } catch (err) {
    throw new DpopProofError("invalid_dpop_proof", `signature or header: ${(err as Error).message}`);
  }
  if (!jwk || "d" in jwk) throw new DpopProofError("invalid_dpop_proof", "jwk must be a public key");
  const { jti, iat, htm, htu, ath } = payload;
  if (typeof jti !== "string" || jti === "") throw new DpopProofError("invalid_dpop_proof", "jti missing");
  if (htm !== request.method) throw new DpopProofError("invalid_dpop_proof", "htm mismatch");
  const target = new URL(request.url);
  target.search = "";
  target.hash = "";
  const claimed = typeof htu === "string" ? URL.parse(htu) : null;
  if (claimed === null) throw new DpopProofError("invalid_dpop_proof", "htu missing or not a URL");
  claimed.search = "";
  claimed.hash = "";
  if (claimed.href !== target.href) throw new DpopProofError("invalid_dpop_proof", "htu mismatch");
  const now = Math.floor((options.now ?? Date.now()) / 1000);
  if (typeof iat !== "number" || iat < now - PROOF_MAX_AGE_S || iat > now + PROOF_MAX_SKEW_S) {
    throw new DpopProofError("invalid_dpop_proof", "iat outside the accepted window");
  }
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(request.accessToken));
  if (ath !== base64url.encode(new Uint8Array(digest))) throw new DpopProofError("invalid_dpop_proof", "ath mismatch");
  const jkt = await calculateJwkThumbprint(jwk);
  if (jkt !== request.jkt) throw new DpopProofError("invalid_dpop_proof", "proof key does not match the token's cnf.jkt");
  const proofNonce = typeof payload.nonce === "string" ? payload.nonce : null;
  if (options.nonce && proofNonce !== options.nonce) throw new DpopProofError("use_dpop_nonce", "nonce required");
  if (options.seenJti) {
    const key = `${jkt}:${jti}`;
    if (options.seenJti.has(key)) throw new DpopProofError("invalid_dpop_proof", "jti replayed");
    options.seenJti.add(key);
  }
  return { jkt, jti, iat, htm, htu: String(htu), nonce: proofNonce };
}

/** What the webhook receiver decides about one request's credentials. */
export async function judgeWebhook(
  request: { method: string; url: string; authorization: string | null; dpop: string | null },
  context: {
    verifyAccessToken: OidcReceiver["verifyAccessToken"];
    nonce?: string | null;
    seenJti?: Set<string>;
  },
): Promise<WebhookVerdict> {
  const m = request.authorization === null ? null : /^(Bearer|DPoP) +([A-Za-z0-9\-._~+/]+=*)$/i.exec(request.authorization);
  if (m === null || !m[1] || !m[2]) return { ok: false, status: 401, error: "no_credentials", reason: "no Bearer or DPoP Authorization" };
  const scheme = m[1].toLowerCase() === "dpop" ? "DPoP" : "Bearer";
  const token = m[2];
  let verified: VerifiedAccessToken;
  try {
    verified = await context.verifyAccessToken(token);
  } catch (err) {
    return { ok: false, status: 401, error: "invalid_token", reason: (err as Error).message };
  }
  if (verified.jkt === null) {
    if (scheme === "DPoP")
      return { ok: false, status: 401, error: "invalid_token", reason: "DPoP scheme with a token that is not DPoP-bound" };
    return { ok: true, scheme, claims: verified.claims, proof: null };
  }
  // RFC 9449 7.1: a DPoP-bound token is only accepted with the DPoP scheme and a proof.
  if (scheme === "Bearer") return { ok: false, status: 401, error: "invalid_token", reason: "DPoP-bound token sent as Bearer" };
  if (request.dpop === null) return { ok: false, status: 401, error: "invalid_dpop_proof", reason: "no DPoP header" };
  try {
    const proof = await verifyDpopProof(
      request.dpop,
      { method: request.method, url: request.url, accessToken: token, jkt: verified.jkt },
      { nonce: context.nonce ?? null, ...(context.seenJti ? { seenJti: context.seenJti } : {}) },
    );
    return { ok: true, scheme, claims: verified.claims, proof };
  } catch (err) {
    if (err instanceof DpopProofError) return { ok: false, status: 401, error: err.error, reason: err.message };
    throw err;
  }
}

/** RFC 6750 3 and RFC 9449 7.1, 9: the answer's status and headers. */
function answerFor(verdict: WebhookVerdict, nonce: string | null): WebhookRecord["answered"] {
  if (verdict.ok) return { status: 204, headers: {} };
  const algs = `algs="${DPOP_ALGS.join(" ")}"`;
  const headers: Record<string, string> = { "Content-Type": "application/json", "Cache-Control": "no-store" };
  if (verdict.error === "no_credentials") {
    headers["WWW-Authenticate"] = `Bearer, DPoP ${algs}`;
  } else if (verdict.error === "use_dpop_nonce" && nonce !== null) {
    headers["WWW-Authenticate"] = `DPoP error="use_dpop_nonce", error_description="Resource server requires nonce in DPoP proof", ${algs}`;
    headers["DPoP-Nonce"] = nonce;
  } else {
    headers["WWW-Authenticate"] = `DPoP error="${verdict.error}", ${algs}`;
  }
  return { status: 401, headers };
}

// ---------------------------------------------------------------------------------------------
// A stand-alone JWKS server, as a client's published keys (for a private_key_jwt client that is
// not keyway).

export interface JwksServer {
  readonly url: string;
  /** Replaces the published set (a key rotation). */
  setKeys(jwks: JSONWebKeySet): void;
  /** How many times it was fetched. */
  readonly fetches: () => number;
  close(): Promise<void>;
}

/** Serves `jwks` at `http://127.0.0.1:<port>/jwks` with `Cache-Control: max-age=0` unless told. */
export async function startJwksServer(jwks: JSONWebKeySet, cacheControl = "max-age=0"): Promise<JwksServer> {
  const { http } = await loadNode();
  let current = jwks;
  let count = 0;
  const { server, origin } = await listen(http, (req, res) => {
    count++;
    if (req.url !== "/jwks") return void res.writeHead(404, {}).end();
    res.writeHead(200, { "Content-Type": "application/jwk-set+json", "Cache-Control": cacheControl }).end(JSON.stringify(current));
  });
  return {
    url: `${origin}/jwks`,
    setKeys: (next) => {
      current = next;
    },
    fetches: () => count,
    close: () => closeServer(server),
  };
}
