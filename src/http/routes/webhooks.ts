/**
 * REST adapter for webhook configurations, events and deliveries (product brief). Every route
 * is scoped to the organization of the access token; another organization's ids are not found.
 * Handlers only parse input and shape output: the rules live in webhooks/.
 */
import { Hono } from "hono";
import { CreateWebhookConfigurationInput, PublishEventInput, UpdateWebhookConfigurationInput } from "../../schemas/webhooks";
import {
  createWebhookConfiguration,
  deleteWebhookConfiguration,
  getWebhookConfiguration,
  listWebhookConfigurations,
  rotateSigningSecret,
  updateWebhookConfiguration,
  webhookConfigurationView,
} from "../../webhooks/configurations";
import { getDelivery, listDeliveries, MAX_EVENT_BYTES, publishEvent, retryDelivery, sendTestEvent } from "../../webhooks/deliveries";
import type { AppEnv } from "../context";
import { created, respond, respondPage } from "../envelope";
import { jsonBody, listQuery, param } from "../input";
import { methods } from "../route";

export const webhooks = new Hono<AppEnv>();

const CONFIGS = "/v1/webhook-configurations";
const CONFIG = `${CONFIGS}/:id`;
/** The event body cap, plus room for the {type, data} wrapper. */
const MAX_EVENT_REQUEST_BYTES = MAX_EVENT_BYTES + 1024;

const orgOf = (c: { get(key: "principal"): { organizationId: string } }) => c.get("principal").organizationId;

methods(webhooks, CONFIGS, {
  POST: async (c) => {
    const input = await jsonBody(c, CreateWebhookConfigurationInput);
    const { record, signingSecret } = await createWebhookConfiguration(c.get("deps"), orgOf(c), input);
    return created(c, { ...webhookConfigurationView(record), signing_secret: signingSecret }, `${CONFIGS}/${record.id}`);
  },
  GET: async (c) => {
    const page = await listWebhookConfigurations(c.get("deps"), orgOf(c), listQuery(c));
    return respondPage(c, { ...page, items: page.items.map(webhookConfigurationView) });
  },
});

methods(webhooks, CONFIG, {
  GET: async (c) => respond(c, webhookConfigurationView(await getWebhookConfiguration(c.get("deps"), orgOf(c), param(c, "id")))),
  PATCH: async (c) => {
    const input = await jsonBody(c, UpdateWebhookConfigurationInput);
    return respond(c, webhookConfigurationView(await updateWebhookConfiguration(c.get("deps"), orgOf(c), param(c, "id"), input)));
  },
  DELETE: async (c) => respond(c, webhookConfigurationView(await deleteWebhookConfiguration(c.get("deps"), orgOf(c), param(c, "id")))),
});

methods(webhooks, `${CONFIG}/rotate-signing-secret`, {
  POST: async (c) => {
    const { record, signingSecret, previousExpiresAt } = await rotateSigningSecret(c.get("deps"), orgOf(c), param(c, "id"));
    return respond(c, {
      ...webhookConfigurationView(record),
      signing_secret: signingSecret,
      previous_secret_expires_at: previousExpiresAt,
    });
  },
});

methods(webhooks, `${CONFIG}/test`, {
  POST: async (c) => respond(c, await sendTestEvent(c.get("deps"), orgOf(c), param(c, "id")), { status: 202 }),
});

methods(webhooks, `${CONFIG}/deliveries`, {
  GET: async (c) => respondPage(c, await listDeliveries(c.get("deps"), orgOf(c), param(c, "id"), listQuery(c))),
});

methods(webhooks, "/v1/events", {
  POST: async (c) => {
    const input = await jsonBody(c, PublishEventInput, MAX_EVENT_REQUEST_BYTES);
    return respond(c, await publishEvent(c.get("deps"), orgOf(c), input), { status: 202 });
  },
});

methods(webhooks, "/v1/deliveries/:id", {
  GET: async (c) => respond(c, await getDelivery(c.get("deps"), orgOf(c), param(c, "id"))),
});

methods(webhooks, "/v1/deliveries/:id/retry", {
  POST: async (c) => respond(c, await retryDelivery(c.get("deps"), orgOf(c), param(c, "id")), { status: 202 }),
});
