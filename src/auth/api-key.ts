/**
 * API key authentication (spec 5.1, 8): every /v1 request carries `x-api-key`. A missing,
 * unknown or revoked key is refused before any other work, rate limiting included.
 */
import type { Deps } from "../deps";
import { ApiError } from "../errors";
import { API_KEY_PATTERN } from "../lib/ids";
import type { ApiKeyRecord } from "../schemas/records";
import { findApiKeyBySecret } from "../stores/api-keys";

export const API_KEY_HEADER = "x-api-key";

export async function authenticateApiKey(deps: Deps, presented: string | undefined): Promise<ApiKeyRecord> {
  if (presented === undefined || presented === "") {
    throw new ApiError(
      "invalid_api_key",
      "The x-api-key header is missing. Every /v1 request needs the API key issued by the support team.",
    );
  }
  // Keys we issue have one shape; anything else is refused without a storage read.
  const record = API_KEY_PATTERN.test(presented) ? await findApiKeyBySecret(deps, presented) : null;
  if (record === null) throw new ApiError("invalid_api_key", "The x-api-key header does not hold a valid API key.");
  if (record.revoked_at !== null) throw new ApiError("invalid_api_key", "The API key has been revoked.");
  return record;
}
