/**
 * The manager's Event types and webhook settings (issue 30 items 1 and 5): the organization's
 * event catalog, creating, editing and deleting (confirmed first) a type with its JSON Schema and
 * examples, and the settings (refusing unknown types, the portal's frame origins). A refused form
 * answers with the form again: the text as entered, keyway's message and each field's, the
 * domain's 400 (which names a path inside `schema` or `examples`) beside the field it is about.
 * A type's page also says which schema keywords are checked and has "Send an example" (issue 42):
 * its data, prefilled with an example, checked against the schema and sent to the configuration
 * chosen only (webhooks/deliveries.ts sendExampleEvent; keyway's operational types too: they are
 * the organization's). Actions call the same domain functions as the REST routes
 * (webhooks/event-types.ts), as the session's actor. Mounted under /manager/organizations by routes.tsx, behind its session and
 * CSRF checks; the markup is in pages/event-types.tsx.
 */
import { Hono } from "hono";
import type { Child } from "hono/jsx";
import { ApiError, type InputIssue } from "../../errors";
import { MAX_LOGO_BYTES } from "../../lib/images";
import { MAX_WEBHOOK_CONFIGURATIONS } from "../../objects/webhooks/limits";
import { CreateEventTypeInput, type EventTypeView, UpdateEventTypeInput, UpdateWebhookSettingsInput } from "../../schemas/receivers";
import { listWebhookConfigurations, receiverJwksPath } from "../../webhooks/configurations";
import { sendExampleEvent } from "../../webhooks/deliveries";
import {
  createEventType,
  deleteEventType,
  getEventType,
  getWebhookSettings,
  listEventTypes,
  updateEventType,
  updateWebhookSettings,
} from "../../webhooks/event-types";
import { rotateAssertionKey } from "../../webhooks/receiver-keys";
import { UploadedFile } from "../body";
import { checkedInput, formErrorsOf } from "./form-check";
import {
  deleteEventTypeConfirmation,
  EMPTY_EVENT_TYPE_FORM,
  EVENT_TYPE_FIELD_LABELS,
  EventTypeFacts,
  type EventTypeField,
  EventTypeForm,
  type EventTypeFormValues,
  EventTypes,
  eventTypeFormValues,
  type FormErrors,
  OperationalEventType,
  type SettingsField,
  type SettingsFormValues,
  settingsFormValues,
  WebhookSettingsForm,
} from "./pages/event-types";
import { AssertionKeyRotated, AssertionKeySection, rotateAssertionKeyConfirmation } from "./pages/receiver-oauth";
import {
  exampleIndex,
  exampleValues,
  postedExampleData,
  SchemaKeywords,
  type SendExampleField,
  SendExampleForm,
  type SendExampleValues,
  sendExampleErrors,
} from "./pages/send-example";
import { actor, type C, confirmPage, csrf, form, keywayOrigin, type ManagerEnv, notices, orgCrumbs, orgFor, page } from "./shared";
import type { Crumb } from "./views";

type OrgRef = { id: string; name: string };

/** The catalog holds at most 250 organization types and keyway's few: every one fits in this many pages of 100. */
const MAX_CATALOG_PAGES = 4;

