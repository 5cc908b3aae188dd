/**
 * Client credentials (spec 2.1): a client_id and a secret, owned by a user; the secret is shown
 * once and only its SHA-256 is kept. The organization's object is the record; after a change it
 * writes the credential's KV lookup entry (objects/lookup.ts), which lets the token endpoint find
 * the credential in one read, and pushes revocations to every API key's object, which decides on
 * each request whether a credential still works.
 */
import type { Deps } from "../deps";
import { notFound } from "../errors";
import { sha256Hex } from "../lib/crypto";
import { CLIENT_ID_PATTERN, newClientId, newClientSecret } from "../lib/ids";
import { isoTime } from "../lib/time";
import type { Page, PageRequest } from "../objects/sql";
import { reach, unwrap } from "../objects/stubs";
import type { ClientCredentialView } from "../schemas/admin";
import type { ClientCredentialRecord } from "../schemas/records";
import { type Actor, applied } from "./changes";
import { organization } from "./organizations";

export async function createClientCredential(
  deps: Deps,
  orgId: string,
  userId: string,
  input: { name?: string | undefined },
  actor: Actor,
): Promise<{ record: ClientCredentialRecord; secret: string }> {
  const secret = newClientSecret();
  const credential = {
    client_id: newClientId(),
    user_id: userId,
    name: input.name ?? null,
    secret_hash: await sha256Hex(secret),
    created_at: isoTime(deps.now()),
  };
  const record = unwrap(await reach("organization", () => organization(deps, orgId).createCredential(credential, actor)));
  return { record, secret };
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
    status: record.revoked_at === null ? "active" : "revoked",
    created_at: record.created_at,
    last_used_at: record.last_used_at,
    revoked_at: record.revoked_at,
  };
}
