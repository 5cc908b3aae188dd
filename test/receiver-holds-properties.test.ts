/**
 * Issue 42's rules as properties ("a receiver holds its own endpoint and nothing else"), each over
 * random sequences rather than one example:
 * 1. The portal's meter never admits more than a limit: over random interleavings of three
 *    sessions' actions, clocks that step forward by up to 3 s and now and then run up to half a
 *    second behind, and refunds of admitted actions, no (action, scope, window) counter passes
 *    its limit, the counters add up to exactly what was admitted less what was refunded, a refusal
 *    writes nothing, and waiting the Retry-After of a refusal admits the same session's action
 *    when nothing else happens meanwhile (objects/endpoints/meter.ts `decide`, `refund`).
 * 2. A receiver cannot change whose identity keyway asserts, nor the organization's settings:
 *    whatever random changes a portal session asks of a configuration (client id, method,
 *    assertion audience, token URL, events, `operations`, pacing, the shared token, description,
 *    status), its client id, method, assertion audience, `operations`, pacing, shared token and
 *    description never change, a private_key_jwt token URL never leaves its origin, no operational
 *    type is ever named, the receiver never disables it nor lifts the organization's disable, and
 *    a refused change changes nothing (the WebhookObject's `updateConfiguration` with `by: "receiver"`).
 * 3. Every signing secret within its grace signs: after random sequences of rotations at random
 *    intervals, the secrets that sign are exactly the current one and each rotated out less than
 *    24 hours ago (at most 10: a rotation past that is refused and changes nothing).
 * Runs: KEYWAY_PROPERTY_RUNS (as test/unit/admission-properties.test.ts) raises them.
 */
import { env } from "cloudflare:workers";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { isoTime } from "../src/lib/time";
import {
  decide,
  type MeterCounter,
  type MeterScope,
  PORTAL_LIMITS,
  type PortalAction,
  refund,
  scopesOf,
} from "../src/objects/endpoints/meter";
import { MAX_LIVE_SIGNING_SECRETS } from "../src/objects/webhooks/configurations";
import { OPERATIONAL_EVENT_TYPES } from "../src/schemas/receivers";
import type { WebhookConfigurationRecord } from "../src/schemas/webhooks";
import { createTenant, issueToken, type Tenant } from "./helpers";
import { api, configInput, webhooksOf } from "./webhook-helpers";

const knobs = env as unknown as Record<string, string | undefined>;
const RUNS = Number(knobs.KEYWAY_PROPERTY_RUNS || 0);
const runs = (fallback: number) => (RUNS > 0 ? RUNS : fallback);
const DAY = 24 * 3600 * 1000;
/**
 * The models' clocks start at the next noon UTC, a day or more ahead of the real clock: the objects
 * mix the given time with their own (retention, alarms), and a start fixed in the calendar passed
 * into the real past on 2026-11-28, after which the signing-secret property timed out (its
 * rotations dated a day before the real clock).
 */
const NOON = Math.ceil(Date.now() / DAY) * DAY + DAY + 12 * 3600 * 1000;

describe("the portal's meter (property 1)", () => {
  const ACTIONS: PortalAction[] = ["connection_test", "test_event", "resend", "recover"];
  const step = fc.record({
    session: fc.integer({ min: 0, max: 2 }),
    action: fc.constantFrom(...ACTIONS),
    // Mostly forward, now and then an isolate whose clock is behind.
    dt: fc.oneof({ weight: 5, arbitrary: fc.integer({ min: 0, max: 3000 }) }, { weight: 1, arbitrary: fc.integer({ min: -500, max: 0 }) }),
    refund: fc.boolean(),
  });

  it("never admits past a limit, counts exactly what was admitted, and admits again after the Retry-After", () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 120 }), (steps) => {
        const rows = new Map<string, MeterCounter>();
        const keyOf = (c: { action: string; scope: string; window_start_ms: number }) => `${c.action}|${c.scope}|${c.window_start_ms}`;
        // The newest row of each of a request's scopes, as the object reads them.
        const read = (request: { action: PortalAction; session: string }) =>
          scopesOf(request).flatMap(({ action, scope }) => {
            const mine = [...rows.values()].filter((r) => r.action === action && r.scope === scope);
            const newest = mine.sort((a, b) => b.window_start_ms - a.window_start_ms)[0];
            return newest === undefined ? [] : [newest];
          });
        const write = (writes: MeterCounter[]) => {
          for (const w of writes) {
            if (w.count === 0) rows.delete(keyOf(w));
            else rows.set(keyOf(w), w);
          }
        };
        let clock = NOON;
        let net = 0;
        for (const s of steps) {
          clock += s.dt;
          const request = { action: s.action, session: `pts_${s.session}` };
          const before = JSON.stringify([...rows.entries()]);
          const decision = decide(read(request), request, clock);
          if (!decision.admitted) {
            expect(decision.writes).toEqual([]);
            expect(JSON.stringify([...rows.entries()])).toBe(before);
            // Waiting it out admits, when nothing else happens meanwhile.
            const later = clock + decision.refusal.retryAfterSeconds * 1000;
            expect(decide(read(request), request, later).admitted).toBe(true);
            continue;
          }
          write(decision.writes);
          net += 2; // one in the session's counter, one in the configuration's
          if (s.refund) {
            const charged = decision.charge.counters.flatMap((c) => {
              const row = rows.get(keyOf({ action: decision.charge.action, ...c }));
              return row === undefined ? [] : [row];
            });
            write(refund(charged, decision.charge));
            net -= 2;
          }
        }
        for (const row of rows.values()) {
          const kind: MeterScope = row.scope === "configuration" ? "configuration" : "session";
          expect(row.count).toBeLessThanOrEqual(PORTAL_LIMITS[row.action][kind].limit);
          expect(row.count).toBeGreaterThan(0);
        }
        expect([...rows.values()].reduce((sum, r) => sum + r.count, 0)).toBe(net);
      }),
      { numRuns: runs(500) },
    );
  });
});

