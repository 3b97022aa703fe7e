// A scripted ACP editor on the official TypeScript SDK, for the proxy's end-to-end tests.
//
//   node editor.mjs SCRIPT.json -- PROXY_COMMAND ARGS...
//
// It starts the command as its agent and, for each session of the script
// ({"sessions": [{"cwd": DIR, "mode"?: ID, "meta"?: {...}, "prompts": [SCRIPT, ...]}],
//   "answers": [OPTION_KIND, ...], "concurrent"?: true}),
// opens the session, sets its mode, and sends each prompt (a script for agent.mjs). It serves
// the agent's work for real: files from disk, terminals as child processes. Permission
// requests are answered with the option of the next kind in "answers" ("never": not answered
// until cancelled; "cancelled": the cancelled outcome; default "allow_once").
// It prints what it saw as JSON: the permission requests, the files read and written, the
// terminals run, the session updates, and what each prompt's steps came to.
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const sep = process.argv.indexOf("--");
const script = JSON.parse(readFileSync(process.argv[2], "utf8"));
const [command, ...args] = process.argv.slice(sep + 1);
const answers = [...(script.answers ?? [])];
const seen = { permissions: [], reads: [], writes: [], terminals: [], updates: [], results: [], cancelled: [] };
const terminals = new Map();
let nextTerminal = 0;

const child = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
const deadline = setTimeout(() => {
  console.error("editor: the proxy did not finish in time");
  child.kill("SIGKILL");
  process.exit(3);
}, 60_000);

const app = acp
  .client({ name: "scripted-editor" })
  .onRequest("session/request_permission", async ({ params, signal }) => {
    seen.permissions.push(params);
    const wanted = answers.shift() ?? "allow_once";
    if (wanted === "never") {
      await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
      seen.cancelled.push(params.toolCall.toolCallId);
      throw new acp.RequestError(-32800, "cancelled");
    }
    const option = params.options.find((o) => o.kind === wanted);
    if (wanted === "cancelled" || !option) return { outcome: { outcome: "cancelled" } };
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  })
  .onRequest("fs/read_text_file", ({ params }) => {
    seen.reads.push(params.path);
    return { content: readFileSync(params.path, "utf8") };
  })
  .onRequest("fs/write_text_file", ({ params }) => {
    seen.writes.push(params.path);
    writeFileSync(params.path, params.content);
    return {};
  })
  .onRequest("terminal/create", ({ params }) => {
    seen.terminals.push({ command: params.command, args: params.args ?? [] });
    const env = { ...process.env };
    for (const { name, value } of params.env ?? []) env[name] = value;
    const id = `term-${nextTerminal++}`;
    const run = spawn(params.command, params.args ?? [], { cwd: params.cwd ?? undefined, env });
    const state = { output: "", exit: null };
    run.stdout.on("data", (d) => (state.output += d));
    run.stderr.on("data", (d) => (state.output += d));
    state.done = new Promise((resolve) => {
      run.on("close", (code, sig) => resolve((state.exit = { exitCode: code, signal: sig })));
      run.on("error", (e) => resolve((state.exit = { exitCode: 127, signal: null, error: e.message })));
    });
    terminals.set(id, state);
    return { terminalId: id };
  })
  .onRequest("terminal/wait_for_exit", async ({ params }) => await terminals.get(params.terminalId).done)
  .onRequest("terminal/output", ({ params }) => {
    const t = terminals.get(params.terminalId);
    return { output: t.output, truncated: false, exitStatus: t.exit };
  })
  .onRequest("terminal/release", ({ params }) => {
    terminals.delete(params.terminalId);
    return {};
  })
  .onNotification("session/update", ({ params }) => {
    seen.updates.push(params);
  });

const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
await app.connectWith(stream, async (agent) => {
  await agent.request("initialize", {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
  });
  const run = async (s) => {
    const request = { cwd: s.cwd, mcpServers: [] };
    if (s.meta) request._meta = s.meta;
    const created = await agent.request("session/new", request);
    if (s.mode) await agent.request("session/set_mode", { sessionId: created.sessionId, modeId: s.mode });
    const results = [];
    for (const prompt of s.prompts) {
      const response = await agent.request("session/prompt", {
        sessionId: created.sessionId,
        prompt: [{ type: "text", text: JSON.stringify(prompt) }],
      });
      results.push(response._meta?.results ?? null);
    }
    return { session: created.sessionId, results };
  };
  if (script.concurrent) {
    seen.results = await Promise.all(script.sessions.map(run));
  } else {
    for (const s of script.sessions) seen.results.push(await run(s));
  }
});
clearTimeout(deadline);
child.stdin.end();
process.stdout.write(JSON.stringify(seen) + "\n");
process.exit(0);
