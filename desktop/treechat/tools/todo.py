"""todo_create, todo_update and todo_list: the model's plan for a session, kept across turns.

State lives in whatever `TodoPersistence` the caller passes in (one per session), so this
module stays free of the store.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol, cast, get_args

from treechat.tools.base import JSONSchema, Tool, ToolError, ToolResult, object_schema

Status = Literal["pending", "in_progress", "done", "cancelled"]
STATUSES: tuple[Status, ...] = get_args(Status)
_MARKS: dict[Status, str] = {
    "pending": "[ ]", "in_progress": "[~]", "done": "[x]", "cancelled": "[-]",
}

TITLE_MAX_CHARS = 500
NOTES_MAX_CHARS = 2000
MAX_TODOS = 200


@dataclass(frozen=True, slots=True)
class TodoItem:
    id: int
    title: str
    status: Status = "pending"
    notes: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "status": self.status, "notes": self.notes}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TodoItem:
        status = data.get("status", "pending")
        if status not in STATUSES:
            status = "pending"
        return cls(
            id=int(data["id"]),
            title=str(data.get("title", "")),
            status=cast(Status, status),
            notes=str(data.get("notes", "")),
        )

    def render(self) -> str:
        line = f"{_MARKS[self.status]} #{self.id} {self.title}"
        return f"{line} — {self.notes}" if self.notes else line


class TodoPersistence(Protocol):
    """Where one session's todo list is kept between calls (and between runs of the app)."""

    async def load(self) -> Sequence[Mapping[str, Any]]: ...

    async def save(self, items: Sequence[Mapping[str, Any]]) -> None: ...


class MappingTodoPersistence:
    """Keeps the list under one key of a dict-like (a settings table, a plain dict in tests)."""

    def __init__(self, mapping: MutableMapping[str, Any], key: str) -> None:
        self._mapping = mapping
        self._key = key

    async def load(self) -> Sequence[Mapping[str, Any]]:
        value = self._mapping.get(self._key)
        return list(value) if isinstance(value, list | tuple) else []

    async def save(self, items: Sequence[Mapping[str, Any]]) -> None:
        self._mapping[self._key] = [dict(item) for item in items]


class TodoList:
    """One session's todos: loads lazily, saves after every change, one change at a time."""

    def __init__(self, persistence: TodoPersistence) -> None:
        self._persistence = persistence
        self._items: list[TodoItem] | None = None
        self._lock = asyncio.Lock()

    async def items(self) -> tuple[TodoItem, ...]:
        async with self._lock:
            return tuple(await self._loaded())

    async def create(self, title: str, notes: str = "") -> TodoItem:
        title = _clean(title, "title", TITLE_MAX_CHARS, required=True)
        notes = _clean(notes, "notes", NOTES_MAX_CHARS)
        async with self._lock:
            items = await self._loaded()
            if len(items) >= MAX_TODOS:
                raise ToolError(f"the list already holds {MAX_TODOS} todos; update or reuse them")
            item = TodoItem(id=max((t.id for t in items), default=0) + 1, title=title, notes=notes)
            await self._store([*items, item])
            return item

    async def update(
        self,
        todo_id: int,
        *,
        status: str | None = None,
        title: str | None = None,
        notes: str | None = None,
    ) -> TodoItem:
        async with self._lock:
            items = await self._loaded()
            index = next((i for i, t in enumerate(items) if t.id == todo_id), None)
            if index is None:
                known = ", ".join(f"#{t.id}" for t in items) or "none"
                raise ToolError(f"no todo #{todo_id}; existing: {known}")
            item = items[index]
            if status is not None:
                if status not in STATUSES:
                    raise ToolError(f"status must be one of {', '.join(STATUSES)}")
                item = replace(item, status=status)
            if title is not None:
                item = replace(item, title=_clean(title, "title", TITLE_MAX_CHARS, required=True))
            if notes is not None:
                item = replace(item, notes=_clean(notes, "notes", NOTES_MAX_CHARS))
            updated = list(items)
            updated[index] = item
            await self._store(updated)
            return item

    async def _loaded(self) -> list[TodoItem]:
        if self._items is None:
            self._items = [TodoItem.from_dict(raw) for raw in await self._persistence.load()]
        return self._items

    async def _store(self, items: list[TodoItem]) -> None:
        # Persist first: if saving fails the in-memory list must not run ahead of it.
        await self._persistence.save([item.to_dict() for item in items])
        self._items = items


def _clean(value: object, field: str, limit: int, *, required: bool = False) -> str:
    text = str(value or "").strip()
    if required and not text:
        raise ToolError(f"{field} must not be empty")
    if len(text) > limit:
        raise ToolError(f"{field} is longer than {limit} characters")
    return text


def render_todos(items: Sequence[TodoItem]) -> str:
    if not items:
        return "No todos yet."
    done = sum(1 for t in items if t.status in ("done", "cancelled"))
    lines = [f"Todos ({done}/{len(items)} closed):", *(t.render() for t in items)]
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class TodoCreate:
    todos: TodoList
    name: str = "todo_create"
    description: str = (
        "Add a step to your todo list for this conversation. Use it to plan multi-step work; "
        "returns the whole list."
    )

    @property
    def parameters(self) -> JSONSchema:
        return object_schema(
            {
                "title": {"type": "string", "description": "What needs doing, in one line."},
                "notes": {"type": "string", "description": "Optional details."},
            },
            required=["title"],
        )

    async def call(self, args: Mapping[str, Any]) -> ToolResult:
        item = await self.todos.create(args["title"], args.get("notes") or "")
        listing = render_todos(await self.todos.items())
        return ToolResult.success(f"Created todo #{item.id}.\n{listing}")


@dataclass(frozen=True, slots=True)
class TodoUpdate:
    todos: TodoList
    name: str = "todo_update"
    description: str = (
        "Change a todo's status (pending, in_progress, done, cancelled), title or notes. "
        "Returns the whole list."
    )

    @property
    def parameters(self) -> JSONSchema:
        return object_schema(
            {
                "id": {"type": "integer", "description": "The todo's number.", "minimum": 1},
                "status": {"type": "string", "enum": list(STATUSES)},
                "title": {"type": "string"},
                "notes": {"type": "string"},
            },
            required=["id"],
        )

    async def call(self, args: Mapping[str, Any]) -> ToolResult:
        if all(args.get(k) is None for k in ("status", "title", "notes")):
            raise ToolError("give at least one of status, title or notes to change")
        item = await self.todos.update(
            int(args["id"]),
            status=args.get("status"),
            title=args.get("title"),
            notes=args.get("notes"),
        )
        listing = render_todos(await self.todos.items())
        return ToolResult.success(f"Updated todo #{item.id}.\n{listing}")


@dataclass(frozen=True, slots=True)
class TodoListTool:
    todos: TodoList
    name: str = "todo_list"
    description: str = "Show your todo list for this conversation with each item's status."

    @property
    def parameters(self) -> JSONSchema:
        return object_schema({})

    async def call(self, args: Mapping[str, Any]) -> ToolResult:
        return ToolResult.success(render_todos(await self.todos.items()))


def todo_tools(persistence: TodoPersistence) -> tuple[Tool, ...]:
    """The three todo tools sharing one session's list."""
    todos = TodoList(persistence)
    return (TodoCreate(todos), TodoUpdate(todos), TodoListTool(todos))
