// The `vqs` program: global options, one registration per command group, and the one place
// where failures become messages and exit codes. run() takes the process as arguments, so
// tests run commands in process as well as spawned.
import { Command, CommanderError, Option } from "commander";
import { readFileSync } from "node:fs";
import { dlqCommand } from "./commands/dlq.js";
import { changeCommands } from "./commands/manage/change.js";
import { inspectCommands } from "./commands/manage/inspect.js";
import { peekCommand } from "./commands/manage/peek.js";
import { messagesCommands } from "./commands/messages.js";
import { publishCommand } from "./commands/publish.js";
import { settingsCommand } from "./commands/settings.js";
import { tailCommand } from "./commands/tail.js";
import { triggersCommand } from "./commands/triggers.js";
import { tokenCommand } from "./commands/token.js";
import { examples } from "./commands/help.js";
import { Context, DEFAULT_URL, type GlobalOptions } from "./context.js";
import { CliError, EXIT, Interrupted, PartialFailure } from "./errors.js";
import { Output, type Io } from "./output.js";

/** The package's version (package.json is two levels up from src/cli and from dist/cli). */
export function version(): string {
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
    version: string;
  };
  return pkg.version;
}

/** The command tree; `contextOf` gives a command its Context. Exported for the help test. */
export function buildProgram(io: Io, onContext: (ctx: Context) => void = () => undefined) {
  const v = version();
  const program = new Command("vqs")
    .description("Command-line tool of vqs, the self-hostable queue service for @vercel/queue")
    .version(v, "-V, --version", "print the version")
    .helpOption("-h, --help", "show help")
    .addOption(
      new Option("--url <url>", `the gateway's base URL (env VQS_URL, default ${DEFAULT_URL})`),
    )
    .addOption(new Option("--token <jwt>", "bearer token (env VQS_TOKEN)"))
    .addOption(
      new Option(
        "--deployment-id <id>",
        "the deployment's namespace, sent as Vqs-Deployment-Id (env VQS_DEPLOYMENT_ID)",
      ),
    )
    .addOption(
      new Option(
        "--namespace <label>",
        "operators: act in this namespace, team/project/environment[/deployment] as " +
          "`vqs namespaces` lists it, sent as Vqs-Namespace (env VQS_NAMESPACE)",
      ),
    )
    .option("--json", "print JSON instead of tables")
    .option("--color", "colour even when not printing to a terminal")
    .option("--no-color", "no colour (also: NO_COLOR=1)")
    .configureHelp({ showGlobalOptions: true, sortSubcommands: true })
    .configureOutput({
      writeOut: (s) => io.stdout.write(s),
      writeErr: (s) => io.stderr.write(s),
    })
    .showHelpAfterError("(add --help for usage)")
    .exitOverride();
  program.addHelpText(
    "after",
    [
      "",
      "Exit codes: 0 success, 1 the API answered an error (or some entries failed),",
      "2 usage error (bad flags, arguments or input), 3 server unreachable or file unreadable,",
      "4 a destructive command not confirmed (not on a terminal without --yes, or answered no),",
      "130 stopped by Ctrl-C before its end (dlq redrive: run it again to resume).",
    ].join("\n"),
  );
  examples(program, [
    "export VQS_URL=http://127.0.0.1:8080 VQS_TOKEN=$(vqs token)",
    "vqs triggers sync --vercel-json vercel.json --app-url http://localhost:3000",
    "vqs topics",
    `vqs publish orders --data '{"id":1}' --content-type application/json`,
    "vqs tail orders",
    "vqs receive orders billing --max 10 --wait 20",
    "vqs dlq redrive orders-dead",
    "vqs triggers sync --help",
  ]);

  const contextOf = (cmd: Command) => {
    const ctx = new Context(io, cmd.optsWithGlobals<GlobalOptions>(), v);
    onContext(ctx);
    return ctx;
  };
  triggersCommand(program, contextOf);
  tokenCommand(program, contextOf);
  messagesCommands(program, contextOf);
  tailCommand(program, contextOf);
  dlqCommand(program, contextOf);
  inspectCommands(program, contextOf);
  peekCommand(program, contextOf);
  publishCommand(program, contextOf);
  changeCommands(program, contextOf);
  settingsCommand(program, contextOf);
  return program;
}

/** Runs one command line; answers the exit code (docs/cli.md). */
export async function run(argv: readonly string[], io: Io): Promise<number> {
  let ctx: Context | null = null;
  const program = buildProgram(io, (c) => (ctx = c));
  try {
    await program.parseAsync(argv, { from: "user" });
    return EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Commander printed its message (and the help) already.
      const ok = err.code === "commander.helpDisplayed" || err.code === "commander.version";
      return ok ? EXIT.ok : EXIT.usage;
    }
    // Before a command ran, --json is known only from the arguments.
    const out = (ctx as Context | null)?.out ?? new Output(io, { json: argv.includes("--json") });
    if (err instanceof CliError) {
      // A partial failure's entries were printed already (its summary still is, as text); an
      // interrupted command said where it stopped and how to go on.
      if (err instanceof Interrupted) return err.exitCode;
      if (!(err instanceof PartialFailure) || !out.json) {
        out.error(err.code, err.message, "status" in err ? (err.status as number) : undefined);
      }
      return err.exitCode;
    }
    out.error("internal", err instanceof Error ? (err.stack ?? err.message) : String(err));
    return EXIT.api;
  }
}
