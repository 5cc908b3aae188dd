/**
 * Client authentication at the token, revocation and introspection endpoints (RFC 6749 2.3,
 * RFC 7523 2.2), all admitted in the request's one call to its API key's object (gate.ts):
 * - a client secret, in the body (client_secret_post) or with HTTP Basic (client_secret_basic):
 *   the credential is found in its KV lookup entry (one read) and the secret compared there; the
 *   key's object says whether the credential was revoked, or changed after that copy was written.
 *   Only a success is decided there: every failure (and a missing or stale copy) is decided by the
 *   organization's object, one path whatever the reason, so that timing tells an unknown client_id
 *   from nothing;
 * - a client assertion: private_key_jwt (signed by the client's registered keys, or by a key of
 *   the set at its `jwks_uri`) or federated_jwt (issue 44: a workload's JWT signed by one of the
 *   organization's trusted issuers): the organization's object verifies it, fetching a URL's key
 *   set when it must (objects/org/remote-keys.ts), and records its jti, so that it is used once
 *   whatever API key or location it comes through (unless the issuer's JWTs may be reused): a
 *   private_key_jwt's with the credential, a federated JWT's at the ProofObject that its issuer
 *   and jti name (the organization's object asks it), so that it is used once across
 *   organizations too. That is the one case where the request makes a second call: the key set
 *   lives with the credential.
 * A token request with a DPoP proof has the proof's id recorded once (RFC 9449 11.1) by the
 * ProofObject its id names (objects/proofs.ts, issue 41), whatever API key, location or endpoint it
 * comes through: beside the admission when KV vouched for the client's secret, else beside the
 * organization's authentication, once the key admitted the request (a stranger's made-up key and
 * self-signed proof write nothing to the shared store).
 * Every failure is the same 401 invalid_client (RFC 6749 5.2); the logs say why.
 */
import type { Deps } from "../deps";
import { ApiError } from "../errors";
import { digestsEqual, NO_SECRET_HASH, sha256Hex } from "../lib/crypto";
import { CLIENT_ID_PATTERN } from "../lib/ids";
import { assertedClientId, assertionClaimsProblem, CLIENT_ASSERTION_TYPE } from "../lib/jwt";
import { log } from "../log";
import { credentialLookupHeld, readCredentialLookup, readNobodysLookup } from "../objects/lookup";
import type { ClientFacts } from "../objects/organization";
import { organizationObject, reach, unwrap } from "../objects/stubs";
import { SecretCredentials } from "../schemas/oauth";
import { parseInput } from "../schemas/validate";
import { type Admitted, admit, type Presented, type ProofId, recordProof, settled } from "./gate";

/** A request to one of these endpoints as read from the body (JSON or form) and the Authorization header. */
export interface PresentedClientRequest {
  params: Record<string, unknown>;
  /** "basic" when the credentials came in an Authorization header (RFC 6749 2.3.1). */
  method: "basic" | "body";
}

export interface AuthenticatedClient {
  clientId: string;
  organizationId: string;
  facts: ClientFacts;
  admitted: Admitted;
  /** The token request's DPoP proof had been used before, through any API key or endpoint. */
  proofReplayed: boolean;
}

export interface ClientAuthOptions {
  /** What a client assertion's `aud` may be: the issuer and the endpoint URLs (RFC 7523 3, point 3). */
  audiences: string[];
  /** More for the key's object to decide in the same call (a token to inspect). */
  presented?: Omit<Presented, "clientId" | "authenticated" | "clientVersion" | "proof">;
  /** A token request's DPoP proof, recorded once (objects/proofs.ts). */
  tokenProof?: ProofId | undefined;
  /** The endpoint's own checks of the request (grant_type, say), run after admission and before authentication. */
  check?: (params: Record<string, unknown>) => void;
}

const DEFAULT_FAILURE = "Client authentication failed: unknown client_id, wrong client_secret or client assertion, or revoked credentials.";

/**
 * Authenticates the client and admits the request. `request` is what the HTTP layer read, or the
 * error reading it raised: the request is counted against the API key either way, and that error
 * answered after the key's own. `onAdmitted` learns the key's decision as soon as it is made.
 */
