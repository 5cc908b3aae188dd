/**
 * The manager's charts: stacked bars drawn on the server as inline SVG (no library, no script, no
 * external request, so the page's strict CSP stays as it is), from the series of lib/series.ts
 * that the API returns too. Each chart is a group with a name and a one-sentence summary for
 * screen readers; each bucket in it shows its values on hover (an SVG <title>) and on keyboard
 * focus (a focusable image named by them, highlighted), followed by the chart's text equivalent: the same numbers in a table (WCAG 1.1.1),
 * folded in a <details> so it does not crowd the page. Colours are classes of views.tsx's style
 * sheet, and each series also differs by position in the stack and by its legend.
 */
import type { Bucket } from "../../lib/series";
import type { WebhookTrafficView } from "../../schemas/webhooks";
import { TableRegion } from "./views";

export interface ChartSeries<K extends string> {
  key: K;
  label: string;
  /** A class of the style sheet: `bar-good` or `bar-bad`. */
  tone: "good" | "bad";
}

const WIDTH = 600;
const HEIGHT = 220;
const LEFT = 40;
const BOTTOM = 20;
const TOP = 8;

/** The label under a bucket: the hour (`13:00`) or the day (`06-01`), UTC. */
const tick = (start: string, unit: "hour" | "day"): string => (unit === "hour" ? `${start.slice(11, 16)}` : start.slice(5, 10));

/** A bucket as a person names it: `2026-06-01 13:00 UTC` or `2026-06-01`. */
const bucketLabel = (start: string, unit: "hour" | "day"): string =>
  unit === "hour" ? `${start.slice(0, 10)} ${tick(start, "hour")} UTC` : start.slice(0, 10);

/** A round axis maximum at or above `n` (1, 2, 5 times a power of ten). */
function niceMax(n: number): number {
  if (n <= 1) return 1;
  const power = 10 ** Math.floor(Math.log10(n));
  for (const step of [1, 2, 5, 10]) if (step * power >= n) return step * power;
  return 10 * power;
}

