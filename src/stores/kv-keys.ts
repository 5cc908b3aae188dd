/**
 * Every Workers KV key the service reads or writes is built here, nowhere else (documented in
 * docs/storage.md). Ids and hashes never contain ":", so each prefix selects exactly one kind of
 * record for KV list().
 */

export const kvKeys = {
  organization: (orgId: string) => `org:${orgId}`,
  organizationsPrefix: () => "org:",

  user: (orgId: string, userId: string) => `user:${orgId}:${userId}`,
  usersPrefix: (orgId: string) => `user:${orgId}:`,

  /** API key record, addressed by the SHA-256 of the key: one read authenticates a request. */
  apiKeyByHash: (keyHash: string) => `apikey:${keyHash}`,
  /** Index from (organization, key id) to the key's hash, for the operator API. */
  apiKeyIndex: (orgId: string, keyId: string) => `apikey-id:${orgId}:${keyId}`,
  apiKeyIndexPrefix: (orgId: string) => `apikey-id:${orgId}:`,

  clientCredential: (clientId: string) => `client:${clientId}`,
  /** Index of a user's credentials; the value is empty, the key carries the client_id. */
  clientCredentialIndex: (orgId: string, userId: string, clientId: string) => `client-id:${orgId}:${userId}:${clientId}`,
  clientCredentialIndexPrefix: (orgId: string, userId: string) => `client-id:${orgId}:${userId}:`,
  /** Organization administrator token (manager app sign-in), by SHA-256 of the token. */
  orgAdminToken: (tokenHash: string) => `org-admin-token:${tokenHash}`,
  /** Tombstone of a revoked credential, read on every bearer-authenticated request. */
  revokedClient: (clientId: string) => `revoked-client:${clientId}`,

  webhookConfiguration: (orgId: string, id: string) => `webhook:${orgId}:${id}`,
  webhookConfigurationsPrefix: (orgId: string) => `webhook:${orgId}:`,
  event: (orgId: string, eventId: string) => `event:${orgId}:${eventId}`,
  /** The exact JSON body sent to receivers, kept so a failed delivery can be re-sent. */
  eventBody: (orgId: string, eventId: string) => `event-body:${orgId}:${eventId}`,
  delivery: (orgId: string, deliveryId: string) => `delivery:${orgId}:${deliveryId}`,
  /**
   * Index of a configuration's deliveries, newest first: KV lists keys in lexicographic order,
   * so the time segment counts down (13 digits of 10^13 - 1 - created_ms).
   */
  deliveryIndex: (orgId: string, configId: string, createdMs: number, deliveryId: string) =>
    `delivery-idx:${orgId}:${configId}:${String(9_999_999_999_999 - createdMs).padStart(13, "0")}:${deliveryId}`,
  deliveryIndexPrefix: (orgId: string, configId: string) => `delivery-idx:${orgId}:${configId}:`,
} as const;

/** The last segment of an index key (the id it points to). */
export const lastSegment = (key: string): string => key.slice(key.lastIndexOf(":") + 1);