export async function authenticateClient(
  deps: Deps,
  presentedKey: string | undefined,
  request: PresentedClientRequest | ApiError,
  onAdmitted: (admitted: Admitted) => void,
  options: ClientAuthOptions,
): Promise<AuthenticatedClient> {
  const params = request instanceof ApiError ? {} : request.params;
  const assertion = typeof params.client_assertion === "string" ? params.client_assertion : undefined;
  const usesAssertion = assertion !== undefined || params.client_assertion_type !== undefined;
  const named =
    typeof params.client_id === "string" ? params.client_id : usesAssertion && assertion ? assertedClientId(assertion) : undefined;
  const clientId = named !== undefined && CLIENT_ID_PATTERN.test(named) ? named : undefined;
  const now = deps.now();
  const held = !usesAssertion && clientId !== undefined && credentialLookupHeld(clientId, now);
  const [lookup, secretHash] = usesAssertion
    ? [null, null]
    : await Promise.all([
        clientId === undefined ? null : readCredentialLookup(deps.kv, clientId, now),
        typeof params.client_secret === "string" ? sha256Hex(params.client_secret) : null,
      ]);
  // Compared whether or not there is a copy (against a hash no secret has when there is none), so
  // that an unknown client_id does the same work here as a known one with a wrong secret.
  const compared =
    secretHash !== null && digestsEqual(lookup?.auth_method === "client_secret" ? lookup.secret_hash : NO_SECRET_HASH, secretHash);
  const secretMatches = lookup !== null && lookup.auth_method === "client_secret" && compared;
  // A client_id new to this isolate costs a KV read; one it holds (a known client's, warm from its
  // own use) costs none. A failure judged from a held copy therefore reads KV once too, for an id
  // nobody holds, as the lookup of an unknown id does: else a wrong secret for a client in use
  // answered 1.3 to 1.7 ms sooner than an unknown id (under wrangler dev), which told which ids
  // exist: RFC 6749 5.2 answers both alike (invalid_client), and so must their timing. A success
  // from a held copy stays without a read.
  if (held && !secretMatches) await readNobodysLookup(deps.kv);

  const proof = options.tokenProof;
  const admitted = await admit(
    deps,
    presentedKey,
    {
      ...options.presented,
      clientId,
      authenticated: secretMatches,
      clientVersion: lookup?.version,
      ...(secretMatches && proof !== undefined ? { proof } : {}),
    },
    1,
  );
  onAdmitted(admitted);
  if (request instanceof ApiError) throw request;
  options.check?.(params);

  const fail = (message = DEFAULT_FAILURE) =>
    new ApiError("invalid_client", message, request.method === "basic" ? { headers: { "WWW-Authenticate": 'Basic realm="keyway"' } } : {});
  const org = admitted.apiKey.organizationId;

  if (usesAssertion) {
    if (request.method === "basic" || params.client_secret !== undefined) {
      throw new ApiError("invalid_request", "Authenticate with one method: a client assertion, or a client secret.");
    }
    if (params.client_assertion_type !== CLIENT_ASSERTION_TYPE || assertion === undefined) {
      throw fail(`client_assertion_type must be "${CLIENT_ASSERTION_TYPE}", with the signed JWT in client_assertion.`);
    }
    // A private_key_jwt assertion names its client (`sub`); a federated_jwt one names the workload,
    // so its client sends client_id beside it. Whether the two agree is the object's to decide
    // (a private_key_jwt assertion must have iss = sub = client_id), with the key set at hand.
    if (clientId === undefined) {
      throw fail("Client authentication failed: send client_id with the client assertion (a federated_jwt client must).");
    }
    // What is wrong whatever client the assertion names is said (and costs no object call); the
    // rest answers invalid_client alike for every client, known or not (lib/jwt.ts).
    const problem = assertionClaimsProblem(assertion, { audiences: options.audiences, nowMs: now });
    if (problem !== null) {
      log.warn("client assertion refused", { client_id: clientId, reason: problem });
      throw fail(`Client authentication failed: the client assertion is refused: ${problem}.`);
    }
    const [result, replayed] = await Promise.all([
      settled(
        reach("organization", () => organizationObject(deps, org).authenticateAssertion(clientId, assertion, options.audiences, now)),
      ),
      settled(proofBeside(deps, proof)),
    ]);
    if ("error" in result) throw result.error;
    if ("error" in replayed) throw replayed.error;
    const checked = unwrap(result.value);
    if (checked.facts === null || !checked.facts.active || admitted.clientRevoked) {
      log.warn("client assertion refused", { client_id: clientId, reason: checked.reason ?? "revoked credential" });
      throw fail();
    }
    return { clientId, organizationId: org, facts: checked.facts, admitted, proofReplayed: replayed.value };
  }

  const { client_id: presentedId, client_secret: secret } = parseInput(SecretCredentials, params);
  if (lookup !== null && lookup.auth_method === "client_secret" && !admitted.clientStale && secretMatches && !admitted.clientRevoked) {
    // Only reachable with the right secret, so saying why reveals nothing new.
    if (lookup.organization_id !== org) throw fail("The client credentials belong to a different organization than the API key.");
    const facts: ClientFacts = {
      user_id: lookup.user_id,
      active: true,
      scopes: lookup.scopes,
      dpop_bound: lookup.dpop_bound,
      version: lookup.version,
      access_token_strategy: lookup.access_token_strategy,
    };
    // A DPoP proof was recorded beside the admission (gate.ts).
    return { clientId: presentedId, organizationId: org, facts, admitted, proofReplayed: admitted.proofReplayed };
  }
  // Every other case takes one path, whatever the reason: KV has no entry (an unknown client_id,
  // or a credential created so recently that this location has no copy yet), an entry older than
  // the credential's last change, a wrong secret, a revoked credential. The API key's organization
  // is the only one the credential may belong to, and its object decides. A wrong secret for a
  // known id is thereby as slow as an unknown id: answering it from KV alone made unknown ids
  // measurably slower (2.2 to 3.6 ms, issue 22), an oracle that confirms which client_ids exist.
  const hash = secretHash ?? (await sha256Hex(secret));
  const [result, replayed] = await Promise.all([
    settled(reach("organization", () => organizationObject(deps, org).authenticateClient(clientId ?? presentedId, hash, now))),
    // Recorded beside the admission already if KV vouched for the secret (then found stale here).
    settled(proofBeside(deps, secretMatches ? undefined : proof)),
  ]);
  if ("error" in result) throw result.error;
  if ("error" in replayed) throw replayed.error;
  const found = unwrap(result.value);
  if (found === null || !found.active || admitted.clientRevoked) throw fail();
  return { clientId: presentedId, organizationId: org, facts: found, admitted, proofReplayed: admitted.proofReplayed || replayed.value };
}

/** A proof recorded beside the organization's authentication (once the key admitted the request): whether it was used before. */
async function proofBeside(deps: Deps, proof: ProofId | undefined): Promise<boolean> {
  if (proof === undefined) return false;
  return !(await recordProof(deps, proof));
}
