/**
 * `npm run admin -- <command>`: the operator API (/admin/v1) from a terminal, against any keyway
 * (a local `npm start` or a deployment). Each command is one route of src/http/routes/admin.ts,
 * declared once in the command table (cli/commands.mjs) with its path, body and output columns;
 * the help (cli/help.mjs) is derived from the same table, so it cannot drift from what runs. The
 * command line is parsed in cli/args.mjs (flag values in cli/values.mjs), requests made in
 * cli/http.mjs, output in cli/output.mjs.
 * The operator token comes only from the environment (ADMIN_TOKEN), never from a flag, so it stays out of shell history and `ps`; for a
 * loopback URL an unset token may be read from ./.dev.vars, which is where `npm start` keeps it.
 * Created secrets are printed once, because that answer is the only place they ever appear.
 * Every failure is one readable message on stderr and an exit status (1: the request failed,
 * 2: nothing was sent because the command line or environment is wrong), never a stack trace.
 */
import process from "node:process";
import { packageVersion, parseCommandLine } from "./cli/args.mjs";
import { RequestError, UsageError } from "./cli/common.mjs";
import { helpText, usageText } from "./cli/help.mjs";
import { adminToken, baseUrl, readList, send, urlSource } from "./cli/http.mjs";
import { isObject, record, table, write } from "./cli/output.mjs";
import { count } from "./cli/values.mjs";

// `npm run admin -- audit org_x | head` closes stdout early: not a failure, and not worth a trace.
process.stdout.on("error", (err) => {
  process.exitCode = /** @type {NodeJS.ErrnoException} */ (err).code === "EPIPE" ? 0 : 1;
  process.exit();
});

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    // Only a bug in this script gets here; still one line, never a stack trace.
    process.stderr.write(`admin: unexpected failure: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);

/**
 * Runs one command line; resolves to the exit status.
 * @param {string[]} argv
 * @returns {Promise<number>}
 */
async function main(argv) {
  try {
    const parsed = parseCommandLine(argv);
    if (parsed.help !== undefined) {
      process.stdout.write(parsed.version === true ? `keyway ${packageVersion()}\n` : helpText(parsed.help));
      return 0;
    }
    const { command, args, flags } = parsed;
    const base = baseUrl(flags.url);
    const { token, source } = adminToken(base);
    const client = { base, token, source, urlSource: urlSource(flags.url) };
    const json = flags.json === true;

    if (command.list) {
      const limit =
        flags.all === true ? Number.POSITIVE_INFINITY : (count(flags, "limit") ?? command.defaultLimit ?? Number.POSITIVE_INFINITY);
      const { items, more } = await readList(client, command.list(args, flags), limit);
      if (json) write(`${JSON.stringify(items, null, 2)}\n`);
      else write(items.length === 0 ? `(no ${command.noun})\n` : table(items, command.columns ?? []));
      // On stderr, so that stdout stays the table or the JSON array.
      if (more) process.stderr.write(`(more ${command.noun} than shown: raise --limit${command.defaultLimit ? " or use --all" : ""})\n`);
      return 0;
    }

    if (command.run) {
      const shown = await command.run(client, args, flags);
      write(json ? `${JSON.stringify(shown.data, null, 2)}\n` : (shown.text ?? record(isObject(shown.data) ? shown.data : {})));
      return 0;
    }
    await command.check?.(client, args, flags);
    const call = command.call?.(args, flags);
    if (call === undefined) throw new Error(`${command.words.join(" ")} has neither call nor list`);
    const data = await send(client, call);
    if (!isObject(data)) throw new RequestError([`admin: ${call.method} ${call.path} answered without a data object`]);
    // Only when the answer holds it (a private_key_jwt credential has no secret).
    const secret = command.secret !== undefined && data[command.secret] !== undefined ? command.secret : undefined;
    const notice = secret
      ? `The ${secret} above is shown only now: keyway keeps only its hash and cannot show it again. Store it safely.`
      : "";
    const notes = command.notes?.(data, args) ?? [];
    if (json) {
      write(`${JSON.stringify(data, null, 2)}\n`);
      // stdout stays pure JSON for scripts; the warning still reaches the person running it.
      if (secret) process.stderr.write(`${notice.replace("above", `(data.${secret})`)}\n`);
      for (const note of notes) process.stderr.write(`${note}\n`);
    } else {
      const { [secret ?? ""]: secretValue, ...rest } = data;
      write(record(secret ? rest : data));
      if (secret) write(`\n${record({ [secret]: secretValue })}${notice}\n`);
      else if (notes.length > 0) write("\n");
      for (const note of notes) write(`${note}\n`);
    }
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`admin: ${err.message}\n`);
      if (err.withUsage) process.stderr.write(`\n${usageText(err.group)}`);
      return 2;
    }
    if (err instanceof RequestError) {
      process.stderr.write(`${err.lines.join("\n")}\n`);
      return 1;
    }
    throw err;
  }
}
