/**
 * lib/key-sets.ts: JWK Sets and issuer metadata fetched through the SSRF guard. Outbound HTTP is
 * served by test/fake-network.ts (the workers project's harness: `fetch` intercepted, every request
 * recorded, a handler's slowness cut off by the caller's AbortSignal), which serves a good set, one
 * with private, symmetric, encryption and broken keys mixed in, an oversized body streamed without
 * Content-Length, a redirect, a 500, a slow server and a stalled body past a short timeout, non-JSON,
 * OpenID Connect discovery documents with the right and a wrong issuer, and an RFC 8414-only
 * issuer with a path. The guard's refusals are checked before any request leaves.
 */
import { exportJWK, generateKeyPair, type JWK } from "jose";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { checkIssuer, discoverJwksUri, fetchKeySet, MAX_BODY_BYTES } from "../src/lib/key-sets";
import { fakeNetwork, json, never } from "./fake-network";

const strict = { allowInsecure: false };
const insecure = { allowInsecure: true };
const JWKS_URL = "https://keys.example/jwks.json";

let ec: { pub: JWK; priv: JWK };
let rsa: JWK;
let ed: JWK;

async function pair(alg: string): Promise<{ pub: JWK; priv: JWK }> {
  const { publicKey, privateKey } = await generateKeyPair(alg, { extractable: true });
  return { pub: await exportJWK(publicKey), priv: await exportJWK(privateKey) };
}

beforeAll(async () => {
  ec = await pair("ES256");
  ec.pub = { ...ec.pub, kid: "ec-1", use: "sig", alg: "ES256" };
  rsa = { ...(await pair("RS256")).pub, kid: "rsa-1" };
  ed = { ...(await pair("EdDSA")).pub, kid: "ed-1" };
});

/** A body of `total` bytes in `chunk`-byte pieces, produced on demand; `pulled()` counts the pieces read. */
function streamed(total: number, chunk = 4096): { body: ReadableStream<Uint8Array>; pulled: () => number } {
  let sent = 0;
  let pulls = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= total) return controller.close();
      pulls++;
      const n = Math.min(chunk, total - sent);
      sent += n;
      controller.enqueue(new Uint8Array(n).fill(0x20));
    },
  });
  return { body, pulled: () => pulls };
}

