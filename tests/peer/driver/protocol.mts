// The JSON-lines protocol of cireil's Node processes that run the original CireilClaw's code (driver.mts,
// bench/sessions_scale_original.mts): stdout carries only the protocol, one JSON object per line; whatever
// the original prints (its log goes through console.*) goes to stderr. Imported first, so the redirection is
// in place before any of the original's modules loads.

import { Console } from "node:console";
import readline from "node:readline";

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

export type Op = Record<string, unknown> & { op?: string; id?: unknown };

// One op per stdin line, answered in order: {"ok":true,...its result} or {"ok":false,"error":...}, with the op's
// `id` (and, with echoOp, its `op`) copied in; blank lines are skipped; onClose runs when stdin closes.
export function serveOps(
  handle: (op: Op) => Promise<Record<string, unknown>>,
  onClose: () => void,
  echoOp = false,
): void {
  const tag = (op: Op): Record<string, unknown> => ({
    ...(echoOp ? { op: op.op } : {}),
    ...(op.id === undefined ? {} : { id: op.id }),
  });
  const lines = readline.createInterface({ input: process.stdin });
  lines.on("close", onClose);
  let chain = Promise.resolve();
  lines.on("line", (line) => {
    if (line.trim().length === 0) {
      return;
    }
    chain = chain.then(async () => {
      let op: Op = {};
      try {
        op = JSON.parse(line) as Op;
        const result = await handle(op);
        emit({ ok: true, ...tag(op), ...result });
      } catch (error) {
        emit({ error: describe(error), ok: false, ...tag(op) });
      }
    });
  });
}
