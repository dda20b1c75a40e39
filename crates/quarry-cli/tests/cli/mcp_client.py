"""An MCP client written with the official Python SDK (`mcp` on PyPI, installed by scripts/setup.sh) that
drives `quarry mcp` over stdio the way an MCP host does, and prints what it saw as one JSON object for
the Rust test (tests/cli/mcp_command.rs) to check.

Usage: mcp_client.py LIBRARY QUESTION -- SERVER_COMMAND…  (e.g. -- quarry --data-dir D mcp --library L)
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError


async def call(session, name, arguments, **options):
    """A tool call as data: its structured content and text, or the error it raised."""
    try:
        result = await session.call_tool(name, arguments, **options)
    except MCPError as error:
        return {"protocol_error": error.error.message, "code": error.error.code}
    text = "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")
    return {"is_error": bool(result.is_error), "structured": result.structured_content, "text": text}


async def main():
    library, question = sys.argv[1:3]
    command = sys.argv[sys.argv.index("--") + 1 :]
    server = StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ))
    seen = {}
    async with stdio_client(server) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            seen["server"] = init.server_info.name
            seen["instructions"] = init.instructions
            seen["tools"] = sorted(tool.name for tool in (await session.list_tools()).tools)
            seen["list_libraries"] = await call(session, "list_libraries", {})
            seen["search"] = await call(
                session, "search", {"query": question, "libraries": [library], "k": 5}
            )
            passages = (seen["search"].get("structured") or {}).get("passages") or []
            if passages:
                first = passages[0]
                seen["get_passage"] = await call(
                    session, "get_passage", {"library": first["library"], "chunk_id": first["chunk_id"]}
                )
            resources = (await session.list_resources()).resources
            seen["resources"] = [
                {"uri": str(r.uri), "name": r.name, "description": r.description} for r in resources
            ]
            if resources:
                contents = (await session.read_resource(str(resources[0].uri))).contents
                seen["resource_text"] = "".join(getattr(c, "text", "") for c in contents)
            for name, uri in [("bad_uri", "quarry://sec/'; DROP"), ("other_library", "quarry://other/00ff")]:
                try:
                    await session.read_resource(uri)
                    seen[name] = {"read": True}
                except MCPError as error:
                    seen[name] = {"protocol_error": error.error.message}
            # Malformed calls and failing calls: errors, and the server keeps serving.
            seen["empty_query"] = await call(session, "search", {"query": "  "})
            seen["missing_query"] = await call(session, "search", {"k": 3})
            seen["bad_mode"] = await call(session, "search", {"query": "revenue", "mode": "fuzzy"})
            seen["unknown_library"] = await call(session, "search", {"query": "revenue", "libraries": ["nope"]})
            seen["unknown_tool"] = await call(session, "no_such_tool", {})
            seen["after_errors"] = await call(session, "list_libraries", {})

            progress = []

            async def on_progress(step, total, message):
                progress.append(message)

            seen["ask"] = await call(
                session,
                "ask",
                {"question": question, "agent": "naive", "libraries": [library]},
                read_timeout_seconds=900,
                progress_callback=on_progress,
            )
            seen["progress"] = progress
    print(json.dumps(seen))


asyncio.run(main())