describe("fetchKeySet", () => {
  it("answers the public signing keys of a good set, with max-age, asking for JSON without following redirects", async () => {
    const sent = fakeNetwork({ [JWKS_URL]: () => json({ keys: [ec.pub, rsa, ed] }, 200, { "Cache-Control": "public, max-age=300" }) });
    const result = await fetchKeySet(JWKS_URL, strict);
    expect(result).toEqual({ ok: true, keys: [ec.pub, rsa, ed], maxAgeSeconds: 300 });
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ method: "GET", url: JWKS_URL, headers: { accept: "application/json" } });
    const init = vi.mocked(globalThis.fetch).mock.calls.at(-1)?.[1];
    expect(init?.redirect).toBe("manual");
    expect(init?.signal).toBeInstanceOf(AbortSignal);
  });

  it.each([
    [undefined, null],
    ["no-store, max-age=300", 0],
    ["max-age=60, no-cache", 0],
    ['max-age="120"', 120],
    ["Max-Age=0", 0],
    ["max-age=soon", null],
  ])("reads Cache-Control %s as max-age %s", async (header, expected) => {
    fakeNetwork({ [JWKS_URL]: () => json({ keys: [ec.pub] }, 200, header === undefined ? {} : { "Cache-Control": header }) });
    expect(await fetchKeySet(JWKS_URL, strict)).toMatchObject({ ok: true, maxAgeSeconds: expected });
  });

  it("drops private, symmetric, encryption and unusable keys, keeping the rest and only their public members", async () => {
    const mixed = [
      { ...ec.priv, kid: "private-ec" },
      { kty: "oct", k: "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0", kid: "hmac" },
      { kty: "oct", kid: "oct-without-k" },
      { ...rsa, kid: "rsa-with-p", p: "AQAB" },
      { ...rsa, kid: "rsa-enc", use: "enc" },
      { ...ec.pub, kid: "ec-short-x", x: "AQAB" },
      { ...ec.pub, kid: "ec-wrong-alg", alg: "RS256" },
      { kty: 7, kid: "numeric-kty" },
      "not a key",
      null,
      { ...ed, extra: "member", key_ops: ["verify"], kid: "ed-extra" },
    ];
    fakeNetwork({ [JWKS_URL]: () => json({ keys: mixed }) });
    const result = await fetchKeySet(JWKS_URL, strict);
    expect(result).toEqual({ ok: true, keys: [{ ...ed, kid: "ed-extra" }], maxAgeSeconds: null });
  });

  it("refuses a set whose keys are all private or symmetric", async () => {
    fakeNetwork({ [JWKS_URL]: () => json({ keys: [ec.priv, { kty: "oct", k: "AAAA" }] }) });
    expect(await fetchKeySet(JWKS_URL, strict)).toEqual({ ok: false, reason: "no usable signing key" });
    fakeNetwork({ [JWKS_URL]: () => json({ keys: [] }) });
    expect(await fetchKeySet(JWKS_URL, strict)).toEqual({ ok: false, reason: "no usable signing key" });
  });

  it("keeps at most 100 keys", async () => {
    const keys = Array.from({ length: 130 }, (_, i) => ({ ...ec.pub, kid: `k${i}` }));
    fakeNetwork({ [JWKS_URL]: () => json({ keys }) });
    const result = await fetchKeySet(JWKS_URL, strict);
    expect(result.ok && result.keys.map((k) => k.kid)).toEqual(keys.slice(0, 100).map((k) => k.kid));
  });

  it("refuses a body over 64 KiB sent without Content-Length, reading no more than the cap", async () => {
    const big = streamed(10 * MAX_BODY_BYTES);
    fakeNetwork({ [JWKS_URL]: () => new Response(big.body, { headers: { "Content-Type": "application/json" } }) });
    expect(await fetchKeySet(JWKS_URL, strict)).toEqual({ ok: false, reason: "key set is larger than 64 KiB" });
    expect(big.pulled()).toBeLessThanOrEqual(MAX_BODY_BYTES / 4096 + 2);
  });

  it("accepts a body of exactly 64 KiB", async () => {
    const text = JSON.stringify({ keys: [ec.pub] });
    const padded = `${text.slice(0, -1)}${" ".repeat(MAX_BODY_BYTES - text.length)}}`;
    expect(padded.length).toBe(MAX_BODY_BYTES);
    fakeNetwork({ [JWKS_URL]: () => new Response(padded) });
    expect(await fetchKeySet(JWKS_URL, strict)).toMatchObject({ ok: true, keys: [ec.pub] });
  });

  it("refuses a redirect without following it", async () => {
    const sent = fakeNetwork({
      [JWKS_URL]: () => new Response(null, { status: 302, headers: { Location: "https://keys.example/moved.json" } }),
      "https://keys.example/moved.json": () => json({ keys: [ec.pub] }),
    });
    expect(await fetchKeySet(JWKS_URL, strict)).toEqual({ ok: false, reason: "key set URL redirected" });
    expect(sent.map((s) => s.url)).toEqual([JWKS_URL]);
  });

  it.each([
    ["a 500", () => json({ keys: [] }, 500), "key set URL answered an error status"],
    ["a 404", () => new Response("gone", { status: 404 }), "key set not found"],
    ["non-JSON", () => new Response("<html>keys</html>", { headers: { "Content-Type": "text/html" } }), "key set is not JSON"],
    ["invalid UTF-8", () => new Response(new Uint8Array([0x7b, 0xff, 0x7d])), "key set is not JSON"],
    ["JSON nested too deep", () => new Response(`${"[".repeat(100)}${"]".repeat(100)}`), "key set is not JSON"],
    ["an array", () => json([ec.pub]), "key set is not a JWK Set ({keys: [...]})"],
    ["keys not an array", () => json({ keys: ec.pub }), "key set is not a JWK Set ({keys: [...]})"],
    ["an unreachable host", () => Promise.reject(new TypeError("Network connection lost.")), "key set request failed"],
  ])("refuses %s", async (_, handler, reason) => {
    fakeNetwork({ [JWKS_URL]: handler });
    expect(await fetchKeySet(JWKS_URL, strict)).toEqual({ ok: false, reason });
  });

  it("gives up on a server that does not answer within timeoutMs", async () => {
    fakeNetwork({ [JWKS_URL]: never });
    const started = Date.now();
    expect(await fetchKeySet(JWKS_URL, { ...strict, timeoutMs: 100 })).toEqual({ ok: false, reason: "key set request timed out" });
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("gives up on a body that stalls after the headers", async () => {
    const stalled = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('{"keys": ['));
      },
    });
    fakeNetwork({ [JWKS_URL]: () => new Response(stalled) });
    expect(await fetchKeySet(JWKS_URL, { ...strict, timeoutMs: 100 })).toEqual({ ok: false, reason: "key set request timed out" });
  });

  it("refuses the cloud metadata address even when insecure targets are allowed, before any request", async () => {
    const sent = fakeNetwork({});
    expect(await fetchKeySet("http://169.254.169.254/", insecure)).toEqual({
      ok: false,
      reason: "url points to a link-local or cloud metadata address",
    });
    expect(await fetchKeySet("https://169.254.169.254/latest/meta-data/", insecure)).toMatchObject({ ok: false });
    expect(sent).toEqual([]);
  });

  it("refuses http and loopback unless insecure targets are allowed", async () => {
    const local = "http://127.0.0.1:8788/jwks";
    const sent = fakeNetwork({ [local]: () => json({ keys: [ec.pub] }) });
    expect(await fetchKeySet(local, strict)).toEqual({ ok: false, reason: "url must use https" });
    expect(await fetchKeySet("https://127.0.0.1/jwks", strict)).toEqual({ ok: false, reason: "url points to a loopback address" });
    expect(sent).toEqual([]);
    expect(await fetchKeySet(local, insecure)).toMatchObject({ ok: true, keys: [ec.pub] });
    expect(sent.map((s) => s.url)).toEqual([local]);
  });

  it("never echoes the URL or the body in a reason", async () => {
    const secretUrl = "https://keys.example/jwks.json?token=s3cr3t-in-query";
    const handlers = [
      () => new Response("s3cr3t-in-body", { status: 500 }),
      () => new Response("s3cr3t-in-body not json"),
      () => json({ keys: [{ kty: "s3cr3t-in-body" }] }),
      () => new Response(null, { status: 301, headers: { Location: "https://s3cr3t.example/" } }),
    ];
    for (const handler of handlers) {
      fakeNetwork({ [JWKS_URL]: handler });
      const result = await fetchKeySet(secretUrl, strict);
      expect(result.ok).toBe(false);
      expect(JSON.stringify(result)).not.toMatch(/s3cr3t|keys\.example/);
    }
  });
});

