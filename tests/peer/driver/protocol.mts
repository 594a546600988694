// The JSON-lines protocol of cireil's Node processes that run the original CireilClaw's code (driver.mts,
// bench/sessions_scale_original.mts): stdout carries only the protocol, one JSON object per line; whatever
// the original prints (its log goes through console.*) goes to stderr. Imported first, so the redirection is
// in place before any of the original's modules loads.

import { Console } from "node:console";

const writeProtocol = process.stdout.write.bind(process.stdout);
process.stdout.write = process.stderr.write.bind(process.stderr) as typeof process.stdout.write;
const errConsole = new Console({ stderr: process.stderr, stdout: process.stderr });
for (const name of ["log", "info", "debug", "warn", "error", "trace", "dir", "table"] as const) {
  // the original's logger calls console.* at each call: rebinding the methods reaches it
  (console as unknown as Record<string, unknown>)[name] = errConsole[name].bind(errConsole);
}

export function emit(message: Record<string, unknown>): void {
  writeProtocol(`${JSON.stringify(message)}\n`);
}

export function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause === undefined ? "" : ` (cause: ${describe(error.cause)})`;
    return `${error.name}: ${error.message}${cause}`;
  }
  return String(error);
}
