/**
 * The portal's "Event catalog" pages (issue 30 items 1 and 2): the organization's event types
 * (name, description, deprecated, keyway's operational ones marked), whether the session's
 * endpoint is subscribed to each, its JSON Schema and examples, a Subscribe / Unsubscribe button,
 * and the link to the catalog as an OpenAPI 3.1 document for code generators; what a schema's
 * keywords check; and "Send an example" of a type to this endpoint (issue 42; not of keyway's
 * operational types, which are the organization's). Plain data in, markup out; routes.tsx loads
 * the catalog (webhooks/event-types.ts), changes `events` and sends the example.
 */
import type { FC } from "hono/jsx";
import type { EventTypeView } from "../../schemas/receivers";
import type { FormErrors } from "../manager/pages/event-types";
import { SchemaKeywords, type SendExampleField, SendExampleForm, type SendExampleValues } from "../manager/pages/send-example";
import { Pager, PostForm } from "../manager/views";

export const CATALOG_PAGE = 25;

/**
 * Whether a configuration receives a type: `events` null is every event except keyway's
 * operational ones (objects/webhooks/publishing.ts `targets`), which are received only by name.
 */
export const subscribed = (events: string[] | null, type: Pick<EventTypeView, "name" | "operational">): boolean =>
  events === null ? !type.operational : events.includes(type.name);

const pretty = (value: unknown): string => JSON.stringify(value, null, 2);

/** Where a type's page is; names are dot-separated lower-case words, safe in a path as they are. */
export const typeHref = (name: string): string => `/portal/event-types/${name}`;

/** What pressing the button will do, said before it is pressed (the "every event" case changes the filter's kind). */
function changeHint(events: string[] | null, type: EventTypeView, on: boolean): string | null {
  if (events === null)
    return on
      ? "This endpoint receives every event. Unsubscribing from one replaces that with a list of the catalog's other types: types added to the catalog later, or published without being in it, are then not sent until subscribed."
      : "This endpoint receives every event of the catalog, never keyway's operational ones. Subscribing replaces every event with a list of the catalog's types plus this one: types added later are then not sent until subscribed.";
  if (on && events.length === 1 && events[0] === type.name)
    return "The only type this endpoint is subscribed to; to receive nothing, pause deliveries on the Endpoint page instead.";
  return null;
}

const Subscription: FC<{ type: EventTypeView; events: string[] | null; csrf: string }> = ({ type, events, csrf }) => {
  const on = subscribed(events, type);
  // Issue 42: operational events describe the organization's other endpoints; a receiver never subscribes to them.
  if (type.operational && !on) {
    return (
      <p>
        <strong>Not subscribed</strong>: {type.name} describes the organization's other endpoints, so only the organization's own operations
        configurations receive it.
      </p>
    );
  }
  const hint = changeHint(events, type, on);
  const only = on && events !== null && events.length === 1;
  const hintId = `hint-${type.name.replaceAll(".", "-")}`;
  return (
    <>
      <p>
        <strong>{on ? "Subscribed" : "Not subscribed"}</strong>: this endpoint {on ? "receives" : "does not receive"} {type.name} events.
      </p>
      {hint !== null && (
        <p class="hint" id={hintId}>
          {hint}
        </p>
      )}
      {!only && (
        <PostForm
          action={`${typeHref(type.name)}/${on ? "unsubscribe" : "subscribe"}`}
          csrf={csrf}
          class="inline"
          label={`${on ? "Unsubscribe from" : "Subscribe to"} ${type.name}`}
        >
          <button type="submit" class={on ? "secondary" : undefined} aria-describedby={hint !== null ? hintId : undefined}>
            {on ? "Unsubscribe" : "Subscribe"}
            <span class="sr-only"> {type.name}</span>
          </button>
        </PostForm>
      )}
    </>
  );
};

/** One type: its facts, the subscription, and its schema and examples (folded on the list, open on the type's page). */
export const EventTypeEntry: FC<{ type: EventTypeView; events: string[] | null; csrf: string; open: boolean; heading: "h2" | null }> = ({
  type,
  events,
  csrf,
  open,
  heading,
}) => {
  const id = `type-${type.name.replaceAll(".", "-")}`;
  return (
    <section class="card" aria-labelledby={heading ? id : undefined}>
      {heading && (
        <h2 id={id}>
          <a href={typeHref(type.name)}>
            <code>{type.name}</code>
          </a>
          {type.deprecated && (
            <>
              {" "}
              <span class="badge status-deprecated">deprecated</span>
            </>
          )}
        </h2>
      )}
      <p>
        {type.description ?? <span class="hint">No description.</span>}
        {type.deprecated && " Deprecated: it may stop being sent; prefer the type that replaces it."}
        {type.operational &&
          " Published by keyway about the webhooks themselves (operational); sent only to the organization's operations configurations."}
      </p>
      <Subscription type={type} events={events} csrf={csrf} />
      {!type.operational && (
        <p>
          <a href={`${typeHref(type.name)}/send-example`}>
            Send an example<span class="sr-only"> of {type.name}</span>
          </a>{" "}
          <span class="hint">(one {type.name} event with data you can edit, to this endpoint only, to try your handling of it)</span>
        </p>
      )}
      <details open={open}>
        <summary>JSON Schema of the event's data</summary>
        {type.schema === null ? (
          <p>No schema: any data may be sent.</p>
        ) : (
          /* Focusable, so a long schema can be scrolled by keyboard. */
          <pre class="payload" tabindex={0}>
            {pretty(type.schema)}
          </pre>
        )}
      </details>
      {open && type.schema !== null && <SchemaKeywords />}
      <details open={open}>
        <summary>Examples ({type.examples.length})</summary>
        {type.examples.length === 0 ? (
          <p>No examples.</p>
        ) : (
          type.examples.map((example) => (
            <pre class="payload" tabindex={0}>
              {pretty(example)}
            </pre>
          ))
        )}
      </details>
    </section>
  );
};

