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

export function writeCredentialLookup(kv: KVNamespace, clientId: string, entry: z.input<typeof CredentialLookup>): Promise<void> {
  seen.delete(clientId); // a miss kept in this isolate ends here
  return kv.put(kvKeys.clientCredential(clientId), JSON.stringify(CredentialLookup.parse(entry)));
}

export function deleteCredentialLookup(kv: KVNamespace, clientId: string): Promise<void> {
  seen.delete(clientId);
  return kv.delete(kvKeys.clientCredential(clientId));
}
