/**
 * The GraphQL engine's way into the service (graphql/backend.ts), on the API Worker's side: a
 * Workers RPC target the /v1/graphql route hands to the engine with each admitted request, bound
 * to that request's organization, actor, clock, token scopes and origin (where a portal link
 * points, as REST's route makes it). Each method needs the scope of its
 * REST operation (auth/scopes.ts), and every mutation `graphql:mutate` too; without them the field
 * fails with insufficient_scope (403 in extensions) and the others still run. Each method is the domain function REST's
 * handler calls, with the same view; inputs arrive as the caller gave them and are parsed here with
 * REST's zod schemas, the one place they are checked. An ApiError becomes an
 * Outcome's error (its `detail` logged here, never sent); anything else is logged and answered as
 * the 500 it would be for REST.
 */
import { RpcTarget } from "cloudflare:workers";
import { insufficientScope, type Scope } from "../auth/scopes";
import type { Deps } from "../deps";
import { ApiError } from "../errors";
import type { GraphQLBackend, Outcome, PageArgs } from "../graphql/backend";
import { describeError, log } from "../log";
import type { Actor } from "../schemas/audit";
import { ListQuery } from "../schemas/common";
import {
  CreateEventTypeInput,
  CreatePortalLinkInput,
  RecoverInput,
  UpdateEventTypeInput,
  UpdateWebhookSettingsInput,
} from "../schemas/receivers";
import { parseInput } from "../schemas/validate";
import {
  CreateWebhookConfigurationInput,
  PublishEventInput,
  RotateSigningSecretInput,
  UpdateWebhookConfigurationInput,
} from "../schemas/webhooks";
import {
  createWebhookConfiguration,
  deleteWebhookConfiguration,
  getWebhookConfiguration,
  listWebhookConfigurations,
  rotateSigningSecret,
  updateWebhookConfiguration,
  webhookConfigurationView,
} from "../webhooks/configurations";
import { testConnection } from "../webhooks/connection-test";
import { getDelivery, idempotencyKeyOf, listDeliveries, publishEvent, retryDelivery, sendTestEvent } from "../webhooks/deliveries";
import {
  createEventType,
  deleteEventType,
  getEventType,
  getWebhookSettings,
  listEventTypes,
  updateEventType,
  updateWebhookSettings,
} from "../webhooks/event-types";
import { revokePollingToken, rotatePollingToken } from "../webhooks/polling";
import { createPortalLink, endPortalSession, listPortalSessions } from "../webhooks/portal";
import { rotateAssertionKey } from "../webhooks/receiver-keys";
import { getRecovery, listRecoveries, recoverDeliveries } from "../webhooks/recovery";

/** Runs one operation; an error becomes the Outcome the engine turns back into it. */
async function outcomeOf<T>(what: string, run: () => Promise<T> | T): Promise<Outcome<T>> {
  try {
    return { ok: true, value: await run() };
  } catch (err) {
    if (err instanceof ApiError) {
      if (err.detail !== undefined) log.error("graphql field failed", { code: err.code, field: what, detail: err.detail });
      const { code, developerMessage: message, input, headers, status } = err;
      // `status` lets an engine of the previous release keep the class of a code it does not know (docs/deploy.md, the companions' contract).
      return {
        ok: false,
        error: { code, message, status, ...(input ? { input } : {}), ...(Object.keys(headers).length ? { headers } : {}) },
      };
    }
    log.error("graphql resolver failed", { field: what, detail: describeError(err) });
    return { ok: false, error: { code: "server_error", message: "An internal error occurred. It has been logged." } };
  }
}

export class GraphQLBackendTarget extends RpcTarget implements GraphQLBackend {
  constructor(
    private readonly deps: Deps,
    private readonly orgId: string,
    private readonly actor: Actor,
    private readonly token: { scopes: readonly Scope[]; scheme: "Bearer" | "DPoP" },
    /** Where portal links point (`https://host`): asked only when one is made. */
    private readonly origin: () => string,
  ) {
    super();
  }

  /** Refuses the field unless the token has every scope it needs. */
  private need(...scopes: Scope[]): void {
    const missing = scopes.filter((s) => !this.token.scopes.includes(s));
    if (missing.length > 0) throw insufficientScope(missing, this.token.scheme);
  }

