// A scripted ACP agent on the official TypeScript SDK, for the proxy's end-to-end tests.
//
// Each prompt's text is a JSON script: a list of steps the agent takes with the editor, in order
// (or all at once when the script is `{"parallel": [...]}`):
//   {"permission": {"toolCall": {...}, "options": [...]}}   session/request_permission
//   {"read": "/abs/path"}                                   fs/read_text_file
//   {"write": ["/abs/path", "text"]}                        fs/write_text_file
//   {"terminal": {"command": "...", "args": [...], ...}}    terminal/create, then its exit and output
// What each step came to (the editor's answer, or the error) is sent back as one
// agent_message_chunk holding the JSON list, and in the prompt's answer (`_meta.results`).
//
// ACP_AGENT_MODES=1 makes sessions offer toolgate's three modes (starting in approve-reads).
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

let sessions = 0;
const modes = process.env.ACP_AGENT_MODES === "1";

async function step(client, sessionId, s) {
  try {
    if (s.permission) {
      return await client.request("session/request_permission", { sessionId, ...s.permission });
    }
    if (s.read) {
      return await client.request("fs/read_text_file", { sessionId, path: s.read });
    }
    if (s.write) {
      return (await client.request("fs/write_text_file", { sessionId, path: s.write[0], content: s.write[1] })) ?? {};
    }
    if (s.terminal) {
      const created = await client.request("terminal/create", { sessionId, ...s.terminal });
      const id = created.terminalId;
      const exit = await client.request("terminal/wait_for_exit", { sessionId, terminalId: id });
      const output = await client.request("terminal/output", { sessionId, terminalId: id });
      await client.request("terminal/release", { sessionId, terminalId: id });
      return { exit, output: output.output };
    }
    return { error: "unknown step" };
  } catch (e) {
    return { error: { code: e.code, message: e.message } };
  }
}

const app = acp
  .agent({ name: "scripted-agent" })
  .onRequest("initialize", () => ({
    protocolVersion: acp.PROTOCOL_VERSION,
    agentCapabilities: { loadSession: false },
    agentInfo: { name: "scripted-agent", version: "1.0.0" },
  }))
  .onRequest("session/new", () => {
    sessions += 1;
    const response = { sessionId: `session-${sessions}` };
    if (modes) {
      response.modes = {
        currentModeId: "approve-reads",
        availableModes: ["deny-all", "approve-reads", "approve-all"].map((id) => ({ id, name: id })),
      };
    }
    return response;
  })
  .onRequest("session/set_mode", () => ({}))
  .onRequest("session/prompt", async ({ params, client }) => {
    const text = params.prompt.map((b) => b.text ?? "").join("");
    const script = JSON.parse(text);
    const results = script.parallel
      ? await Promise.all(script.parallel.map((s) => step(client, params.sessionId, s)))
      : [];
    if (!script.parallel) {
      for (const s of script) results.push(await step(client, params.sessionId, s));
    }
    await client.notify("session/update", {
      sessionId: params.sessionId,
      update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: JSON.stringify(results) } },
    });
    return { stopReason: "end_turn", _meta: { results } };
  })
  .onNotification("session/cancel", () => {});

const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
const connection = app.connect(stream);
await connection.closed;
