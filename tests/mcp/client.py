"""A real MCP client (the Python SDK's) in front of `toolgate mcp`, for crates/toolgate/tests/mcp.rs.

    client.py session|stateless CALLS_JSON ANSWERS_JSON -- GATEWAY_COMMAND...
    client.py http CALLS_JSON ANSWERS_JSON URL TOKEN

`session` drives the low-level `ClientSession` (the initialize handshake, protocol 2025-11-25:
toolgate asks with `elicitation/create` requests); `stateless` drives `mcp.Client`, which probes
`server/discover` and, when the server behind the gateway speaks 2026-07-28, goes stateless
(toolgate asks with an `InputRequiredResult` and the client retries with the answer); `http` drives
`ClientSession` over Streamable HTTP to a gateway already listening at URL (`toolgate mcp --listen`),
the bearer TOKEN in every request.

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
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def main():
    mode, calls, answers = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
    if mode == "http":
        url, token = sys.argv[4], sys.argv[5]
    else:
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

    async def run_http():
        headers = {"Authorization": f"Bearer {token}"}
        async with create_mcp_http_client(headers=headers) as http:
            async with streamable_http_client(url, http_client=http) as (read, write):
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
        if mode in ("session", "http"):
            run_mode = run_session if mode == "session" else run_http
            tools, results = await asyncio.wait_for(run_mode(), 60)
            version = None
        else:
            tools, results, version = await asyncio.wait_for(run_stateless(), 60)
        print(json.dumps({"tools": tools, "results": results, "asked": asked, "version": version}))

    asyncio.run(run())


if __name__ == "__main__":
    main()
