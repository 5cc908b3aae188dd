/**
 * Types the manager's pages share: the organization as every page names it.
 */
import type { OrganizationRecord } from "../../../schemas/records";

export type Org = Pick<OrganizationRecord, "id" | "name">;