describe("a receiver's changes (property 2)", () => {
  let t: Tenant;
  let token: string;
  beforeAll(async () => {
    t = await createTenant();
    token = await issueToken(t);
  });
  const RECEIVER = "https://receiver.example";
  const FIELDS = {
    client_id: fc.constantFrom("keyway-at-receiver", "another-receivers-client"),
    auth_method: fc.constantFrom("client_secret_post", "client_secret_basic", "private_key_jwt"),
    assertion_audience: fc.constantFrom(null, `${RECEIVER}/`, "https://another-receiver.example/"),
    token_url: fc.constantFrom(`${RECEIVER}/oauth/token`, `${RECEIVER}/tenant-b/oauth/token`, "https://another-receiver.example/token"),
    url: fc.constantFrom(`${RECEIVER}/webhooks`, `${RECEIVER}/v2/webhooks`),
    scope: fc.constantFrom(null, "hooks:receive"),
    events: fc.constantFrom(null, ["order.created"], ["order.created", "webhook.endpoint.disabled"], ["webhook.delivery.exhausted"]),
    operations: fc.boolean(),
    ordered: fc.boolean(),
    rate_limit: fc.constantFrom(null, 5),
    token_cache: fc.boolean(),
    description: fc.constantFrom(null, "renamed by the receiver"),
    status: fc.constantFrom("active", "paused", "disabled"),
  };
  type Change = { [K in keyof typeof FIELDS]?: (typeof FIELDS)[K] extends fc.Arbitrary<infer V> ? V : never };
  // One to three fields a change, so a lone forbidden field is tried as often as a mix.
  const change: fc.Arbitrary<Change> = fc
    .uniqueArray(fc.constantFrom(...(Object.keys(FIELDS) as (keyof typeof FIELDS)[])), { minLength: 1, maxLength: 3 })
    .chain((keys) =>
      fc.record(Object.fromEntries(keys.map((k) => [k, FIELDS[k]])) as { [K in keyof typeof FIELDS]: (typeof FIELDS)[K] }, {
        requiredKeys: [],
      }),
    )
    .map((c) => c as Change);

  it("never alters whose identity keyway asserts, nor names an operational type, and a refusal changes nothing", async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.boolean(), fc.boolean(), fc.array(change, { minLength: 1, maxLength: 6 }), async (jwt, cutOff, changes) => {
        const created = await api(
          t,
          token,
          "/v1/webhook-configurations",
          "POST",
          configInput(
            "receiver-secret",
            jwt
              ? {
                  oauth: {
                    token_url: `${RECEIVER}/oauth/token`,
                    client_id: "keyway-at-receiver",
                    auth_method: "private_key_jwt",
                    assertion_audience: `${RECEIVER}/`,
                  },
                  description: `p2 ${n++}`,
                }
              : { description: `p2 ${n++}` },
          ),
        );
        expect(created.status).toBe(201);
        const id = ((await created.json()) as { data: { id: string } }).data.id;
        const stub = webhooksOf(t.orgId);
        const record = async (): Promise<WebhookConfigurationRecord> => {
          const r = await stub.configuration(id);
          if (!r.ok) throw new Error(r.message);
          return r.value as WebhookConfigurationRecord;
        };
        // Now and then the organization has cut the receiver off first: that must stick.
        if (cutOff) expect((await api(t, token, `/v1/webhook-configurations/${id}`, "PATCH", { status: "disabled" })).status).toBe(200);
        const first = await record();
        const identity = (r: WebhookConfigurationRecord) => ({
          client_id: r.oauth.client_id,
          auth_method: r.oauth.auth_method ?? "client_secret_post",
          assertion_audience: r.oauth.assertion_audience ?? null,
          operations: r.operations === true,
          ordered: r.ordered,
          rate_limit: r.rate_limit,
          token_cache: r.token_cache,
          description: r.description,
        });
        const actor = { type: "receiver" as const, id: "pts_property", webhook_configuration_id: id };
        for (const c of changes) {
          const before = await record();
          const { client_id, auth_method, assertion_audience, token_url, scope, ...rest } = c;
          const oauth = {
            ...(client_id !== undefined ? { client_id } : {}),
            ...(auth_method !== undefined ? { auth_method } : {}),
            ...(assertion_audience !== undefined ? { assertion_audience } : {}),
            ...(token_url !== undefined ? { token_url } : {}),
            ...(scope !== undefined ? { scope } : {}),
          };
          const { events, ...others } = rest;
          const patch = {
            ...others,
            ...(events !== undefined ? { events: events === null ? null : [...events] } : {}),
            ...(Object.keys(oauth).length > 0 ? { oauth } : {}),
          };
          const answer = await stub.updateConfiguration(id, patch, actor, Date.now(), undefined, "receiver");
          const after = await record();
          expect(identity(after)).toEqual(identity(first));
          // A receiver pauses and resumes, never disables, nor lifts the organization's disable.
          if (cutOff) expect(after.status).toBe("disabled");
          else expect(after.status).not.toBe("disabled");
          if (jwt) expect(new URL(after.oauth.token_url).origin).toBe(RECEIVER);
          expect((after.events ?? []).some((e) => (OPERATIONAL_EVENT_TYPES as readonly string[]).includes(e))).toBe(false);
          if (!answer.ok) expect(after.version).toBe(before.version);
        }
        // An organization holds at most 20 configurations: each run removes its own.
        expect((await api(t, token, `/v1/webhook-configurations/${id}`, "DELETE")).status).toBe(200);
      }),
      { numRuns: runs(40) },
    );
    // Up to 40 runs of up to 6 changes, each through the object: over 20 s beside the browser tier.
  }, 90_000);
});

