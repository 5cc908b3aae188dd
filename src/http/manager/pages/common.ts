/**
 * Types the manager's pages share: the organization as every page names it, and what a
 * confirmation page says (here rather than in confirm.tsx, which imports page modules that
 * declare confirmations of their own: no import cycle).
 */
import type { OrganizationRecord } from "../../../schemas/records";

export type Org = Pick<OrganizationRecord, "id" | "name">;

/** What a confirmation says: the question naming the thing (the page's title) and what follows. */
export interface Confirmation {
  title: string;
  consequence: string;
  button: string;
  /** A red button, for what removes or stops something. */
  danger: boolean;
  /** For what cannot be undone at scale: the person types this (a name) to confirm. */
  typeToConfirm?: { label: string; expected: string };
  /** After a failed confirmation, why. */
  error?: string;
  /** What the page before chose, posted again with the confirmation (e.g. a rotation's grace). */
  hidden?: Record<string, string>;
}
