/**
 * Values the unit tier's example tests of the key's shell and the admission core build again and
 * again: an organization's snapshot of a key, and a QuotaObject's answer. Each test overrides what
 * its rule is about.
 */
import type { KeySnapshot } from "../../src/objects/shells/key";
import type { QuotaAnswer } from "../../src/ratelimit/admission";

/** An active key of org_1, version 1 at revision 1, with no limits, revocations, credits or quota. */
export function snapshotOf(over: Partial<KeySnapshot> = {}): KeySnapshot {
  return {
    id: "key_1",
    organization_id: "org_1",
    status: "active",
    limits: {},
    version: 1,
    revision: 1,
    since: 0,
    revocations: [],
    credits: null,
    quota: null,
    ...over,
  };
}

/** A QuotaObject's answer admitting one unit, paid in `day` (days since the epoch) and month 7. */
export const quotaAnswerOn =
  (day: number) =>
  (over: Partial<QuotaAnswer> = {}): QuotaAnswer => ({
    allowed: true,
    exceeded: null,
    windows: [],
    granted: 1,
    paid: { day, month: 7 },
    ...over,
  });
