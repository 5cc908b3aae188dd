/**
 * The keys keyway holds to speak OAuth to receivers (issue 31), all ES256 (P-256, RFC 7518 3.4),
 * generated with WebCrypto and kept only sealed (AES-256-GCM, lib/aead.ts, bound to their owner and
 * purpose): **assertion keys**, which sign private_key_jwt client assertions (RFC 7523 2.2) and
 * whose public halves are the JWKS a receiver's OAuth server registers as the client's `jwks_uri`:
 * each configuration's own since issue 42, at `/v1/receiver-jwks/{org}/{configuration}`, so an
 * assertion is accepted only by the server that registered that configuration (one key for the
 * whole organization let a receiver point its configuration at another receiver's server and get
 * an assertion as that receiver's client); the organization's key of issue 31, at
 * `/v1/receiver-jwks/{org}`, signs only for configurations not moved yet; and each configuration's **DPoP key**
 * (RFC 9449), whose thumbprint (RFC 7638) is the `cnf.jkt` of the tokens the receiver issues for
 * it. Private keys are never shown, logged or returned; an opened key is kept per isolate by the
 * sealed value it came from (immutable), so an attempt does not decrypt and import it again.
 */
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type JWK } from "jose";
import type { Deps } from "../deps";
import { notFound } from "../errors";
import type { Actor } from "../identity/changes";
import { open, type SealedValue, seal } from "../lib/aead";
import { IsolateCache } from "../lib/cache";
import { ID_PATTERN } from "../lib/ids";
import { isoTime } from "../lib/time";
import { readReceiverKeySet } from "../objects/lookup";
import { reach, unwrap, webhookObject } from "../objects/stubs";
import { ASSERTION_KEY_LEAD_MS, ASSERTION_KEY_OVERLAP_MS, type AssertionKeyCandidate } from "../objects/webhooks/configurations";

const ALG = "ES256";

/** What seals a key: an assertion key belongs to a configuration (or, before issue 42, the organization), a DPoP key to one configuration. */
const assertionAad = (orgId: string, kid: string, configId?: string) =>
  configId === undefined ? `${orgId}:assertion_key:${kid}` : `${orgId}:${configId}:assertion_key:${kid}`;
const dpopAad = (orgId: string, configId: string) => `${orgId}:${configId}:dpop_key`;

async function newKeyPair(): Promise<{ privateJwk: JWK; publicJwk: JWK; thumbprint: string }> {
  const { privateKey, publicKey } = await generateKeyPair(ALG, { extractable: true });
  const [privateJwk, publicJwk] = await Promise.all([exportJWK(privateKey), exportJWK(publicKey)]);
  return { privateJwk, publicJwk, thumbprint: await calculateJwkThumbprint(publicJwk) };
}

/** A new assertion key for a configuration (or, `configId` undefined, the organization), its kid the public key's thumbprint. */
export async function newAssertionKey(deps: Deps, orgId: string, configId?: string): Promise<AssertionKeyCandidate> {
  const { privateJwk, publicJwk, thumbprint } = await newKeyPair();
  return {
    kid: thumbprint,
    private_key: await seal(deps.config.encryptionKeys, JSON.stringify(privateJwk), assertionAad(orgId, thumbprint, configId)),
    public_jwk: { ...publicJwk, kid: thumbprint, alg: ALG, use: "sig" },
  };
}

/** A new DPoP key for a configuration: its thumbprint (`jkt`) and the sealed private JWK. */
export async function newDpopKey(deps: Deps, orgId: string, configId: string): Promise<{ jkt: string; private_key: SealedValue }> {
  const { privateJwk, thumbprint } = await newKeyPair();
  return { jkt: thumbprint, private_key: await seal(deps.config.encryptionKeys, JSON.stringify(privateJwk), dpopAad(orgId, configId)) };
}

export interface OpenedKey {
  key: CryptoKey;
  /** The public JWK (for a DPoP proof's header; RFC 9449 4.2). */
  publicJwk: JWK;
}

/** Opened keys by their sealed value (which never changes for a key): bounded, per isolate. */
const opened = new IsolateCache<Promise<OpenedKey>>({ maxEntries: 200 });

async function openKey(deps: Deps, sealed: SealedValue, aad: string): Promise<OpenedKey> {
  const cacheKey = `${aad}:${sealed.kid}:${sealed.ct}`;
  const hit = opened.get(cacheKey);
  if (hit !== undefined) return hit;
  const loading = (async () => {
    const jwk = JSON.parse(await open(deps.config.encryptionKeys, sealed, aad)) as JWK;
    const { d: _d, ...publicJwk } = jwk;
    const key = (await importJWK(jwk, ALG)) as CryptoKey;
    return { key, publicJwk };
  })();
  opened.set(cacheKey, loading);
  // A failure is not kept: the next attempt opens the key again.
  loading.catch(() => opened.delete(cacheKey));
  return loading;
}

export const openAssertionKey = (
  deps: Deps,
  orgId: string,
  key: { kid: string; private_key: SealedValue; config_id?: string | undefined },
) => openKey(deps, key.private_key, assertionAad(orgId, key.kid, key.config_id));

export const openDpopKey = (deps: Deps, orgId: string, configId: string, key: { private_key: SealedValue }) =>
  openKey(deps, key.private_key, dpopAad(orgId, configId));

/**
 * A new assertion key, published at once and signing 10 minutes later (ASSERTION_KEY_LEAD_MS);
 * the previous one stays in the JWKS 24 hours past that. `configId` undefined rotates the
 * organization's key of issue 31 (for configurations not moved yet); otherwise the configuration's
 * own, and a configuration still on the organization's key moves to its own with it. The endpoints
 * concerned get both keys and the switch time with their next copy (pushed at once), and switch by
 * themselves.
 */
export async function rotateAssertionKey(
  deps: Deps,
  orgId: string,
  actor: Actor,
  configId?: string,
): Promise<{ kid: string; activates_at: string; previous_kid: string | null; previous_expires_at: string | null }> {
  if (configId !== undefined && !ID_PATTERN.test(configId)) throw notFound("Webhook configuration");
  const now = deps.now();
  const candidate = await newAssertionKey(deps, orgId, configId);
  const activatesAt = now + ASSERTION_KEY_LEAD_MS;
  const retiresAt = activatesAt + ASSERTION_KEY_OVERLAP_MS;
  const rotated = unwrap(
    await reach("webhooks", () =>
      webhookObject(deps, orgId).rotateAssertionKey(orgId, candidate, configId ?? null, activatesAt, retiresAt, actor, now),
    ),
  );
  return {
    kid: rotated.kid,
    activates_at: isoTime(activatesAt),
    previous_kid: rotated.previous,
    previous_expires_at: rotated.previous === null ? null : isoTime(retiresAt),
  };
}

/**
 * Published assertion keys (RFC 7517 5): the organization's (`configId` undefined) or one
 * configuration's, what its receiver's server verifies assertions with.
 */
export async function receiverJwks(deps: Deps, orgId: string, configId?: string): Promise<{ keys: Record<string, unknown>[] }> {
  if (!ID_PATTERN.test(orgId) || (configId !== undefined && !ID_PATTERN.test(configId))) return { keys: [] };
  // From KV alone (objects/lookup.ts): a public URL, so no call reaches an object and a made-up id creates none.
  return { keys: await readReceiverKeySet(deps.kv, orgId, configId ?? null, deps.now()) };
}
