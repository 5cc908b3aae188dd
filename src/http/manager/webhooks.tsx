/**
 * The manager's Webhook configurations and deliveries: the list with health, a configuration's
 * page (health, traffic charts, deliveries filtered and paged, edits, test events, signing-secret
 * rotation, disable and re-enable) and a delivery's full story with its re-send. Mounted under
 * /manager/organizations by routes.tsx, behind its session and CSRF checks; the markup is in
 * pages/webhooks.tsx.
 */
import { Hono } from "hono";
import { ApiError } from "../../errors";
import { parseInput } from "../../schemas/validate";
import { UpdateWebhookConfigurationInput } from "../../schemas/webhooks";
import { getWebhookConfiguration, listWebhookConfigurations, updateWebhookConfiguration } from "../../webhooks/configurations";
import { canResend, getDelivery, listDeliveries, retryDelivery, sendTestEvent } from "../../webhooks/deliveries";
import { confirmations } from "./pages/confirm";
import { DeliveryDetail, WebhookConfigurationDetail, WebhookConfigurations } from "./pages/webhooks";
import { actor, type C, confirmPage, csrf, form, type ManagerEnv, notices, orgCrumbs, orgFor, PAGE_SIZE, page } from "./shared";
import type { Crumb } from "./views";

export function webhookRoutes(): Hono<ManagerEnv> {
  const app = new Hono<ManagerEnv>();
  // Webhook configurations: health, edits, test events, and each delivery's attempts with a re-send.
  app.get("/:org/webhooks", async (c) => {
    const org = await orgFor(c);
    const configs = await listWebhookConfigurations(c.get("deps"), org.id, PAGE_SIZE);
    return page(
      c,
      "Webhook configurations",
      [...orgCrumbs(c, org, true), { label: "Webhook configurations" }],
      <WebhookConfigurations base={`/manager/organizations/${org.id}/webhooks`} configs={configs.items} />,
    );
  });

  app.get("/:org/webhooks/:id", async (c) => {
    const { org, config } = await webhookFor(c);
    const deliveries = await listDeliveries(c.get("deps"), org.id, config.id, { limit: 25 });
    return page(
      c,
      `Webhook configuration ${config.id}`,
      webhookCrumbs(c, org),
      <WebhookConfigurationDetail base={webhookPath(org.id, config.id)} config={config} deliveries={deliveries.items} csrf={csrf(c)} />,
      notices[c.req.query("notice") ?? ""],
    );
  });

  app.post("/:org/webhooks/:id", async (c) => {
    const { org, config } = await webhookFor(c);
    const fields = await form(c);
    const text = (name: string) => (typeof fields[name] === "string" ? (fields[name] as string).trim() : "");
    const events = text("events")
      .split(",")
      .map((e) => e.trim())
      .filter((e) => e !== "");
    // No status here: disabling goes through its confirmation, re-enabling through its button.
    const input = parseInput(UpdateWebhookConfigurationInput, {
      url: text("url"),
      oauth: {
        token_url: text("token_url"),
        client_id: text("client_id"),
        ...(text("client_secret") !== "" ? { client_secret: text("client_secret") } : {}),
      },
      events: events.length === 0 ? null : events,
      description: text("description") === "" ? null : text("description"),
      // A number field posts text; parseInput's schema says what a valid limit is.
      rate_limit: text("rate_limit") === "" ? null : Number(text("rate_limit")),
      ordered: fields.ordered === "on",
      token_cache: fields.token_cache === "on",
    });
    await updateWebhookConfiguration(c.get("deps"), org.id, config.id, input, actor(c));
    return c.redirect(`${webhookPath(org.id, config.id)}?notice=webhook-saved`, 303);
  });

  app.get("/:org/webhooks/:id/disable", async (c) => {
    const { org, config } = await webhookFor(c);
    const base = webhookPath(org.id, config.id);
    return confirmPage(c, webhookCrumbs(c, org, config.id), confirmations.disableWebhook(config), {
      action: `${base}/disable`,
      cancel: base,
    });
  });

  app.post("/:org/webhooks/:id/disable", async (c) => {
    const { org, config } = await webhookFor(c);
    await updateWebhookConfiguration(c.get("deps"), org.id, config.id, { status: "disabled" }, actor(c));
    return c.redirect(`${webhookPath(org.id, config.id)}?notice=webhook-disabled`, 303);
  });

  app.post("/:org/webhooks/:id/enable", async (c) => {
    const { org, config } = await webhookFor(c);
    await updateWebhookConfiguration(c.get("deps"), org.id, config.id, { status: "active" }, actor(c));
    return c.redirect(`${webhookPath(org.id, config.id)}?notice=webhook-enabled`, 303);
  });

  app.post("/:org/webhooks/:id/test", async (c) => {
    const { org, config } = await webhookFor(c);
    await sendTestEvent(c.get("deps"), org.id, config.id, actor(c));
    return c.redirect(`${webhookPath(org.id, config.id)}?notice=test-sent`, 303);
  });

  app.get("/:org/webhooks/:id/deliveries/:delivery", async (c) => {
    const { org, config, delivery } = await deliveryFor(c);
    const base = `${webhookPath(org.id, config.id)}/deliveries/${delivery.id}`;
    return page(
      c,
      `Delivery ${delivery.id}`,
      [...webhookCrumbs(c, org, config.id), { label: `Delivery ${delivery.id}` }],
      <DeliveryDetail base={base} delivery={delivery} resendable={canResend(c.get("deps"), config, delivery)} />,
      notices[c.req.query("notice") ?? ""],
    );
  });

  app.get("/:org/webhooks/:id/deliveries/:delivery/resend", async (c) => {
    const { org, config, delivery } = await deliveryFor(c);
    const base = `${webhookPath(org.id, config.id)}/deliveries/${delivery.id}`;
    return confirmPage(
      c,
      [...webhookCrumbs(c, org, config.id), { label: `Delivery ${delivery.id}`, href: base }],
      confirmations.resendDelivery(delivery, config),
      { action: `${base}/resend`, cancel: base },
    );
  });

  app.post("/:org/webhooks/:id/deliveries/:delivery/resend", async (c) => {
    const { org, config, delivery } = await deliveryFor(c);
    await retryDelivery(c.get("deps"), org.id, delivery.id, actor(c));
    return c.redirect(`${webhookPath(org.id, config.id)}/deliveries/${delivery.id}?notice=resent`, 303);
  });

  return app;
}

const webhookPath = (orgId: string, id: string) => `/manager/organizations/${orgId}/webhooks/${id}`;

async function webhookFor(c: C) {
  const org = await orgFor(c);
  return { org, config: await getWebhookConfiguration(c.get("deps"), org.id, c.req.param("id") ?? "") };
}

/** A delivery of the configuration in the URL; one of another configuration is not found here. */
async function deliveryFor(c: C) {
  const { org, config } = await webhookFor(c);
  const delivery = await getDelivery(c.get("deps"), org.id, c.req.param("delivery") ?? "");
  if (delivery.webhook_configuration_id !== config.id) throw new ApiError("not_found", "There is no such page.");
  return { org, config, delivery };
}

function webhookCrumbs(c: C, org: { id: string; name: string }, configId?: string): Crumb[] {
  return [
    ...orgCrumbs(c, org, true),
    { label: "Webhook configurations", href: `/manager/organizations/${org.id}/webhooks` },
    ...(configId ? [{ label: `Configuration ${configId}`, href: webhookPath(org.id, configId) }] : [{ label: "Configuration" }]),
  ];
}
