/**
 * Client credentials (spec 2.1), owned by a user: a client_id and a secret, shown once with only
 * its SHA-256 kept; or, for private_key_jwt (RFC 7523), a client_id and the client's public keys
 * or the URL where it publishes them (`jwks_uri`, fetched and checked here once, then kept and
 * refreshed by the organization's object); or, for federated_jwt (issue 44), a client_id, one of
 * the organization's trusted issuers and the workload's exact subject (no secret at all). Each
 * chooses what its access tokens are (`access_token_strategy`: opaque, or RFC 9068 JWTs). A credential may be restricted to some scopes and required to use DPoP;
 * one created without scopes (stored as null) is not restricted: it may have every scope, today's
 * and any added later (auth/scopes.ts grantedScopes), which its view says (`scopes_unrestricted`).
 * The organization's object is the record; after a change it writes the credential's KV lookup
 * entry (objects/lookup.ts), which lets the token endpoint find the credential in one read, and
 * pushes revocations and changes to every API key's object, which decides on each request
 * whether a credential still works and whether that KV copy is current. A key set is checked
 * before it is stored (lib/jwk-check.ts): a key that could never verify an assertion is refused
 * with 400 naming it, rather than stored to fail every token request with 401.
 */
import type { Deps } from "../deps";
import { type InputIssue, invalidInput, notFound } from "../errors";
import { sha256Hex } from "../lib/crypto";
import { CLIENT_ID_PATTERN, newClientId, newClientSecret } from "../lib/ids";
import { jwkProblem } from "../lib/jwk-check";
import { checkIssuer } from "../lib/key-sets";
import { isoTime } from "../lib/time";
import type { Page, PageRequest } from "../objects/sql";
import { reach, unwrap } from "../objects/stubs";
import type { ClientCredentialView, CreateClientCredentialInput, UpdateClientCredentialInput } from "../schemas/admin";
import type { Jwks } from "../schemas/jose";
import type { ClientCredentialRecord } from "../schemas/records";
import { ALL_SCOPES } from "../schemas/scopes";
import { type Actor, applied } from "./changes";
import { organization } from "./organizations";
import { fetchCheckedKeySet } from "./trusted-issuers";
import { getUser } from "./users";

export async function createClientCredential(
  deps: Deps,
  orgId: string,
  userId: string,
  input: CreateClientCredentialInput,
  actor: Actor,
): Promise<{ record: ClientCredentialRecord; secret: string | null }> {
  const method = input.token_endpoint_auth_method;
  const secretless = method === "private_key_jwt" || method === "federated_jwt";
  if (input.jwks !== undefined) await checkKeys(input.jwks);
  // The user first when keyway is to fetch a URL: a request naming no one is a 404, whatever the URL answers.
  if (input.jwks_uri !== undefined) await getUser(deps, orgId, userId);
  const fetched = input.jwks_uri === undefined ? undefined : await fetchCheckedKeySet(deps, input.jwks_uri, "jwks_uri");
  // The issuer as it was registered (normalized the same way), so that it names the trusted issuer.
  const issuer =
    input.federated === undefined ? undefined : checkIssuer(input.federated.issuer, { allowInsecure: deps.config.allowInsecureTargets });
  if (issuer !== undefined && !issuer.ok) {
    throw invalidInput({ label: "request body", issues: [{ path: ["federated", "issuer"], text: ` ${issuer.reason}` }] });
  }
  // A credential without a secret stores the hash of a random value nobody ever sees.
  const secret = newClientSecret();
  const credential = {
    client_id: newClientId(),
    user_id: userId,
    name: input.name ?? null,
    auth_method: secretless ? method : ("client_secret" as const),
    secret_hash: await sha256Hex(secret),
    jwks: input.jwks ?? null,
    jwks_uri: input.jwks_uri ?? null,
    federated: input.federated === undefined || issuer?.ok !== true ? null : { issuer: issuer.issuer, subject: input.federated.subject },
    access_token_strategy: input.access_token_strategy ?? "opaque",
    scopes: input.scopes ?? null,
    dpop_bound: input.dpop_bound_access_tokens ?? false,
    created_at: isoTime(deps.now()),
  };
  const record = unwrap(await reach("organization", () => organization(deps, orgId).createCredential(credential, actor, fetched)));
  return { record, secret: secretless ? null : secret };
}

