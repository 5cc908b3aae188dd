/**
 * Every Workers KV key the service reads or writes is built here, nowhere else (documented in
 * docs/storage.md). KV holds only lookup entries derived from the Durable Objects that are the
 * systems of record; ids never contain ":", so each prefix selects exactly one kind of entry.
 */

export const kvKeys = {
  /**
   * A client credential's lookup entry (objects/lookup.ts): organization, user and secret hash,
   * derived from the organization's object, so the token endpoint finds the credential in one read.
   */
  clientCredential: (clientId: string) => `client:${clientId}`,
  /**
   * A polling configuration's read verifier (objects/lookup.ts): its token's hash and since when,
   * derived from the organization's WebhookObject, so a read with a token that is not the
   * configuration's is refused at the edge, with no object call.
   */
  pollingVerifier: (configurationId: string) => `poll:${configurationId}`,
  /**
   * The public keys keyway signs receivers' client assertions with (RFC 7517 JWKS; objects/lookup.ts):
   * an organization's, or one configuration's, derived from the organization's WebhookObject, so
   * the public key-set URLs are answered from KV alone.
   */
  receiverKeySet: (organizationId: string, configurationId: string | null) =>
    configurationId === null ? `jwks:${organizationId}` : `jwks:${organizationId}:${configurationId}`,
} as const;
