/**
 * One run of a task at a time (a Durable Object's push to another object, a shared confirmation):
 * callers while it runs share it, and the next call after it settles starts a new one. The task
 * starts on a microtask, after the run is recorded, and the record is cleared only if it is still
 * that run: a task that settles at once (nothing to push) must not leave a settled run behind that
 * every later call would reuse, doing nothing (the bug `x ??= (async () => { ... finally { x =
 * null } })()` has, since its `finally` runs before the assignment).
 */
export class SingleFlight<T = void> {
  private current: Promise<T> | null = null;

  /** The run in progress, if any: a caller that must not start another can wait for it. */
  get running(): Promise<T> | null {
    return this.current;
  }

  run(task: () => Promise<T>): Promise<T> {
    if (this.current !== null) return this.current;
    const run: Promise<T> = Promise.resolve()
      .then(task)
      .finally(() => {
        if (this.current === run) this.current = null;
      });
    this.current = run;
    return run;
  }
}
