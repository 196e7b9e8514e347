#!/usr/bin/env python3
"""Tool round trips through `tam serve` with the official client SDKs.

Each round trip asks "What is the weather in Paris?" offering one tool,
`get_weather(city: string)`, gets a native tool call back, runs a local function that
returns a fresh unique string, sends the result back and reads the final answer:

  anthropic-messages-stream  anthropic: client.messages.stream, tool_use -> tool_result
  openai-responses-stream    openai: client.responses.stream, function_call -> function_call_output
  openai-agents-responses    openai-agents: Runner.run with its default Responses model (whole
                             replies); the agent runs the tool itself
  openai-chat-stream         openai: client.chat.completions.stream (the baseline API)

By default the upstream is scripted, inside this script: an OpenAI-compatible chat
completions server on 127.0.0.1 that streams a tool-call block in the chosen protocol when
the last message holds no observation, and else an answer repeating the observation's
result. Then every step is checked exactly (the call, its arguments, the stop reasons, the
answer holding the unique string, the upstream never asked with `tools`).

With --upstream URL a real model server is used instead: the script prints what the model
did (the call it made, its final answer) and a round trip passes when the model called the
tool and answered after the result; when it did not call the tool, the line says so.

Prints one line per round trip, `PASS name` or `FAIL name: reason`, and exits 1 when any
failed. Every HTTP exchange (client <-> proxy, proxy <-> scripted upstream) is written to
the trace directory (--trace-dir, else a new temporary one), named on failure.

Needs Python 3.11 and the SDKs of requirements.txt (run.sh installs them in a venv).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable

QUESTION = "What is the weather in Paris?"
TOOL_NAME = "get_weather"
TOOL_DESCRIPTION = "Get the current weather in a city."
CITY_DESCRIPTION = "The city's name, e.g. Paris."
CITY = "Paris"
PARAMETERS = {
    "type": "object",
    "properties": {"city": {"type": "string", "description": CITY_DESCRIPTION}},
    "required": ["city"],
}


def default_tam() -> str:
    """The workspace's release `tam`: under $CARGO_TARGET_DIR when set, else `target/`."""
    repo = Path(__file__).resolve().parents[2]
    target = Path(os.environ.get("CARGO_TARGET_DIR") or "target")
    return str((target if target.is_absolute() else repo / target) / "release" / "tam")

ROUND_TRIPS = (
    "anthropic-messages-stream",
    "openai-responses-stream",
    "openai-agents-responses",
    "openai-chat-stream",
)


class Failure(Exception):
    """A round trip did not do what it should; the message says what happened instead."""


# --------------------------------------------------------------------------------------
# The trace: every exchange written to a directory, in order.
# --------------------------------------------------------------------------------------


class Trace:
    def __init__(self, directory: Path):
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._count = 0
        self.stage = "setup"

    def name(self, what: str) -> Path:
        with self._lock:
            self._count += 1
            return self.directory / f"{self._count:03d}-{self.stage}-{what}"

    def files_of(self, stage: str) -> list[Path]:
        return sorted(p for p in self.directory.iterdir() if f"-{stage}-" in p.name)


def pretty(body: bytes) -> str:
    """A JSON body indented, anything else as text."""
    try:
        return json.dumps(json.loads(body), indent=2, ensure_ascii=False) + "\n"
    except (ValueError, UnicodeDecodeError):
        return body.decode("utf-8", "replace")


