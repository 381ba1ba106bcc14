"""Checks the Python interop clients share: failures with a message, error descriptions,
expected JSON-RPC errors, and reading tool results and the related-task _meta."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

import mcp.types as types
from mcp.shared.exceptions import McpError

RELATED_TASK = "io.modelcontextprotocol/related-task"


class CheckFailure(Exception):
    pass


def check(cond: Any, message: str) -> None:
    if not cond:
        raise CheckFailure(message)


def eq(actual: Any, expected: Any, what: str) -> None:
    check(actual == expected, f"{what}: expected {expected!r}, got {actual!r}")


def describe(err: BaseException) -> str:
    if isinstance(err, McpError):
        text = f"McpError code={err.error.code} message={err.error.message!r}"
    else:
        text = f"{type(err).__name__}: {err}"
    text = " ".join(text.split())
    return text if len(text) <= 400 else text[:400] + "..."


async def expect_error(awaitable: Awaitable[Any], code: int, what: str) -> McpError:
    try:
        result = await awaitable
    except McpError as err:
        eq(err.error.code, code, f"{what}: error code")
        return err
    except Exception as err:  # noqa: BLE001
        raise CheckFailure(f"{what}: expected McpError {code}, got {describe(err)}") from err
    raise CheckFailure(f"{what}: expected JSON-RPC error {code}, got result {result!r}")


def text_of(result: types.CallToolResult) -> str | None:
    for block in result.content:
        if isinstance(block, types.TextContent):
            return block.text
    return None


def related_task_id(meta: Any) -> str | None:
    """taskId under _meta["io.modelcontextprotocol/related-task"] (dict or pydantic Meta)."""
    if meta is None:
        return None
    if not isinstance(meta, dict):
        meta = meta.model_dump(by_alias=True, exclude_none=True)
    value = meta.get(RELATED_TASK)
    return value.get("taskId") if isinstance(value, dict) else None