describe("checkIssuer", () => {
  it.each([
    ["https://issuer.example", "https://issuer.example"],
    ["https://issuer.example/", "https://issuer.example/"],
    ["HTTPS://Issuer.EXAMPLE:443", "https://issuer.example"],
    ["https://issuer.example/tenant/a", "https://issuer.example/tenant/a"],
    ["https://issuer.example/tenant/a/", "https://issuer.example/tenant/a/"],
  ])("accepts %s as %s", (raw, normalized) => {
    expect(checkIssuer(raw, strict)).toEqual({ ok: true, issuer: normalized });
  });

  it.each([
    ["https://issuer.example/?tenant=a", strict, "issuer must not have a query"],
    ["https://issuer.example/?", strict, "issuer must not have a query"],
    ["https://issuer.example/#frag", strict, "issuer must not have a fragment"],
    ["https://issuer.example#", strict, "issuer must not have a fragment"],
    ["http://issuer.example", strict, "url must use https"],
    ["http://127.0.0.1:9000", strict, "url must use https"],
    ["https://localhost/", strict, "url host localhost is not allowed"],
    ["https://user:pw@issuer.example", strict, "url must not contain credentials"],
    ["http://169.254.169.254", insecure, "url points to a link-local or cloud metadata address"],
    ["issuer.example", strict, "url is not a valid absolute URL"],
  ])("refuses %s", (raw, policy, reason) => {
    expect(checkIssuer(raw, policy)).toEqual({ ok: false, reason });
  });

  it("accepts http and loopback when insecure targets are allowed", () => {
    expect(checkIssuer("http://127.0.0.1:9000/realms/a", insecure)).toEqual({ ok: true, issuer: "http://127.0.0.1:9000/realms/a" });
  });
});