export function eventTypeRoutes(): Hono<ManagerEnv> {
  const app = new Hono<ManagerEnv>();

  app.get("/:org/event-types", async (c) => {
    const org = await orgFor(c);
    const types = [];
    let cursor: string | undefined;
    // The whole catalog on one page (it is bounded), so every type is one look away.
    for (let i = 0; i < MAX_CATALOG_PAGES; i++) {
      const page = await listEventTypes(c.get("deps"), org.id, cursor === undefined ? { limit: 100 } : { limit: 100, cursor });
      types.push(...page.items);
      if (page.next_cursor === null) break;
      cursor = page.next_cursor;
    }
    return page(
      c,
      "Event types",
      [...orgCrumbs(c, org, true), { label: "Event types" }],
      <EventTypes base={typesPath(org.id)} create={newTypePath(org.id)} settings={settingsPath(org.id)} types={types} />,
      notices[c.req.query("notice") ?? ""],
    );
  });

  // Beside the collection, not under it: no path segment is both a literal and a parameter, which
  // lets the app use Hono's RegExpRouter (app.ts).
  app.get("/:org/new-event-type", async (c) => {
    const org = await orgFor(c);
    return newTypePage(c, org, EMPTY_EVENT_TYPE_FORM);
  });

  app.post("/:org/event-types", async (c) => {
    const org = await orgFor(c);
    const values = postedTypeForm(await form(c));
    try {
      // Text that is not JSON is said with the schema's other checks, all at once (form-check.ts).
      const json = jsonFields(values, false);
      const input = checkedInput(
        CreateEventTypeInput,
        {
          name: values.name,
          ...(values.description !== "" ? { description: values.description } : {}),
          ...json.out,
          deprecated: values.deprecated,
        },
        json.issues,
      );
      const created = await createEventType(c.get("deps"), org.id, input, actor(c));
      return c.redirect(`${typesPath(org.id)}/${created.name}?notice=event-type-saved`, 303);
    } catch (err) {
      const errors = typeFormErrors(err);
      if (errors === null) throw err;
      c.status(errors.status);
      return newTypePage(c, org, values, errors);
    }
  });

  app.get("/:org/event-types/:name", async (c) => {
    const { org, type } = await typeFor(c);
    const send = await sendSection(c, org, type, exampleValues(type, exampleIndex(c.req.query("example"), type)));
    if (type.operational) return operationalTypePage(c, org, type, send);
    return editTypePage(c, org, type.name, eventTypeFormValues(type), undefined, notices[c.req.query("notice") ?? ""], send);
  });

  // "Send an example" (issue 42): the data entered, checked against the type's schema, to the
  // chosen configuration only (webhooks/deliveries.ts sendExampleEvent). A refusal the person can
  // correct comes back on the type's page with the text as entered.
  app.post("/:org/event-types/:name/send-example", async (c) => {
    const { org, type } = await typeFor(c);
    const fields = await form(c);
    const values: SendExampleValues = {
      data: typeof fields.data === "string" ? fields.data : "",
      webhook_configuration_id: typeof fields.webhook_configuration_id === "string" ? fields.webhook_configuration_id.trim() : "",
    };
    try {
      const data = postedExampleData(values.data);
      const sent = await sendExampleEvent(
        c.get("deps"),
        org.id,
        values.webhook_configuration_id,
        { event_type: type.name, data },
        actor(c),
      );
      const configId = sent.deliveries[0]?.webhook_configuration_id ?? values.webhook_configuration_id;
      return c.redirect(`/manager/organizations/${org.id}/webhooks/${configId}?event_type=${type.name}&notice=test-sent`, 303);
    } catch (err) {
      const errors = sendExampleErrors(err);
      if (errors === null) throw err;
      c.status(errors.status);
      const send = await sendSection(c, org, type, values, errors);
      if (type.operational) return operationalTypePage(c, org, type, send);
      return editTypePage(c, org, type.name, eventTypeFormValues(type), undefined, undefined, send);
    }
  });

  app.post("/:org/event-types/:name", async (c) => {
    const { org, type } = await typeFor(c);
    const values = { ...postedTypeForm(await form(c)), name: type.name };
    try {
      // Every field is in the form, so each is set: empty text removes the description, the schema or the examples.
      const json = jsonFields(values, true);
      const input = checkedInput(
        UpdateEventTypeInput,
        {
          description: values.description === "" ? null : values.description,
          ...json.out,
          deprecated: values.deprecated,
        },
        json.issues,
      );
      await updateEventType(c.get("deps"), org.id, type.name, input, actor(c));
    } catch (err) {
      const errors = typeFormErrors(err);
      if (errors === null) throw err;
      c.status(errors.status);
      return editTypePage(c, org, type.name, values, errors, undefined, await sendSection(c, org, type, exampleValues(type)));
    }
    return c.redirect(`${typesPath(org.id)}/${type.name}?notice=event-type-saved`, 303);
  });

  app.get("/:org/event-types/:name/delete", async (c) => {
    const { org, type } = await typeFor(c);
    const base = `${typesPath(org.id)}/${type.name}`;
    return confirmPage(c, [...typeCrumbs(c, org), { label: type.name, href: base }], deleteEventTypeConfirmation(type), {
      action: `${base}/delete`,
      cancel: base,
    });
  });

  app.post("/:org/event-types/:name/delete", async (c) => {
    const { org, type } = await typeFor(c);
    await deleteEventType(c.get("deps"), org.id, type.name, actor(c));
    return c.redirect(`${typesPath(org.id)}?notice=event-type-deleted`, 303);
  });

  app.get("/:org/webhook-settings", async (c) => {
    const org = await orgFor(c);
    const settings = await getWebhookSettings(c.get("deps"), org.id);
    return settingsPage(c, org, settingsFormValues(settings), undefined, notices[c.req.query("notice") ?? ""]);
  });

  app.post("/:org/webhook-settings", async (c) => {
    const org = await orgFor(c);
    const fields = await form(c);
    const text = (name: string) => (typeof fields[name] === "string" ? (fields[name] as string) : "");
    // The stored logo is shown only on a refused form's page: read there, not on every save.
    const values: Omit<SettingsFormValues, "logo"> = {
      refuse_unknown_event_types: fields.refuse_unknown_event_types === "on",
      portal_frame_origins: text("portal_frame_origins"),
      portal_display_name: text("portal_display_name").trim(),
      portal_accent_color: text("portal_accent_color").trim(),
      portal_logo_url: text("portal_logo_url").trim(),
      remove_logo: fields.remove_logo === "on",
    };
    const origins = values.portal_frame_origins
      .split(/\r?\n/)
      .map((line) => line.trim())
      .filter((line) => line !== "");
    // A file input left empty still posts a part: an empty file with no name, which means "keep".
    const file =
      fields.portal_logo_file instanceof UploadedFile && fields.portal_logo_file.bytes.byteLength > 0 ? fields.portal_logo_file : null;
    try {
      const input = checkedInput(UpdateWebhookSettingsInput, {
        refuse_unknown_event_types: values.refuse_unknown_event_types,
        portal_frame_origins: origins,
        portal_display_name: values.portal_display_name === "" ? null : values.portal_display_name,
        portal_accent_color: values.portal_accent_color === "" ? null : values.portal_accent_color,
        ...(values.remove_logo
          ? { portal_logo_url: null }
          : file === null && values.portal_logo_url !== ""
            ? { portal_logo_url: values.portal_logo_url }
            : {}),
      });
      await updateWebhookSettings(c.get("deps"), org.id, input, actor(c), !values.remove_logo && file !== null ? file.bytes : undefined);
    } catch (err) {
      if (!(err instanceof ApiError) || err.code !== "invalid_request") throw err;
      // Each field's first issue (form-check.ts formErrorsOf): an origin by its line, a branding
      // field by its label; an uploaded file's refusal is the object's, named portal_logo_url, and
      // said beside the upload.
      const branding = new Map(BRANDING_LABELS);
      const refused = formErrorsOf<SettingsField>(
        err,
        ([name]) =>
          name === "portal_frame_origins"
            ? name
            : name === "portal_logo_url" && file !== null
              ? "portal_logo_file"
              : branding.has(name as SettingsField)
                ? (name as SettingsField)
                : null,
        (field, issue) => {
          const text = "text" in issue ? issue.text.trim() : "is invalid";
          if (field === "portal_frame_origins") {
            const line = Number(issue.path[1]);
            return `Portal frame origins: ${Number.isInteger(line) ? `line ${line + 1} (${origins[line] ?? ""}) ` : ""}${text}`;
          }
          if (field === "portal_logo_file") return `The uploaded file${file?.name ? ` (${file.name.slice(0, 80)})` : ""} ${text}`;
          return `${branding.get(field)} ${text}`;
        },
      );
      const errors: FormErrors<SettingsField>["fields"] = refused?.fields ?? {};
      c.status(400);
      const { portal_logo: logo } = await getWebhookSettings(c.get("deps"), org.id);
      return settingsPage(c, org, { ...values, logo }, { message: err.developerMessage, fields: errors });
    }
    return c.redirect(`${settingsPath(org.id)}?notice=settings-saved`, 303);
  });

  // The organization's private_key_jwt assertion key: asked first, then the new key's timeline.
  app.get("/:org/webhook-settings/rotate-assertion-key", async (c) => {
    const org = await orgFor(c);
    const path = settingsPath(org.id);
    return confirmPage(c, settingsCrumbs(c, org, true), rotateAssertionKeyConfirmation, {
      action: `${path}/rotate-assertion-key`,
      cancel: path,
    });
  });

  app.post("/:org/webhook-settings/rotate-assertion-key", async (c) => {
    const org = await orgFor(c);
    const rotated = await rotateAssertionKey(c.get("deps"), org.id, actor(c));
    return page(
      c,
      "Assertion key rotated",
      [...settingsCrumbs(c, org, true), { label: "Assertion key rotated" }],
      <AssertionKeyRotated result={rotated} back={settingsPath(org.id)} />,
    );
  });

  return app;
}