def recording_transports(trace: Trace):
    """An httpx transport (sync and async) of the SDKs' own httpx that writes each request
    and the response's raw bytes (SSE as it came) to the trace."""
    try:
        import httpx2 as httpx  # what the pinned SDKs are built on
    except ImportError:  # older SDKs use httpx
        import httpx

    def request_file(request) -> Path:
        base = trace.name(request.url.path.strip("/").replace("/", "_"))
        try:
            content = request.content
        except httpx.RequestNotRead:
            content = b""
        base.with_suffix(".request.txt").write_text(
            f"{request.method} {request.url}\n\n{pretty(content)}"
        )
        return base.with_suffix(".response.txt")

    class Tee(httpx.SyncByteStream):
        def __init__(self, inner, out: Path, status: int):
            self.inner, self.out, self.status, self.data = inner, out, status, bytearray()

        def __iter__(self):
            try:
                for chunk in self.inner:
                    self.data.extend(chunk)
                    yield chunk
            finally:
                self.out.write_text(f"HTTP {self.status}\n\n{pretty(bytes(self.data))}")

        def close(self):
            self.out.write_text(f"HTTP {self.status}\n\n{pretty(bytes(self.data))}")
            self.inner.close()

    class AsyncTee(httpx.AsyncByteStream):
        def __init__(self, inner, out: Path, status: int):
            self.inner, self.out, self.status, self.data = inner, out, status, bytearray()

        async def __aiter__(self):
            try:
                async for chunk in self.inner:
                    self.data.extend(chunk)
                    yield chunk
            finally:
                self.out.write_text(f"HTTP {self.status}\n\n{pretty(bytes(self.data))}")

        async def aclose(self):
            self.out.write_text(f"HTTP {self.status}\n\n{pretty(bytes(self.data))}")
            await self.inner.aclose()

    class Sync(httpx.HTTPTransport):
        def handle_request(self, request):
            out = request_file(request)
            response = super().handle_request(request)
            return httpx.Response(
                response.status_code,
                headers=response.headers,
                stream=Tee(response.stream, out, response.status_code),
                extensions=response.extensions,
            )

    class Async(httpx.AsyncHTTPTransport):
        async def handle_async_request(self, request):
            out = request_file(request)
            response = await super().handle_async_request(request)
            return httpx.Response(
                response.status_code,
                headers=response.headers,
                stream=AsyncTee(response.stream, out, response.status_code),
                extensions=response.extensions,
            )

    return Sync, Async


# --------------------------------------------------------------------------------------
# The scripted upstream.
# --------------------------------------------------------------------------------------


def tool_block(protocol: str) -> str:
    """The call `get_weather(city="Paris")` as the model writes it in `protocol`."""
    if protocol == "action":
        return f"<ACTION>\n<{TOOL_NAME}>\n<city>{CITY}</city>\n</{TOOL_NAME}>\n</ACTION>"
    return (
        "<|[REQUEST_TOOL]|>\n"
        f"command:「始」{TOOL_NAME}「末」\n"
        f"city:「始」{CITY}「末」\n"
        "<|[END_TOOL]|>"
    )


def message_text(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text", "") for part in content if isinstance(part, dict)
        )
    return ""


def scripted_reply(body: dict, protocol: str) -> str:
    """The upstream's reply to a chat completions request: a call while the last message
    holds no observation, else an answer repeating the observation's result."""
    messages = body.get("messages") or []
    last = message_text(messages[-1]) if messages else ""
    if "Observation:" not in last:
        return tool_block(protocol)
    found = re.search(r"Result:\s*(.*)", last)
    if not found:
        return "I could not read the tool's result."
    return f"The weather in {CITY} is {found.group(1).strip()}."


def cut_at_stop(text: str, stop: Any) -> str:
    """What an OpenAI-compatible server sends when a stop sequence matches: the text
    before its first match, the sequence left out."""
    stops = [stop] if isinstance(stop, str) else list(stop or [])
    ends = [text.find(s) for s in stops if s and s in text]
    return text[: min(ends)] if ends else text


def pieces(text: str) -> list[str]:
    """The reply's content deltas: a few characters each, of varying length."""
    sizes = (3, 5, 2, 7, 4, 1, 6)
    out, at, i = [], 0, 0
    while at < len(text):
        out.append(text[at : at + sizes[i % len(sizes)]])
        at += sizes[i % len(sizes)]
        i += 1
    return out


@dataclass
class Upstream:
    protocol: str
    honor_stop: bool
    trace: Trace
    requests: list[dict] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, body: dict) -> None:
        with self.lock:
            self.requests.append(body)


