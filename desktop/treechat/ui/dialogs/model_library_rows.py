"""What the Local models list shows: one `Row` per model, and the wording of its columns and
of a download's progress."""

from __future__ import annotations

from dataclasses import dataclass

from ...services.models.model_library import BundledModel, InstalledModel, Progress, size_text

SHIPPED = "shipped with Treechat, works offline"
IN_USE = "  · in use"


@dataclass(frozen=True)
class Row:
    """What one line of the list stands for."""

    repo: str
    file: str
    title: str
    installed_name: str | None = None  # set when the model is on disk
    partial: bool = False
    window: int = 0  # the window it would run with (on disk only)
    trained: int = 0  # its trained context length, the most the window can be
    bundled: bool = False  # the model shipped with the app: always there, never removed
    running: bool = False  # loaded on this computer now

    @property
    def on_disk(self) -> bool:
        return self.bundled or self.installed_name is not None


def progress_text(p: Progress) -> str:
    left = ""
    if p.seconds_left is not None:
        secs = int(p.seconds_left)
        left = f" · {secs // 60} min {secs % 60:02d} s left" if secs >= 60 else f" · {secs} s left"
    speed = f"{p.bytes_per_second / 1e6:.1f} MB/s"
    return f"{size_text(p.done)} of {size_text(p.total)} · {speed}{left}"


def bundled_row(model: BundledModel) -> tuple[Row, list[str]]:
    """The bundled model's line: its name as the picker gives it, marked as shipped."""
    note = IN_USE if model.running else ""
    row = Row("", model.file, model.title, None, False, model.window, model.window,
              bundled=True, running=model.running)
    return row, [f"{model.title}{note}\n{SHIPPED}", size_text(model.size),
                 f"window {model.window:,}", model.license]


def installed_row(model: InstalledModel, window: int, running: bool) -> tuple[Row, list[str]]:
    """A downloaded model (or one added from disk) that is not among the recommended."""
    where = model.repo or "added from disk"
    note = IN_USE if running else ""
    row = Row(model.repo, model.file, model.name, model.name, False, window,
              model.context_length or 0, running=running)
    return row, [f"{model.name}{note}\n{where}", size_text(model.size), f"window {window:,}", ""]