/** The crumbs to the webhook settings, linked when a page below them is shown. */
function settingsCrumbs(c: C, org: OrgRef, linked: boolean): Crumb[] {
  return [
    ...orgCrumbs(c, org, true),
    { label: "Event types", href: typesPath(org.id) },
    linked ? { label: "Webhook settings", href: settingsPath(org.id) } : { label: "Webhook settings" },
  ];
}

const typesPath = (orgId: string) => `/manager/organizations/${orgId}/event-types`;
const settingsPath = (orgId: string) => `/manager/organizations/${orgId}/webhook-settings`;
const newTypePath = (orgId: string) => `/manager/organizations/${orgId}/new-event-type`;

function typeCrumbs(c: C, org: OrgRef): Crumb[] {
  return [...orgCrumbs(c, org, true), { label: "Event types", href: typesPath(org.id) }];
}

/** The organization in the URL (the session's own for an administrator) and the type named there. */
async function typeFor(c: C) {
  const org = await orgFor(c);
  return { org, type: await getEventType(c.get("deps"), org.id, c.req.param("name") ?? "") };
}

function newTypePage(c: C, org: OrgRef, values: EventTypeFormValues, errors?: FormErrors<EventTypeField>) {
  const list = typesPath(org.id);
  return page(
    c,
    "New event type",
    [...typeCrumbs(c, org), { label: "New" }],
    <EventTypeForm mode="create" action={list} cancel={list} values={values} errors={errors} csrf={csrf(c)} />,
  );
}

