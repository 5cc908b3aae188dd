/**
 * The polling read's pure rules (objects/endpoints/polling.ts), in Node: the cursor's encoding,
 * every outcome of `decideRead` (a credential, a cursor of this configuration, of another, past
 * the last position given, below what retention deleted, none), and the backlog arithmetic the
 * views show. The object's SQL around them is tested in the workers tier (test/polling.test.ts).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decideRead, decodeCursor, encodeCursor, pollingState } from "../../src/objects/endpoints/polling";
import type { WebhookConfigurationRecord } from "../../src/schemas/webhooks";

const TOKEN_HASH = "a".repeat(64);
const ID = "whk_0123456789abcdefghjkmnpqrs";

const config = (overrides: Partial<WebhookConfigurationRecord> = {}): WebhookConfigurationRecord => ({
  id: ID,
  organization_id: "org_1",
  url: "",
  events: null,
  description: null,
  oauth: { token_url: "", client_id: "", client_secret: null },
  token_cache: false,
  ordered: false,
  rate_limit: null,
  signing_secrets: [],
  delivery: "polling",
  polling: { token_hash: TOKEN_HASH, token_created_at: "2026-12-01T00:00:00.000Z" },
  status: "active",
  disabled_reason: null,
  version: 1,
  created_at: "2026-12-01T00:00:00.000Z",
  updated_at: "2026-12-01T00:00:00.000Z",
  ...overrides,
});

const endpoint = { configuration_id: ID, deleted: 0, pruned_pos: 10, poll_pos: 50 };
const read = (cursor: string | null, token_hash = TOKEN_HASH) => ({ token_hash, cursor });
const code = (r: ReturnType<typeof decideRead>) => (r.ok ? `after ${r.value.after}` : r.code);

describe("the polling cursor", () => {
  it("decodes what it encodes, for any configuration id and position", () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.nat(), (id, pos) => {
        expect(decodeCursor(encodeCursor(id, pos))).toEqual({ configuration_id: id, pos });
      }),
    );
  });

  it("refuses what it did not encode: not base64url, no position, a position that is not a plain integer", () => {
    const raw = (text: string) => Buffer.from(text).toString("base64url");
    for (const bad of [
      "***",
      raw("no-colon"),
      raw(":5"),
      raw(`${ID}:`),
      raw(`${ID}:-1`),
      raw(`${ID}:01`),
      raw(`${ID}:1.5`),
      raw(`${ID}:9007199254740993`),
      // base64url of bytes that are not UTF-8.
      Buffer.from([0xff, 0xfe, 0x3a, 0x31]).toString("base64url"),
    ]) {
      expect(decodeCursor(bad), bad).toBeNull();
    }
  });
});

describe("decideRead", () => {
  it("reads from the oldest event kept without a cursor, and after a cursor of this configuration's within what it gave", () => {
    expect(code(decideRead(config(), endpoint, read(null)))).toBe("after 0");
    expect(code(decideRead(config(), endpoint, read(encodeCursor(ID, 10))))).toBe("after 10");
    expect(code(decideRead(config(), endpoint, read(encodeCursor(ID, 50))))).toBe("after 50");
  });

  it("answers as for a wrong token when there is no live polling configuration: none, a deleted endpoint, a push configuration", () => {
    // One answer for every id that is not a live polling configuration (the edge gives the same): no caller learns which exist.
    expect(code(decideRead(null, endpoint, read(null)))).toBe("invalid_token");
    expect(code(decideRead(config(), undefined, read(null)))).toBe("invalid_token");
    expect(code(decideRead(config(), { ...endpoint, deleted: 1 }, read(null)))).toBe("invalid_token");
    expect(code(decideRead(config({ delivery: "push" }), endpoint, read(null)))).toBe("invalid_token");
  });

  it("hands nothing over while the configuration is disabled (conflict), to its own token only", () => {
    expect(code(decideRead(config({ status: "disabled" }), endpoint, read(null)))).toBe("conflict");
    expect(code(decideRead(config({ status: "disabled" }), endpoint, read(null, "b".repeat(64))))).toBe("invalid_token");
  });

  it("answers not_found for another's cursor or one past the last position", () => {
    expect(code(decideRead(config(), endpoint, read(encodeCursor("whk_other", 20))))).toBe("not_found");
    expect(code(decideRead(config(), endpoint, read(encodeCursor(ID, 51))))).toBe("not_found");
    expect(code(decideRead(config(), endpoint, read("not a cursor")))).toBe("not_found");
  });

  it("answers invalid_token alike for another token, a revoked one and a configuration without one", () => {
    expect(code(decideRead(config(), endpoint, read(null, "b".repeat(64))))).toBe("invalid_token");
    expect(code(decideRead(config({ polling: { token_hash: null, token_created_at: null } }), endpoint, read(null)))).toBe("invalid_token");
    expect(code(decideRead(config({ polling: null }), endpoint, read(null)))).toBe("invalid_token");
  });

  it("answers cursor_expired below what retention deleted, rather than a silent gap", () => {
    expect(code(decideRead(config(), endpoint, read(encodeCursor(ID, 9))))).toBe("cursor_expired");
    expect(code(decideRead(config(), endpoint, read(encodeCursor(ID, 0))))).toBe("cursor_expired");
  });

  it("checks the credential before the cursor, so a stranger learns nothing of the positions", () => {
    for (const cursor of [encodeCursor(ID, 9), encodeCursor(ID, 51), encodeCursor("whk_other", 1)]) {
      expect(code(decideRead(config(), endpoint, read(cursor, "b".repeat(64))))).toBe("invalid_token");
    }
  });
});

describe("pollingState", () => {
  it("counts the backlog after the last cursor presented or what retention deleted, whichever is later", () => {
    expect(pollingState({ acked_pos: 20, pruned_pos: 10, poll_pos: 50, last_poll_ms: null })).toEqual({
      backlog: 30,
      last_polled_at: null,
    });
    expect(pollingState({ acked_pos: 5, pruned_pos: 10, poll_pos: 50, last_poll_ms: Date.UTC(2026, 11, 1) })).toEqual({
      backlog: 40,
      last_polled_at: "2026-12-01T00:00:00.000Z",
    });
    expect(pollingState({ acked_pos: 60, pruned_pos: 0, poll_pos: 50, last_poll_ms: null }).backlog).toBe(0);
  });
});
