/**
 * Reads a body stream into memory with a byte cap enforced while reading, so neither a client
 * nor a receiver can make the Worker buffer more than it chose to (a declared Content-Length is
 * not to be trusted, and may be absent).
 */

/** The bytes of `stream`, or null (after cancelling it) once more than `maxBytes` arrive. */
export async function readCapped(stream: ReadableStream<Uint8Array> | null, maxBytes: number): Promise<Uint8Array | null> {
  if (stream === null) return new Uint8Array();
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel();
      return null;
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}
