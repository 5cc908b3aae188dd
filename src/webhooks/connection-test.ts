/**
 * The connection test (issue 31, `POST /v1/webhook-configurations/{id}/test-connection`): a token
 * request only, exactly as an attempt makes it (the configuration's method, scope, resource,
 * audience, DPoP proof and nonce, the SSRF guard on every hop), and an answer in keyway's words:
 * whether the token endpoint was reached, refused by the guard, unresolvable, refusing
 * connections, failing TLS or too slow; its HTTP status and RFC 6749 error code; whether an
 * `access_token` came back, with its `token_type` and `expires_in`. Nothing of the token, and no
 * free text of the receiver's, is kept or answered (outbound.ts keeps only registered codes).
 */
import type { Deps } from "../deps";
import { ApiError, notFound } from "../errors";
import type { Actor } from "../identity/changes";
import { ID_PATTERN } from "../lib/ids";
import { reach, unwrap, webhookObject } from "../objects/stubs";
import { type ConnectionTestView, receiverOAuth } from "../schemas/webhooks";
import { AttemptSecrets } from "./attempt-secrets";
import { DeliveryFailure, deadlineOf, requestReceiverToken } from "./outbound";

export async function testConnection(deps: Deps, orgId: string, configId: string, _actor: Actor): Promise<ConnectionTestView> {
  if (!ID_PATTERN.test(configId)) throw notFound("Webhook configuration");
  const config = unwrap(await reach("webhooks", () => webhookObject(deps, orgId).configurationForToken(configId)));
  if (config.delivery === "polling")
    throw new ApiError("conflict", "A polling configuration has no token endpoint to test: its receiver reads its events.");
  const o = receiverOAuth(config);
  const base = { webhook_configuration_id: config.id, auth_method: o.auth_method, dpop: o.dpop_key !== null };
  const started = deps.now();
  const deadline = deadlineOf(deps, started + deps.config.webhookTimeoutMs);
  try {
    const token = await requestReceiverToken(deps, config, await new AttemptSecrets(deps, config).credentials(), deadline);
    return {
      ...base,
      ok: true,
      outcome: "token_issued",
      message: `the token endpoint issued a ${token.tokenType ?? "token (no token_type)"}${token.expiresInSeconds === null ? "" : ` valid ${token.expiresInSeconds} s`}`,
      reached: true,
      http_status: 200,
      error: null,
      token_type: token.tokenType,
      expires_in: token.expiresInSeconds,
      latency_ms: Math.max(0, deps.now() - started),
    };
  } catch (err) {
    if (!(err instanceof DeliveryFailure)) throw err;
    return {
      ...base,
      ok: false,
      outcome: err.outcome,
      message: err.message,
      reached: err.httpStatus !== null,
      http_status: err.httpStatus,
      error: err.errorCode,
      token_type: null,
      expires_in: null,
      latency_ms: Math.max(0, deps.now() - started),
    };
  }
}
