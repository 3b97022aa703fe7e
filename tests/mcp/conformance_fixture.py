"""MCP conformance fixture server.

A small MCP server (official `mcp` Python SDK, v2 API) exposing the tools,
resources, prompts and utilities that the server scenarios of the MCP
conformance suite (`@modelcontextprotocol/conformance`) call by name:
`test_simple_text`, `test://static-text`, `test_simple_prompt`, ...

Run:
    python conformance_fixture.py              # stdio (how the gateway runs it)
    python conformance_fixture.py --http PORT  # Streamable HTTP on 127.0.0.1:PORT/mcp,
                                               # to check the fixture against the suite directly

In stdio mode stdout carries only the protocol; all logging goes to stderr.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import warnings
from typing import Annotated, Any, Literal

import anyio
from pydantic import BaseModel, Field

from mcp.server.mcpserver import Audio, Context, Image, MCPServer, UserMessage
from mcp.server.mcpserver.tools import Tool
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.types import (
    CallToolResult,
    ClientCapabilities,
    Completion,
    ElicitationCapability,
    EmbeddedResource,
    EmptyResult,
    ImageContent,
    SamplingCapability,
    SamplingMessage,
    SetLevelRequestParams,
    SubscribeRequestParams,
    TextContent,
    TextResourceContents,
    UnsubscribeRequestParams,
)

# Logging, sampling and resources/subscribe are deprecated in the 2026 protocol
# revision but are exactly what the 2025-era scenarios exercise.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

# 1x1 PNG and a 4-sample 8 kHz mono WAV.
PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGNgaPgPAAIDAYAkYfWXAAAAAElFTkSuQmCC"
WAV_B64 = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQgAAAAAAAAAAAAAAA=="
PNG = base64.b64decode(PNG_B64)

LOG_LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
# Per-process state: in stdio mode a process serves exactly one client.
state: dict[str, Any] = {"log_level": "debug", "subscriptions": set()}


def text(value: str) -> TextContent:
    return TextContent(type="text", text=value)


def text_result(value: str, is_error: bool = False) -> CallToolResult:
    return CallToolResult(content=[text(value)], is_error=is_error)


async def log(ctx: Context, level: str, message: str) -> None:
    """Send notifications/message unless below the level set by logging/setLevel."""
    if LOG_LEVELS.index(level) >= LOG_LEVELS.index(state["log_level"]):
        await ctx.log(level, message, logger_name="conformance-fixture")  # type: ignore[arg-type]


# --- a tool with a hand-written input schema -------------------------------------

JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}


def json_schema_2020_12_tool(
    name: str | None = None, address: dict[str, Any] | None = None
) -> TextContent:
    """Tool with JSON Schema 2020-12 features"""
    return text(json.dumps({"name": name, "address": address}))


# The SDK derives inputSchema from the signature; publish the 2020-12 schema verbatim instead.
schema_tool = Tool.from_function(json_schema_2020_12_tool)
schema_tool = schema_tool.model_copy(update={"parameters": JSON_SCHEMA_2020_12})

mcp = MCPServer(
    "toolgate-conformance-fixture", version="1.0.0", tools=[schema_tool], log_level="WARNING"
)


# --- tools ------------------------------------------------------------------------


@mcp.tool(structured_output=False)
def test_simple_text() -> str:
    """Returns a simple text response"""
    return "This is a simple text response for testing."


@mcp.tool()
def test_image_content() -> Image:
    """Returns a 1x1 PNG image"""
    return Image(data=PNG, format="png")


@mcp.tool()
def test_audio_content() -> Audio:
    """Returns a tiny WAV clip"""
    return Audio(data=base64.b64decode(WAV_B64), format="wav")


@mcp.tool()
def test_embedded_resource() -> EmbeddedResource:
    """Returns an embedded text resource"""
    return EmbeddedResource(
        type="resource",
        resource=TextResourceContents(
            uri="test://embedded-resource",
            mime_type="text/plain",
            text="This is an embedded resource content.",
        ),
    )


@mcp.tool()
def test_multiple_content_types() -> list[TextContent | ImageContent | EmbeddedResource]:
    """Returns text, image and embedded resource content"""
    return [
        text("Multiple content types test:"),
        ImageContent(type="image", data=PNG_B64, mime_type="image/png"),
        EmbeddedResource(
            type="resource",
            resource=TextResourceContents(
                uri="test://mixed-content-resource",
                mime_type="application/json",
                text=json.dumps({"test": "data", "value": 123}),
            ),
        ),
    ]


@mcp.tool()
async def test_tool_with_logging(ctx: Context) -> CallToolResult:
    """Sends three info log notifications while running"""
    await log(ctx, "info", "Tool execution started")
    await anyio.sleep(0.05)
    await log(ctx, "info", "Tool processing data")
    await anyio.sleep(0.05)
    await log(ctx, "info", "Tool execution completed")
    return text_result("Tool with logging executed successfully")


@mcp.tool(structured_output=False)
def test_reconnection() -> str:
    """Answers at once. The suite's SSE-polling scenario means it to close the client's stream
    mid-call; over stdio a server has no stream to close, so the gateway in front answers on the
    stream as usual (the scenario reports that as information, not a failure)."""
    return "Reconnection test completed."


@mcp.tool()
def test_error_handling() -> CallToolResult:
    """Always fails with isError: true"""
    return text_result("This tool intentionally returns an error for testing", is_error=True)


@mcp.tool()
async def test_tool_with_progress(ctx: Context) -> CallToolResult:
    """Reports progress 0, 50, 100 of 100 (when the caller sent a progressToken)"""
    for step in (0, 50, 100):
        await ctx.report_progress(step, 100, f"Completed step {step} of 100")
        if step < 100:
            await anyio.sleep(0.05)
    return text_result("Tool with progress executed successfully")


@mcp.tool()
async def test_sampling(
    prompt: Annotated[str, Field(description="The prompt to send to the LLM")], ctx: Context
) -> CallToolResult:
    """Asks the client's LLM (sampling/createMessage) and returns its answer"""
    if not ctx.session.check_client_capability(ClientCapabilities(sampling=SamplingCapability())):
        return text_result("Client does not support sampling", is_error=True)
    # Sent on this request's stream (related_request_id), as the spec asks.
    result = await ctx.session.create_message(
        messages=[SamplingMessage(role="user", content=text(prompt))],
        max_tokens=100,
        related_request_id=ctx.request_context.request_id,
    )
    content = result.content
    answer = content.text if content.type == "text" else f"<{content.type} content>"
    return text_result(f"LLM response: {answer}")


