"""An MCP client written with the official Python SDK (`mcp` on PyPI, installed by scripts/setup.sh) that
drives `quarry mcp` over stdio the way an MCP host does, and prints what it saw as one JSON object for
the Rust test (tests/cli/mcp_command.rs) to check.

Usage: mcp_client.py LIBRARY QUESTION -- SERVER_COMMAND…  (e.g. -- quarry --data-dir D mcp --library L)
       mcp_client.py LIBRARY QUESTION --url http://127.0.0.1:PORT/mcp [--add PATH…]  (streamable HTTP; no
       `ask`; two raw requests a browser page or a rebound host name would send, to see them refused;
       with --add, the `add` tool with a relative path and then with the PATHs, and a search after it)
"""

import asyncio
import json
import os
import sys
import urllib.error
import urllib.request

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError


async def call(session, name, arguments, **options):
    """A tool call as data: its structured content and text, or the error it raised."""
    try:
        result = await session.call_tool(name, arguments, **options)
    except MCPError as error:
        return {"protocol_error": error.error.message, "code": error.error.code}
    text = "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")
    return {"is_error": bool(result.is_error), "structured": result.structured_content, "text": text}


def refused(url, headers):
    """The HTTP status of an initialize request sent with `headers` (the SDK cannot forge them)."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}})
    request = urllib.request.Request(url, data=body.encode(), method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def transport():
    """The client transport the arguments name: the server command over stdio, or --url over HTTP."""
    if "--url" in sys.argv:
        return streamable_http_client(sys.argv[sys.argv.index("--url") + 1])
    command = sys.argv[sys.argv.index("--") + 1 :]
    return stdio_client(StdioServerParameters(command=command[0], args=command[1:], env=dict(os.environ)))


async def main():
    library, question = sys.argv[1:3]
    over_http = "--url" in sys.argv
    seen = {}
    if over_http:
        url = sys.argv[sys.argv.index("--url") + 1]
        seen["with_origin"] = refused(url, {"Origin": "http://attacker.example"})
        seen["with_other_host"] = refused(url, {"Host": "attacker.example"})
    async with transport() as streams:
        read, write = streams[0], streams[1]
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
                # The id as a number (what a client that parsed it as one sends) is accepted too.
                seen["get_passage_by_number"] = await call(
                    session, "get_passage", {"library": first["library"], "chunk_id": int(first["chunk_id"])}
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
            if "--add" in sys.argv:
                paths = sys.argv[sys.argv.index("--add") + 1 :]
                seen["add_relative"] = await call(session, "add", {"library": library, "paths": ["notes.pdf"]})
                seen["add"] = await call(session, "add", {"library": library, "paths": paths})
                seen["search_added"] = await call(
                    session, "search", {"query": "airplane accident probable cause", "libraries": [library], "k": 3}
                )
            if over_http:
                print(json.dumps(seen))
                return

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
