/**
 * Time series for charts and usage views: hourly counts kept by a Durable Object (an API key's
 * requests, an endpoint's attempts) turned into the last 24 hours by hour and the last 30 days by
 * UTC day, every bucket present (zero when nothing happened), oldest first. One shape for the
 * API, GraphQL, the manager's charts and the CLI, so every surface shows the same numbers.
 */
export const SECOND_MS = 1000;
export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;
export const SERIES_HOURS = 24;
export const SERIES_DAYS = 30;

/** The start of the hour holding `ms` (UTC). */
export const hourOf = (ms: number): number => ms - (ms % HOUR_MS);

export type Bucket<K extends string> = { start: string } & Record<K, number>;

export interface Series<K extends string> {
  hours: Bucket<K>[];
  days: Bucket<K>[];
}

/**
 * Sums `rows` (one per hour, `hour_ms` its start) into the last SERIES_HOURS hours, the current
 * one included, and the last SERIES_DAYS UTC days, today included. Rows outside both are ignored.
 */
export function seriesOf<K extends string>(
  rows: ({ hour_ms: number } & Record<K, number>)[],
  fields: readonly K[],
  now: number,
): Series<K> {
  const bucket = (start: number): Bucket<K> => {
    const b = { start: new Date(start).toISOString() } as Bucket<K>;
    for (const f of fields) (b as Record<K, number>)[f] = 0;
    return b;
  };
  const firstHour = hourOf(now) - (SERIES_HOURS - 1) * HOUR_MS;
  const firstDay = now - (now % DAY_MS) - (SERIES_DAYS - 1) * DAY_MS;
  const hours = Array.from({ length: SERIES_HOURS }, (_, i) => bucket(firstHour + i * HOUR_MS));
  const days = Array.from({ length: SERIES_DAYS }, (_, i) => bucket(firstDay + i * DAY_MS));
  for (const row of rows) {
    const h = Math.floor((row.hour_ms - firstHour) / HOUR_MS);
    const d = Math.floor((row.hour_ms - firstDay) / DAY_MS);
    for (const f of fields) {
      const n = row[f];
      if (h >= 0 && h < SERIES_HOURS) (hours[h] as Record<K, number>)[f] += n;
      if (d >= 0 && d < SERIES_DAYS) (days[d] as Record<K, number>)[f] += n;
    }
  }
  return { hours, days };
}