async def elicit_and_report(
    ctx: Context, message: str, schema: type[BaseModel], label: str = "Elicitation completed"
) -> CallToolResult:
    """Send elicitation/create (form schema rendered from `schema`) and echo the outcome."""
    wanted = ClientCapabilities(elicitation=ElicitationCapability())
    if not ctx.session.check_client_capability(wanted):
        return text_result("Client does not support elicitation", is_error=True)
    result = await ctx.elicit(message, schema)
    content = result.data.model_dump() if result.action == "accept" else {}
    return text_result(f"{label}: action={result.action}, content={json.dumps(content)}")


class UserInfo(BaseModel):
    username: str = Field(description="User's response")
    email: str = Field(description="User's email address")


@mcp.tool()
async def test_elicitation(
    message: Annotated[str, Field(description="The message to show the user")], ctx: Context
) -> CallToolResult:
    """Asks the user for input (elicitation/create) and echoes the answer"""
    return await elicit_and_report(ctx, message, UserInfo, "User response")


class Sep1034Defaults(BaseModel):
    name: str = "John Doe"
    age: int = 30
    score: float = 95.5
    status: Literal["active", "inactive", "pending"] = "active"
    verified: bool = True


class Sep1330Enums(BaseModel):
    untitledSingle: Literal["option1", "option2", "option3"]
    titledSingle: str = Field(
        json_schema_extra={
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ]
        }
    )
    legacyEnum: Literal["opt1", "opt2", "opt3"] = Field(
        json_schema_extra={"enumNames": ["Option One", "Option Two", "Option Three"]}
    )
    untitledMulti: list[Literal["option1", "option2", "option3"]]
    titledMulti: list[str] = Field(
        json_schema_extra={
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            }
        }
    )


