/**
 * What one delivery attempt opens of its configuration's sealed values (AES-256-GCM at rest,
 * bound to the organization and configuration; configurations.ts and receiver-keys.ts seal them):
 * the receiver's client secret, keyway's signing secrets, its assertion and DPoP keys, and the
 * endpoint's shared token. Each is opened at most once per attempt, and only when the attempt
 * needs it: an attempt with a cached token opens no client secret unless the receiver refuses the
 * token, and the secrets an answer's excerpt is checked against are the ones the webhook was
 * signed with. One place, so the attempt's driver (consumer.ts) and the connection test take the
 * credentials of a token request the same way.
 */

import type { Deps } from "../deps";
import type { SealedValue } from "../lib/aead";
import { receiverOAuth, type WebhookConfigurationRecord } from "../schemas/webhooks";
import { liveSigningSecrets, openReceiverToken, receiverClientSecret, sealReceiverToken } from "./configurations";
import type { TokenCredentials } from "./outbound";
import { type OpenedKey, openAssertionKey, openDpopKey } from "./receiver-keys";

/** A value computed on first use and kept (a failure is kept too: the attempt ends on it). */
function once<T>(compute: () => Promise<T>): () => Promise<T> {
  let value: Promise<T> | null = null;
  return () => {
    value ??= compute();
    return value;
  };
}

export class AttemptSecrets {
  /** The receiver's client secret; "" with private_key_jwt, which has none. */
  readonly clientSecret: () => Promise<string>;
  /** The signing secrets live when the attempt first signs, newest first. */
  readonly signingSecrets: () => Promise<string[]>;
  /** keyway's DPoP key for this configuration, if its receiver binds tokens to one (RFC 9449). */
  readonly dpopKey: () => Promise<OpenedKey | null>;

  constructor(
    private readonly deps: Deps,
    private readonly config: WebhookConfigurationRecord,
  ) {
    const o = receiverOAuth(config);
    this.clientSecret = once(() => receiverClientSecret(deps, config));
    this.signingSecrets = once(() => liveSigningSecrets(deps, config, deps.now()));
    this.dpopKey = once(async () => (o.dpop_key === null ? null : openDpopKey(deps, config.organization_id, config.id, o.dpop_key)));
  }

  /** What a token request of this configuration needs: its client secret and opened keys. */
  async credentials(): Promise<TokenCredentials> {
    const o = receiverOAuth(this.config);
    // A rotated-in key signs from its activation time on (objects/webhooks/configurations.ts rotateAssertionKey).
    const next = o.next_assertion_key;
    const signing = next !== null && this.deps.now() >= next.activates_ms ? next : o.assertion_key;
    const [clientSecret, assertionKey, dpopKey] = await Promise.all([
      this.clientSecret(),
      o.auth_method === "private_key_jwt" && signing !== null
        ? openAssertionKey(this.deps, this.config.organization_id, signing).then((k) => ({ ...k, kid: signing.kid }))
        : null,
      this.dpopKey(),
    ]);
    return { clientSecret, assertionKey, dpopKey };
  }

  /**
   * What the excerpt of a failed answer must not reveal: the token sent, the receiver's client
   * secret, the signing secrets (opened only if there is an excerpt to check).
   */
  async revealable(accessToken: string): Promise<string[]> {
    const [clientSecret, signing] = await Promise.all([this.clientSecret(), this.signingSecrets()]);
    return [accessToken, clientSecret, ...signing];
  }

  /** The endpoint's shared token (token_cache), as `begin` handed it over sealed. */
  openToken(sealed: SealedValue): Promise<string> {
    return openReceiverToken(this.deps, this.config, sealed);
  }

  /** A fetched token, sealed for the endpoint's cache. */
  sealToken(token: string): Promise<SealedValue> {
    return sealReceiverToken(this.deps, this.config, token);
  }
}
