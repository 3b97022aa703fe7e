"""A real MCP client (the Python SDK's) in front of `toolgate mcp`, for crates/toolgate/tests/mcp.rs.

    client.py session|stateless CALLS_JSON ANSWERS_JSON -- GATEWAY_COMMAND...

`session` drives the low-level `ClientSession` (the initialize handshake, protocol 2025-11-25:
toolgate asks with `elicitation/create` requests); `stateless` drives `mcp.Client`, which probes
`server/discover` and, when the server behind the gateway speaks 2026-07-28, goes stateless
(toolgate asks with an `InputRequiredResult` and the client retries with the answer).

CALLS_JSON is a list of `[tool, arguments]`; ANSWERS_JSON the elicitation answers in order
(`{"action": ..., "content": ...}`). Prints one JSON object: the tools offered, each call's
result (`isError` and its text), and the questions the client's person was shown.
"""

import asyncio
import json
import sys

import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.client import Client
from mcp.client.stdio import stdio_client


def main():
    mode, calls, answers = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
    command = sys.argv[sys.argv.index("--") + 1 :]
    server = StdioServerParameters(command=command[0], args=command[1:])
    asked = []

    async def elicit(context, params):
        asked.append(params.message)
        if not answers:
            return types.ElicitResult(action="cancel")
        return types.ElicitResult(**answers.pop(0))

    def outcome(result):
        text = "".join(block.text for block in result.content if getattr(block, "text", None))
        return {"isError": bool(result.is_error), "text": text}

    async def run_session():
        async with stdio_client(server) as (read, write):
            async with ClientSession(read, write, elicitation_callback=elicit) as session:
                await session.initialize()
                tools = [tool.name for tool in (await session.list_tools()).tools]
                results = [outcome(await session.call_tool(name, args)) for name, args in calls]
                return tools, results

    async def run_stateless():
        async with Client(server, elicitation_callback=elicit) as client:
            tools = [tool.name for tool in (await client.list_tools()).tools]
            results = [outcome(await client.call_tool(name, args)) for name, args in calls]
            return tools, results, client.session.protocol_version

    async def run():
        if mode == "session":
            tools, results = await asyncio.wait_for(run_session(), 60)
            version = None
        else:
            tools, results, version = await asyncio.wait_for(run_stateless(), 60)
        print(json.dumps({"tools": tools, "results": results, "asked": asked, "version": version}))

    asyncio.run(run())


if __name__ == "__main__":
    main()
