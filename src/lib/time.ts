/**
 * Time helpers: timestamps as the API shows and stores them (ISO 8601 in UTC with milliseconds),
 * and a deadline for a call that may never answer.
 */
export const isoTime = (ms: number): string => new Date(ms).toISOString();

export class TimeoutError extends Error {
  constructor(what: string, ms: number) {
    super(`${what} did not answer within ${ms} ms`);
    this.name = "TimeoutError";
  }
}

/**
 * `work`'s outcome, or a TimeoutError after `ms`. The work itself goes on (a Durable Object call
 * cannot be cancelled); the caller stops waiting for it.
 */
export function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | null = null;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new TimeoutError(what, ms)), ms);
  });
  return Promise.race([work, deadline]).finally(() => {
    if (timer !== null) clearTimeout(timer);
  });
}
