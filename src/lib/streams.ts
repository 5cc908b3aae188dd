/**
 * Reads a body stream into memory with a byte cap enforced while reading, so neither a client
 * nor a receiver can make the Worker buffer more than it chose to (a declared Content-Length is
 * not to be trusted, and may be absent).
 */

/**
 * The bytes of `stream`, or null (after cancelling it) once more than `maxBytes` arrive (with
 * `truncate`, its first `maxBytes` instead). With a
 * `signal`, a body that stalls is cancelled when the signal aborts, and its reason is thrown: a
 * server that sends its headers and then nothing cannot hold the reader past the deadline.
 */
export async function readCapped(
  stream: ReadableStream<Uint8Array> | null,
  maxBytes: number,
  signal?: AbortSignal,
  options: { truncate?: boolean } = {},
): Promise<Uint8Array | null> {
  if (stream === null) return new Uint8Array();
  const reader = stream.getReader();
  let aborted: Promise<never> | undefined;
  if (signal !== undefined) {
    signal.throwIfAborted();
    aborted = new Promise<never>((_, reject) => {
      signal.addEventListener(
        "abort",
        () => {
          reader.cancel(signal.reason).catch(() => undefined);
          reject(signal.reason);
        },
        { once: true },
      );
    });
    aborted.catch(() => undefined); // observed below; never unhandled
  }
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = aborted === undefined ? await reader.read() : await Promise.race([reader.read(), aborted]);
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel();
      if (!options.truncate) return null;
      chunks.push(value.subarray(0, value.byteLength - (total - maxBytes)));
      total = maxBytes;
      break;
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
