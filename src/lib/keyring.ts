/**
 * Versioned secret keys: each value made with a key records the key's id, so a keyring can hold
 * the current key first and older ones after it while values made with them are still around
 * (rotation). Parsed from the Worker's secrets by config.ts; used by lib/signed.ts and lib/aead.ts.
 */
export interface VersionedKey {
  kid: string;
  raw: Uint8Array;
}