def make_handler(upstream: Upstream):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format, *args):  # quiet: the trace has it all
            pass

        def send_json(self, status: int, value: Any) -> None:
            data = json.dumps(value).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path.rstrip("/") == "/v1/models":
                self.send_json(
                    200,
                    {
                        "object": "list",
                        "data": [
                            {"id": "scripted", "object": "model", "owned_by": "e2e"}
                        ],
                    },
                )
            else:
                self.send_json(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if self.path != "/v1/chat/completions":
                self.send_json(404, {"error": {"message": f"no route {self.path}"}})
                return
            try:
                body = json.loads(raw)
            except ValueError as error:
                self.send_json(400, {"error": {"message": f"not JSON: {error}"}})
                return
            upstream.record(body)
            base = upstream.trace.name("upstream")
            base.with_suffix(".request.txt").write_text(
                f"POST {self.path}\n\n{pretty(raw)}"
            )
            text = scripted_reply(body, upstream.protocol)
            if upstream.honor_stop:
                text = cut_at_stop(text, body.get("stop"))
            model = body.get("model") or "scripted"
            prompt_tokens = len(json.dumps(body.get("messages"))) // 4
            usage = {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": len(text) // 4 + 1,
                "total_tokens": prompt_tokens + len(text) // 4 + 1,
            }
            rid = "chatcmpl-" + secrets.token_hex(6)
            created = int(time.time())
            if not body.get("stream"):
                reply = {
                    "id": rid,
                    "object": "chat.completion",
                    "created": created,
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": usage,
                }
                base.with_suffix(".response.txt").write_text(
                    "HTTP 200\n\n" + json.dumps(reply, indent=2, ensure_ascii=False)
                )
                self.send_json(200, reply)
                return

            def chunk(delta: dict, finish: str | None = None, **more) -> dict:
                return {
                    "id": rid,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                    **more,
                }

            events = [chunk({"role": "assistant", "content": ""})]
            events += [chunk({"content": piece}) for piece in pieces(text)]
            events.append(chunk({}, "stop"))
            last = chunk({})
            last["choices"] = []
            last["usage"] = usage
            events.append(last)
            sse = "".join(f"data: {json.dumps(e, ensure_ascii=False)}\n\n" for e in events)
            sse += "data: [DONE]\n\n"
            base.with_suffix(".response.txt").write_text("HTTP 200\n\n" + sse)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            sent = 0
            try:
                for event in sse.split("\n\n"):
                    if event:
                        self.wfile.write((event + "\n\n").encode())
                        self.wfile.flush()
                        sent += 1
            except (BrokenPipeError, ConnectionResetError):
                # The proxy closes the request once the call's block has closed.
                with open(base.with_suffix(".response.txt"), "a") as out:
                    out.write(f"(the proxy closed the stream after {sent} events)\n")

    return Handler


# --------------------------------------------------------------------------------------
# The proxy.
# --------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_proxy(tam: str, upstream_url: str, protocol: str, log: Path):
    port = free_port()
    command = [
        tam,
        "serve",
        "--upstream",
        upstream_url,
        "--listen",
        f"127.0.0.1:{port}",
        "--protocol",
        protocol,
    ]
    out = open(log, "w")
    process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    root = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(
                f"tam serve exited with {process.returncode}: {log.read_text()}"
            )
        try:
            with urllib.request.urlopen(root + "/health", timeout=2) as response:
                if response.status == 200:
                    return process, root, command
        except (urllib.error.URLError, ConnectionError, OSError):
            time.sleep(0.1)
    process.terminate()
    raise SystemExit(f"tam serve did not answer /health within 30 s: {log.read_text()}")


# --------------------------------------------------------------------------------------
# The round trips.
# --------------------------------------------------------------------------------------


@dataclass
class Context:
    root: str  # the proxy, e.g. http://127.0.0.1:PORT
    model: str
    scripted: bool
    timeout: float
    upstream: Upstream | None
    transports: tuple


@dataclass
class Outcome:
    """What the model did in one round trip, for the report."""

    call: str = ""
    answer: str = ""
    notes: list[str] = field(default_factory=list)


class Tool:
    """The local `get_weather`: returns a fresh unique string and remembers its calls."""

    def __init__(self):
        self.result = "sunny-" + secrets.token_hex(6)
        self.cities: list[Any] = []

    def __call__(self, city: Any) -> str:
        self.cities.append(city)
        return self.result


def short(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "…"


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise Failure(message)


def check_call(ctx: Context, name: str, arguments: Any, outcome: Outcome) -> None:
    outcome.call = f"{name}({json.dumps(arguments, ensure_ascii=False)})"
    if ctx.scripted:
        expect(name == TOOL_NAME, f"the call names {name!r}, not {TOOL_NAME!r}")
        expect(
            arguments == {"city": CITY},
            f"the call's arguments are {arguments!r}, not {{'city': {CITY!r}}}",
        )
    elif name != TOOL_NAME:
        raise Failure(f"the model called {name!r}, a tool nobody offered")


def check_answer(
    ctx: Context, tool: Tool, answer: str, outcome: Outcome, again: bool = False
) -> None:
    outcome.answer = answer
    if ctx.scripted:
        expect(not again, "the reply after the result holds a call, not an answer")
        expect(
            tool.result in answer,
            f"the final answer {answer!r} does not hold the tool's result {tool.result!r}",
        )
    else:
        if again:
            outcome.notes.append("after the result the model called the tool again")
        elif tool.result in answer:
            outcome.notes.append("the answer repeats the tool's result")
        else:
            outcome.notes.append("the answer does not repeat the tool's result")


def check_upstream(ctx: Context, first: int, tool: Tool) -> None:
    """The scripted upstream got two requests for this round trip, none with tools, the
    second ending with the observation of the result."""
    if ctx.upstream is None:
        return
    got = ctx.upstream.requests[first:]
    expect(len(got) == 2, f"the upstream got {len(got)} requests, not 2")
    for body in got:
        expect("tools" not in body, "the upstream was asked with `tools`")
    last = message_text(got[1]["messages"][-1])
    expect(
        "Observation:" in last and tool.result in last,
        f"the upstream's second request ends with {last!r}, not the observation",
    )


def check_usage(ctx: Context, what: str, tokens: int | None, outcome: Outcome) -> None:
    """The reply reports the upstream's token counts. A scripted upstream that ignores
    `stop` is cut off at the call before it sends them, and the proxy has none to report
    (documented), so then the absence is only noted."""
    if not ctx.scripted:
        return
    if ctx.upstream is not None and not ctx.upstream.honor_stop:
        if not tokens:
            outcome.notes.append(f"{what}: no usage (the turn ended before the upstream's)")
        return
    expect(bool(tokens), f"{what}: no usage reported ({tokens!r})")


def note_calls(outcome: Outcome, count: int) -> None:
    """A real model may call more than once in a reply; each call gets the tool's result."""
    if count > 1:
        outcome.notes.append(f"the model made {count} calls in one reply; each was answered")


def city_of(arguments: str) -> Any:
    try:
        value = json.loads(arguments)
    except ValueError:
        return None
    return value.get("city") if isinstance(value, dict) else None


def no_call(answer: str) -> Failure:
    return Failure(f"the model did not call the tool; it answered: {short(answer)!r}")


def anthropic_messages_stream(ctx: Context, tool: Tool, outcome: Outcome) -> None:
    import anthropic

    client = anthropic.Anthropic(
        base_url=ctx.root,
        api_key="unused",
        max_retries=0,
        timeout=ctx.timeout,
        http_client=anthropic.DefaultHttpxClient(transport=ctx.transports[0]()),
    )
    tools = [
        {"name": TOOL_NAME, "description": TOOL_DESCRIPTION, "input_schema": PARAMETERS}
    ]
    messages: list[dict] = [{"role": "user", "content": QUESTION}]
    # This SDK has no `temperature` parameter any more; the API field still exists.
    ask = dict(model=ctx.model, max_tokens=512, tools=tools, extra_body={"temperature": 0})

    with client.messages.stream(messages=messages, **ask) as stream:
        kinds = [event.type for event in stream]
        first = stream.get_final_message()
    uses = [block for block in first.content if block.type == "tool_use"]
    text = "".join(block.text for block in first.content if block.type == "text")
    if not uses:
        raise no_call(text)
    use = uses[0]
    check_call(ctx, use.name, use.input, outcome)
    if ctx.scripted:
        expect(len(uses) == 1, f"{len(uses)} tool_use blocks, not 1")
        expect(
            first.stop_reason == "tool_use",
            f"stop_reason {first.stop_reason!r}, not 'tool_use'",
        )
        expect(
            "input_json" in kinds,
            f"the call's input came in no input_json_delta: {kinds}",
        )
    check_usage(ctx, "the call's message", first.usage.output_tokens, outcome)
    note_calls(outcome, len(uses))
    results = [
        {
            "type": "tool_result",
            "tool_use_id": each.id,
            "content": tool(each.input.get("city") if isinstance(each.input, dict) else None),
        }
        for each in uses
    ]
    messages.append({"role": "assistant", "content": first.content})
    messages.append({"role": "user", "content": results})
    with client.messages.stream(messages=messages, **ask) as stream:
        for _ in stream:
            pass
        second = stream.get_final_message()
    answer = "".join(block.text for block in second.content if block.type == "text")
    again = any(block.type == "tool_use" for block in second.content)
    check_answer(ctx, tool, answer, outcome, again)
    if ctx.scripted:
        expect(
            second.stop_reason == "end_turn",
            f"final stop_reason {second.stop_reason!r}, not 'end_turn'",
        )
    check_usage(ctx, "the answer's message", second.usage.output_tokens, outcome)


def openai_responses_stream(ctx: Context, tool: Tool, outcome: Outcome) -> None:
    import openai

    client = openai.OpenAI(
        base_url=ctx.root + "/v1",
        api_key="unused",
        max_retries=0,
        timeout=ctx.timeout,
        http_client=openai.DefaultHttpxClient(transport=ctx.transports[0]()),
    )
    tools = [
        {
            "type": "function",
            "name": TOOL_NAME,
            "description": TOOL_DESCRIPTION,
            "parameters": PARAMETERS,
        }
    ]
    items: list[Any] = [{"role": "user", "content": QUESTION}]
    ask = dict(model=ctx.model, tools=tools, temperature=0, max_output_tokens=512)

    with client.responses.stream(input=items, **ask) as stream:
        kinds = [event.type for event in stream]
        first = stream.get_final_response()
    calls = [item for item in first.output if item.type == "function_call"]
    if not calls:
        raise no_call(first.output_text)
    call = calls[0]
    try:
        arguments = json.loads(call.arguments)
    except ValueError:
        raise Failure(f"the call's arguments are not JSON: {call.arguments!r}")
    check_call(ctx, call.name, arguments, outcome)
    if ctx.scripted:
        expect(len(calls) == 1, f"{len(calls)} function_call items, not 1")
        expect(
            first.status == "completed", f"response status {first.status!r}, not 'completed'"
        )
        expect(
            "response.function_call_arguments.done" in kinds,
            f"no response.function_call_arguments.done in the stream: {kinds}",
        )
    check_usage(
        ctx, "the call's response", first.usage and first.usage.output_tokens, outcome
    )
    note_calls(outcome, len(calls))
    items += first.output
    for each in calls:
        items.append(
            {
                "type": "function_call_output",
                "call_id": each.call_id,
                "output": tool(city_of(each.arguments)),
            }
        )
    with client.responses.stream(input=items, **ask) as stream:
        for _ in stream:
            pass
        second = stream.get_final_response()
    again = any(item.type == "function_call" for item in second.output)
    check_answer(ctx, tool, second.output_text, outcome, again)
    if ctx.scripted:
        expect(
            second.status == "completed",
            f"final response status {second.status!r}, not 'completed'",
        )
    check_usage(
        ctx, "the answer's response", second.usage and second.usage.output_tokens, outcome
    )


def openai_agents_responses(ctx: Context, tool: Tool, outcome: Outcome) -> None:
    import openai
    from agents import (
        Agent,
        MaxTurnsExceeded,
        ModelSettings,
        OpenAIProvider,
        RunConfig,
        Runner,
        function_tool,
        set_tracing_disabled,
    )
    from agents.items import ToolCallItem

    set_tracing_disabled(True)

    @function_tool(name_override=TOOL_NAME, description_override=TOOL_DESCRIPTION)
    def get_weather(city: str) -> str:
        """Get the current weather in a city.

        Args:
            city: The city's name, e.g. Paris.
        """
        return tool(city)

    client = openai.AsyncOpenAI(
        base_url=ctx.root + "/v1",
        api_key="unused",
        max_retries=0,
        timeout=ctx.timeout,
        http_client=openai.DefaultAsyncHttpxClient(transport=ctx.transports[1]()),
    )
    agent = Agent(
        name="weather",
        tools=[get_weather],
        model=ctx.model,
        model_settings=ModelSettings(temperature=0, max_tokens=512),
    )
    config = RunConfig(
        model_provider=OpenAIProvider(openai_client=client, use_responses=True),
        tracing_disabled=True,
    )

    async def run():
        try:
            return await Runner.run(agent, QUESTION, run_config=config, max_turns=3)
        finally:
            await client.close()

    try:
        result = asyncio.run(run())
    except MaxTurnsExceeded:
        if not tool.cities:
            raise Failure("the agent ran out of turns without calling the tool")
        outcome.call = f"{TOOL_NAME}({json.dumps({'city': tool.cities[0]})})"
        check_answer(ctx, tool, "", outcome, again=True)
        return
    made = [item for item in result.new_items if isinstance(item, ToolCallItem)]
    answer = str(result.final_output or "")
    if not made:
        raise no_call(answer)
    raw = made[0].raw_item
    arguments = json.loads(getattr(raw, "arguments", None) or "null")
    check_call(ctx, getattr(raw, "name", "?"), arguments, outcome)
    expect(bool(tool.cities), "the agent did not run the tool it was asked to call")
    note_calls(outcome, len(made))
    if ctx.scripted:
        expect(len(made) == 1, f"{len(made)} tool calls, not 1")
        expect(tool.cities == [CITY], f"the tool ran with {tool.cities}, not ['{CITY}']")
        expect(
            len(result.raw_responses) == 2,
            f"{len(result.raw_responses)} model responses, not 2",
        )
    for number, response in enumerate(result.raw_responses, 1):
        check_usage(ctx, f"response {number}", response.usage.output_tokens, outcome)
    check_answer(ctx, tool, answer, outcome)


def openai_chat_stream(ctx: Context, tool: Tool, outcome: Outcome) -> None:
    import openai

    client = openai.OpenAI(
        base_url=ctx.root + "/v1",
        api_key="unused",
        max_retries=0,
        timeout=ctx.timeout,
        http_client=openai.DefaultHttpxClient(transport=ctx.transports[0]()),
    )
    tools = [
        {
            "type": "function",
            "function": {
                "name": TOOL_NAME,
                "description": TOOL_DESCRIPTION,
                "parameters": PARAMETERS,
            },
        }
    ]
    messages: list[dict] = [{"role": "user", "content": QUESTION}]
    ask = dict(
        model=ctx.model,
        tools=tools,
        temperature=0,
        max_tokens=512,
        stream_options={"include_usage": True},
    )

    with client.chat.completions.stream(messages=messages, **ask) as stream:
        for _ in stream:
            pass
        first = stream.get_final_completion()
    choice = first.choices[0]
    calls = choice.message.tool_calls or []
    if not calls:
        raise no_call(choice.message.content or "")
    call = calls[0]
    try:
        arguments = json.loads(call.function.arguments)
    except ValueError:
        raise Failure(f"the call's arguments are not JSON: {call.function.arguments!r}")
    check_call(ctx, call.function.name, arguments, outcome)
    if ctx.scripted:
        expect(len(calls) == 1, f"{len(calls)} tool calls, not 1")
        expect(
            choice.finish_reason == "tool_calls",
            f"finish_reason {choice.finish_reason!r}, not 'tool_calls'",
        )
    check_usage(ctx, "the call's stream", first.usage and first.usage.completion_tokens, outcome)
    note_calls(outcome, len(calls))
    messages.append(
        {
            "role": "assistant",
            "content": choice.message.content,
            "tool_calls": [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.function.name, "arguments": c.function.arguments},
                }
                for c in calls
            ],
        }
    )
    for each in calls:
        messages.append(
            {
                "role": "tool",
                "tool_call_id": each.id,
                "content": tool(city_of(each.function.arguments)),
            }
        )
    with client.chat.completions.stream(messages=messages, **ask) as stream:
        for _ in stream:
            pass
        second = stream.get_final_completion()
    choice = second.choices[0]
    check_answer(
        ctx, tool, choice.message.content or "", outcome, bool(choice.message.tool_calls)
    )
    if ctx.scripted:
        expect(
            choice.finish_reason == "stop",
            f"final finish_reason {choice.finish_reason!r}, not 'stop'",
        )
    check_usage(
        ctx, "the answer's stream", second.usage and second.usage.completion_tokens, outcome
    )


