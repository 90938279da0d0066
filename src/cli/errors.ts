// The tool's failures and their exit codes (docs/cli.md): every command throws one
// of these, and program.ts turns it into a message and an exit code in one place.

/** Exit codes, documented in docs/cli.md. */
export const EXIT = {
  ok: 0,
  /** The API answered an error (4xx/5xx), or some entries of a command failed. */
  api: 1,
  /** Bad flags, arguments or input files (nothing was sent). */
  usage: 2,
  /** The server cannot be reached, or a file cannot be read. */
  unreachable: 3,
  /** A destructive command was not confirmed (no --yes where it cannot ask, or answered no). */
  notConfirmed: 4,
  /** Ctrl-C stopped a command before its end (`dlq redrive`: run it again to resume). */
  interrupted: 130,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

export class CliError extends Error {
  constructor(
    /** Stable and machine-readable, like the API's codes (`usage`, `unreachable`, ...). */
    readonly code: string,
    message: string,
    readonly exitCode: ExitCode,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Bad flags, arguments or input: exit 2. */
export class UsageError extends CliError {
  constructor(message: string, code = "usage") {
    super(code, message, EXIT.usage);
  }
}

/** The server answered an error: `{"error":{"code","message"}}`, exit 1. */
export class ApiError extends CliError {
  constructor(
    readonly status: number,
    code: string,
    message: string,
  ) {
    super(code, message, EXIT.api);
  }
}

/** The server cannot be reached (refused, DNS, timeout, TLS), or a file cannot be read: exit 3. */
export class UnreachableError extends CliError {
  constructor(message: string, code = "unreachable", options?: { cause?: unknown }) {
    super(code, message, EXIT.unreachable, options);
  }
}

/** Some entries of a command failed; each was reported already: exit 1. */
export class PartialFailure extends CliError {
  constructor(message: string) {
    super("partial_failure", message, EXIT.api);
  }
}

/** A destructive command was not confirmed; nothing was sent: exit 4. */
export class NotConfirmed extends CliError {
  constructor(message: string) {
    super("not_confirmed", message, EXIT.notConfirmed);
  }
}

/** Ctrl-C stopped the command before its end; it said so and how to go on: exit 130. */
export class Interrupted extends CliError {
  constructor(message: string) {
    super("interrupted", message, EXIT.interrupted);
  }
}

/** How a failed entry of a command is reported (`error` in --json). */
export interface EntryError {
  readonly status: number;
  readonly code: string;
  readonly message: string;
}

/**
 * The API's refusal of one entry, to report while the others go on. Errors that make every
 * further request pointless (no answer, bad token, tenant refused) are thrown instead.
 */
export function entryFailure(err: unknown): EntryError {
  if (!(err instanceof ApiError) || err.status === 401 || err.code === "tenant_not_allowed") {
    throw err;
  }
  return { status: err.status, code: err.code, message: err.message };
}