export const CatalogPage: FC<{
  types: EventTypeView[];
  events: string[] | null;
  csrf: string;
  cursor?: string | undefined;
  next: string | null;
  /** Subscribed names that are not in the catalog (published without a catalog entry). */
  uncatalogued: string[];
}> = ({ types, events, csrf, cursor, next, uncatalogued }) => (
  <>
    <p>
      The event types this organization sends, with the JSON Schema (draft 2020-12) of each event's <code>data</code> and examples. This
      endpoint receives{" "}
      {events === null ? (
        <strong>every event</strong>
      ) : (
        <>
          <strong>only the types it is subscribed to</strong> ({events.join(", ")})
        </>
      )}
      ; keyway's operational events (<code>webhook.*</code>) are sent only to endpoints that name them. The event types can also be edited
      as a list on the <a href="/portal/settings">Settings</a> page.
    </p>
    <p>
      <a href="/portal/catalog/openapi.json" download="event-catalog.openapi.json">
        Download the catalog as an OpenAPI 3.1 document
      </a>{" "}
      <span class="hint">(JSON: one entry per type under webhooks, for openapi-typescript and similar generators)</span>
    </p>
    <SchemaKeywords />
    {uncatalogued.length > 0 && <p class="hint">Also subscribed to types that are not in the catalog: {uncatalogued.join(", ")}.</p>}
    {cursor === undefined && !types.some((t) => !t.operational) && (
      // Only keyway's operational types, which a receiver never subscribes to: say what it gets instead.
      <section class="card" aria-labelledby="no-types">
        <h2 id="no-types">No event types described yet</h2>
        <p>
          The provider of these webhooks has not described its event types here yet. Until it does, this endpoint receives{" "}
          {events === null ? "every event the provider publishes" : `the events it is subscribed to (${events.join(", ")})`}, unless a
          filter narrows them: yours on the <a href="/portal/filter">Filter</a> page (a payload filter and channels), and the event types
          listed on the <a href="/portal/settings">Settings</a> page. Each event is sent as a signed POST to this endpoint's URL (a polling
          endpoint reads it instead), its type and data shown on its delivery under <a href="/portal/deliveries">Deliveries</a>; nothing
          here needs to be done first. Ask the provider for a catalog to see each type's schema and examples before the first event arrives.
        </p>
        {types.length > 0 && (
          <p class="hint">
            The types listed below are keyway's own operational events: they describe the provider's other endpoints and go only to its own
            operations endpoints, so they cannot be subscribed to here.
          </p>
        )}
      </section>
    )}
    {types.length === 0 ? (
      <p>The catalog is empty.</p>
    ) : (
      types.map((type) => <EventTypeEntry type={type} events={events} csrf={csrf} open={false} heading="h2" />)
    )}
    <Pager label="Catalog" path="/portal/catalog" current={cursor} next={next} />
  </>
);

/** "Send an example" of a type to the session's endpoint only (not offered for operational types). */
export const SendExamplePage: FC<{
  type: EventTypeView;
  csrf: string;
  values: SendExampleValues;
  errors?: FormErrors<SendExampleField> | undefined;
}> = ({ type, csrf, values, errors }) => (
  <>
    <p>
      <a href={typeHref(type.name)}>
        Back to <code>{type.name}</code>
      </a>{" "}
      · <a href="/portal/catalog">All event types</a>
    </p>
    {type.description !== null && <p>{type.description}</p>}
    <SendExampleForm
      type={type}
      action={`${typeHref(type.name)}/send-example`}
      csrf={csrf}
      values={values}
      errors={errors}
      exampleHref={(n) => `${typeHref(type.name)}/send-example?example=${n}`}
      to="this endpoint"
    />
    {type.schema !== null && (
      <details>
        <summary>JSON Schema of the event's data</summary>
        <pre class="payload" tabindex={0}>
          {pretty(type.schema)}
        </pre>
      </details>
    )}
    {type.schema !== null && <SchemaKeywords />}
  </>
);