export function BarChart<K extends string>(props: {
  id: string;
  title: string;
  unit: "hour" | "day";
  buckets: Bucket<K>[];
  series: ChartSeries<K>[];
}) {
  const { id, title, unit, buckets, series } = props;
  const totals = buckets.map((b) => series.reduce((n, s) => n + b[s.key], 0));
  const max = niceMax(Math.max(0, ...totals));
  const plotW = WIDTH - LEFT;
  const plotH = HEIGHT - BOTTOM - TOP;
  const slot = plotW / Math.max(1, buckets.length);
  const barW = Math.max(1, slot * 0.7);
  const sums = series.map((s) => `${buckets.reduce((n, b) => n + b[s.key], 0)} ${s.label.toLowerCase()}`);
  const summary = `${title}: ${sums.join(", ")} in all; the busiest ${unit} had ${Math.max(0, ...totals)}.`;
  const every = unit === "hour" ? 6 : 5;
  return (
    <figure class="chart" aria-labelledby={`${id}-caption`}>
      <figcaption id={`${id}-caption`}>{title}</figcaption>
      {/* biome-ignore lint/a11y/useSemanticElements: an SVG cannot be a fieldset; role=group names the chart and lets its bars be focusable, which role=img would not */}
      <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} role="group" aria-labelledby={`${id}-title ${id}-desc`}>
        <title id={`${id}-title`}>{title}</title>
        <desc id={`${id}-desc`}>{summary}</desc>
        <line class="axis" x1={LEFT} y1={TOP + plotH} x2={WIDTH} y2={TOP + plotH} />
        <text class="axis-label" x={LEFT - 4} y={TOP + 8} text-anchor="end">
          {max}
        </text>
        <text class="axis-label" x={LEFT - 4} y={TOP + plotH} text-anchor="end">
          0
        </text>
        {buckets.map((b, i) => {
          let y = TOP + plotH;
          const x = LEFT + i * slot + (slot - barW) / 2;
          // Each bucket is one focusable element named by its values (Tab reaches it, a screen
          // reader reads it), with an SVG <title> for the mouse; the full-height band behind the
          // bars is the target, so an empty bucket can be hovered and shows its focus too.
          const value = `${bucketLabel(b.start, unit)}: ${series.map((s) => `${b[s.key]} ${s.label.toLowerCase()}`).join(", ")}`;
          return (
            // biome-ignore lint/a11y/noInteractiveElementToNoninteractiveRole: a bar is an image of its values, focusable only so keyboard users can read them (no action)
            <g class="bar" tabindex={0} role="img" aria-label={value}>
              <title>{value}</title>
              <rect class="bar-hit" x={LEFT + i * slot} y={TOP} width={slot} height={plotH} />
              {series.map((s) => {
                const h = (b[s.key] / max) * plotH;
                y -= h;
                return h > 0 ? <rect class={`bar-${s.tone}`} x={x} y={y} width={barW} height={h} /> : null;
              })}
              {i % every === 0 && (
                <text class="axis-label" x={LEFT + i * slot + slot / 2} y={HEIGHT - 4} text-anchor="middle">
                  {tick(b.start, unit)}
                </text>
              )}
            </g>
          );
        })}
      </svg>
      <ul class="legend">
        {series.map((s) => (
          <li>
            <span class={`swatch bar-${s.tone}`}></span>
            {s.label}
          </li>
        ))}
      </ul>
      <details>
        <summary>{`${title} as a table`}</summary>
        <TableRegion label={`${title}, table`}>
          <table>
            <thead>
              <tr>
                <th scope="col">{unit === "hour" ? "Hour (UTC)" : "Day (UTC)"}</th>
                {series.map((s) => (
                  <th scope="col">{s.label}</th>
                ))}
              </tr>
            </thead>
            <tbody>
              {buckets.map((b) => (
                <tr>
                  <td data-label={unit === "hour" ? "Hour (UTC)" : "Day (UTC)"}>
                    {unit === "hour" ? `${b.start.slice(0, 10)} ${tick(b.start, "hour")}` : b.start.slice(0, 10)}
                  </td>
                  {series.map((s) => (
                    <td data-label={s.label}>{b[s.key]}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </TableRegion>
      </details>
    </figure>
  );
}

/** Two charts of one series set: the last 24 hours by hour, the last 30 days by day. */
export function TrafficCharts<K extends string>(props: {
  id: string;
  what: string;
  hours: Bucket<K>[];
  days: Bucket<K>[];
  series: ChartSeries<K>[];
}) {
  return (
    <div class="charts">
      <BarChart id={`${props.id}-hours`} title={`${props.what}, last 24 hours`} unit="hour" buckets={props.hours} series={props.series} />
      <BarChart id={`${props.id}-days`} title={`${props.what}, last 30 days`} unit="day" buckets={props.days} series={props.series} />
    </div>
  );
}

/** An endpoint's delivery attempts by hour and by day, under its heading: the manager's configuration page and the portal's endpoint page. */
export function AttemptTraffic(props: { hours: Bucket<"succeeded" | "failed">[]; days: Bucket<"succeeded" | "failed">[] }) {
  return (
    <>
      <h2>Traffic</h2>
      <TrafficCharts
        id="attempts"
        what="Attempts"
        hours={props.hours}
        days={props.days}
        series={[
          { key: "succeeded", label: "Succeeded", tone: "good" },
          { key: "failed", label: "Failed", tone: "bad" },
        ]}
      />
    </>
  );
}

/** An endpoint's last 24 hours at a glance (success rate, attempts, failures, mean latency): the manager's configuration page and the portal's endpoint page. */
export function Last24Hours(props: { last: WebhookTrafficView["last_24h"] }) {
  const { last } = props;
  return (
    <div class="stats">
      <div>
        Success rate, 24 h<strong>{last.success_rate === null ? "-" : `${Math.round(last.success_rate * 1000) / 10}%`}</strong>
      </div>
      <div>
        Attempts, 24 h<strong>{last.succeeded + last.failed}</strong>
      </div>
      <div>
        Failed, 24 h<strong>{last.failed}</strong>
      </div>
      <div>
        Mean latency, 24 h<strong>{last.latency_ms_avg === null ? "-" : `${last.latency_ms_avg} ms`}</strong>
      </div>
    </div>
  );
}