function editTypePage(
  c: C,
  org: OrgRef,
  name: string,
  values: EventTypeFormValues,
  errors?: FormErrors<EventTypeField>,
  notice?: string,
  send?: Child,
) {
  const base = `${typesPath(org.id)}/${name}`;
  return page(
    c,
    `Event type ${name}`,
    [...typeCrumbs(c, org), { label: name }],
    <>
      <EventTypeForm mode="edit" action={base} cancel={typesPath(org.id)} values={values} errors={errors} csrf={csrf(c)} />
      <SchemaKeywords />
      {send}
      <h2>Delete</h2>
      <p>
        <a href={`${base}/delete`}>Delete event type {name}</a> (publishes of it are no longer checked; consider marking it deprecated)
      </p>
    </>,
    notice,
  );
}

/** keyway's own type: read-only, with the "Send an example" form (the organization may send its operational types). */
function operationalTypePage(c: C, org: OrgRef, type: EventTypeView, send: Child) {
  return page(
    c,
    `Event type ${type.name}`,
    [...typeCrumbs(c, org), { label: type.name }],
    <>
      <EventTypeFacts type={type} />
      <OperationalEventType type={type} back={typesPath(org.id)} />
      {send}
    </>,
  );
}

/** The "Send an example" form of a type, with the organization's configurations to choose from. */
async function sendSection(c: C, org: OrgRef, type: EventTypeView, values: SendExampleValues, errors?: FormErrors<SendExampleField>) {
  const configs = await listWebhookConfigurations(c.get("deps"), org.id, { limit: MAX_WEBHOOK_CONFIGURATIONS });
  const base = `${typesPath(org.id)}/${type.name}`;
  return (
    <SendExampleForm
      type={type}
      action={`${base}/send-example`}
      csrf={csrf(c)}
      values={values}
      errors={errors}
      exampleHref={(n) => `${base}?example=${n}#send-example`}
      configurations={configs.items.map((config) => ({
        id: config.id,
        label: `${config.description ?? config.url}${config.status === "active" ? "" : ` (${config.status})`}`,
      }))}
      to="the webhook configuration chosen"
    />
  );
}

