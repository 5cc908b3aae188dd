/**
 * The manager's Webhook configurations and deliveries: the list with health, a configuration's
 * page (health, traffic charts, deliveries filtered and paged, edits, test events, signing-secret
 * rotation, disable and re-enable) and a delivery's full story with its re-send. Mounted under
 * /manager/organizations by routes.tsx, behind its session and CSRF checks; the markup is in
 * pages/webhooks.tsx.
 */
import { Hono } from "hono";
import { ApiError, invalidInput } from "../../errors";
import { parseInput } from "../../schemas/validate";
import {
  DeliveryFilter,
  type DeliveryRecord,
  UpdateWebhookConfigurationInput,
  type WebhookConfiguration,
  type WebhookTrafficView,
} from "../../schemas/webhooks";
import {
  getWebhookConfiguration,
  listWebhookConfigurations,
  rotateSigningSecret,
  updateWebhookConfiguration,
} from "../../webhooks/configurations";
import { webhookHeaders } from "../../webhooks/consumer";
import {
  canResend,
  getDelivery,
  getDeliveryWithBody,
  listDeliveries,
  retryDelivery,
  sendTestEvent,
  webhookTraffic,
} from "../../webhooks/deliveries";
import { confirmations } from "./pages/confirm";
import {
  DeliveryDetail,
  type DeliveryQuery,
  SigningSecretRotated,
  WebhookConfigurationDetail,
  WebhookConfigurations,
} from "./pages/webhooks";
import { actor, type C, confirmPage, csrf, form, type ManagerEnv, notices, orgCrumbs, orgFor, PAGE_SIZE, page } from "./shared";
import type { Crumb } from "./views";

