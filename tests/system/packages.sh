#!/usr/bin/env bash
# The system packages `make test` needs beyond Python: a Secret Service for the keychain tests
# (dbus, gnome-keyring), Qt's X11/EGL libraries, Xvfb and ImageMagick for the real-window and
# screen-reader tests, and the tools the Linux installers are built with. Installed through
# apt-get when run as root; otherwise the one command to run is printed and make stops.
set -euo pipefail

packages=(
  xvfb xauth openbox xdotool imagemagick dbus dbus-x11 gnome-keyring libsecret-1-0
  at-spi2-core python3-pyatspi
  libegl1 libgl1 libopengl0 libglib2.0-0 libfontconfig1 libfreetype6 libdbus-1-3
  libxkbcommon0 libxkbcommon-x11-0 libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1
  libxcb-image0 libxcb-render-util0 libxcb-xinerama0 libxcb-shape0 libxcb-randr0
  libxcb-xfixes0 libxcb-sync1 libxcb-xkb1 libx11-xcb1 libxrender1 libxi6
  fonts-dejavu-core cmake build-essential dpkg-dev fakeroot
)

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "tests/system/packages.sh: not a Debian-like system; install the equivalents of:" >&2
  echo "  ${packages[*]}" >&2
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing the system packages the tests need: ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  exit 0
fi

echo "The tests need system packages that are not installed. Run this once, then make test:" >&2
echo "  sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
exit 1
