/**
 * The portal's "Filter and channels" page (docs/receivers.md, "The receiver's filter"): the receiver
 * narrows what the organization routes to its endpoint with a filter and channels of its own
 * (`receiver_filter`, `receiver_channels`), applied after the organization's, never instead of
 * them: what the organization set is shown and cannot be changed here. "Try it" checks the
 * proposed filter as a save would, and shows which of the latest events sent to this endpoint
 * would still reach it (objects/webhooks/routing.ts tryRoutes): nothing is sent or written.
 * Both buttons post the same form; a refusal comes back on it with the text as typed.
 */
import type { Context, Hono } from "hono";
import type { Child, FC } from "hono/jsx";
import type { InputIssue } from "../../errors";
import { PREVIEW_SHOWN } from "../../objects/webhooks/limits";
import type { RoutePreviewEvent } from "../../objects/webhooks/routing";
import { RoutingPreviewInput, UpdateWebhookConfigurationInput, type WebhookConfigurationView } from "../../schemas/webhooks";
import {
  getWebhookConfiguration,
  previewReceiverRouting,
  updateWebhookConfiguration,
  webhookConfigurationView,
} from "../../webhooks/configurations";
import type { PortalSession } from "../../webhooks/portal";
import { receiverActor } from "../../webhooks/portal";
import { keywayOrigin } from "../context";
import { checkedInput, type FormErrors, formErrorsOf, jsonField, placedMessage, text, topLevelField } from "../manager/form-check";
import { FormRefused } from "../manager/pages/event-types";
import { configName } from "../manager/pages/webhooks";
import { Field, PostForm, TableRegion, TextArea, Time } from "../manager/views";
import type { PortalEnv } from "./env";
import type { PortalSection } from "./layout";

export const FILTER_LABELS = { receiver_filter: "Your filter", receiver_channels: "Your channels" } as const;
export type FilterField = keyof typeof FILTER_LABELS;
export interface FilterValues {
  receiver_filter: string;
  receiver_channels: string;
}
type Preview = RoutePreviewEvent[];

/** What routes.tsx lends the page: the session, the posted form, and its page shell. */
export interface FilterPageHelpers {
  portal(c: Context<PortalEnv>): PortalSession;
  form(c: Context<PortalEnv>): Promise<Record<string, unknown>>;
  page(
    c: Context<PortalEnv>,
    title: string,
    section: PortalSection,
    body: Child,
    endpoint: string,
    status?: 200 | 400 | 409,
  ): Response | Promise<Response>;
}

const TITLE = "Filter and channels";

export function filterRoutes(app: Hono<PortalEnv>, h: FilterPageHelpers): void {
  app.get("/portal/filter", async (c) => {
    const s = h.portal(c);
    const config = await getWebhookConfiguration(c.get("deps"), s.orgId, s.configurationId);
    const view = webhookConfigurationView(config, keywayOrigin(c));
    return h.page(c, TITLE, "filter", <FilterPage view={view} values={valuesOf(view)} csrf={s.csrf} />, configName(config));
  });

  app.post("/portal/filter", async (c) => {
    const s = h.portal(c);
    const deps = c.get("deps");
    const fields = await h.form(c);
    const values: FilterValues = { receiver_filter: text(fields, "receiver_filter"), receiver_channels: text(fields, "receiver_channels") };
    // The configuration is read only for a page to render: a save that goes through redirects.
    const render = async (props: Omit<FilterPageProps, "view" | "values" | "csrf">, status?: 400 | 409) => {
      const config = await getWebhookConfiguration(deps, s.orgId, s.configurationId);
      const view = webhookConfigurationView(config, keywayOrigin(c));
      return h.page(c, TITLE, "filter", <FilterPage view={view} values={values} csrf={s.csrf} {...props} />, configName(config), status);
    };
    const parsed = jsonField(values.receiver_filter, ["receiver_filter"]);
    const channels = values.receiver_channels
      .split(",")
      .map((x) => x.trim())
      .filter((x) => x !== "");
    const raw = { receiver_filter: parsed.value ?? null, receiver_channels: channels.length === 0 ? null : channels };
    const trying = fields.action === "try";
    try {
      if (trying) {
        const preview = await previewReceiverRouting(
          deps,
          s.orgId,
          s.configurationId,
          checkedInput(RoutingPreviewInput, raw, parsed.issues),
        );
        return render({ preview });
      }
      const input = checkedInput(UpdateWebhookConfigurationInput, raw, parsed.issues);
      await updateWebhookConfiguration(deps, s.orgId, s.configurationId, input, receiverActor(s), "receiver");
      return c.redirect("/portal/filter?notice=filter-saved", 303);
    } catch (err) {
      const errors = formErrorsOf(err, topLevelField(FILTER_LABELS), filterMessage);
      if (errors === null) throw err;
      return render({ errors, tried: trying }, errors.status);
    }
  });
}

