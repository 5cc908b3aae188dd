/**
 * Examples over the admission's pure core (src/ratelimit/admission.ts) directly, for what the
 * property model (test/admission-properties.test.ts) cannot reach: its runs stay within one hour.
 * A request counted in one hour of the traffic charts whose organization quota refuses it after
 * the hour rolled is moved to refused in its own hour's row, never taken out of the next hour.
 */
import { describe, expect, it } from "vitest";
import {
  type Admission,
  type AdmitInput,
  type AdmitStep,
  applySnapshot,
  type Context,
  EMPTY_ADMISSION,
  plan,
  type QuotaAnswer,
  resume,
} from "../../src/ratelimit/admission";

const HOUR = 3_600_000;
const H = Date.UTC(2026, 10, 27, 10);
const CTX: Context = {
  asking: { home: false, quota: false },
  facts: () => ({ clientRevoked: false, clientStale: false, tokenRevoked: false, inspectedTokenRevoked: false }),
};
const input = (now: number): AdmitInput => ({ now, defaults: { per_second: 1, per_day: 1000 } });

/** A key within one object, of an organization whose quota (per day) is counted exactly. */
const key = applySnapshot(
  EMPTY_ADMISSION,
  {
    id: "key_1",
    organization_id: "org_1",
    status: "active",
    limits: { per_second: 100, per_day: 1_000 },
    version: 1,
    revision: 0,
    since: 0,
    revocations: [],
    quota: { per_day: 100 },
  },
  undefined,
  H,
).state;

const pending = (step: AdmitStep) => {
  if (step.done) throw new Error("expected a step that asks the quota");
  expect(step.need.kind).toBe("take");
  return step;
};

describe("the admission's core, hour by hour", () => {
  it("moves a request the quota refused after its hour ended to refused in that hour's row, not out of the next hour", () => {
    // A request at 10:59:59.900 asks the quota; while it is out, one at 11:00:00.100 rolls the hour.
    const a = pending(plan(key, input(H + HOUR - 100), H, CTX));
    const b = pending(plan(a.state, input(H + HOUR + 100), H, CTX));
    expect(b.writes).toContainEqual({ kind: "traffic", hour: H, admitted: 1, refused: 0 });
    expect(b.state.hourly).toEqual({ hour: H + HOUR, admitted: 1, refused: 0 });
    // The quota refuses the first.
    const refused: QuotaAnswer = { allowed: false, exceeded: "org_day", windows: [], granted: 0, paid: { day: 0, month: 0 } };
    const answered = resume(b.state, a.pending, { kind: "quota", answer: refused }, CTX);
    expect(answered.done && (answered.answer as Admission).status === "active").toBe(true);
    expect(answered.writes).toContainEqual({ kind: "traffic", hour: H, admitted: -1, refused: 1 });
    // The next hour keeps the request it admitted.
    expect(answered.state.hourly).toEqual({ hour: H + HOUR, admitted: 1, refused: 0 });
  });

  it("moves a request the quota refused within its hour in the live counts", () => {
    const a = pending(plan(key, input(H + 1_000), H, CTX));
    const refused: QuotaAnswer = { allowed: false, exceeded: "org_day", windows: [], granted: 0, paid: { day: 0, month: 0 } };
    const answered = resume(a.state, a.pending, { kind: "quota", answer: refused }, CTX);
    expect(answered.state.hourly).toEqual({ hour: H, admitted: 0, refused: 1 });
    expect(answered.writes.filter((w) => w.kind === "traffic")).toEqual([]);
  });
});