  listWebhookConfigurations(page: PageArgs) {
    return outcomeOf("webhookConfigurations", async () => {
      this.need("webhooks:read");
      const result = await listWebhookConfigurations(this.deps, this.orgId, parseInput(ListQuery, page, "arguments"));
      return { ...result, items: result.items.map((c) => webhookConfigurationView(c, this.origin())) };
    });
  }

  getWebhookConfiguration(id: string) {
    return outcomeOf("webhookConfiguration", async () => {
      this.need("webhooks:read");
      return webhookConfigurationView(await getWebhookConfiguration(this.deps, this.orgId, id), this.origin());
    });
  }

  createWebhookConfiguration(input: unknown) {
    return outcomeOf("createWebhookConfiguration", async () => {
      this.need("graphql:mutate", "webhooks:write");
      const parsed = parseInput(CreateWebhookConfigurationInput, input);
      const { config, signingSecret, pollingToken } = await createWebhookConfiguration(this.deps, this.orgId, parsed, this.actor);
      return { config: webhookConfigurationView(config, this.origin()), signingSecret, pollingToken };
    });
  }

  updateWebhookConfiguration(id: string, input: unknown) {
    return outcomeOf("updateWebhookConfiguration", async () => {
      this.need("graphql:mutate", "webhooks:write");
      const parsed = parseInput(UpdateWebhookConfigurationInput, input);
      return webhookConfigurationView(await updateWebhookConfiguration(this.deps, this.orgId, id, parsed, this.actor), this.origin());
    });
  }

  deleteWebhookConfiguration(id: string) {
    return outcomeOf("deleteWebhookConfiguration", async () => {
      this.need("graphql:mutate", "webhooks:write");
      return webhookConfigurationView(await deleteWebhookConfiguration(this.deps, this.orgId, id, this.actor), this.origin());
    });
  }

  rotateSigningSecret(id: string) {
    return this.rotateSigningKey(id, undefined);
  }

  listDeliveries(configurationId: string, page: PageArgs) {
    return outcomeOf("deliveries", () => {
      this.need("webhooks:read");
      return listDeliveries(this.deps, this.orgId, configurationId, parseInput(ListQuery, page, "arguments"));
    });
  }

  getDelivery(id: string) {
    return outcomeOf("delivery", () => {
      this.need("webhooks:read");
      return getDelivery(this.deps, this.orgId, id);
    });
  }

  publishEvent(input: { type: unknown; data: unknown; channels?: unknown }, idempotencyKey: string | undefined) {
    return outcomeOf("publishEvent", () => {
      this.need("graphql:mutate", "events:write");
      return publishEvent(this.deps, this.orgId, parseInput(PublishEventInput, input), this.actor, {
        idempotencyKey: idempotencyKeyOf(idempotencyKey),
      });
    });
  }

  sendTestEvent(configurationId: string) {
    return outcomeOf("sendTestEvent", () => {
      this.need("graphql:mutate", "webhooks:write");
      return sendTestEvent(this.deps, this.orgId, configurationId, this.actor);
    });
  }

  retryDelivery(id: string) {
    return outcomeOf("retryDelivery", () => {
      this.need("graphql:mutate", "webhooks:write");
      return retryDelivery(this.deps, this.orgId, id, this.actor);
    });
  }

  // The receivers' features (issue 30): the scopes and parsing of the REST routes in
  // http/routes/event-types.ts, webhooks.ts (recover, recoveries) and portal.ts.

  listEventTypes(page: PageArgs) {
    return outcomeOf("eventTypes", () => {
      this.need("webhooks:read");
      return listEventTypes(this.deps, this.orgId, parseInput(ListQuery, page, "arguments"));
    });
  }

  getEventType(name: string) {
    return outcomeOf("eventType", () => {
      this.need("webhooks:read");
      return getEventType(this.deps, this.orgId, name);
    });
  }

  createEventType(input: unknown) {
    return outcomeOf("createEventType", () => {
      this.need("graphql:mutate", "webhooks:write");
      return createEventType(this.deps, this.orgId, parseInput(CreateEventTypeInput, input), this.actor);
    });
  }

  updateEventType(name: string, input: unknown) {
    return outcomeOf("updateEventType", () => {
      this.need("graphql:mutate", "webhooks:write");
      return updateEventType(this.deps, this.orgId, name, parseInput(UpdateEventTypeInput, input), this.actor);
    });
  }

  deleteEventType(name: string) {
    return outcomeOf("deleteEventType", () => {
      this.need("graphql:mutate", "webhooks:write");
      return deleteEventType(this.deps, this.orgId, name, this.actor);
    });
  }