/** A field's message: its label, the path inside the filter (data.amount) or the channel's number, then what is wrong. */
const filterMessage = (field: FilterField, issue: InputIssue): string =>
  placedMessage(FILTER_LABELS[field], issue, field === "receiver_channels" ? { list: 1 } : { json: 1 });

/** The receiver's own filter and channels as the form shows them. */
const valuesOf = (view: WebhookConfigurationView): FilterValues => ({
  receiver_filter: view.receiver_filter === null ? "" : JSON.stringify(view.receiver_filter, null, 2),
  receiver_channels: (view.receiver_channels ?? []).join(", "),
});

const Json: FC<{ value: unknown }> = ({ value }) => (
  <pre>
    <code>{JSON.stringify(value, null, 2)}</code>
  </pre>
);

interface FilterPageProps {
  view: WebhookConfigurationView;
  values: FilterValues;
  csrf: string;
  errors?: FormErrors<FilterField> & { status: 400 | 409 };
  preview?: Preview;
  tried?: boolean;
}

export const FilterPage: FC<FilterPageProps> = ({ view, values, csrf, errors, preview, tried }) => (
  <>
    <p>
      The provider of the webhooks decides which of its events this endpoint may receive. Here you narrow them further: an event is sent
      only if it also matches your filter and carries one of your channels. Trying a filter sends nothing.
    </p>
    <section class="card" aria-labelledby="provider-routing">
      <h2 id="provider-routing">What the provider sends this endpoint</h2>
      <dl>
        <dt>Event types</dt>
        <dd>{view.events === null ? "every event type" : view.events.map((e, i) => [i > 0 ? ", " : "", <code>{e}</code>])}</dd>
        <dt>Channels</dt>
        <dd>{view.channels === null ? "every channel" : view.channels.map((e, i) => [i > 0 ? ", " : "", <code>{e}</code>])}</dd>
        <dt>Filter</dt>
        <dd>{view.filter === null ? "none" : <Json value={view.filter} />}</dd>
      </dl>
      <p class="hint">These are the provider's to change.</p>
    </section>
    <FormRefused errors={errors} what={tried ? "Nothing was tried." : "Nothing was changed."} />
    <PostForm action="/portal/filter" csrf={csrf} label="Your filter and channels">
      <TextArea
        id="receiver_filter"
        label={FILTER_LABELS.receiver_filter}
        hint={'JSON over the event\'s type, channels and data, such as {"data": {"amount": {"$gte": 100}}}; empty for none'}
        value={values.receiver_filter}
        rows={8}
        error={errors?.fields.receiver_filter}
      />
      <Field
        id="receiver_channels"
        label={FILTER_LABELS.receiver_channels}
        hint="comma-separated; empty for every channel the provider sends"
        value={values.receiver_channels}
        error={errors?.fields.receiver_channels}
      />
      <p>
        <button type="submit" name="action" value="try" class="secondary">
          Try it against the last {PREVIEW_SHOWN} events
        </button>{" "}
        <button type="submit" name="action" value="save">
          Save
        </button>
      </p>
    </PostForm>
    {preview && <Tried preview={preview} />}
  </>
);

const Tried: FC<{ preview: Preview }> = ({ preview }) => {
  const would = preview.filter((e) => e.would).length;
  return (
    <section aria-labelledby="tried" class="card">
      <h2 id="tried">Tried against the latest events</h2>
      <p role="status">
        {preview.length === 0
          ? "No event has been sent to this endpoint yet, so there is nothing to try. Nothing was saved."
          : `${would} of the latest ${preview.length} events sent to this endpoint would be sent with this filter and these channels. Nothing was sent, and nothing was saved.`}
      </p>
      {preview.length > 0 && (
        <TableRegion label="Events tried">
          <table>
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Published</th>
                <th scope="col">Channels</th>
                <th scope="col">Data</th>
                <th scope="col">With this filter</th>
              </tr>
            </thead>
            <tbody>
              {preview.map((e) => (
                <tr>
                  <td data-label="Event">
                    <code>{e.type}</code> <span class="hint">{e.id}</span>
                  </td>
                  <td data-label="Published">
                    <Time at={e.created_at} />
                  </td>
                  <td data-label="Channels">{e.channels.length === 0 ? "none" : e.channels.join(", ")}</td>
                  <td data-label="Data">
                    <code>{e.excerpt}</code>
                  </td>
                  <td data-label="With this filter">
                    <strong>{e.would ? "sent" : "not sent"}</strong>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableRegion>
      )}
      <p class="hint">
        Only events already sent to this endpoint are tried: an event your filter or channels keep away now is not among them. Test events
        are sent whatever the filter, and are left out.
      </p>
    </section>
  );
};