@mcp.tool()
async def test_elicitation_sep1034_defaults(ctx: Context) -> CallToolResult:
    """Elicitation whose schema carries defaults for every primitive type (SEP-1034)"""
    return await elicit_and_report(ctx, "Please review the user information", Sep1034Defaults)


@mcp.tool()
async def test_elicitation_sep1330_enums(ctx: Context) -> CallToolResult:
    """Elicitation with all five enum schema variants (SEP-1330)"""
    return await elicit_and_report(ctx, "Please pick values from each enum", Sep1330Enums)


# --- resources --------------------------------------------------------------------


@mcp.resource("test://static-text", name="static-text", mime_type="text/plain")
def static_text() -> str:
    """A static text resource"""
    return "This is the content of the static text resource."


@mcp.resource("test://static-binary", name="static-binary", mime_type="image/png")
def static_binary() -> bytes:
    """A static binary resource (1x1 PNG)"""
    return PNG


@mcp.resource("test://template/{id}/data", name="template-data", mime_type="application/json")
def template_data(id: str) -> str:
    """A templated resource that echoes its id"""
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@mcp.resource("test://watched-resource", name="watched-resource", mime_type="text/plain")
def watched_resource() -> str:
    """A resource clients may subscribe to"""
    return "Watched resource content"


# --- prompts ----------------------------------------------------------------------


@mcp.prompt()
def test_simple_prompt() -> list[UserMessage]:
    """A prompt without arguments"""
    return [UserMessage(text("This is a simple prompt for testing."))]


@mcp.prompt()
def test_prompt_with_arguments(
    arg1: Annotated[str, Field(description="First test argument")],
    arg2: Annotated[str, Field(description="Second test argument")],
) -> list[UserMessage]:
    """A prompt with two required arguments"""
    return [UserMessage(text(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"))]


@mcp.prompt()
def test_prompt_with_embedded_resource(
    resourceUri: Annotated[str, Field(description="URI of the resource to embed")],
) -> list[UserMessage]:
    """A prompt embedding a resource"""
    resource = TextResourceContents(
        uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing."
    )
    return [
        UserMessage(EmbeddedResource(type="resource", resource=resource)),
        UserMessage(text("Please process the embedded resource above.")),
    ]


@mcp.prompt()
def test_prompt_with_image() -> list[UserMessage]:
    """A prompt containing an image"""
    return [
        UserMessage(ImageContent(type="image", data=PNG_B64, mime_type="image/png")),
        UserMessage(text("Please analyze the image above.")),
    ]


# --- completion -------------------------------------------------------------------

SUGGESTIONS = {
    "arg1": ["paris", "park", "party"],
    "arg2": ["world", "wonder"],
    "id": ["123", "456"],
}


@mcp.completion()
async def complete(ref: Any, argument: Any, context: Any) -> Completion:
    values = [v for v in SUGGESTIONS.get(argument.name, []) if v.startswith(argument.value)]
    return Completion(values=values, total=len(values), has_more=False)


# --- low-level handlers MCPServer has no decorator for ----------------------------


async def set_level(ctx: Any, params: SetLevelRequestParams) -> EmptyResult:
    state["log_level"] = params.level
    return EmptyResult()


async def subscribe(ctx: Any, params: SubscribeRequestParams) -> EmptyResult:
    state["subscriptions"].add(str(params.uri))
    return EmptyResult()


async def unsubscribe(ctx: Any, params: UnsubscribeRequestParams) -> EmptyResult:
    state["subscriptions"].discard(str(params.uri))
    return EmptyResult()


# MCPServer has no public hook for these; the SDK points to the low-level server's
# add_request_handler. Registering them also advertises `logging` and `resources.subscribe`.
lowlevel = mcp._lowlevel_server
lowlevel.add_request_handler("logging/setLevel", SetLevelRequestParams, set_level)
lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, subscribe)
lowlevel.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, unsubscribe)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--http", type=int, metavar="PORT", help="serve Streamable HTTP on 127.0.0.1:PORT/mcp"
    )
    args = parser.parse_args()
    if args.http is None:
        mcp.run()  # stdio
    else:
        print(f"serving http://127.0.0.1:{args.http}/mcp", file=sys.stderr)
        mcp.run("streamable-http", host="127.0.0.1", port=args.http)


if __name__ == "__main__":
    main()
