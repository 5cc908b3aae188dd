/**
 * Shared test helpers: call the Worker in-process (real bindings, real KV), drive the operator
 * API, provision an organization with a user, client credential and API key, make DPoP proofs
 * (RFC 9449, the client side, with jose), and read an object's tables.
 */
import { createExecutionContext, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { exportJWK, type generateKeyPair, SignJWT } from "jose";
import { expect } from "vitest";
import { createApp } from "../src/app";
import { isPeoplePath, pathOf } from "../src/http/people-paths";
import { createPeopleApp } from "../src/people-app";

export const BASE = "https://keyway.test";
/** Must match vitest.config.ts. */
export const ADMIN_TOKEN = "test-admin-token-0123456789abcdefghijklmnopqrstuv";

export interface Envelope<T = unknown> {
  response_status: number;
  developer_message: string;
  user_message: string;
  data: T;
  error?: string;
  _links: { self: { href: string }; next?: { href: string } };
}

/** A request through the deployed entry point (src/index.ts). */
export function call(path: string, init?: RequestInit): Promise<Response> {
  return exports.default.fetch(new Request(`${BASE}${path}`, init));
}

/**
 * A request through an app with an injected clock (milliseconds) and, optionally, bindings: the
 * people's app for a people's path (the manager, the portal, the pages), as the API Worker's entry
 * would forward it, the API app otherwise.
 */
export async function callAt(nowMs: number, path: string, init?: RequestInit, bindings: Env = env): Promise<Response> {
  const ctx = createExecutionContext();
  const url = `${BASE}${path}`;
  const app = isPeoplePath(pathOf(url)) ? createPeopleApp({ now: () => nowMs }) : createApp({ now: () => nowMs });
  const res = await app.fetch(new Request(url, init), bindings, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

export async function body<T = unknown>(res: Response): Promise<Envelope<T>> {
  return (await res.json()) as Envelope<T>;
}

export async function adminCall(method: string, path: string, payload?: unknown): Promise<Response> {
  const headers: Record<string, string> = { Authorization: `Bearer ${ADMIN_TOKEN}` };
  if (payload !== undefined) headers["Content-Type"] = "application/json";
  return call(`/admin/v1${path}`, {
    method,
    headers,
    ...(payload !== undefined ? { body: JSON.stringify(payload) } : {}),
  });
}

/** Operator call that must succeed; returns `data`. */
export async function admin<T = Record<string, unknown>>(method: string, path: string, payload?: unknown): Promise<T> {
  const res = await adminCall(method, path, payload);
  const json = await body<T>(res);
  expect(res.status, JSON.stringify(json)).toBeLessThan(300);
  return json.data;
}

export interface Tenant {
  orgId: string;
  userId: string;
  clientId: string;
  clientSecret: string;
  apiKey: string;
  apiKeyId: string;
}

export async function createTenant(limits?: { per_second?: number; per_day?: number }): Promise<Tenant> {
  const org = await admin<{ id: string }>("POST", "/organizations", { name: "Acme" });
  const user = await admin<{ id: string }>("POST", `/organizations/${org.id}/users`, { name: "Ada" });
  const cred = await admin<{ client_id: string; client_secret: string }>(
    "POST",
    `/organizations/${org.id}/users/${user.id}/client-credentials`,
    { name: "ci" },
  );
  const key = await admin<{ id: string; api_key: string }>("POST", `/organizations/${org.id}/api-keys`, {
    name: "main",
    // High limits by default so tests that are not about rate limiting are not throttled.
    limits: limits ?? { per_second: 1000, per_day: 100_000 },
  });
  return {
    orgId: org.id,
    userId: user.id,
    clientId: cred.client_id,
    clientSecret: cred.client_secret,
    apiKey: key.api_key,
    apiKeyId: key.id,
  };
}

export function tokenRequest(t: Tenant, overrides: Record<string, unknown> = {}): RequestInit {
  return {
    method: "POST",
    headers: { "Content-Type": "application/json", "x-api-key": t.apiKey },
    body: JSON.stringify({
      client_id: t.clientId,
      client_secret: t.clientSecret,
      grant_type: "client_credentials",
      ...overrides,
    }),
  };
}

export async function issueToken(t: Tenant): Promise<string> {
  const res = await call("/v1/oauth", tokenRequest(t));
  const json = await body<{ access_token: string }>(res);
  expect(res.status, JSON.stringify(json)).toBe(200);
  return json.data.access_token;
}

export function authed(t: Tenant, token: string, init: RequestInit = {}): RequestInit {
  return { ...init, headers: { "x-api-key": t.apiKey, Authorization: `Bearer ${token}`, ...(init.headers ?? {}) } };
}

export function basic(id: string, secret: string): string {
  return `Basic ${btoa(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`)}`;
}

/** The Worker's bindings with every Durable Object call it makes written down (binding.method). */
export function counting(): { bindings: Env; calls: string[] } {
  const calls: string[] = [];
  const wrap = (name: string, ns: DurableObjectNamespace) =>
    new Proxy(ns, {
      get(target, prop) {
        const value = Reflect.get(target, prop) as unknown;
        if (prop !== "get") return typeof value === "function" ? value.bind(target) : value;
        return (...args: Parameters<DurableObjectNamespace["get"]>) => {
          const stub = target.get(...args);
          return new Proxy(stub, {
            get(s, method) {
              if (typeof method !== "string" || method === "then") return Reflect.get(s, method);
              return (...a: unknown[]) => {
                calls.push(`${name}.${method}`);
                return (s as unknown as Record<string, (...x: unknown[]) => unknown>)[method]?.(...a);
              };
            },
          });
        };
      },
    });
  const bindings = { ...env } as Env & Record<string, unknown>;
  for (const name of ["KEYS", "ORGS", "WEBHOOKS", "ENDPOINTS", "DIRECTORY", "QUOTAS", "PROOFS"] as const) {
    bindings[name] = wrap(name, env[name] as unknown as DurableObjectNamespace) as never;
  }
  return { bindings, calls };
}

/**
 * Fault injection: replaces bindings of one object instance (its `env`) until the returned
 * function restores them. `patch` gets the real bindings, to wrap what it replaces.
 */
export async function withObjectEnv(
  stub: DurableObjectStub<Rpc.DurableObjectBranded | undefined>,
  patch: Partial<Env> | ((real: Env) => Partial<Env>),
): Promise<() => Promise<void>> {
  await runInDurableObject(stub, (instance: unknown) => {
    const self = instance as { env: Env };
    const change = typeof patch === "function" ? patch(self.env) : patch;
    Object.defineProperty(instance, "env", { value: { ...self.env, ...change }, configurable: true });
  });
  return () =>
    runInDurableObject(stub, (instance: unknown) => {
      Object.defineProperty(instance, "env", { value: env, configurable: true });
    });
}

type Namespaces = { [K in keyof Env]: Env[K] extends DurableObjectNamespace<infer _T> ? K : never }[keyof Env];

/**
 * Fault injection with withObjectEnv: the namespace `binding` whose objects cannot be reached by
 * the named methods (each call rejects, as a transport failure would); `real` is the object's own env.
 */
export function unreachable(real: Env, binding: Namespaces, ...methods: string[]): Partial<Env> {
  const namespace = real[binding] as unknown as DurableObjectNamespace;
  const stub = Object.fromEntries(methods.map((m) => [m, () => Promise.reject(new Error(`${binding}.${m} unreachable`))]));
  return { [binding]: { ...namespace, idFromName: namespace.idFromName.bind(namespace), get: () => stub } } as Partial<Env>;
}

export type KeyPair = Awaited<ReturnType<typeof generateKeyPair>>;

/** A DPoP proof (RFC 9449 4.2) of `pair` for `htm` and `htu`, issued at `nowMs` (default: now); `extra` adds claims (`ath`, `nonce`). */
export async function dpopProof(
  pair: KeyPair,
  htm: string,
  htu: string,
  extra: Record<string, unknown> = {},
  nowMs = Date.now(),
): Promise<string> {
  return new SignJWT({ htm, htu, jti: crypto.randomUUID(), iat: Math.floor(nowMs / 1000), ...extra })
    .setProtectedHeader({ alg: "ES256", typ: "dpop+jwt", jwk: await exportJWK(pair.publicKey) })
    .sign(pair.privateKey);
}

/** A DPoP proof's `ath`: the access token's SHA-256, base64url (RFC 9449 4.2). */
export const athOf = async (token: string): Promise<string> =>
  new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token))).toBase64({
    alphabet: "base64url",
    omitPadding: true,
  });

/** The tables an object holds (its own: not the runtime's `_cf_*` nor sqlite's). */
export const tablesOf = (stub: DurableObjectStub<Rpc.DurableObjectBranded | undefined>): Promise<string[]> =>
  runInDurableObject(stub, (_i, state) =>
    state.storage.sql
      .exec<{ name: string }>(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\' AND name NOT LIKE 'sqlite%'",
      )
      .toArray()
      .map((r) => r.name),
  );