describe("discoverJwksUri", () => {
  const ISSUER = "https://issuer.example";
  const OIDC = `${ISSUER}/.well-known/openid-configuration`;

  it("reads jwks_uri from the OpenID configuration whose issuer matches", async () => {
    const sent = fakeNetwork({ [OIDC]: () => json({ issuer: ISSUER, jwks_uri: `${ISSUER}/keys` }) });
    expect(await discoverJwksUri(ISSUER, strict)).toEqual({ ok: true, jwksUri: `${ISSUER}/keys` });
    expect(sent.map((s) => s.url)).toEqual([OIDC]);
    expect(sent[0]?.headers.accept).toBe("application/json");
  });

  it("keeps the issuer's path and drops its terminating slash (OIDC Discovery 4)", async () => {
    const issuer = "https://issuer.example/realms/a/";
    const sent = fakeNetwork({
      "https://issuer.example/realms/a/.well-known/openid-configuration": () => json({ issuer, jwks_uri: `${issuer}certs` }),
    });
    expect(await discoverJwksUri(issuer, strict)).toEqual({ ok: true, jwksUri: `${issuer}certs` });
    expect(sent).toHaveLength(1);
  });

  it("refuses a document that names another issuer, without trying RFC 8414", async () => {
    const sent = fakeNetwork({
      [OIDC]: () => json({ issuer: "https://evil.example", jwks_uri: "https://evil.example/keys" }),
      [`${ISSUER}/.well-known/oauth-authorization-server`]: () => json({ issuer: ISSUER, jwks_uri: `${ISSUER}/keys` }),
    });
    expect(await discoverJwksUri(ISSUER, strict)).toEqual({ ok: false, reason: "issuer metadata names another issuer" });
    expect(sent.map((s) => s.url)).toEqual([OIDC]);
  });

  it("compares the issuer exactly: a trailing slash is another issuer", async () => {
    fakeNetwork({ [OIDC]: () => json({ issuer: `${ISSUER}/`, jwks_uri: `${ISSUER}/keys` }) });
    expect(await discoverJwksUri(ISSUER, strict)).toEqual({ ok: false, reason: "issuer metadata names another issuer" });
  });

  it("falls back to RFC 8414 for an issuer with a path, the well-known suffix inserted before the path", async () => {
    const issuer = "https://as.example/tenant/one";
    const sent = fakeNetwork({
      "https://as.example/tenant/one/.well-known/openid-configuration": () => new Response("not found", { status: 404 }),
      "https://as.example/.well-known/oauth-authorization-server/tenant/one": () =>
        json({ issuer, jwks_uri: "https://as.example/tenant/one/jwks" }),
    });
    expect(await discoverJwksUri(issuer, strict)).toEqual({ ok: true, jwksUri: "https://as.example/tenant/one/jwks" });
    expect(sent.map((s) => s.url)).toEqual([
      "https://as.example/tenant/one/.well-known/openid-configuration",
      "https://as.example/.well-known/oauth-authorization-server/tenant/one",
    ]);
  });

  it("falls back to RFC 8414 when the OpenID configuration is not JSON", async () => {
    fakeNetwork({
      [OIDC]: () => new Response("<html>login</html>", { headers: { "Content-Type": "text/html" } }),
      [`${ISSUER}/.well-known/oauth-authorization-server`]: () => json({ issuer: ISSUER, jwks_uri: `${ISSUER}/jwks` }),
    });
    expect(await discoverJwksUri(ISSUER, strict)).toEqual({ ok: true, jwksUri: `${ISSUER}/jwks` });
  });

  it("answers not found when neither document exists", async () => {
    const notFound = () => new Response(null, { status: 404 });
    fakeNetwork({ [OIDC]: notFound, [`${ISSUER}/.well-known/oauth-authorization-server`]: notFound });
    expect(await discoverJwksUri(ISSUER, strict)).toEqual({ ok: false, reason: "issuer metadata not found" });
  });

  it.each([
    ["a 500", () => new Response(null, { status: 500 }), "issuer metadata URL answered an error status"],
    ["a redirect", () => new Response(null, { status: 307, headers: { Location: `${ISSUER}/moved` } }), "issuer metadata URL redirected"],
    ["an oversized body", () => new Response(streamed(2 * MAX_BODY_BYTES).body), "issuer metadata is larger than 64 KiB"],
  ])("does not fall back after %s", async (_, handler, reason) => {
    const sent = fakeNetwork({
      [OIDC]: handler,
      [`${ISSUER}/.well-known/oauth-authorization-server`]: () => json({ issuer: ISSUER, jwks_uri: `${ISSUER}/jwks` }),
    });
    expect(await discoverJwksUri(ISSUER, strict)).toEqual({ ok: false, reason });
    expect(sent.map((s) => s.url)).toEqual([OIDC]);
  });

  it("times out within timeoutMs", async () => {
    fakeNetwork({ [OIDC]: never });
    expect(await discoverJwksUri(ISSUER, { ...strict, timeoutMs: 100 })).toEqual({
      ok: false,
      reason: "issuer metadata request timed out",
    });
  });

  it.each([
    [{ issuer: ISSUER }, "issuer metadata has no jwks_uri"],
    [{ issuer: ISSUER, jwks_uri: ["https://issuer.example/keys"] }, "issuer metadata has no jwks_uri"],
    [{ issuer: ISSUER, jwks_uri: "http://issuer.example/keys" }, "jwks_uri refused: url must use https"],
    [{ issuer: ISSUER, jwks_uri: "https://10.0.0.8/keys" }, "jwks_uri refused: url points to a private address"],
    [["not", "an", "object"], "issuer metadata is not a JSON object"],
  ])("refuses the document %j", async (doc, reason) => {
    fakeNetwork({ [OIDC]: () => json(doc) });
    expect(await discoverJwksUri(ISSUER, strict)).toEqual({ ok: false, reason });
  });

  it("holds jwks_uri to the guard even when insecure targets are allowed", async () => {
    const local = "http://127.0.0.1:9000";
    fakeNetwork({ [`${local}/.well-known/openid-configuration`]: () => json({ issuer: local, jwks_uri: "http://169.254.169.254/keys" }) });
    expect(await discoverJwksUri(local, insecure)).toEqual({
      ok: false,
      reason: "jwks_uri refused: url points to a link-local or cloud metadata address",
    });
    fakeNetwork({ [`${local}/.well-known/openid-configuration`]: () => json({ issuer: local, jwks_uri: `${local}/keys` }) });
    expect(await discoverJwksUri(local, insecure)).toEqual({ ok: true, jwksUri: `${local}/keys` });
  });

  it("refuses an invalid issuer before any request", async () => {
    const sent = fakeNetwork({});
    expect(await discoverJwksUri("http://169.254.169.254/", insecure)).toEqual({
      ok: false,
      reason: "url points to a link-local or cloud metadata address",
    });
    expect(await discoverJwksUri("http://127.0.0.1:9000", strict)).toEqual({ ok: false, reason: "url must use https" });
    expect(await discoverJwksUri(`${ISSUER}?x=1`, strict)).toEqual({ ok: false, reason: "issuer must not have a query" });
    expect(sent).toEqual([]);
  });
});
