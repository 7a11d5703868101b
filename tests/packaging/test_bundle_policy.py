"""What the spec keeps and drops: Qt plugins by platform, Qt libraries nothing links to any
more, links left dangling, Qt translations; and the version read from the package."""

from __future__ import annotations

from pathlib import Path

from tests.packaging.conftest import ROOT, load_packaging_module

policy = load_packaging_module("bundle_policy")

PLUGINS = "PySide6/Qt/plugins"
LIB = "PySide6/Qt/lib"


def test_only_the_shipped_platform_plugins_are_kept() -> None:
    assert policy.keep_qt_plugin(f"{PLUGINS}/platforms/libqxcb.so")
    assert policy.keep_qt_plugin(f"{PLUGINS}/platforms/libqoffscreen.so")
    assert policy.keep_qt_plugin(f"{PLUGINS}/iconengines/libqsvgicon.so")
    for dropped in ("platforms/libqwayland.so", "platforms/libqeglfs.so",
                    "platforms/libqvnc.so", "platformthemes/libqgtk3.so",
                    "imageformats/libqpdf.so", "egldeviceintegrations/libqeglfs-kms.so",
                    "wayland-shell-integration/libxdg-shell.so",
                    "platforminputcontexts/libqtvirtualkeyboardplugin.so"):
        assert not policy.keep_qt_plugin(f"{PLUGINS}/{dropped}"), dropped
    # anything that is not a Qt plugin is left alone
    assert policy.keep_qt_plugin("llama_cpp/lib/libllama.so")


def test_qt_libraries_are_pruned_to_what_is_still_linked() -> None:
    links = {
        "/src/QtWidgets.abi3.so": ["libQt6Widgets.so.6", "libc.so.6"],
        "/src/libQt6Widgets.so.6": ["libQt6Gui.so.6"],
        "/src/libQt6Gui.so.6": ["libQt6Core.so.6"],
        "/src/libQt6Core.so.6": ["libicuuc.so.73"],
        "/src/libqxcb.so": ["libQt6XcbQpa.so.6"],
        "/src/libQt6XcbQpa.so.6": ["libQt6Gui.so.6"],
        "/src/libQt6WaylandClient.so.6": ["libQt6Gui.so.6"],
        "/src/libQt6Pdf.so.6": ["libQt6Core.so.6"],
    }
    entries = [
        ("PySide6/QtWidgets.abi3.so", "/src/QtWidgets.abi3.so", "EXTENSION"),
        (f"{PLUGINS}/platforms/libqxcb.so", "/src/libqxcb.so", "BINARY"),
        *((f"{LIB}/{n}", f"/src/{n}", "BINARY") for n in (
            "libQt6Widgets.so.6", "libQt6Gui.so.6", "libQt6Core.so.6", "libQt6XcbQpa.so.6",
            "libQt6WaylandClient.so.6", "libQt6Pdf.so.6", "libicuuc.so.73")),
    ]
    kept = {dest for dest, _, _ in policy.prune_qt_libraries(entries, lambda s: links.get(s, []))}

    assert f"{LIB}/libQt6XcbQpa.so.6" in kept
    assert f"{LIB}/libQt6Core.so.6" in kept
    assert f"{LIB}/libicuuc.so.73" in kept  # not a Qt library: never pruned
    assert f"{LIB}/libQt6WaylandClient.so.6" not in kept
    assert f"{LIB}/libQt6Pdf.so.6" not in kept


def test_links_to_dropped_files_are_dropped_with_them() -> None:
    binaries = [
        ("PySide6/QtCore.abi3.so", "/src/QtCore.abi3.so", "EXTENSION"),
        (f"{LIB}/libQt6Core.so.6", "/src/libQt6Core.so.6", "BINARY"),
        (f"{LIB}/libQt6Pdf.so.6", "/src/libQt6Pdf.so.6", "BINARY"),
    ]
    links = {"/src/QtCore.abi3.so": ["libQt6Core.so.6"]}
    datas = [
        ("libQt6Core.so.6", f"{LIB}/libQt6Core.so.6", "SYMLINK"),
        ("libQt6Pdf.so.6", f"{LIB}/libQt6Pdf.so.6", "SYMLINK"),
        (f"{PLUGINS}/../translations/qtbase_de.qm", "/src/qtbase_de.qm", "DATA"),
    ]
    kept_binaries, kept = policy.filter_bundle(binaries, datas, lambda s: links.get(s, []))

    assert f"{LIB}/libQt6Pdf.so.6" not in [d for d, _, _ in kept_binaries]
    names = [d for d, _, _ in kept]
    assert "libQt6Core.so.6" in names
    assert "libQt6Pdf.so.6" not in names


def test_only_qt_base_translations_are_kept() -> None:
    assert policy.keep_data("PySide6/Qt/translations/qtbase_fr.qm")
    assert not policy.keep_data("PySide6/Qt/translations/qtdeclarative_fr.qm")
    assert not policy.keep_data("PySide6/Qt/translations/qtwebengine_fr.qm")
    assert policy.keep_data("litellm/model_prices_and_context_window_backup.json")


def test_cloud_sdks_and_qt_quick_are_excluded_but_not_what_runs() -> None:
    excluded = set(policy.EXCLUDED_MODULES)
    assert {"boto3", "botocore", "google", "litellm.proxy.proxy_server", "PySide6.QtQuick",
            "PySide6.QtWebEngineCore", "PySide6.QtPdf", "PySide6.Qt3DCore"} <= excluded

    def is_excluded(module: str) -> bool:
        parts = module.split(".")
        return any(".".join(parts[:i]) in excluded for i in range(1, len(parts) + 1))

    # what the app imports at run time, including the litellm.proxy modules that its client
    # code path uses
    for needed in ("litellm", "litellm.proxy._types", "litellm.proxy.spend_tracking.savings",
                   "litellm.proxy.common_utils.timezone_utils", "PySide6.QtWidgets",
                   "PySide6.QtGui", "PySide6.QtCore", "PySide6.QtNetwork", "PySide6.QtSvg",
                   "duckdb", "tiktoken", "tiktoken_ext.openai_public", "llama_cpp", "numpy",
                   "qasync", "keyring", "httpx", "treechat.providers.local.bundled_server.main"):
        assert not is_excluded(needed), needed


def test_version_is_read_from_the_package(tmp_path: Path) -> None:
    from treechat import __version__

    assert policy.read_version(str(ROOT / "desktop" / "treechat" / "__init__.py")) == __version__
    bad = tmp_path / "__init__.py"
    bad.write_text('"""no version here"""\n')
    try:
        policy.read_version(str(bad))
    except ValueError as exc:
        assert "no __version__" in str(exc)
    else:
        raise AssertionError("a file without __version__ was accepted")


def test_windows_import_names_match_whatever_their_case() -> None:
    entries = [
        ("PySide6/QtCore.pyd", "C:/src/QtCore.pyd", "EXTENSION"),
        ("PySide6/Qt6Core.dll", "C:/src/Qt6Core.dll", "BINARY"),
        ("PySide6/Qt6Pdf.dll", "C:/src/Qt6Pdf.dll", "BINARY"),
        ("PySide6/plugins/platforms/qwindows.dll", "C:/src/qwindows.dll", "BINARY"),
    ]
    links = {"C:/src/QtCore.pyd": ["QT6CORE.DLL", "KERNEL32.dll"]}
    kept = {d for d, _, _ in policy.prune_qt_libraries(entries, lambda s: links.get(s, []))}

    assert "PySide6/Qt6Core.dll" in kept
    assert "PySide6/Qt6Pdf.dll" not in kept
