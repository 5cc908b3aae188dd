// Types for the ES2026 Uint8Array base64/hex methods (TC39 proposal-arraybuffer-base64, stage 4),
// which workerd ships natively; TypeScript 5.9's libs do not declare them yet.
interface Uint8Array<TArrayBuffer extends ArrayBufferLike> {
  toBase64(options?: { alphabet?: "base64" | "base64url"; omitPadding?: boolean }): string;
  toHex(): string;
}

interface Uint8ArrayConstructor {
  fromBase64(
    text: string,
    options?: { alphabet?: "base64" | "base64url"; lastChunkHandling?: "loose" | "strict" | "stop-before-partial" },
  ): Uint8Array<ArrayBuffer>;
  fromHex(text: string): Uint8Array<ArrayBuffer>;
}
