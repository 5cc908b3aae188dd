/**
 * Two parts of an event type's page shared by the manager and the receivers' portal (issue 42):
 * the "Send an example" form (an example of the type, editable as JSON, sent to one configuration
 * only through webhooks/deliveries.ts `sendExampleEvent`) and what the schema's keywords do (which
 * ones check data, which are annotations only, what is refused when a schema is saved). Plain data
 * in, markup out; the routes (manager/event-types.tsx, portal/routes.tsx) send and load.
 */
import type { FC } from "hono/jsx";
import { ApiError, invalidInput } from "../../../errors";
import { ANNOTATION_KEYWORDS, ASSERTED_FORMATS, ASSERTED_KEYWORDS, EXTENSION_PREFIX } from "../../../lib/json-schema";
import type { EventTypeView } from "../../../schemas/receivers";
import { PostForm, TextArea } from "../views";
import { type FormErrors, FormRefused } from "./event-types";

/** The form's fields, named as they are posted. */
export type SendExampleField = "data" | "webhook_configuration_id";

export const SEND_EXAMPLE_LABELS: Record<SendExampleField, string> = { data: "Data", webhook_configuration_id: "Webhook configuration" };

/** The form as shown: the data's JSON text (an example, or what was entered) and the configuration chosen (manager). */
export interface SendExampleValues {
  data: string;
  webhook_configuration_id: string;
}

const pretty = (value: unknown): string => JSON.stringify(value, null, 2);

/** Which example `?example=N` (1-based) picks; the first when absent or out of range. */
export function exampleIndex(query: string | undefined, type: Pick<EventTypeView, "examples">): number {
  const n = Number(query);
  return Number.isInteger(n) && n >= 1 && n <= type.examples.length ? n - 1 : 0;
}

/** The form's first values: example `index` of the type pretty-printed (empty when it has none). */
export const exampleValues = (type: Pick<EventTypeView, "examples">, index = 0, configuration = ""): SendExampleValues => ({
  data: type.examples[index] === undefined ? "" : pretty(type.examples[index]),
  webhook_configuration_id: configuration,
});

/**
 * "Send an example": the data as JSON (prefilled with an example; links pick another, without a
 * script), checked against the type's schema when sent, then published to one configuration only
 * (the manager picks it among the organization's; the portal's is the session's own).
 */
export const SendExampleForm: FC<{
  type: EventTypeView;
  action: string;
  csrf: string;
  values: SendExampleValues;
  errors?: FormErrors<SendExampleField> | undefined;
  /** `?example=N` links to the page, one per example. */
  exampleHref: (n: number) => string;
  /** The manager's choice of configuration; absent in the portal (the session's). */
  configurations?: { id: string; label: string }[] | undefined;
  /** Whom it goes to, in words ("this endpoint", "the webhook configuration chosen"). */
  to: string;
}> = ({ type, action, csrf, values, errors, exampleHref, configurations, to }) => (
  <section aria-labelledby="send-example-heading" id="send-example">
    <h2 id="send-example-heading">Send an example</h2>
    <p>
      Sends one <code>{type.name}</code> event with this data to {to} only, whatever event types it is subscribed to: a sample, to try a
      receiver's handling of the type. Its <code>data</code> is checked against the type's schema first. The receiver gets an ordinary{" "}
      {type.name} event (signed, with its own webhook-id): nothing in it marks it as a sample; the audit log records it as a test (
      <code>webhook_configuration.tested</code>).
    </p>
    {type.examples.length > 1 && (
      <p>
        Start from:{" "}
        {type.examples.map((_, i) => (
          <>
            {i > 0 && " · "}
            <a href={exampleHref(i + 1)}>example {i + 1}</a>
          </>
        ))}
      </p>
    )}
    <FormRefused errors={errors} what="Nothing was sent." />
    <PostForm action={action} csrf={csrf} label={`Send an example of ${type.name}`}>
      {configurations !== undefined && (
        <>
          <label for="webhook_configuration_id">{SEND_EXAMPLE_LABELS.webhook_configuration_id}</label>
          {errors?.fields.webhook_configuration_id && (
            <p id="webhook_configuration_id-error" class="field-error" role="alert">
              {errors.fields.webhook_configuration_id}
            </p>
          )}
          <select
            id="webhook_configuration_id"
            name="webhook_configuration_id"
            required
            aria-invalid={errors?.fields.webhook_configuration_id ? "true" : undefined}
            aria-describedby={errors?.fields.webhook_configuration_id ? "webhook_configuration_id-error" : undefined}
          >
            {configurations.map((c) => (
              <option value={c.id} selected={c.id === values.webhook_configuration_id}>
                {c.label}
              </option>
            ))}
          </select>
        </>
      )}
      <TextArea
        id="data"
        label={SEND_EXAMPLE_LABELS.data}
        hint={`the event's data as JSON${type.examples.length > 0 ? "; prefilled with an example, edit it freely" : ""}`}
        value={values.data}
        rows={10}
        error={errors?.fields.data}
      />
      <button type="submit" disabled={configurations !== undefined && configurations.length === 0 ? true : undefined}>
        Send the example
      </button>
      {configurations !== undefined && configurations.length === 0 && (
        <p class="hint">The organization has no webhook configuration to send it to.</p>
      )}
    </PostForm>
  </section>
);

