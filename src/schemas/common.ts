/**
 * Building blocks shared by request, response and storage schemas: display names, e-mail,
 * timestamps, and the response envelope of spec section 2.3 (plus `error` on failures, as the
 * product brief fixes it).
 */
import * as z from "zod";

// C0/C1 control characters (NUL included) have no place in names shown in a UI or a log.
// biome-ignore lint/suspicious/noControlCharactersInRegex: this pattern exists to find control characters.
const CONTROL_CHARS = /[\u0000-\u001f\u007f-\u009f]/;

/** A human-readable name: trimmed, 1..200 characters, well-formed Unicode, no control characters. */
export const DisplayName = z
  .string()
  .trim()
  .min(1, { error: "must not be empty" })
  .max(200, { error: "must be at most 200 characters" })
  .refine((s) => s.isWellFormed(), { error: "must be well-formed Unicode (no lone surrogates)" })
  .refine((s) => !CONTROL_CHARS.test(s), { error: "must not contain control characters" });

export const Email = z.email({ error: "must be an e-mail address" }).max(254);

/** ISO 8601 UTC timestamp, as stored and returned everywhere. */
export const Timestamp = z.iso.datetime();

export const Links = z.object({
  self: z.object({ href: z.url() }),
  next: z.object({ href: z.url() }).optional(),
});

/** The envelope every /v1 and /admin/v1 response carries (spec 2.3; `error` only on failures). */
export const Envelope = <T extends z.ZodType>(data: T) =>
  z.object({
    response_status: z.number().int(),
    developer_message: z.string(),
    user_message: z.string(),
    data,
    error: z.string().optional(),
    _links: Links,
  });

export const ErrorEnvelope = Envelope(z.null()).extend({ error: z.string() });

/** Public names of request and response schemas: the API description publishes each once, under its name. */
export const publicNames = z.registry<{ name: string }>();

/** Query parameters of every list endpoint (cursor pagination over KV list). */
export const ListQuery = z.object({
  limit: z.coerce
    .number({ error: "must be a number" })
    .int({ error: "must be an integer" })
    .min(1, { error: "must be at least 1" })
    .max(100, { error: "must be at most 100" })
    .default(50),
  cursor: z.string().max(1024, { error: "is too long" }).optional(),
});
export type ListQuery = z.output<typeof ListQuery>;
