/**
 * Trusted issuers (issue 44): the workload identity issuers whose JWTs authenticate an
 * organization's federated_jwt credentials (a CI system's OIDC issuer, a Kubernetes cluster's
 * service-account issuer, a SPIFFE trust domain's JWT issuer). Registering one checks its
 * identifier (RFC 8414 2), finds its key set when no `jwks_uri` is given (OpenID Connect Discovery
 * 4, then RFC 8414 3, each with its issuer check), and fetches that set once through the SSRF guard:
 * an issuer whose keys cannot be fetched is refused with 400 saying why, rather than stored to
 * fail every token request with 401. The organization's object is the record and keeps the set
 * (objects/org/remote-keys.ts). Removing an issuer revokes its credentials.
 */
import type { Deps } from "../deps";
import { invalidInput, notFound } from "../errors";
import { ID_PATTERN, newTrustedIssuerId } from "../lib/ids";
import { checkIssuer, discoverJwksUri, fetchKeySet } from "../lib/key-sets";
import { isoTime } from "../lib/time";
import type { Page, PageRequest } from "../objects/sql";
import { reach, unwrap } from "../objects/stubs";
import type { CreateTrustedIssuerInput, TrustedIssuerView } from "../schemas/admin";
import type { TrustedIssuerRecord } from "../schemas/records";
import { type Actor, applied } from "./changes";
import { getOrganization, organization } from "./organizations";

/** Kubernetes' default projected service-account token lives an hour. */
export const DEFAULT_MAX_ASSERTION_LIFETIME_S = 3600;

/** 400 naming the field at fault and why (the reasons are fixed strings: they never echo a URL). */
const refused = (field: string, reason: string) => invalidInput({ label: "request body", issues: [{ path: [field], text: ` ${reason}` }] });

/** The set at a URL keyway is to fetch, checked now; 400 on `field` when it cannot be used. */
export async function fetchCheckedKeySet(deps: Deps, url: string, field: string) {
  const fetched = await fetchKeySet(url, { allowInsecure: deps.config.allowInsecureTargets });
  if (!fetched.ok) throw refused(field, fetched.reason);
  return { keys: fetched.keys, maxAgeSeconds: fetched.maxAgeSeconds, now: deps.now() };
}

export async function createTrustedIssuer(
  deps: Deps,
  orgId: string,
  input: CreateTrustedIssuerInput,
  actor: Actor,
): Promise<TrustedIssuerRecord> {
  // The organization first: a request naming none is a 404, whatever its issuer would fetch.
  await getOrganization(deps, orgId);
  const policy = { allowInsecure: deps.config.allowInsecureTargets };
  const issuer = checkIssuer(input.issuer, policy);
  if (!issuer.ok) throw refused("issuer", issuer.reason);
  let jwksUri = input.jwks_uri;
  if (jwksUri === undefined) {
    const found = await discoverJwksUri(issuer.issuer, policy);
    if (!found.ok) throw refused("issuer", `${found.reason} (or give jwks_uri)`);
    jwksUri = found.jwksUri;
  }
  const fetched = await fetchCheckedKeySet(deps, jwksUri, input.jwks_uri === undefined ? "issuer" : "jwks_uri");
  const record = {
    id: newTrustedIssuerId(),
    name: input.name ?? null,
    issuer: issuer.issuer,
    jwks_uri: jwksUri,
    jwks_uri_source: input.jwks_uri === undefined ? ("discovered" as const) : ("registered" as const),
    assertion_reuse: input.assertion_reuse ?? "once",
    max_assertion_lifetime_seconds: input.max_assertion_lifetime_seconds ?? DEFAULT_MAX_ASSERTION_LIFETIME_S,
    created_at: isoTime(deps.now()),
  };
  return unwrap(await reach("organization", () => organization(deps, orgId).createTrustedIssuer(record, fetched, actor)));
}

export async function listTrustedIssuers(deps: Deps, orgId: string, page: PageRequest): Promise<Page<TrustedIssuerRecord>> {
  return unwrap(await reach("organization", () => organization(deps, orgId).listTrustedIssuers(page)));
}

export async function getTrustedIssuer(deps: Deps, orgId: string, id: string): Promise<TrustedIssuerRecord> {
  if (!ID_PATTERN.test(id)) throw notFound("Trusted issuer");
  return unwrap(await reach("organization", () => organization(deps, orgId).getTrustedIssuer(id)));
}

/**
 * Fetches the issuer's key set now and replaces the one held (after the issuer withdrew a key):
 * 400 when it cannot be fetched, and the held set is then left as it was.
 */
export async function refreshTrustedIssuer(deps: Deps, orgId: string, id: string, actor: Actor): Promise<TrustedIssuerRecord> {
  const current = await getTrustedIssuer(deps, orgId, id);
  const fetched = await fetchCheckedKeySet(deps, current.jwks_uri, "jwks_uri");
  return unwrap(await reach("organization", () => organization(deps, orgId).refreshTrustedIssuer(id, fetched, actor)));
}

/** Revokes the issuer's federated credentials with it; in effect on the next request everywhere once this answers. */
export async function removeTrustedIssuer(deps: Deps, orgId: string, id: string, actor: Actor): Promise<TrustedIssuerRecord> {
  if (!ID_PATTERN.test(id)) throw notFound("Trusted issuer");
  const change = unwrap(await reach("organization", () => organization(deps, orgId).removeTrustedIssuer(id, actor, deps.now())));
  return applied(change, "The removal of the trusted issuer");
}

export function trustedIssuerView(record: TrustedIssuerRecord): TrustedIssuerView {
  return record;
}