/**
 * What a schema's keywords do when data is checked against it: the validator's (checked), the
 * annotations, `format` (checked for the formats the validator knows), and what saving refuses.
 */
export const SchemaKeywords: FC = () => (
  <details>
    <summary>Which keywords of the schema are checked</summary>
    <p>
      Schemas are JSON Schema draft 2020-12. <strong>Checked</strong> against the data: {ASSERTED_KEYWORDS.join(", ")}. <code>format</code>{" "}
      is checked for {ASSERTED_FORMATS.join(", ")}; any other format is an annotation only. <strong>Annotations only</strong> (describe,
      check nothing): {ANNOTATION_KEYWORDS.join(", ")}, and extension keywords starting <code>{EXTENSION_PREFIX}</code>.
    </p>
    <p>
      A keyword that is not a draft 2020-12 keyword (a misspelling such as <code>requried</code>) is refused when the schema is saved,
      naming it and where it is; property names under <code>properties</code> are names, not keywords. Not accepted either: <code>$id</code>
      , <code>$dynamicRef</code>, references outside the schema, patterns that can backtrack without end. Schemas saved before unknown
      keywords were refused are not checked again until they are changed.
    </p>
  </details>
);

/**
 * The data's JSON text as a value: text that is not JSON, or none, is refused here, naming the
 * field, as the domain names a path inside it.
 */
export function postedExampleData(text: string): unknown {
  if (text.trim() === "") {
    throw invalidInput({ label: "form", issues: [{ path: ["data"], text: " is required: the event's data as JSON" }] });
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw invalidInput({
      label: "form",
      issues: [{ path: ["data"], text: ` is not valid JSON (${err instanceof Error ? err.message : "unreadable"})` }],
    });
  }
}

/**
 * A refusal the person can correct on the form, in words: the data (not JSON, breaking the
 * schema: the path inside it named; too large), or the configuration disabled (409). Anything
 * else (a type or configuration not found, an operational type from the portal) is the error
 * page's: null.
 */
export function sendExampleErrors(err: unknown): (FormErrors<SendExampleField> & { status: 400 | 409 | 413 }) | null {
  if (!(err instanceof ApiError)) return null;
  // The configuration is disabled or paused: its message says what to do first.
  if (err.code === "conflict") return { message: err.developerMessage, fields: {}, status: 409 };
  if (err.code === "payload_too_large") {
    return {
      message: err.developerMessage,
      fields: { data: `${SEND_EXAMPLE_LABELS.data}: too large (${err.developerMessage})` },
      status: 413,
    };
  }
  if (err.code !== "invalid_request") return null;
  const fields: FormErrors<SendExampleField>["fields"] = {};
  for (const issue of err.input?.issues ?? []) {
    if (issue.path[0] !== "data" || fields.data !== undefined) continue;
    const text = "text" in issue ? issue.text : " is invalid";
    // "Data: data.items.0.price must be >= 0 (the schema of order.created)": the path, then keyway's words.
    fields.data =
      issue.path.length > 1 ? `${SEND_EXAMPLE_LABELS.data}: ${issue.path.join(".")}${text}` : `${SEND_EXAMPLE_LABELS.data}${text}`;
  }
  return { message: err.developerMessage, fields, status: 400 };
}
