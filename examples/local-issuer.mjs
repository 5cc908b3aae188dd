/**
 * A small local OIDC workload issuer: a stand-in, on 127.0.0.1, for the issuers that hand
 * workloads a signed JWT (GitHub Actions' `https://token.actions.githubusercontent.com`, a
 * Kubernetes cluster's service-account issuer, a SPIFFE trust domain). docs/clients.md shows it
 * verbatim ("Federated workload identity"); test/e2e/federated.test.ts and the recipes test run it
 * against `npm start`, which lets keyway fetch plain-http loopback URLs. Node built-ins and jose
 * only. Every request is logged as one line (`GET /jwks`), so a test can count keyway's fetches.
 */
import { createServer } from "node:http";
import { calculateJwkThumbprint, exportJWK, generateKeyPair, SignJWT } from "jose";

// Its own variable: PORT is keyway's (npm start), and the printed curl session exports it.
const port = Number(process.env.ISSUER_PORT ?? 9100);
// The `iss` of its JWTs: what keyway's trusted issuer must say, exactly.
const issuer = `http://127.0.0.1:${port}`;

async function newKey() {
  const { privateKey, publicKey } = await generateKeyPair("ES256");
  const jwk = await exportJWK(publicKey);
  // The kid names the key in each JWT's header; its RFC 7638 thumbprint is a stable, unique name.
  const kid = await calculateJwkThumbprint(jwk);
  return { kid, privateKey, published: { ...jwk, kid, alg: "ES256", use: "sig" } };
}
// The key that signs, and after a rotation the previous one, still published so that the JWTs it
// signed verify until they expire.
let current = await newKey();
let previous = /** @type {typeof current | null} */ (null);
async function rotate() {
  previous = current;
  current = await newKey();
  return current.kid;
}

/**
 * A JWT for workload `sub`, for audience `aud`, living `ttl` seconds (a negative ttl makes an expired one).
 * @param {string} sub @param {string} aud @param {number} ttl
 */
function mint(sub, aud, ttl) {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({})
    .setProtectedHeader({ alg: "ES256", typ: "JWT", kid: current.kid })
    .setIssuer(issuer)
    .setSubject(sub)
    .setAudience(aud)
    .setIssuedAt(Math.min(now, now + ttl - 60))
    .setExpirationTime(now + ttl)
    .setJti(crypto.randomUUID())
    .sign(current.privateKey);
}

createServer(async (req, res) => {
  const url = new URL(req.url ?? "/", issuer);
  console.log(`${req.method} ${url.pathname}`);
  /** @param {number} status @param {string} type @param {string} body */
  const send = (status, type, body, cache = "no-store") =>
    res.writeHead(status, { "Content-Type": type, "Cache-Control": cache }).end(body);
  const route = `${req.method} ${url.pathname}`;
  if (route === "GET /.well-known/openid-configuration") {
    // OpenID Connect Discovery: keyway finds the key set here when a trusted issuer has no jwks_uri.
    send(200, "application/json", JSON.stringify({ issuer, jwks_uri: `${issuer}/jwks` }), "max-age=300");
  } else if (route === "GET /jwks") {
    send(
      200,
      "application/jwk-set+json",
      JSON.stringify({ keys: [current, previous].flatMap((key) => (key ? [key.published] : [])) }),
      "max-age=300",
    );
  } else if (route === "GET /token") {
    // What the platform gives a workload: GitHub Actions' token request, a projected token file.
    const sub = url.searchParams.get("sub");
    const aud = url.searchParams.get("aud");
    const ttl = Number(url.searchParams.get("ttl") ?? 600);
    if (!sub || !aud || !Number.isInteger(ttl)) return send(400, "text/plain", "give sub, aud and an integer ttl\n");
    send(200, "application/jwt", await mint(sub, aud, ttl));
  } else if (route === "POST /rotate") {
    send(200, "application/json", JSON.stringify({ kid: await rotate() }));
  } else {
    send(404, "text/plain", "not found\n");
  }
}).listen(port, "127.0.0.1", () => console.log(`issuer ${issuer} listening`));
