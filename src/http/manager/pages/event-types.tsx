/**
 * The manager's Event types (issue 30 item 1): the organization's event catalog (its own types
 * and keyway's operational ones, read-only), the form that creates or edits a type (a JSON Schema
 * for `data` and examples as JSON text), the confirmation of a deletion, and the organization's
 * webhook settings (refusing unknown types, the origins that may frame the receivers' portal).
 * A refused form comes back with the values as entered and each field's message beside it (the
 * domain's 400 names a path inside `schema` or `examples`). Plain data in, markup out; routes
 * load the data (event-types.tsx). Hono JSX escapes every interpolated value.
 */
import type { FC } from "hono/jsx";
import type { EventTypeView, WebhookSettingsView } from "../../../schemas/receivers";
import type { FormErrors } from "../form-check";
import { List } from "../list";
import { Checkbox, Field, PostForm, Status, TextArea, Time } from "../views";
import type { Confirmation } from "./common";

/** What `refused` said about a form: keyway's message, and each field's own (one definition, form-check.ts). */
export type { FormErrors };

/** The summary above a refused form: what happened, then each field's message linking to it. */
export const FormRefused: FC<{ errors: FormErrors<string> | undefined; what: string }> = ({ errors, what }) => {
  if (!errors) return null;
  const listed = Object.entries(errors.fields).filter((e): e is [string, string] => e[1] !== undefined);
  return (
    <div class="warning" id="form-errors">
      <p>
        <strong>{what}</strong> {errors.message}
      </p>
      {listed.length > 0 && (
        <ul>
          {listed.map(([field, message]) => (
            <li>
              <a href={`#${field}`}>{message}</a>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
};

export const EventTypes: FC<{ base: string; create: string; settings: string; types: EventTypeView[] }> = ({
  base,
  create,
  settings,
  types,
}) => {
  const own = types.filter((t) => !t.operational);
  return (
    <>
      <p>
        The event catalog says which event types this organization publishes and what their <code>data</code> looks like. A type with a JSON
        Schema is checked when it is published (400 naming the failing field); receivers read the catalog, with its examples, in their
        portal.
      </p>
      <ul class="links">
        <li>
          <a href={create}>New event type</a>
        </li>
        <li>
          <a href={settings}>Webhook settings</a>: refusing unknown event types, and the sites that may show the receivers' portal in a
          frame
        </li>
      </ul>
      {own.length === 0 && <p>No event types of this organization yet: any type may be published, and none is checked.</p>}
      <List<EventTypeView>
        label="Event types"
        caption="By name: this organization's types, then keyway's own (read-only)"
        rows={[...own, ...types.filter((t) => t.operational)]}
        // keyway's own types are always listed, so the list is never empty; the paragraph above says when the organization has none.
        empty={null}
        columns={[
          {
            header: "Name",
            cell: (t) => (
              <>
                <a href={`${base}/${t.name}`}>
                  <code>{t.name}</code>
                </a>
                {t.operational && (
                  <>
                    {" "}
                    <span class="hint">(keyway's own)</span>
                  </>
                )}
              </>
            ),
          },
          { header: "Description", cell: (t) => t.description ?? "-" },
          { header: "Deprecated", cell: (t) => (t.deprecated ? <Status value="deprecated" /> : "no") },
          { header: "Schema", cell: (t) => (t.schema === null ? "none (any data)" : "yes") },
        ]}
      />
    </>
  );
};

/** The event type form's fields, named as they are posted. */
export type EventTypeField = "name" | "description" | "schema" | "examples";

export const EVENT_TYPE_FIELD_LABELS: Record<EventTypeField, string> = {
  name: "Name",
  description: "Description",
  schema: "Schema",
  examples: "Examples",
};

/** The form's values: the stored type's, or after a refusal the text as entered. */
export interface EventTypeFormValues {
  name: string;
  description: string;
  /** JSON text; empty for no schema. */
  schema: string;
  /** JSON text of an array; empty for none. */
  examples: string;
  deprecated: boolean;
}

export const EMPTY_EVENT_TYPE_FORM: EventTypeFormValues = { name: "", description: "", schema: "", examples: "", deprecated: false };

const json = (value: unknown) => JSON.stringify(value, null, 2);

export const eventTypeFormValues = (t: EventTypeView): EventTypeFormValues => ({
  name: t.name,
  description: t.description ?? "",
  schema: t.schema === null ? "" : json(t.schema),
  examples: t.examples.length === 0 ? "" : json(t.examples),
  deprecated: t.deprecated,
});

/**
 * Creating a type (its name given here, and fixed after) or editing one. The schema and the
 * examples are JSON text: a schema (draft 2020-12) for the event's `data`, and an array of
 * example `data` values, each checked against the schema when saved.
 */
export const EventTypeForm: FC<{
  mode: "create" | "edit";
  action: string;
  cancel: string;
  values: EventTypeFormValues;
  errors?: FormErrors<EventTypeField> | undefined;
  csrf: string;
}> = ({ mode, action, cancel, values, errors, csrf }) => (
  <>
    <FormRefused errors={errors} what={mode === "create" ? "Nothing was created." : "Nothing was changed."} />
    <PostForm action={action} csrf={csrf} label={mode === "create" ? "New event type" : `Edit event type ${values.name}`}>
      {mode === "create" ? (
        <Field
          id="name"
          label={EVENT_TYPE_FIELD_LABELS.name}
          hint="group.event in lower case, e.g. order.created; it cannot be changed later"
          value={values.name}
          required
          error={errors?.fields.name}
        />
      ) : (
        <p>
          <strong>Name:</strong> <code>{values.name}</code>
        </p>
      )}
      <Field
        id="description"
        label={EVENT_TYPE_FIELD_LABELS.description}
        hint="optional; what happened, for the receivers"
        value={values.description}
        error={errors?.fields.description}
      />
      <TextArea
        id="schema"
        label={EVENT_TYPE_FIELD_LABELS.schema}
        hint={`a JSON Schema (draft 2020-12) for the event's data, as JSON; empty: any data is accepted${mode === "edit" ? " (emptying it removes the schema)" : ""}`}
        value={values.schema}
        rows={12}
        error={errors?.fields.schema}
      />
      <TextArea
        id="examples"
        label={EVENT_TYPE_FIELD_LABELS.examples}
        hint="a JSON array of example data values, each checked against the schema; empty for none"
        value={values.examples}
        rows={6}
        error={errors?.fields.examples}
      />
      <Checkbox
        id="deprecated"
        label="Deprecated"
        checked={values.deprecated}
        hint="still accepted; receivers see that it is on its way out"
      />
      <button type="submit">{mode === "create" ? "Create event type" : "Save"}</button>{" "}
      <a href={cancel} class="button secondary">
        Cancel
      </a>
    </PostForm>
  </>
);

/** An event type's page: its facts, then its form (the organization's own) or its schema (keyway's, read-only). */
export const EventTypeFacts: FC<{ type: EventTypeView }> = ({ type }) => (
  <dl class="facts">
    <dt>Name</dt>
    <dd>
      <code>{type.name}</code>
    </dd>
    <dt>Created</dt>
    <dd>
      <Time at={type.created_at} />
    </dd>
    <dt>Last changed</dt>
    <dd>
      <Time at={type.updated_at} />
    </dd>
  </dl>
);

/** keyway's own (operational) type: read-only, its schema and examples shown as they are. */
export const OperationalEventType: FC<{ type: EventTypeView; back: string }> = ({ type, back }) => (
  <>
    <p>
      keyway publishes this event itself, about the webhooks themselves; it cannot be changed or deleted. A webhook configuration receives
      it only when its event types name it.
    </p>
    <p>{type.description}</p>
    <section aria-labelledby="schema-heading">
      <h2 id="schema-heading">Schema of data</h2>
      <pre class="payload" tabindex={0}>
        {json(type.schema)}
      </pre>
    </section>
    {type.examples.length > 0 && (
      <section aria-labelledby="examples-heading">
        <h2 id="examples-heading">Examples</h2>
        <pre class="payload" tabindex={0}>
          {json(type.examples)}
        </pre>
      </section>
    )}
    <p>
      <a href={back}>Back to the event types</a>
    </p>
  </>
);

export const deleteEventTypeConfirmation = (t: Pick<EventTypeView, "name" | "description">): Confirmation => ({
  title: `Delete event type ${t.name}${t.description ? ` (“${t.description}”)` : ""}?`,
  consequence:
    "Publishes of this type are no longer checked against its schema (and are refused when the webhook settings refuse unknown types); " +
    "receivers no longer find it in the catalog. Webhook configurations subscribed to it keep their subscription. To keep it listed while " +
    "receivers move on, mark it deprecated instead. This cannot be undone.",
  button: "Delete event type",
  danger: true,
});

/** The settings form's fields, named as they are posted. */
export type SettingsField = "portal_frame_origins" | "portal_display_name" | "portal_accent_color" | "portal_logo_url" | "portal_logo_file";

export interface SettingsFormValues {
  refuse_unknown_event_types: boolean;
  /** One origin a line, as typed. */
  portal_frame_origins: string;
  portal_display_name: string;
  portal_accent_color: string;
  portal_logo_url: string;
  /** The logo kept now (shown beside the upload), and whether the form asks to remove it. */
  logo: WebhookSettingsView["portal_logo"];
  remove_logo: boolean;
}

export const settingsFormValues = (s: WebhookSettingsView): SettingsFormValues => ({
  refuse_unknown_event_types: s.refuse_unknown_event_types,
  portal_frame_origins: s.portal_frame_origins.join("\n"),
  portal_display_name: s.portal_display_name ?? "",
  portal_accent_color: s.portal_accent_color ?? "",
  portal_logo_url: "",
  logo: s.portal_logo,
  remove_logo: false,
});

/**
 * The settings form, a multipart one (the logo may be uploaded): the catalog's rule, the portal's
 * frame origins and its branding (name, accent colour, logo by upload or by https URL).
 */
export const WebhookSettingsForm: FC<{
  action: string;
  cancel: string;
  values: SettingsFormValues;
  errors?: FormErrors<SettingsField> | undefined;
  csrf: string;
  maxLogoKiB: number;
}> = ({ action, cancel, values, errors, csrf, maxLogoKiB }) => (
  <>
    <FormRefused errors={errors} what="Nothing was changed." />
    <form method="post" action={action} class="card" aria-label="Webhook settings" enctype="multipart/form-data">
      <input type="hidden" name="csrf" value={csrf} />
      <Checkbox
        id="refuse_unknown_event_types"
        label="Refuse unknown event types"
        checked={values.refuse_unknown_event_types}
        hint="publishing an event whose type is not in the catalog answers 400; otherwise it is sent"
      />
      <TextArea
        id="portal_frame_origins"
        label="Portal frame origins"
        hint="one https origin a line, e.g. https://dashboard.example.com, at most 10: the sites that may show the receivers' portal in an iframe; none by default"
        value={values.portal_frame_origins}
        rows={4}
        error={errors?.fields.portal_frame_origins}
      />
      <fieldset>
        <legend>The receivers' portal</legend>
        <Field
          id="portal_display_name"
          label="Display name"
          hint={`up to 80 characters; the portal shows "<name> webhooks"; empty for none`}
          value={values.portal_display_name}
          error={errors?.fields.portal_display_name}
        />
        <Field
          id="portal_accent_color"
          label="Accent colour"
          hint="#rrggbb, e.g. #e4002b; empty for keyway's. Links and buttons use it, made darker or lighter where WCAG AA contrast needs it"
          value={values.portal_accent_color}
          error={errors?.fields.portal_accent_color}
        />
        <p>
          {values.logo === null
            ? "No logo."
            : `Logo kept: ${values.logo.content_type}, ${values.logo.size_bytes.toLocaleString("en-US")} bytes (SHA-256 ${values.logo.sha256.slice(0, 12)}...).`}
        </p>
        <label for="portal_logo_file">
          Upload a logo <span class="hint">(PNG, JPEG or WebP, at most {maxLogoKiB} KiB; shown 32 px high in the portal's header)</span>
        </label>
        {errors?.fields.portal_logo_file && (
          <p id="portal_logo_file-error" class="field-error" role="alert">
            {errors.fields.portal_logo_file}
          </p>
        )}
        <input
          id="portal_logo_file"
          name="portal_logo_file"
          type="file"
          accept="image/png,image/jpeg,image/webp"
          aria-invalid={errors?.fields.portal_logo_file ? "true" : undefined}
          aria-describedby={errors?.fields.portal_logo_file ? "portal_logo_file-error" : undefined}
        />
        <Field
          id="portal_logo_url"
          label="Or a logo's https URL"
          hint="fetched once when saved; keyway keeps the image and serves it, so the portal never loads this URL"
          type="url"
          value={values.portal_logo_url}
          error={errors?.fields.portal_logo_url}
        />
        <Checkbox id="remove_logo" label="Remove the logo" checked={values.remove_logo} />
      </fieldset>
      <button type="submit">Save settings</button>{" "}
      <a href={cancel} class="button secondary">
        Cancel
      </a>
    </form>
  </>
);
