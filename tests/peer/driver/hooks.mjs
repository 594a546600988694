// Module resolution hooks of cireil's test driver for the original CireilClaw (registered by driver.mts
// with node:module's register()). Two imports of the original are answered by the driver's own modules:
//   - "@inquirer/prompts" (init's questions, the migration runner's prompt): scripted answers, so the
//     original's own init and startup run without a terminal;
//   - "#channels/discord.js" as imported by src/cli/run-command.ts: a channel without a Discord connection,
//     so the original's own `run` starts (migrations, plugins, sessions, scheduler, config watcher) offline.
// Everything else resolves as usual (tsx's hooks, registered before these, load the TypeScript).

let promptsUrl = "";
let discordUrl = "";

export async function initialize(data) {
  promptsUrl = data.promptsUrl;
  discordUrl = data.discordUrl;
}

export async function resolve(specifier, context, nextResolve) {
  if (specifier === "@inquirer/prompts") {
    return { shortCircuit: true, url: promptsUrl };
  }
  const parent = context.parentURL ?? "";
  if (specifier === "#channels/discord.js" && parent.endsWith("/src/cli/run-command.ts")) {
    return { shortCircuit: true, url: discordUrl };
  }
  return nextResolve(specifier, context);
}
