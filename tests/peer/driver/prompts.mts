// Stands in for "@inquirer/prompts" inside the original CireilClaw while cireil's driver runs it: each
// question is answered from the answers the driver was given, keyed by the question's text (colours
// removed). A question without an answer fails with its text, so a changed prompt in the original shows
// up as a clear error instead of a hang.

interface PromptState {
  answers: Record<string, unknown>;
  asked: { kind: string; message: string; answer?: unknown }[];
}

interface Choice {
  value: unknown;
}

interface PromptConfig {
  message: unknown;
  choices?: readonly (Choice | unknown)[];
  validate?: (value: never) => boolean | string | Promise<boolean | string>;
}

const holder = globalThis as { __cireilPrompts?: PromptState };
holder.__cireilPrompts ??= { answers: {}, asked: [] };
const state: PromptState = holder.__cireilPrompts;

function plain(text: unknown): string {
  // oxlint-disable-next-line no-control-regex
  return String(text).replaceAll(/\u001B\[[0-9;]*m/gu, "");
}

async function answer(kind: string, config: PromptConfig): Promise<never> {
  const message = plain(config.message);
  const entry: { kind: string; message: string; answer?: unknown } = { kind, message };
  state.asked.push(entry);
  if (!Object.hasOwn(state.answers, message)) {
    throw new Error(
      `the original CireilClaw asked (${kind}) "${message}" and cireil's test driver has no answer for it: ` +
        "add one to the driver's answers (originalkit: answers={...})",
    );
  }
  const value = state.answers[message];
  entry.answer = kind === "password" ? "***" : value;
  if (kind === "select" && config.choices !== undefined) {
    const values = config.choices
      .filter((it): it is Choice => typeof it === "object" && it !== null && "value" in it)
      .map((it) => it.value);
    if (!values.includes(value)) {
      throw new Error(
        `the answer ${JSON.stringify(value)} to "${message}" is none of its choices ${JSON.stringify(values)}`,
      );
    }
  }
  if (config.validate !== undefined) {
    const verdict = await config.validate(value as never);
    if (verdict !== true) {
      throw new Error(`the original refused the answer ${JSON.stringify(value)} to "${message}": ${String(verdict)}`);
    }
  }
  return value as never;
}

export const input = async (config: PromptConfig): Promise<never> => await answer("input", config);
export const password = async (config: PromptConfig): Promise<never> => await answer("password", config);
export const select = async (config: PromptConfig): Promise<never> => await answer("select", config);
export const confirm = async (config: PromptConfig): Promise<never> => await answer("confirm", config);
export const number = async (config: PromptConfig): Promise<never> => await answer("number", config);
export const rawlist = async (config: PromptConfig): Promise<never> => await answer("rawlist", config);
export const expand = async (config: PromptConfig): Promise<never> => await answer("expand", config);
export const checkbox = async (config: PromptConfig): Promise<never> => await answer("checkbox", config);
export const editor = async (config: PromptConfig): Promise<never> => await answer("editor", config);
export const search = async (config: PromptConfig): Promise<never> => await answer("search", config);

export class Separator {
  public readonly separator: string;
  public readonly type = "separator";

  public constructor(separator = "--------") {
    this.separator = separator;
  }
}