describe("signing secrets within their grace (property 3)", () => {
  let t: Tenant;
  let token: string;
  beforeAll(async () => {
    t = await createTenant();
    token = await issueToken(t);
  });

  it("the secrets that sign are exactly the current one and those rotated out less than 24 hours ago, at most 10 (the oldest graces ended past that)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 1, max: 30 * 3600 }), { minLength: 1, maxLength: 16 }), async (gaps) => {
        const created = await api(t, token, "/v1/webhook-configurations", "POST", configInput("receiver-secret"));
        const id = ((await created.json()) as { data: { id: string } }).data.id;
        const stub = webhooksOf(t.orgId);
        const actor = { type: "operator" as const };
        // The model: each secret's creation and, once rotated out, when its grace ends.
        const secrets: { created: number; until: number | null }[] = [{ created: 0, until: null }];
        let now = NOON;
        for (const [i, gap] of gaps.entries()) {
          now += gap * 1000;
          const live = secrets.filter((s) => s.until === null || s.until > now);
          const sealed = { kid: "e2", iv: `iv${i}`, ct: `ct${i}` };
          const answer = await stub.rotateSigningSecret(
            id,
            { secret: sealed, created_at: isoTime(now), expires_at: null },
            isoTime(now + DAY),
            actor,
            now,
          );
          // The organization's rotation never fails for lack of a slot: past 10 it ends the oldest graces.
          expect(answer.ok).toBe(true);
          for (const s of secrets) if (s.until === null) s.until = now + DAY;
          const oldest = [...live].sort((a, b) => b.created - a.created).slice(MAX_LIVE_SIGNING_SECRETS - 1);
          for (const s of oldest) s.until = now;
          secrets.push({ created: now, until: null });
          const stored = ((await stub.configuration(id)) as { value: WebhookConfigurationRecord }).value.signing_secrets;
          const signing = stored.filter((s) => s.expires_at === null || Date.parse(s.expires_at) > now);
          const expected = secrets.filter((s) => s.until === null || s.until > now);
          expect(signing).toHaveLength(expected.length);
          expect(signing.length).toBeLessThanOrEqual(MAX_LIVE_SIGNING_SECRETS);
          // Newest first, each with its own grace.
          expect(signing.map((s) => s.expires_at)).toEqual(
            [...expected].reverse().map((s) => (s.until === null ? null : isoTime(s.until))),
          );
        }
        expect((await api(t, token, `/v1/webhook-configurations/${id}`, "DELETE")).status).toBe(200);
      }),
      { numRuns: runs(40) },
    );
    // Up to 40 runs of 16 rotations each, every one now applied (none refused): about 10 s alone, more beside the browser tier.
  }, 90_000);
});
