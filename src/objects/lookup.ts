/**
 * The derived Workers KV entries the edge reads, and the only code that writes identity entries
 * to KV. Each is written by the organization's object after the change it mirrors has
 * committed, never read-modified-written, and never trusted for a decision a stale copy could
 * get wrong: a credential's entry tells the token endpoint which organization and user the
 * client_id belongs to, the hash of its secret and what its tokens may be (scopes, DPoP), in one
 * read; whether the credential is still active, and whether the entry is older than its last
 * change (`version`), is decided by the API key's object (objects/key.ts). A missing, stale or corrupt entry
 * sends the edge to the organization's object instead (a slower path, never a wrong answer).
 *
 * API keys need no entry: a key's object is named by the key's hash, so the edge finds it from
 * the presented key alone. Key names are built here and in stores/kv-keys.ts only.
 */
import * as z from "zod";
import { IsolateCache } from "../lib/cache";
import { newClientId } from "../lib/ids";
import { log } from "../log";
import { kvKeys } from "../stores/kv-keys";

export const CredentialLookup = z.object({
  organization_id: z.string(),
  user_id: z.string(),
  /** SHA-256 (hex) of the client secret; a credential's secret never changes. */
  secret_hash: z.string().regex(/^[0-9a-f]{64}$/),
  /** A private_key_jwt credential is never authenticated from this entry (its keys are not here). */
  auth_method: z.enum(["client_secret", "private_key_jwt"]).default("client_secret"),
  scopes: z.array(z.string()).nullable().default(null),
  dpop_bound: z.boolean().default(false),
  /** Its access tokens are RFC 9068 JWTs (issue 44); entries written before are opaque. */
  access_token_strategy: z.enum(["opaque", "jwt"]).default("opaque"),
  /** The credential's version this entry mirrors; entries written before versions existed are 1. */
  version: z.number().int().default(1),
});
export type CredentialLookup = z.output<typeof CredentialLookup>;

/**
 * Entries read in this isolate, for LOOKUP_CACHE_TTL_MS. Safe to cache: what may change (scopes,
 * DPoP) carries a version the key's object checks, and revocation is not decided from it.
 */
export const LOOKUP_CACHE_TTL_MS = 60_000;
/**
 * Misses are kept too (as null): a client_id that has no entry is then as quick to look up as one
 * that has, so the lookup's timing does not tell which ids exist (issue 22). Safe: a miss only
 * sends the request to the organization's object, which decides with the record.
 */
const seen = new IsolateCache<CredentialLookup | null>({ ttlMs: LOOKUP_CACHE_TTL_MS, maxEntries: 10_000 });

/** The entry for a client_id, or null when KV has none (yet) or holds something unreadable. */
export async function readCredentialLookup(kv: KVNamespace, clientId: string, now: number): Promise<CredentialLookup | null> {
  const cached = seen.get(clientId, now);
  if (cached !== undefined) return cached;
  const raw = await kv.get(kvKeys.clientCredential(clientId), "json");
  if (raw === null) {
    seen.set(clientId, null, now);
    return null;
  }
  const parsed = CredentialLookup.safeParse(raw);
  if (!parsed.success) {
    // Treated as missing: the organization's object answers instead.
    log.warn("derived KV entry failed its schema; ignored", { kind: "client" });
    return null;
  }
  seen.set(clientId, parsed.data, now);
  return parsed.data;
}

/** Whether this isolate holds `clientId`'s entry, or its absence: a lookup of it then reads no KV. */
export const credentialLookupHeld = (clientId: string, now: number): boolean => seen.get(clientId, now) !== undefined;

/**
 * One KV read of the entry of a client_id nobody holds (random, never written), its answer
 * ignored: what the lookup of an id new to this isolate and to KV costs, for a request that must
 * cost what such a lookup does (auth/client-auth.ts). Not kept in the isolate's cache.
 */
export async function readNobodysLookup(kv: KVNamespace): Promise<void> {
  await kv.get(kvKeys.clientCredential(newClientId()), "json");
}

export function writeCredentialLookup(kv: KVNamespace, clientId: string, entry: z.input<typeof CredentialLookup>): Promise<void> {
  seen.delete(clientId); // a miss kept in this isolate ends here
  return kv.put(kvKeys.clientCredential(clientId), JSON.stringify(CredentialLookup.parse(entry)));
}

export function deleteCredentialLookup(kv: KVNamespace, clientId: string): Promise<void> {
  seen.delete(clientId);
  return kv.delete(kvKeys.clientCredential(clientId));
}

