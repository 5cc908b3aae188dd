/**
 * One run at a time per key, with callers coalesced: a call while a run for its key is under way
 * gets the run that starts right after it (one follow-up for all such callers), so each caller's
 * promise settles only after a run that began after the call, and work written before the call is
 * always picked up. Used where overlapping calls must not do the same work twice (a Durable
 * Object's outbox pushes) yet each must see its own work done.
 */
export class Coalescer {
  private readonly running = new Map<string, Promise<void>>();
  private readonly next = new Map<string, Promise<void>>();

  run(key: string, work: () => Promise<void>): Promise<void> {
    const queued = this.next.get(key);
    if (queued !== undefined) return queued;
    const current = this.running.get(key);
    if (current !== undefined) {
      const follow = current.then(() => {
        this.next.delete(key);
        return this.run(key, work);
      });
      this.next.set(key, follow);
      return follow;
    }
    const started = (async () => {
      try {
        await work();
      } finally {
        this.running.delete(key);
      }
    })();
    // A failed run is reported to its callers; the follow-up runs regardless.
    this.running.set(
      key,
      started.catch(() => undefined),
    );
    return started;
  }
}
