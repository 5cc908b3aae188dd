/**
 * The part of `node:async_hooks` the logger uses (log.ts: the request id on every line logged
 * while a request is handled). The Workers runtime provides AsyncLocalStorage under the
 * nodejs_compat flag (wrangler.toml); src/ is type-checked against the Workers types only, not
 * Node's, so this declares just what is used, with the runtime's signatures.
 */
declare module "node:async_hooks" {
  export class AsyncLocalStorage<T> {
    getStore(): T | undefined;
    run<R>(store: T, callback: () => R): R;
  }
}
