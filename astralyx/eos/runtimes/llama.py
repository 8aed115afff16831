"""Embedded chat: any GGUF file through llama.cpp (llama-cpp-python, the `llama` extra), in a worker process.

`LlamaChat` is the deployment's chat model in the server: it runs `LlamaEngine` in a worker process of its
own (worker.py), so a crash of llama.cpp ends the worker, not the server. `LlamaEngine` is llama.cpp itself,
in that worker. What llama-cpp-python leaves to us, done there:
- the chat format is passed explicitly (it guesses wrong for some GGUFs);
- messages are put in a shape every format keeps: one system message first (chatml keeps
  only the first; gemma has none, so it goes into the first user turn), text content,
  tool results and tool calls as plain turns (formats drop roles they do not know);
- `response_format` json_schema (and json_object) become a llama.cpp grammar, so the output
  is always valid JSON of that schema;
- `tools`: the model is told the tools and answers under a grammar that allows either
  {"content": …} or {"tool_calls": [{"name", "arguments"}]}, turned into OpenAI tool calls;
- a prompt longer than the context is 413 CONVERSATION_TOO_LONG, not llama.cpp's ValueError.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import time
import uuid
from collections.abc import Iterator
from typing import Any

from ...errors import Invalid, TooLarge, Unavailable
from .base import ChatModel
from .worker import Worker

DEFAULT_MAX_TOKENS = 1024  # small models without a schema loop until the limit: keep it finite
THINK = re.compile(r"<think>.*?</think>\s*", re.S)
PASSED = ("temperature", "top_p", "seed", "stop", "presence_penalty", "frequency_penalty")
TOO_MANY_TOKENS = re.compile(r"Requested tokens \((\d+)\) exceed context window of (\d+)")
MESSAGE_OVERHEAD = 8  # tokens a turn's markers take, where the format cannot be rendered to count exactly


class LlamaChat(ChatModel):
    """A GGUF deployment in the server: each request goes to its worker process (one at a time)."""

    where = "in its worker process"

    def __init__(self, name: str, path: str, *, chat_format: str = "chatml", context: int = 4096,
                 threads: int | None = None) -> None:
        if importlib.util.find_spec("llama_cpp") is None:  # found, not imported: llama.cpp loads in the worker only
            raise Unavailable(
                f"Deployment {name!r} runs a GGUF, which needs llama-cpp-python: "
                "pip install 'astralyx[llama]' (it compiles llama.cpp: minutes)",
                code="DEPLOYMENT_UNAVAILABLE",
            )
        self.name = name
        self.chat_format = chat_format
        self.context_length = context  # the window it is loaded with (callers size their prompts by it)
        self.worker = Worker(name, {"name": name, "path": path, "chat_format": chat_format, "context": context,
                                    "threads": threads})
        self.worker.start()  # loaded now: a file that does not load says so to the call that deployed it

    @property
    def pid(self) -> int | None:
        """The worker process's id while it runs."""
        return self.worker.pid

    def complete(self, request: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self.worker.call("complete", request)
        return result

    def stream(self, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
        if request.get("tools") and request.get("tool_choice") != "none":
            yield from super().stream(request)  # tool calls are parsed from the whole answer
            return
        yield from self.worker.stream(request)

    def count_tokens(self, request: dict[str, Any]) -> int:
        """The prompt's tokens as the model's own tokenizer counts them (in the worker)."""
        return int(self.worker.call("count", request))

    def close(self) -> None:
        self.worker.close()


class LlamaEngine:
    """llama.cpp itself, loaded in the worker process (worker.main); one generation at a time."""

    def __init__(self, name: str, path: str, *, chat_format: str = "chatml", context: int = 4096,
                 threads: int | None = None) -> None:
        try:
            from llama_cpp import Llama
        except ImportError:
            raise Unavailable(
                f"Deployment {name!r} runs a GGUF, which needs llama-cpp-python: "
                "pip install 'astralyx[llama]' (it compiles llama.cpp: minutes)",
                code="DEPLOYMENT_UNAVAILABLE",
            ) from None
        self.name = name
        self.chat_format = chat_format
        self.context_length = context
        # Any: llama-cpp-python types messages as its own TypedDicts; ours are the same JSON, untyped.
        self._llama: Any = Llama(model_path=path, n_ctx=context, n_threads=threads or os.cpu_count() or 2,
                                 chat_format=chat_format, verbose=False)

    # -- requests -------------------------------------------------------------------
    def complete(self, request: dict[str, Any]) -> dict[str, Any]:
        messages, kwargs, tools = self._prepare(request)
        try:
            response = self._llama.create_chat_completion(messages=messages, stream=False, **kwargs)
        except ValueError as e:
            raise self._too_long(e) from None
        choice = response["choices"][0]
        content = THINK.sub("", choice["message"].get("content") or "")
        message: dict[str, Any] = {"role": "assistant", "content": content}
        finish = choice.get("finish_reason") or "stop"
        if tools is not None:
            message, finish = self._tool_answer(content, finish, tools.get("answer_is_json", False))
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.name,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": response.get("usage") or {},
        }

    def stream(self, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
        messages, kwargs, _ = self._prepare(request)
        cid = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        try:
            for chunk in self._llama.create_chat_completion(messages=messages, stream=True, **kwargs):
                yield {**chunk, "id": cid, "model": self.name, "object": "chat.completion.chunk"}
        except ValueError as e:  # raised before the first token: nothing was sent yet
            raise self._too_long(e) from None

    def count_tokens(self, request: dict[str, Any]) -> int:
        """The tokens of the prompt the request becomes (the tools' instructions included)."""
        from llama_cpp import llama_chat_format

        messages, _, _ = self._prepare(request, grammar=False)
        name = self.chat_format
        formatter = getattr(llama_chat_format, f"format_{name.replace('-', '_')}", None) or getattr(
            llama_chat_format, f"format_{name.replace('-', '')}", None)
        if formatter is not None:
            rendered = formatter(messages=messages)
            return len(self._llama.tokenize(rendered.prompt.encode("utf-8"), add_bos=not rendered.added_special,
                                            special=True))
        return sum(len(self._llama.tokenize(m["content"].encode("utf-8"), add_bos=False)) + MESSAGE_OVERHEAD
                   for m in messages)

    def _too_long(self, e: ValueError) -> Exception:
        found = TOO_MANY_TOKENS.search(str(e))
        if found is None:
            return e
        return TooLarge(
            f"The conversation takes {found.group(1)} tokens, more than the context of deployment {self.name!r} "
            f"({found.group(2)} tokens): shorten it or start a new one (a model with a larger context reads more)",
            code="CONVERSATION_TOO_LONG",
            details={"deployment": self.name, "tokens": int(found.group(1)), "context": int(found.group(2))},
        )

    # -- shaping the request --------------------------------------------------------------
    def _prepare(self, request: dict[str, Any], *, grammar: bool = True,
                 ) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any] | None]:
        from llama_cpp import llama_grammar
        from llama_cpp.llama_grammar import LlamaGrammar

        messages = request.get("messages")
        if not isinstance(messages, list) or not messages:
            raise Invalid("\"messages\" must be a non-empty list", code="INVALID_REQUEST")
        kwargs: dict[str, Any] = {k: request[k] for k in PASSED if request.get(k) is not None}
        kwargs["max_tokens"] = request.get("max_completion_tokens") or request.get("max_tokens") or DEFAULT_MAX_TOKENS
        schema = _response_schema(request.get("response_format"))
        tools = [t for t in request.get("tools") or [] if t.get("type", "function") == "function"]
        choice = request.get("tool_choice", "auto")
        system = [_text(m.get("content")) for m in messages if m.get("role") in ("system", "developer")]
        shaped: dict[str, Any] | None = None
        if tools and choice != "none":
            if isinstance(choice, dict):
                wanted = choice.get("function", {}).get("name")
                tools = [t for t in tools if t["function"]["name"] == wanted]
                if not tools:
                    raise Invalid(f"tool_choice names {wanted!r}, which is not in tools", code="INVALID_REQUEST")
            system.append(_tools_prompt(tools, schema is not None and schema is not True))
            schema = _tools_schema(tools, required=choice != "auto" and choice is not None, answer=schema)
            shaped = {"answer_is_json": request.get("response_format") is not None}
        if not grammar:
            pass
        elif schema is True:
            kwargs["grammar"] = LlamaGrammar.from_string(llama_grammar.JSON_GBNF, verbose=False)
        elif schema is not None:
            try:
                kwargs["grammar"] = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
            except Exception as e:  # noqa: BLE001 - the converter raises plain exceptions
                raise Invalid(f"The JSON schema cannot be turned into a grammar: {e}", code="INVALID_SCHEMA") from None
        return self._messages(messages, "\n\n".join(s for s in system if s)), kwargs, shaped

    def _messages(self, messages: list[dict[str, Any]], system: str) -> list[dict[str, Any]]:
        names: dict[str, str] = {}
        turns: list[dict[str, Any]] = []
        for m in messages:
            role = m.get("role")
            if role in ("system", "developer"):
                continue
            if role == "assistant" and m.get("tool_calls"):
                calls = []
                for call in m["tool_calls"]:
                    fn = call.get("function", {})
                    names[call.get("id", "")] = fn.get("name", "")
                    try:
                        args = json.loads(fn.get("arguments") or "{}")
                    except ValueError:
                        args = fn.get("arguments")
                    calls.append({"name": fn.get("name"), "arguments": args})
                turns.append({"role": "assistant", "content": json.dumps({"tool_calls": calls}, ensure_ascii=False)})
            elif role == "tool":
                name = m.get("name") or names.get(m.get("tool_call_id", ""), "the tool")
                turns.append({"role": "user", "content": f"Result of {name}:\n{_text(m.get('content'))}"})
            elif role in ("user", "assistant"):
                turns.append({"role": role, "content": _text(m.get("content"))})
        # Formats alternate user/assistant: join consecutive turns of one role.
        joined: list[dict[str, Any]] = []
        for turn in turns:
            if joined and joined[-1]["role"] == turn["role"]:
                joined[-1]["content"] += "\n\n" + turn["content"]
            else:
                joined.append(dict(turn))
        if system:
            if self.chat_format == "gemma":  # Gemma has no system turn: the format would drop it
                if joined and joined[0]["role"] == "user":
                    joined[0]["content"] = f"{system}\n\n{joined[0]['content']}"
                else:
                    joined.insert(0, {"role": "user", "content": system})
            else:
                joined.insert(0, {"role": "system", "content": system})
        return joined

    def _tool_answer(self, content: str, finish: str, answer_is_json: bool) -> tuple[dict[str, Any], str]:
        try:
            data = json.loads(content)
        except ValueError:  # cut by max_tokens: say what we have
            return {"role": "assistant", "content": content}, "length"
        if isinstance(data, dict) and data.get("tool_calls"):
            calls = [
                {
                    "id": f"call_{uuid.uuid4().hex[:12]}",
                    "type": "function",
                    "function": {"name": c["name"], "arguments": json.dumps(c.get("arguments", {}), ensure_ascii=False)},
                }
                for c in data["tool_calls"]
            ]
            return {"role": "assistant", "content": None, "tool_calls": calls}, "tool_calls"
        answer = data.get("content") if isinstance(data, dict) else data
        if answer_is_json or not isinstance(answer, str):
            answer = json.dumps(answer, ensure_ascii=False)
        return {"role": "assistant", "content": answer}, finish


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return str(content)


