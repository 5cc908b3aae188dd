/**
 * Recovery's window when the deliveries' stamps are out of publish order (issue 41, L3). A
 * delivery's `created_ms` is stamped by whichever isolate published it, with its own clock, while
 * the recovery walks failed deliveries in publish order (`seq`); clocks differ between isolates
 * and locations, so a delivery stamped a little after `until` by a fast clock can come, in seq,
 * before deliveries stamped inside the window. Such a row is passed over, not taken for the end of
 * the window: every failed delivery stamped inside [since, until) is re-sent exactly once, none
 * outside it, and found / resent / skipped add up. The stamps are written into the endpoint's
 * object's rows; its Queue is held (nobody consumes it), so a re-send is read from the row
 * (series + 1, `recovered_series`, waiting again), and the steps are run by calling the object's
 * alarm, which is what runs them in production besides an attempt's report.
 */
import { runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { RECOVERY_BACKLOG, RECOVERY_BATCH } from "../src/objects/endpoints/recovery";
import type { RecoveryView } from "../src/schemas/receivers";
import { body, createTenant, issueToken, type Tenant } from "./helpers";
import { api, createConfig, endpointOf, inEndpoint, publishTo } from "./webhook-helpers";

const SECRET = "recovery-window-receiver-secret";
const HOUR = 3_600_000;
let t: Tenant;
let token: string;

beforeAll(async () => {
  for (const level of ["warn", "error", "info", "log"] as const) vi.spyOn(console, level).mockImplementation(() => {});
  t = await createTenant();
  token = await issueToken(t);
});

interface Row {
  id: string;
  seq: number;
  status: string;
  state: string | null;
  series: number;
  recovered_series: number | null;
}

const rows = (configId: string): Promise<Row[]> =>
  runInDurableObject(endpointOf(configId), (_i, s) =>
    s.storage.sql
      .exec<Row & Record<string, SqlStorageValue>>("SELECT id, seq, status, state, series, recovered_series FROM deliveries ORDER BY seq")
      .toArray(),
  );

/** Makes a delivery one that failed (every retry used), stamped `createdMs` by its publisher. */
const failedAt = (configId: string, id: string, createdMs: number) =>
  inEndpoint(
    configId,
    `UPDATE deliveries SET status = 'failed', state = NULL, due_ms = NULL, queued_ms = NULL, wake_ms = NULL, lease_until_ms = NULL,
      lane = NULL, attempts = 1, series_attempts = 1, created_ms = ? WHERE id = ?`,
    createdMs,
    id,
  );

/** One step of the endpoint's object's work (dispatch, the running recovery's next step), as its alarm runs it. */
const runAlarm = (configId: string) => runInDurableObject(endpointOf(configId), (instance) => instance.alarm());

const recover = async (configId: string, since: number, until: number): Promise<RecoveryView> => {
  const res = await api(t, token, `/v1/webhook-configurations/${configId}/recover`, "POST", {
    since: new Date(since).toISOString(),
    until: new Date(until).toISOString(),
  });
  const json = await body<RecoveryView>(res);
  expect(res.status, JSON.stringify(json)).toBe(202);
  return json.data;
};

const recovery = async (configId: string, id: string): Promise<RecoveryView> =>
  (await body<RecoveryView>(await api(t, token, `/v1/webhook-configurations/${configId}/recoveries/${id}`))).data;

/** Runs the object's alarm until the recovery is over (a bounded number of times). */
async function finish(configId: string, id: string): Promise<RecoveryView> {
  for (let i = 0; i < 20; i++) {
    const view = await recovery(configId, id);
    if (view.status !== "running") return view;
    await runAlarm(configId);
  }
  return recovery(configId, id);
}

/** What a delivery's row should be: re-sent once by a recovery (series 2), or as it was (series 1). */
const resentOnce = { status: "pending", state: expect.stringMatching(/^(waiting|queued)$/), series: 2, recovered_series: 2 };

/**
 * A configuration with one delivered delivery to copy from, and `fail(rows)`: failed deliveries
 * cloned from it, each with its id, its place in publish order after the template and its stamp.
 */
async function withTemplate(): Promise<{
  config: { id: string };
  seq0: number;
  fail: (rows: { id: string; seq: number; createdMs: number }[]) => Promise<void>;
}> {
  const config = await createConfig(t, token, SECRET);
  const template = await publishTo(t, token, config.id);
  // The published delivery itself is done with (delivered): only the clones are open or failed.
  await inEndpoint(
    config.id,
    "UPDATE deliveries SET status = 'delivered', state = NULL, due_ms = NULL, queued_ms = NULL WHERE id = ?",
    template,
  );
  const [{ seq: seq0 }] = (await rows(config.id)) as [Row];
  const fail = (clones: { id: string; seq: number; createdMs: number }[]) =>
    runInDurableObject(endpointOf(config.id), (_i, st) => {
      for (const c of clones) {
        st.storage.sql.exec(
          `INSERT INTO deliveries (id, seq, event_id, event_type, body, status, series, series_attempts, attempts, created_ms, created_at, updated_at)
            SELECT ?, ?, event_id, event_type, body, 'failed', 1, 1, 1, ?, created_at, updated_at FROM deliveries WHERE id = ?`,
          c.id,
          c.seq,
          c.createdMs,
          template,
        );
      }
    });
  return { config, seq0, fail };
}

describe("recovery of a window whose stamps are out of publish order (clock skew between publishers)", () => {
  it("leaves out what was published after it began, even stamped inside the window by a slow clock", async () => {
    const { config, seq0, fail } = await withTemplate();
    const now = Date.now();
    const since = now - 3 * HOUR;
    const until = now - HOUR;
    // More failed deliveries in the window than one step takes: the job is still running when the
    // late delivery comes.
    const total = RECOVERY_BATCH + 10;
    await fail(
      Array.from({ length: total }, (_, i) => ({
        id: `dlv_late_${String(i).padStart(4, "0")}`,
        seq: seq0 + 1 + i,
        createdMs: since + HOUR,
      })),
    );
    const started = await recover(config.id, since, until);
    expect(started).toMatchObject({ status: "running", found: total });
    // Published after the job began, by an isolate whose clock is hours behind, and failed.
    await fail([{ id: "dlv_late_published", seq: seq0 + 1 + total, createdMs: since + 90 * 60_000 }]);
    await inEndpoint(
      config.id,
      "UPDATE deliveries SET status = 'delivered', state = NULL, due_ms = NULL, queued_ms = NULL, wake_ms = NULL WHERE state IS NOT NULL",
    );
    const done = await finish(config.id, started.id);
    expect(done).toMatchObject({ status: "done", found: total, resent: total });
    const late = (await rows(config.id)).find((r) => r.id === "dlv_late_published");
    expect(late).toMatchObject({ status: "failed", series: 1, recovered_series: null });
  });

  it("re-sends every failed delivery stamped inside [since, until) once, past rows stamped after until by a fast clock", async () => {
    const config = await createConfig(t, token, SECRET);
    const ids: string[] = [];
    for (let i = 0; i < 9; i++) ids.push(await publishTo(t, token, config.id));
    const now = Date.now();
    const since = now - 3 * HOUR;
    const until = now - HOUR;
    // In publish order (seq); the stamps are what each publisher's clock said.
    const [before, inA, atUntil, inB, after, alreadyRecovered, stillPending, lastIn, atSince] = ids as [
      string,
      string,
      string,
      string,
      string,
      string,
      string,
      string,
      string,
    ];
    await failedAt(config.id, before, since - 60_000); // before the window
    await failedAt(config.id, inA, since + 30 * 60_000);
    await failedAt(config.id, atUntil, until); // a fast clock: `until` itself is outside [since, until)
    await failedAt(config.id, inB, since + 10 * 60_000); // earlier than inA, published after it
    await failedAt(config.id, after, until + 5 * 60_000); // after the window
    await failedAt(config.id, alreadyRecovered, since + HOUR);
    await inEndpoint(config.id, "UPDATE deliveries SET recovered_series = series WHERE id = ?", alreadyRecovered); // an earlier recovery's
    await inEndpoint(config.id, "UPDATE deliveries SET created_ms = ? WHERE id = ?", since + HOUR, stillPending); // not failed: not recovered
    await failedAt(config.id, lastIn, until - 1);
    await failedAt(config.id, atSince, since); // `since` itself is inside
    const seqs = (await rows(config.id)).map((r) => r.id);
    expect(seqs).toEqual(ids); // published one after the other: seq order is the order above

    const started = await recover(config.id, since, until);
    expect(started.found).toBe(4);
    const done = await finish(config.id, started.id);
    expect(done).toMatchObject({ status: "done", found: 4, resent: 4, skipped: 0 });

    const byId = new Map((await rows(config.id)).map((r) => [r.id, r]));
    for (const id of [inA, inB, lastIn, atSince]) expect(byId.get(id), id).toMatchObject(resentOnce);
    for (const id of [before, atUntil, after])
      expect(byId.get(id), id).toMatchObject({ status: "failed", series: 1, recovered_series: null });
    expect(byId.get(alreadyRecovered)).toMatchObject({ status: "failed", series: 1, recovered_series: 1 });
    expect(byId.get(stillPending)).toMatchObject({ status: "pending", series: 1, recovered_series: null });

    // Once: more steps, and the same call again, re-send nothing.
    await runAlarm(config.id);
    const again = await recover(config.id, since, until);
    expect(again).toMatchObject({ status: "done", found: 0, resent: 0, skipped: 0 });
    await runAlarm(config.id);
    const after2 = new Map((await rows(config.id)).map((r) => [r.id, r]));
    for (const id of [inA, inB, lastIn, atSince]) expect(after2.get(id), id).toMatchObject({ series: 2, recovered_series: 2 });
    for (const id of [before, atUntil, after, alreadyRecovered]) expect(after2.get(id), id).toMatchObject({ status: "failed", series: 1 });
  });

  it("keeps its cursor, batch and backlog across steps while stamps inside and outside the window alternate", async () => {
    const { config, seq0, fail } = await withTemplate();
    const now = Date.now();
    const since = now - 3 * HOUR;
    const until = now - HOUR;
    const total = 2 * RECOVERY_BATCH + RECOVERY_BACKLOG / 2; // past the backlog: the job waits for it once
    // Every 10th row stamped after the window (fast clocks), every 10th before it (slow ones), the
    // rest inside it in no order; all failed, in publish order after the template.
    const stamp = (i: number) =>
      i % 10 === 3 ? until + i * 1000 : i % 10 === 7 ? since - i * 1000 : until - 1 - ((i * 104_729) % (2 * HOUR));
    const inside = (i: number) => stamp(i) >= since && stamp(i) < until;
    await fail(
      Array.from({ length: total }, (_, i) => ({ id: `dlv_skew_${String(i).padStart(4, "0")}`, seq: seq0 + 1 + i, createdMs: stamp(i) })),
    );
    const expected = Array.from({ length: total }, (_, i) => i).filter(inside);
    expect(expected.length).toBe(total - 2 * (total / 10));

    const started = await recover(config.id, since, until);
    // The first step looked at one batch, re-sending its rows inside the window (not stopping at i = 3).
    expect(started).toMatchObject({ status: "running", found: expected.length, resent: expected.filter((i) => i < RECOVERY_BATCH).length });

    // The steps go on, each taking what room the backlog leaves, until it is full: then the job
    // waits (more steps re-send nothing), with rows inside the window still to come.
    for (let i = 0; i < 6; i++) await runAlarm(config.id);
    const waiting = await recovery(config.id, started.id);
    expect(waiting).toMatchObject({ status: "running", resent: RECOVERY_BACKLOG });
    expect((await rows(config.id)).filter((r) => r.state !== null).length).toBe(RECOVERY_BACKLOG);
    await runAlarm(config.id);
    expect(await recovery(config.id, started.id)).toMatchObject({ status: "running", resent: RECOVERY_BACKLOG });
    expect(RECOVERY_BACKLOG).toBeLessThan(expected.length);

    // The receiver takes what was re-sent: the job goes on where its cursor was, to the last row.
    await inEndpoint(
      config.id,
      "UPDATE deliveries SET status = 'delivered', state = NULL, due_ms = NULL, queued_ms = NULL, wake_ms = NULL WHERE state IS NOT NULL",
    );
    const done = await finish(config.id, started.id);
    expect(done).toMatchObject({ status: "done", found: expected.length, resent: expected.length, skipped: 0 });

    const byId = new Map((await rows(config.id)).map((r) => [r.id, r]));
    for (let i = 0; i < total; i++) {
      const row = byId.get(`dlv_skew_${String(i).padStart(4, "0")}`);
      if (inside(i)) expect(row, `row ${i}`).toMatchObject({ series: 2, recovered_series: 2 });
      else expect(row, `row ${i}`).toMatchObject({ status: "failed", series: 1, recovered_series: null });
    }
  });
});
