/** Timestamps as the API shows and stores them: ISO 8601 in UTC with milliseconds. */
export const isoTime = (ms: number): string => new Date(ms).toISOString();