/** A new key set (a rotation), scopes, DPoP, or name; in effect on the next token request everywhere once this answers. */
export async function updateClientCredential(
  deps: Deps,
  orgId: string,
  userId: string,
  clientId: string,
  input: UpdateClientCredentialInput,
  actor: Actor,
): Promise<ClientCredentialRecord> {
  if (!CLIENT_ID_PATTERN.test(clientId)) throw notFound("Client credential");
  if (input.jwks !== undefined) await checkKeys(input.jwks);
  if (input.jwks_uri !== undefined) await getClientCredential(deps, orgId, userId, clientId);
  const fetched = input.jwks_uri === undefined ? undefined : await fetchCheckedKeySet(deps, input.jwks_uri, "jwks_uri");
  const patch = {
    ...(input.name !== undefined ? { name: input.name } : {}),
    ...(input.jwks !== undefined ? { jwks: input.jwks } : {}),
    ...(input.jwks_uri !== undefined ? { jwks_uri: input.jwks_uri } : {}),
    ...(input.access_token_strategy !== undefined ? { access_token_strategy: input.access_token_strategy } : {}),
    ...(input.scopes !== undefined ? { scopes: input.scopes } : {}),
    ...(input.dpop_bound_access_tokens !== undefined ? { dpop_bound: input.dpop_bound_access_tokens } : {}),
  };
  const change = unwrap(
    await reach("organization", () => organization(deps, orgId).updateCredential(userId, clientId, patch, actor, deps.now(), fetched)),
  );
  return applied(change, "The change of the client credential");
}

/**
 * Refuses a key set holding a key that could not verify a signature (RFC 7518's key sizes and
 * curves, a point on its curve), each such key named by its path (`jwks.keys.0`) and why, as the
 * schema's own issues are: the shape is the schema's to check, usability this layer's, since it
 * needs WebCrypto's asynchronous import.
 */
async function checkKeys(jwks: Jwks): Promise<void> {
  const problems = await Promise.all(jwks.keys.map((key) => jwkProblem(key)));
  const issues: InputIssue[] = [];
  problems.forEach((problem, i) => {
    if (problem !== null) issues.push({ path: ["jwks", "keys", String(i)], text: ` ${problem}` });
  });
  if (issues.length > 0) throw invalidInput({ label: "request body", issues: issues.slice(0, 5) });
}

export async function getClientCredential(deps: Deps, orgId: string, userId: string, clientId: string): Promise<ClientCredentialRecord> {
  if (!CLIENT_ID_PATTERN.test(clientId)) throw notFound("Client credential");
  return unwrap(await reach("organization", () => organization(deps, orgId).getCredential(userId, clientId)));
}

export async function listClientCredentials(
  deps: Deps,
  orgId: string,
  userId: string,
  page: PageRequest,
): Promise<Page<ClientCredentialRecord>> {
  return unwrap(await reach("organization", () => organization(deps, orgId).listCredentials(userId, page)));
}

/** Idempotent; in effect on the next request everywhere once this answers. */
export async function revokeClientCredential(
  deps: Deps,
  orgId: string,
  userId: string,
  clientId: string,
  actor: Actor,
): Promise<ClientCredentialRecord> {
  if (!CLIENT_ID_PATTERN.test(clientId)) throw notFound("Client credential");
  const change = unwrap(await reach("organization", () => organization(deps, orgId).revokeCredential(userId, clientId, actor, deps.now())));
  return applied(change, "The revocation of the client credential");
}

export function clientCredentialView(record: ClientCredentialRecord): ClientCredentialView {
  return {
    client_id: record.client_id,
    organization_id: record.organization_id,
    user_id: record.user_id,
    name: record.name,
    token_endpoint_auth_method: record.auth_method === "client_secret" ? "client_secret_basic" : record.auth_method,
    jwks: record.jwks,
    jwks_uri: record.jwks_uri,
    federated: record.federated,
    access_token_strategy: record.access_token_strategy,
    scopes: record.scopes ?? [...ALL_SCOPES],
    scopes_unrestricted: record.scopes === null,
    dpop_bound_access_tokens: record.dpop_bound,
    status: record.revoked_at === null ? "active" : "revoked",
    created_at: record.created_at,
    last_used_at: record.last_used_at,
    revoked_at: record.revoked_at,
  };
}
