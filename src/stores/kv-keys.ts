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
} as const;