RUNNERS: dict[str, Callable[[Context, Tool, Outcome], None]] = {
    "anthropic-messages-stream": anthropic_messages_stream,
    "openai-responses-stream": openai_responses_stream,
    "openai-agents-responses": openai_agents_responses,
    "openai-chat-stream": openai_chat_stream,
}


def describe_error(error: BaseException) -> str:
    """An SDK error with the HTTP answer behind it, when there is one."""
    text = f"{type(error).__name__}: {error}"
    response = getattr(error, "response", None)
    body = getattr(error, "body", None)
    if response is not None and body is None:
        try:
            body = response.text
        except Exception:  # a streamed response already closed
            body = None
    if body is not None and str(body) not in text:
        text += f" — body: {short(json.dumps(body) if not isinstance(body, str) else body, 600)}"
    return text


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--protocol", choices=("action", "tam"), default="action")
    parser.add_argument(
        "--tam",
        default=default_tam(),
        help="the tam binary (default: release/tam under $CARGO_TARGET_DIR or target/)",
    )
    parser.add_argument(
        "--upstream",
        metavar="URL",
        help="a real OpenAI-compatible server's base URL (…/v1) instead of the scripted one",
    )
    parser.add_argument(
        "--model",
        default="qwen",
        help="the model name the SDKs send (default: %(default)s)",
    )
    parser.add_argument(
        "--only",
        metavar="NAMES",
        help="comma-separated round trips to run (default: all): " + ", ".join(ROUND_TRIPS),
    )
    parser.add_argument(
        "--ignore-stop",
        action="store_true",
        help="the scripted upstream writes its whole reply even past a stop sequence "
        "(a server that ignores `stop`); by default it stops there as servers do",
    )
    parser.add_argument("--timeout", type=float, default=900, help="seconds per request")
    parser.add_argument("--trace-dir", type=Path, help="where the exchanges are written")
    parser.add_argument("-v", "--verbose", action="store_true", help="print what each did")
    args = parser.parse_args()

    names = list(ROUND_TRIPS)
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in names if n not in RUNNERS]
        if unknown:
            parser.error(f"unknown round trips {unknown}; known: {', '.join(ROUND_TRIPS)}")
    if not (shutil.which(args.tam) or os.access(args.tam, os.X_OK)):
        parser.error(f"no tam binary at {args.tam} (build it: cargo build --release -p tam-cli)")

    if args.trace_dir and args.trace_dir.exists() and any(args.trace_dir.iterdir()):
        parser.error(f"the trace directory {args.trace_dir} is not empty")
    trace_dir = args.trace_dir or Path(tempfile.mkdtemp(prefix=f"tam-sdk-{args.protocol}-"))
    trace = Trace(trace_dir)
    server = None
    upstream = None
    if args.upstream:
        upstream_url = args.upstream
    else:
        upstream = Upstream(args.protocol, not args.ignore_stop, trace)
        server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(upstream))
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        upstream_url = f"http://127.0.0.1:{server.server_address[1]}/v1"

    proxy, root, command = start_proxy(
        args.tam, upstream_url, args.protocol, trace_dir / "tam-serve.log"
    )
    mode = "real upstream " + upstream_url if args.upstream else "scripted upstream"
    print(f"# {' '.join(command)}  ({mode}; exchanges in {trace_dir})", flush=True)
    ctx = Context(
        root=root,
        model=args.model,
        scripted=upstream is not None,
        timeout=args.timeout,
        upstream=upstream,
        transports=recording_transports(trace),
    )
    failed = 0
    try:
        for name in names:
            trace.stage = name
            tool = Tool()
            outcome = Outcome()
            first = len(upstream.requests) if upstream else 0
            started = time.monotonic()
            try:
                RUNNERS[name](ctx, tool, outcome)
                if ctx.scripted:
                    check_upstream(ctx, first, tool)
                line = f"PASS {name}"
            except Failure as error:
                failed += 1
                line = f"FAIL {name}: {error}"
            except Exception as error:  # an SDK error: the proxy's answer is the finding
                failed += 1
                line = f"FAIL {name}: {describe_error(error)}"
                if args.verbose:
                    traceback.print_exc()
            print(line, flush=True)
            if args.verbose or not ctx.scripted or line.startswith("FAIL"):
                if outcome.call:
                    ran = f"-> {tool.result!r}" if tool.cities else "(not run)"
                    print(f"    call:   {outcome.call} {ran}")
                if outcome.answer or outcome.call:
                    print(f"    answer: {short(outcome.answer)!r}")
                print(f"    time:   {time.monotonic() - started:.1f} s")
            for note in outcome.notes:
                print(f"    note:   {note}")
            if line.startswith("FAIL"):
                for path in trace.files_of(name):
                    print(f"    trace:  {path}")
    finally:
        proxy.terminate()
        try:
            proxy.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proxy.kill()
        if server is not None:
            server.shutdown()
    print(f"# {len(names) - failed}/{len(names)} passed ({args.protocol})", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