def _response_schema(response_format: Any) -> dict[str, Any] | bool | None:
    """The JSON schema the answer must follow; True for any JSON; None for free text."""
    if not response_format:
        return None
    kind = response_format.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        return response_format.get("schema") or True
    if kind == "json_schema":
        schema = (response_format.get("json_schema") or {}).get("schema")
        if not isinstance(schema, dict):
            raise Invalid("response_format json_schema needs json_schema.schema (an object)", code="INVALID_REQUEST")
        return schema
    raise Invalid(f"Unknown response_format type {kind!r}", code="INVALID_REQUEST")


def _tools_prompt(tools: list[dict[str, Any]], answer_has_schema: bool) -> str:
    lines = ["You can call these tools:"]
    for tool in tools:
        fn = tool["function"]
        params = json.dumps(fn.get("parameters") or {"type": "object"}, ensure_ascii=False)
        lines.append(f"- {fn['name']}: {fn.get('description', '').strip()} Arguments (JSON schema): {params}")
    lines.append(
        'To call tools, answer only with JSON: {"tool_calls": [{"name": "<tool>", "arguments": {...}}]}. '
        'To answer the user yourself, answer only with JSON: {"content": '
        + ("<the answer in the required JSON shape>" if answer_has_schema else '"<your answer>"')
        + "}."
    )
    return "\n".join(lines)


def _tools_schema(tools: list[dict[str, Any]], *, required: bool, answer: dict[str, Any] | bool | None) -> dict[str, Any]:
    calls = []
    for tool in tools:
        fn = tool["function"]
        params = fn.get("parameters") or {"type": "object"}
        calls.append({"type": "object", "properties": {"name": {"const": fn["name"]}, "arguments": params},
                      "required": ["name", "arguments"]})
    item = calls[0] if len(calls) == 1 else {"anyOf": calls}
    call_branch = {"type": "object", "properties": {"tool_calls": {"type": "array", "items": item, "minItems": 1,
                                                                   "maxItems": 4}},
                   "required": ["tool_calls"]}
    if required:
        return call_branch
    content: dict[str, Any] = answer if isinstance(answer, dict) else ({"type": "object"} if answer else {"type": "string"})
    answer_branch = {"type": "object", "properties": {"content": content}, "required": ["content"]}
    return {"anyOf": [answer_branch, call_branch]}
