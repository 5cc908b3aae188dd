/**
 * Every Workers KV key the service reads or writes is built here, nowhere else (documented in
 * docs/storage.md). Ids and hashes never contain ":", so each prefix selects exactly one kind of
 * record for KV list().
 */

export const kvKeys = {
  /**
   * A client credential's lookup entry (objects/lookup.ts): organization, user and secret hash,
   * derived from the organization's object, so the token endpoint finds the credential in one read.
   */
  clientCredential: (clientId: string) => `client:${clientId}`,

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
