/**
 * The organization's overview, the manager's home for it: the last 24 hours of API requests
 * (admitted and refused) and of webhook attempts (succeeded and failed) with their rates, the
 * endpoints that need a person, the keys near a limit, and the latest audit entries, each a link
 * to its page. Plain data in (identity/overview.ts), markup out; Hono JSX escapes every value.
 */
import type { FC } from "hono/jsx";
import { type Attention, NEAR_LIMIT_SHARE, type OrganizationOverview } from "../../../identity/overview";
import type { AuditEntryView } from "../../../schemas/audit";
import { BarChart } from "../charts";
import { List } from "../list";
import { count, Time } from "../views";
import { actorText } from "./audit";
import { configName, Health } from "./webhooks";

/** A share as a person reads it: "2.5%", "-" with nothing counted. */
const rate = (part: number, all: number): string => (all === 0 ? "-" : `${Math.round((part / all) * 1000) / 10}%`);

const WHY: Record<Attention["why"], string> = {
  disabled: "disabled: nothing is sent",
  paused: "paused: deliveries are held",
  failing: "failing: every attempt fails",
};

export const Overview: FC<{ base: string; overview: OrganizationOverview }> = ({ base, overview: o }) => {
  const attempts = o.attempts.succeeded + o.attempts.failed;
  const requests = o.requests === null ? 0 : o.requests.admitted + o.requests.refused;
  return (
    <>
      <h2>Last 24 hours</h2>
      <div class="stats">
        {o.requests !== null && (
          <>
            <div>
              API requests<strong>{requests}</strong>
            </div>
            <div>
              Refused (429)<strong>{rate(o.requests.refused, requests)}</strong>
            </div>
          </>
        )}
        <div>
          Webhook attempts<strong>{attempts}</strong>
        </div>
        <div>
          Failed<strong>{rate(o.attempts.failed, attempts)}</strong>
        </div>
      </div>
      <div class="charts">
        {o.requests !== null && (
          <BarChart
            id="overview-requests"
            title="API requests, last 24 hours"
            unit="hour"
            buckets={o.requests.hours}
            series={[
              { key: "admitted", label: "Admitted", tone: "good" },
              { key: "refused", label: "Refused (429)", tone: "bad" },
            ]}
          />
        )}
        <BarChart
          id="overview-attempts"
          title="Webhook attempts, last 24 hours"
          unit="hour"
          buckets={o.attempts.hours}
          series={[
            { key: "succeeded", label: "Succeeded", tone: "good" },
            { key: "failed", label: "Failed", tone: "bad" },
          ]}
        />
      </div>
      <p class="hint">
        {o.requests !== null && (
          <>
            Requests of the first {count(o.requests.keysRead, "active key")}
            {o.requests.moreKeys ? " (the organization has more: see each key's page)" : ""};{" "}
          </>
        )}
        attempts of the first {count(o.attempts.configurationsRead, "webhook configuration")}
        {o.attempts.moreConfigurations ? " (the organization has more: see each configuration's page)" : ""}.
      </p>

      <h2>Endpoints that need attention</h2>
      <List<Attention>
        label="Endpoints that need attention"
        rows={o.attention}
        empty="None: every endpoint is active and delivering."
        columns={[
          { header: "Endpoint", cell: (a) => <a href={`${base}/webhooks/${a.config.id}`}>{configName(a.config)}</a> },
          { header: "Why", class: "lead", cell: (a) => WHY[a.why] },
          { header: "Health", cell: (a) => <Health config={a.config} /> },
          {
            header: "Deliveries",
            label: "",
            cell: (a) => (
              <a href={`${base}/webhooks/${a.config.id}?status=failed#deliveries`}>
                Failed deliveries<span class="skip"> of {configName(a.config)}</span>
              </a>
            ),
          },
        ]}
      />

      {o.nearLimits !== null && (
        <>
          <h2>Keys near their limits</h2>
          <List
            label="Keys near their limits"
            rows={o.nearLimits}
            empty={`None: no key has used ${Math.round(NEAR_LIMIT_SHARE * 100)}% of a limit today.`}
            columns={[
              { header: "Key", cell: (k) => <a href={`${base}/api-keys/${k.keyId}`}>{k.keyName ?? k.keyId}</a> },
              { header: "Limit", cell: (k) => k.window },
              { header: "Used", class: "lead", cell: (k) => `${k.used} of ${k.limit} (${rate(k.used, k.limit)})` },
            ]}
          />
        </>
      )}

      <h2>Recent changes</h2>
      <List<AuditEntryView>
        label="Recent changes"
        rows={o.audit}
        empty="No changes recorded yet."
        columns={[
          { header: "When", class: "nowrap", cell: (e) => <Time at={e.at} /> },
          { header: "Who", cell: (e) => actorText(e.actor) },
          {
            header: "What",
            cell: (e) => (
              <a href={`${base}/audit-log?resource_id=${encodeURIComponent(e.resource.id)}`}>
                <code>{e.action}</code> <code class="id">{e.resource.id}</code>
              </a>
            ),
          },
        ]}
      />
      <p>
        <a href={`${base}/audit-log`}>The whole audit log</a>
      </p>
    </>
  );
};
