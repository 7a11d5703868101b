#!/usr/bin/env bash
# Packages the PyInstaller onedir (build/dist/treechat) for Linux:
#   build/installers/treechat_<version>_<arch>.deb   binary in /opt/treechat, /usr/bin/treechat,
#                                                    .desktop entry, hicolor icons, Depends
#                                                    computed from the bundle's ELF files
#   build/installers/treechat-<version>-linux-<arch>.tar.gz   the same app, unpack-and-run
# Usage: build-deb.sh [deb] [tar]   (default: both). Env: DIST, ICONS, OUT, MAINTAINER, and
# DEB_COMPRESSION (xz, the default for releases; zstd, gzip or none for quicker local builds).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DIST=${DIST:-$ROOT/build/dist/treechat}
ICONS=${ICONS:-$ROOT/build/icons}
OUT=${OUT:-$ROOT/build/installers}
MAINTAINER=${MAINTAINER:-Treechat maintainers <maintainers@treechat.invalid>}
COMPRESSION=${DEB_COMPRESSION:-xz}
TARGETS=${*:-deb tar}

VERSION=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' "$ROOT/desktop/treechat/__init__.py")
ARCH=$(dpkg --print-architecture 2>/dev/null || uname -m)
[ -n "$VERSION" ] || { echo "build-deb.sh: no __version__ in desktop/treechat/__init__.py" >&2; exit 1; }
[ -x "$DIST/treechat" ] || { echo "build-deb.sh: no frozen app at $DIST (run pyinstaller first)" >&2; exit 1; }
[ -d "$ICONS/hicolor" ] || { echo "build-deb.sh: no icons at $ICONS (python packaging/icons.py)" >&2; exit 1; }
mkdir -p "$OUT"
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT

elf_files() {
  # Every ELF file in the tree (executables, shared libraries, Python extensions, Qt plugins).
  find "$1" -type f -print0 | while IFS= read -r -d '' f; do
    if [ "$(head -c4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ]; then printf '%s\n' "$f"; fi
  done
}

compute_depends() {
  # dpkg-shlibdeps maps each library the bundle links to, and does not carry, to the package
  # that provides it (with the minimum version the symbols need). It wants a source tree.
  local pkgroot=$1 work=$STAGE/shlibdeps
  mkdir -p "$work/debian"
  printf 'Source: treechat\n\nPackage: treechat\nArchitecture: any\n' > "$work/debian/control"
  local dirs=() d
  while IFS= read -r d; do dirs+=("-l$d"); done < <(
    elf_files "$pkgroot/opt/treechat" | xargs -r -n1 dirname | sort -u)
  elf_files "$pkgroot/opt/treechat" > "$work/files"
  (cd "$work" && xargs -a files -d '\n' dpkg-shlibdeps -O --ignore-missing-info \
      "${dirs[@]}" -S"$pkgroot" 2>"$work/warnings") \
    | sed -n 's/^shlibs:Depends=//p'
}

build_deb() {
  local pkg=$STAGE/deb deb="$OUT/treechat_${VERSION}_${ARCH}.deb"
  mkdir -p "$pkg/DEBIAN" "$pkg/opt" "$pkg/usr/bin" "$pkg/usr/share/applications" \
    "$pkg/usr/share/icons" "$pkg/usr/share/doc/treechat"
  cp -a "$DIST" "$pkg/opt/treechat"
  ln -s /opt/treechat/treechat "$pkg/usr/bin/treechat"
  install -m644 "$ROOT/resources/treechat.desktop" "$pkg/usr/share/applications/treechat.desktop"
  cp -a "$ICONS/hicolor" "$pkg/usr/share/icons/hicolor"
  printf 'Treechat %s, an offline-first chat client. License: MIT.\n' "$VERSION" \
    > "$pkg/usr/share/doc/treechat/README"
  local depends
  depends=$(compute_depends "$pkg")
  [ -n "$depends" ] || { echo "build-deb.sh: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
  cat > "$pkg/DEBIAN/control" <<CONTROL
Package: treechat
Version: $VERSION
Architecture: $ARCH
Maintainer: $MAINTAINER
Installed-Size: $(du -sk --exclude=DEBIAN "$pkg" | cut -f1)
Depends: $depends
Recommends: fonts-dejavu-core | fonts-liberation2, xdg-desktop-portal
Section: net
Priority: optional
Description: chat client for language models where a conversation is a graph
 Treechat is an offline-first desktop chat client. Retries, edits and forks are
 branches you switch between without re-running anything, and what the model is
 sent on each call is an inspectable, token-budgeted snapshot.
 .
 A small model (SmolLM2 135M) is bundled, so it works without a network or keys.
CONTROL
  # Icons and the menu entry are picked up by the hicolor and desktop-database triggers.
  find "$pkg" -type d -exec chmod 755 {} +
  local threads=()
  # Older dpkg (before 1.21.9) compresses on one thread and has no such option.
  if dpkg-deb --help | grep -q -- --threads-max; then threads=(--threads-max="$(nproc)"); fi
  dpkg-deb --root-owner-group -Z"$COMPRESSION" "${threads[@]}" --build "$pkg" "$deb" >/dev/null
  echo "$deb"
}

build_tar() {
  local name tarball
  name="treechat-${VERSION}-linux-$(uname -m)"
  tarball="$OUT/$name.tar.gz"
  mkdir -p "$STAGE/tar"
  cp -a "$DIST" "$STAGE/tar/$name"
  mkdir -p "$STAGE/tar/$name/share/applications" "$STAGE/tar/$name/share/icons"
  install -m644 "$ROOT/resources/treechat.desktop" "$STAGE/tar/$name/share/applications/"
  cp -a "$ICONS/hicolor" "$STAGE/tar/$name/share/icons/hicolor"
  tar -C "$STAGE/tar" --owner=0 --group=0 -czf "$tarball" "$name"
  echo "$tarball"
}

for target in $TARGETS; do
  case $target in
    deb) build_deb ;;
    tar) build_tar ;;
    *) echo "build-deb.sh: unknown target $target (deb, tar)" >&2; exit 2 ;;
  esac
done