/** The branding fields and how their messages name them. */
const BRANDING_LABELS: [SettingsField, string][] = [
  ["portal_display_name", "Display name:"],
  ["portal_accent_color", "Accent colour:"],
  ["portal_logo_url", "Logo URL:"],
];

/**
 * The settings form posts multipart (its logo upload): this path's POST is read with the logo's
 * room (routes.tsx reads it before the CSRF check, which then finds the token among its fields).
 */
export const SETTINGS_UPLOAD_PATH = /^\/manager\/organizations\/[^/]+\/webhook-settings$/;
/** The logo and the form's other fields, with room for the parts' headers. */
export const SETTINGS_UPLOAD_BYTES = 4 * MAX_LOGO_BYTES;

function settingsPage(c: C, org: OrgRef, values: SettingsFormValues, errors?: FormErrors<SettingsField>, notice?: string) {
  const path = settingsPath(org.id);
  return page(
    c,
    "Webhook settings",
    settingsCrumbs(c, org, false),
    <>
      <WebhookSettingsForm
        action={path}
        cancel={typesPath(org.id)}
        values={values}
        errors={errors}
        csrf={csrf(c)}
        maxLogoKiB={MAX_LOGO_BYTES / 1024}
      />
      <AssertionKeySection rotate={`${path}/rotate-assertion-key`} jwksUrl={new URL(receiverJwksPath(org.id), keywayOrigin(c)).href} />
    </>,
    notice,
  );
}

/** The form as posted: text trimmed (the JSON fields as typed), the box on or off. */
function postedTypeForm(fields: Record<string, unknown>): EventTypeFormValues {
  const text = (name: string) => (typeof fields[name] === "string" ? (fields[name] as string) : "");
  return {
    name: text("name").trim(),
    description: text("description").trim(),
    schema: text("schema"),
    examples: text("examples"),
    deprecated: fields.deprecated === "on",
  };
}

/**
 * The schema and examples from their JSON text. Empty means none: absent on create, removed
 * (schema null, examples []) on update. Text that is not JSON is an issue naming the field (as the
 * domain names a path inside them), returned to be said with the input schema's own.
 */
function jsonFields(values: EventTypeFormValues, update: boolean): { out: Record<string, unknown>; issues: InputIssue[] } {
  const out: Record<string, unknown> = {};
  const issues: InputIssue[] = [];
  for (const field of ["schema", "examples"] as const) {
    const text = values[field].trim();
    if (text === "") {
      if (update) out[field] = field === "schema" ? null : [];
      continue;
    }
    try {
      out[field] = JSON.parse(text);
    } catch (err) {
      issues.push({ path: [field], text: ` is not valid JSON (${err instanceof Error ? err.message : "unreadable"})` });
    }
  }
  return { out, issues };
}

/**
 * A refusal the person can correct in the form: invalid input (the schema's, or the domain's,
 * which names a path such as `schema.properties.total.minimum` or `examples.0.total`) and a
 * conflict (the name is taken or reserved, or the catalog is full). Anything else is the error
 * page's: null.
 */
function typeFormErrors(err: unknown): (FormErrors<EventTypeField> & { status: 400 | 409 }) | null {
  if (!(err instanceof ApiError)) return null;
  if (err.code === "conflict") return { message: err.developerMessage, fields: {}, status: 409 };
  if (err.code !== "invalid_request") return null;
  const fields: FormErrors<EventTypeField>["fields"] = {};
  for (const issue of err.input?.issues ?? []) {
    const field = issue.path[0];
    if (field === undefined || !Object.hasOwn(EVENT_TYPE_FIELD_LABELS, field)) continue;
    const name = field as EventTypeField;
    if (fields[name] !== undefined) continue;
    // "Examples: examples.0.total is less than 0": the path inside the JSON, then keyway's words about it.
    const text = "text" in issue ? issue.text : " is invalid";
    fields[name] =
      issue.path.length > 1
        ? `${EVENT_TYPE_FIELD_LABELS[name]}: ${issue.path.join(".")}${text}`
        : `${EVENT_TYPE_FIELD_LABELS[name]}${text}`;
  }
  return { message: err.developerMessage, fields, status: 400 };
}