export function webhookRoutes(): Hono<ManagerEnv> {
  const app = new Hono<ManagerEnv>();
  // Webhook configurations: health, edits, test events, and each delivery's attempts with a re-send.
  app.get("/:org/webhooks", async (c) => {
    const org = await orgFor(c);
    const deps = c.get("deps");
    const configs = await listWebhookConfigurations(deps, org.id, PAGE_SIZE);
    // At most 20 configurations: one call to each endpoint's object for its last 24 hours.
    const traffic = await Promise.all(configs.items.map((w) => webhookTraffic(deps, org.id, w.id)));
    return page(
      c,
      "Webhook configurations",
      [...orgCrumbs(c, org, true), { label: "Webhook configurations" }],
      <WebhookConfigurations
        base={`/manager/organizations/${org.id}/webhooks`}
        configs={configs.items.map((config, i) => ({ config, last24h: (traffic[i] as WebhookTrafficView).last_24h }))}
      />,
    );
  });

  // A configuration: health and charts, its deliveries (filtered, searched, paged), edits.
  app.get("/:org/webhooks/:id", async (c) => {
    const { org, config } = await webhookFor(c);
    const deps = c.get("deps");
    const base = webhookPath(org.id, config.id);
    const query = deliveryQuery(c);
    // A search for a webhook-id (the delivery id a receiver saw) opens that delivery.
    if (query.search?.kind === "delivery") {
      const found = await findDelivery(c, org.id, query.search.id);
      if (found?.webhook_configuration_id === config.id) return c.redirect(`${base}/deliveries/${found.id}`, 303);
    }
    const [deliveries, traffic] = await Promise.all([
      query.search?.kind === "delivery"
        ? { items: [], next_cursor: null }
        : listDeliveries(deps, org.id, config.id, { limit: DELIVERIES_PAGE, cursor: query.cursor }, query.filter),
      webhookTraffic(deps, org.id, config.id),
    ]);
    return page(
      c,
      webhookTitle(config),
      [...webhookCrumbs(c, org), { label: webhookTitle(config) }],
      <WebhookConfigurationDetail
        base={base}
        config={config}
        traffic={traffic}
        deliveries={deliveries.items}
        query={query}
        next={deliveries.next_cursor}
        csrf={csrf(c)}
      />,
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
    return confirmPage(c, webhookCrumbs(c, org, config), confirmations.disableWebhook(config), {
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

  // A delivery's full story: the event, the request we send, every attempt, the re-send.
  app.get("/:org/webhooks/:id/deliveries/:delivery", async (c) => {
    const { org, config } = await webhookFor(c);
    const { delivery, body } = await getDeliveryWithBody(c.get("deps"), org.id, c.req.param("delivery") ?? "");
    if (delivery.webhook_configuration_id !== config.id) throw new ApiError("not_found", "There is no such page.");
    const base = `${webhookPath(org.id, config.id)}/deliveries/${delivery.id}`;
    return page(
      c,
      `Delivery of ${delivery.event_type}`,
      [...webhookCrumbs(c, org, config), { label: `Delivery ${delivery.id}` }],
      <DeliveryDetail
        base={base}
        config={config}
        delivery={delivery}
        body={body}
        sentHeaders={maskedHeaders(delivery.id)}
        resendable={canResend(c.get("deps"), config, delivery)}
      />,
      notices[c.req.query("notice") ?? ""],
    );
  });

  // Rotating the signing secret: asked first, then the new secret shown once.
  app.get("/:org/webhooks/:id/rotate-signing-secret", async (c) => {
    const { org, config } = await webhookFor(c);
    const base = webhookPath(org.id, config.id);
    return confirmPage(c, webhookCrumbs(c, org, config), confirmations.rotateSigningSecret(config), {
      action: `${base}/rotate-signing-secret`,
      cancel: base,
    });
  });

  app.post("/:org/webhooks/:id/rotate-signing-secret", async (c) => {
    const { org, config } = await webhookFor(c);
    const rotated = await rotateSigningSecret(c.get("deps"), org.id, config.id, actor(c));
    return page(
      c,
      "New signing secret",
      [...webhookCrumbs(c, org, config), { label: "New signing secret" }],
      <SigningSecretRotated
        base={webhookPath(org.id, config.id)}
        secret={rotated.signingSecret}
        previousExpiresAt={rotated.previousExpiresAt}
      />,
    );
  });

  app.get("/:org/webhooks/:id/deliveries/:delivery/resend", async (c) => {
    const { org, config, delivery } = await deliveryFor(c);
    const base = `${webhookPath(org.id, config.id)}/deliveries/${delivery.id}`;
    return confirmPage(
      c,
      [...webhookCrumbs(c, org, config), { label: `Delivery ${delivery.id}`, href: base }],
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

function webhookCrumbs(c: C, org: { id: string; name: string }, config?: WebhookConfiguration): Crumb[] {
  return [
    ...orgCrumbs(c, org, true),
    { label: "Webhook configurations", href: `/manager/organizations/${org.id}/webhooks` },
    ...(config ? [{ label: webhookTitle(config), href: webhookPath(org.id, config.id) }] : []),
  ];
}

/** A configuration is named by its description, or else by its URL (never by its id alone). */
const webhookTitle = (config: Pick<WebhookConfiguration, "description" | "url">): string => `Webhook: ${config.description ?? config.url}`;

/** Deliveries per page on a configuration's page; "Next page" follows the cursor. */
const DELIVERIES_PAGE = 25;

/**
 * The deliveries' filters from the query string: status and event type (checked by the API's own
 * DeliveryFilter schema), a search box taking an event id or a webhook-id, and the cursor.
 */
function deliveryQuery(c: C): DeliveryQuery {
  const raw = (name: string) => (c.req.query(name) ?? "").trim();
  const q = raw("q");
  let search: DeliveryQuery["search"];
  if (q !== "") {
    if (/^msg_[0-9a-z]{26}$/.test(q)) search = { kind: "delivery", id: q };
    else if (/^evt_[0-9a-z]{26}$/.test(q)) search = { kind: "event", id: q };
    else
      throw invalidInput({ label: "search", issues: [{ path: ["q"], text: " must be an event id (evt_...) or a webhook-id (msg_...)" }] });
  }
  const filter = parseInput(
    DeliveryFilter,
    {
      ...(raw("status") !== "" ? { status: raw("status") } : {}),
      ...(raw("event_type") !== "" ? { event_type: raw("event_type") } : {}),
      ...(search?.kind === "event" ? { event_id: search.id } : {}),
    },
    "filters",
  );
  const cursor = raw("cursor");
  return { filter, q, search, ...(cursor !== "" ? { cursor } : {}) };
}

/** A delivery of this organization by id, or null (another organization's is not found either). */
async function findDelivery(c: C, orgId: string, id: string): Promise<DeliveryRecord | null> {
  try {
    return await getDelivery(c.get("deps"), orgId, id);
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return null;
    throw err;
  }
}

/** The headers each attempt sends, as webhookHeaders builds them, with what is secret or per attempt masked. */
const maskedHeaders = (deliveryId: string): [string, string][] =>
  Object.entries(
    webhookHeaders({
      accessToken: "•••• (the receiver's access token, fetched for this attempt)",
      deliveryId,
      timestamp: "(the attempt's time, Unix seconds)",
      signature: "v1,•••• (HMAC-SHA256 with each live signing secret)",
    }),
  );