  getWebhookSettings() {
    return outcomeOf("webhookSettings", () => {
      this.need("webhooks:read");
      return getWebhookSettings(this.deps, this.orgId);
    });
  }

  updateWebhookSettings(input: unknown) {
    return outcomeOf("updateWebhookSettings", () => {
      this.need("graphql:mutate", "webhooks:write");
      return updateWebhookSettings(this.deps, this.orgId, parseInput(UpdateWebhookSettingsInput, input), this.actor);
    });
  }

  recoverDeliveries(configurationId: string, input: unknown) {
    return outcomeOf("recoverDeliveries", () => {
      this.need("graphql:mutate", "webhooks:write");
      return recoverDeliveries(this.deps, this.orgId, configurationId, parseInput(RecoverInput, input), this.actor);
    });
  }

  getRecovery(configurationId: string, id: string) {
    return outcomeOf("recovery", () => {
      this.need("webhooks:read");
      return getRecovery(this.deps, this.orgId, configurationId, id);
    });
  }

  listRecoveries(configurationId: string, page: PageArgs) {
    return outcomeOf("recoveries", () => {
      this.need("webhooks:read");
      return listRecoveries(this.deps, this.orgId, configurationId, parseInput(ListQuery, page, "arguments"));
    });
  }

  createPortalLink(configurationId: string, input: unknown) {
    return outcomeOf("createPortalLink", () => {
      this.need("graphql:mutate", "webhooks:write");
      // REST's body is optional: none is the same as {} (the default lifetime).
      const parsed = parseInput(CreatePortalLinkInput, input ?? {});
      return createPortalLink(this.deps, this.orgId, configurationId, parsed, this.actor, this.origin());
    });
  }

  listPortalSessions(configurationId: string, page: PageArgs) {
    return outcomeOf("portalSessions", () => {
      this.need("webhooks:read");
      return listPortalSessions(this.deps, this.orgId, configurationId, parseInput(ListQuery, page, "arguments"));
    });
  }

  endPortalSession(configurationId: string, id: string) {
    return outcomeOf("endPortalSession", () => {
      this.need("graphql:mutate", "webhooks:write");
      return endPortalSession(this.deps, this.orgId, configurationId, id, this.actor);
    });
  }

  // Issue 31: the routes of http/routes/event-types.ts (rotate-assertion-key) and webhooks.ts (test-connection).

  rotateAssertionKey() {
    return outcomeOf("rotateAssertionKey", () => {
      this.need("graphql:mutate", "webhooks:write");
      return rotateAssertionKey(this.deps, this.orgId, this.actor);
    });
  }

  testWebhookConnection(configurationId: string) {
    return outcomeOf("testWebhookConnection", () => {
      this.need("graphql:mutate", "webhooks:write");
      return testConnection(this.deps, this.orgId, configurationId, this.actor);
    });
  }

  // Issue 45: the routes of http/routes/webhooks.ts (rotate-signing-secret with a body, rotate-polling-token, polling-token).

  /** rotateSigningSecret with REST's optional body; without one (rotateSigningSecret), in the current scheme. */
  rotateSigningKey(id: string, input: unknown) {
    return outcomeOf("rotateSigningSecret", async () => {
      this.need("graphql:mutate", "webhooks:write");
      // REST's body is optional: none is the same as {}. GraphQL takes it as the field's arguments.
      const { signature_scheme } = parseInput(RotateSigningSecretInput, input ?? {}, "arguments");
      const rotated = await rotateSigningSecret(this.deps, this.orgId, id, this.actor, signature_scheme);
      return {
        config: webhookConfigurationView(rotated.config, this.origin()),
        signingSecret: rotated.signingSecret,
        previousExpiresAt: rotated.previousExpiresAt,
      };
    });
  }

  rotatePollingToken(id: string) {
    return outcomeOf("rotatePollingToken", async () => {
      this.need("graphql:mutate", "webhooks:write");
      const { config, token } = await rotatePollingToken(this.deps, this.orgId, id, this.actor);
      return { config: webhookConfigurationView(config, this.origin()), token };
    });
  }

  revokePollingToken(id: string) {
    return outcomeOf("revokePollingToken", async () => {
      this.need("graphql:mutate", "webhooks:write");
      return webhookConfigurationView(await revokePollingToken(this.deps, this.orgId, id, this.actor), this.origin());
    });
  }
}
