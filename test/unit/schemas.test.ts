/**
 * The request schemas (src/schemas/, the single source of shapes) and parseInput's messages, in
 * Node: what a webhook configuration, a change to one, a publish and a token request accept and
 * refuse, the message naming the field (and never echoing a value, which may be a secret). The
 * routes that use them, over HTTP and GraphQL, are tested in the workers tier (bad-input.test.ts).
 */
import { describe, expect, it } from "vitest";
import { ApiError } from "../../src/errors";
import { TokenRequest } from "../../src/schemas/oauth";
import { parseInput } from "../../src/schemas/validate";
import { CreateWebhookConfigurationInput, PublishEventInput, UpdateWebhookConfigurationInput } from "../../src/schemas/webhooks";

/** parseInput's refusal as its message, or "ok". */
function refusal(schema: Parameters<typeof parseInput>[0], value: unknown): string {
  try {
    parseInput(schema, value);
    return "ok";
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe("invalid_request");
    return (err as ApiError).developerMessage;
  }
}

const oauth = { token_url: "https://receiver.example/token", client_id: "keyway", client_secret: "s3cret-value" };

describe("CreateWebhookConfigurationInput", () => {
  it("takes a push configuration with url and oauth, and a polling one with neither", () => {
    expect(refusal(CreateWebhookConfigurationInput, { url: "https://receiver.example/hooks", oauth })).toBe("ok");
    expect(refusal(CreateWebhookConfigurationInput, { delivery: "polling", events: ["order.created"] })).toBe("ok");
  });

  it("needs url and oauth for a push configuration, and refuses every push-only setting on a polling one", () => {
    expect(refusal(CreateWebhookConfigurationInput, {})).toBe(
      "Invalid request body: url is required (unless delivery is polling); oauth is required (unless delivery is polling).",
    );
    const message = refusal(CreateWebhookConfigurationInput, {
      delivery: "polling",
      url: "https://receiver.example/hooks",
      oauth,
      rate_limit: 5,
      signature_scheme: "v1a",
    });
    for (const field of ["url", "oauth", "rate_limit", "signature_scheme"]) {
      expect(message).toContain(`${field} is not used by a polling configuration`);
    }
  });

  it("refuses unknown fields, bad event names and an empty events list, naming the field and not the value", () => {
    const message = refusal(CreateWebhookConfigurationInput, { url: "https://receiver.example/hooks", oauth, secret_sauce: "hunter2" });
    expect(message).toContain("unknown field secret_sauce");
    expect(message).not.toContain("hunter2");
    expect(refusal(CreateWebhookConfigurationInput, { url: "https://r.example/h", oauth, events: ["Order Created"] })).toContain(
      "events.0 must be dot-separated lower-case words",
    );
    expect(refusal(CreateWebhookConfigurationInput, { url: "https://r.example/h", oauth, events: [] })).toContain(
      "events must not be empty",
    );
    expect(refusal(CreateWebhookConfigurationInput, { url: "https://r.example/h", oauth: { ...oauth, client_secret: "" } })).not.toContain(
      oauth.client_secret,
    );
  });
});

describe("UpdateWebhookConfigurationInput and PublishEventInput", () => {
  it("takes null to remove a rate limit or events, and refuses a status it does not know", () => {
    expect(refusal(UpdateWebhookConfigurationInput, { rate_limit: null, events: null, status: "paused" })).toBe("ok");
    expect(refusal(UpdateWebhookConfigurationInput, { status: "deleted" })).toContain("status");
  });

  it("needs a type and data to publish", () => {
    expect(refusal(PublishEventInput, { type: "order.created", data: { n: 1 } })).toBe("ok");
    expect(refusal(PublishEventInput, { type: "order.created" })).toBe("Invalid request body: data is required.");
    expect(refusal(PublishEventInput, { data: 1 })).toBe("Invalid request body: type is required.");
  });
});

describe("TokenRequest", () => {
  it("takes spec 4.1's body and refuses empty or oversized credentials", () => {
    expect(refusal(TokenRequest, { grant_type: "client_credentials", client_id: "a", client_secret: "b" })).toBe("ok");
    expect(refusal(TokenRequest, { grant_type: "client_credentials", client_id: "" })).toBe(
      "Invalid request body: client_id must not be empty.",
    );
    expect(refusal(TokenRequest, { grant_type: "client_credentials", client_secret: "x".repeat(513) })).toBe(
      "Invalid request body: client_secret must be at most 512 characters.",
    );
    expect(refusal(TokenRequest, { client_id: "a" })).toBe("Invalid request body: grant_type is required.");
  });
});