/**
 * A polling configuration's read verifier (docs/architecture.md, "Routes without an API key"),
 * written by the organization's WebhookObject after each change of the configuration commits
 * (its token, its status, its deletion): what the edge needs to refuse a read with no object call.
 * Never trusted to admit one: a read whose token matches is still decided by the configuration's
 * endpoint object, so a stale entry (KV is eventually consistent) costs an object call, never a
 * read a revocation should have stopped.
 */
export const PollingVerifier = z.object({
  /** SHA-256 (hex) of the configuration's current polling token; null while revoked or once deleted. */
  token_hash: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .nullable(),
  /**
   * When the credential last changed (the current token's issue, or its revocation or the
   * configuration's deletion), ms: a genuine token issued later than this is newer than the entry
   * (a rotation KV has not carried here yet) and goes to the object; one issued before, not
   * matching, was rotated out or revoked.
   */
  since_ms: z.number().int(),
  /** false once disabled or deleted: nothing is handed over (the status contract). */
  live: z.boolean(),
});
export type PollingVerifier = z.output<typeof PollingVerifier>;

/** A deleted configuration's verifier is kept this long (seconds; KV expires it), then reads go to the object, rate-limited. */
export const POLLING_VERIFIER_GONE_TTL_S = 30 * 86_400;

/**
 * Verifiers read in this isolate, misses too: a made-up id costs one KV read per isolate a minute.
 * Safe to cache: an entry only refuses or forwards, and the object decides what it forwards.
 */
const verifiers = new IsolateCache<PollingVerifier | null>({ ttlMs: LOOKUP_CACHE_TTL_MS, maxEntries: 10_000 });

export async function readPollingVerifier(kv: KVNamespace, configurationId: string, now: number): Promise<PollingVerifier | null> {
  const cached = verifiers.get(configurationId, now);
  if (cached !== undefined) return cached;
  const raw = await kv.get(kvKeys.pollingVerifier(configurationId), "json");
  const parsed = raw === null ? null : PollingVerifier.safeParse(raw);
  if (parsed !== null && !parsed.success) log.warn("derived KV entry failed its schema; ignored", { kind: "polling" });
  const entry = parsed?.success === true ? parsed.data : null;
  verifiers.set(configurationId, entry, now);
  return entry;
}

export function writePollingVerifier(kv: KVNamespace, configurationId: string, entry: PollingVerifier): Promise<void> {
  verifiers.delete(configurationId);
  const options = entry.live || entry.token_hash !== null ? {} : { expirationTtl: POLLING_VERIFIER_GONE_TTL_S };
  return kv.put(kvKeys.pollingVerifier(configurationId), JSON.stringify(PollingVerifier.parse(entry)), options);
}

/**
 * A published key set (`/v1/receiver-jwks/{org}[/{id}]`), written by the organization's
 * WebhookObject after each change of its assertion keys or of a configuration's authentication:
 * each key with the time it stops being listed, so the edge answers from this entry alone, for
 * any id, with no object call (and a made-up organization or id creates nothing). A key is
 * published before it signs (10 minutes for a rotation; at once for a new configuration's, whose
 * entry is written before its creation is answered), longer than KV takes to carry an entry.
 */
export const ReceiverKeySet = z.object({
  keys: z.array(z.object({ jwk: z.record(z.string(), z.unknown()), until: z.number().int().nullable() })),
});
export type ReceiverKeySet = z.output<typeof ReceiverKeySet>;

/** The keys listed at `now`; none when KV has no entry (an unknown organization or id, or one with no keys). */
export async function readReceiverKeySet(
  kv: KVNamespace,
  organizationId: string,
  configurationId: string | null,
  now: number,
): Promise<Record<string, unknown>[]> {
  const raw = await kv.get(kvKeys.receiverKeySet(organizationId, configurationId), { type: "json", cacheTtl: 60 });
  const parsed = raw === null ? null : ReceiverKeySet.safeParse(raw);
  if (parsed !== null && !parsed.success) log.warn("derived KV entry failed its schema; ignored", { kind: "jwks" });
  return parsed?.success === true ? parsed.data.keys.filter((k) => k.until === null || k.until > now).map((k) => k.jwk) : [];
}

export function writeReceiverKeySet(
  kv: KVNamespace,
  organizationId: string,
  configurationId: string | null,
  set: ReceiverKeySet,
): Promise<void> {
  const key = kvKeys.receiverKeySet(organizationId, configurationId);
  return set.keys.length === 0 ? kv.delete(key) : kv.put(key, JSON.stringify(ReceiverKeySet.parse(set)));
}
