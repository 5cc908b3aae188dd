/**
 * Runs before every file of the workers and pipeline projects. The workers project reuses one
 * runtime (and one module graph) across files (`isolate: false` in vitest.config.ts), so what a
 * file needs around it is put in place here, per file, rather than by hooks a shared module
 * registered once:
 * outbound `fetch` is intercepted (test/fake-network.ts) for every file, so no test reaches the
 * network and a request left over from another file's objects fails as an unreachable host would.
 */
import { afterAll, afterEach, beforeAll } from "vitest";
import { clearRoutes, interceptFetch } from "../fake-network";

beforeAll(interceptFetch);
afterEach(clearRoutes);

/**
 * The Workers pool imports the test Worker's main module again on every Durable Object call and
 * every SELF request (so that an edited module invalidates its objects), and vitest's module
 * runner first resolves the module's path with a call to the vitest process and waits for its
 * answer: about 57,000 round trips in a run, each a message each way on the pool's socket and a
 * resolution by Vite. A path, once resolved, resolves the same for the rest of the run, so the
 * answer is kept here, for absolute paths asked without an importer (the main module's).
 *
 * Each of those calls was also what sent the console lines that Durable Objects had logged since
 * the last message: the pool holds a line logged outside its runner's own request until the runner
 * next sends something, and vitest waits for every line's delivery before it ends a file. So a
 * kept answer still sends one message, one way, that the vitest process ignores (an empty
 * `onAsyncLeaks` event): the lines go out as before, and nothing waits for an answer.
 *
 * Should vitest's runner change shape, nothing is kept and every call goes to the vitest process.
 */
interface Resolver {
  resolveId?: (id: string, importer?: string) => Promise<unknown>;
  keywayMemo?: true;
}
interface OneWay<A extends unknown[]> {
  (...args: A): Promise<unknown>;
  asEvent?: (...args: A) => void;
}
interface RunnerRpc {
  onAsyncLeaks?: OneWay<[unknown[]]>;
  onUserConsoleLog?: OneWay<[unknown]>;
  getCountOfFailedTests?: () => Promise<number>;
}
interface WorkerGlobals {
  __vitest_mocker__?: { moduleRunner?: { vitestOptions?: { transport?: Resolver } } };
  __vitest_worker__?: { rpc?: RunnerRpc };
}
const runtime = globalThis as WorkerGlobals;
const transport = runtime.__vitest_mocker__?.moduleRunner?.vitestOptions?.transport;
const sendOneWay = runtime.__vitest_worker__?.rpc?.onAsyncLeaks?.asEvent;
if (transport?.resolveId !== undefined && sendOneWay !== undefined && transport.keywayMemo !== true) {
  const resolve = transport.resolveId.bind(transport);
  const resolved = new Map<string, unknown>();
  transport.resolveId = async (id, importer) => {
    if (importer !== undefined || !id.startsWith("/") || !resolved.has(id)) {
      const answer = await resolve(id, importer);
      if (importer === undefined && id.startsWith("/") && answer !== null && answer !== undefined) resolved.set(id, answer);
      return answer;
    }
    runtime.__vitest_worker__?.rpc?.onAsyncLeaks?.asEvent?.([]);
    return resolved.get(id);
  };
  transport.keywayMemo = true;
}

/**
 * The same holds at the end of a file: a line an object logged after the file's last message
 * would wait for the runner's next one. One round trip after each file (a question the vitest
 * process answers at once) sends those lines while their file is still the one running.
 */
afterAll(async () => {
  await runtime.__vitest_worker__?.rpc?.getCountOfFailedTests?.();
});

/**
 * And a line an object logs after a file's last message (an alarm, a `waitUntil` still running)
 * may not go out before the run ends; vitest waits for each line's delivery to be answered and, at
 * the end, fails the run for any still waiting ("Closing rpc while onUserConsoleLog was pending").
 * So console lines go one way: sent in order on the same connection as before, with no answer
 * awaited. A line is never dropped by the runner; one logged after the run's last message can only
 * be lost with the connection, as it would be with any test runner.
 */
const worker = runtime.__vitest_worker__;
const rpc = worker?.rpc;
// Wrapped once per runner connection: the wrapper's onUserConsoleLog has no `asEvent`, so a later
// file's setup, finding it, leaves it as it is.
const sendLine = rpc?.onUserConsoleLog?.asEvent;
if (worker !== undefined && rpc !== undefined && sendLine !== undefined) {
  worker.rpc = new Proxy(rpc, {
    get(target, property, receiver) {
      if (property !== "onUserConsoleLog") return Reflect.get(target, property, receiver);
      return async (line: unknown) => {
        sendLine(line);
      };
    },
  });
}
