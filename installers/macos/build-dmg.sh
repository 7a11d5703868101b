#!/usr/bin/env bash
# Builds build/installers/Treechat-<version>-macos-<arch>.dmg from the PyInstaller app bundle
# (build/dist/Treechat.app, written by packaging/treechat.spec on macOS).
#
# Signing and notarization run only when configured, and are skipped with a notice otherwise
# (the .dmg still works; Gatekeeper then asks the user to confirm the first launch):
#   MACOS_SIGN_IDENTITY   a "Developer ID Application: Name (TEAMID)" identity in the keychain.
#                         The .app is signed inside out with the hardened runtime and
#                         installers/macos/entitlements.plist, then the .dmg itself.
#                         (In CI, import the .p12 into a temporary keychain first, e.g. with
#                         `security create-keychain` / `security import` / `security
#                         set-key-partition-list`.)
#   MACOS_NOTARY_PROFILE  a notarytool keychain profile, created once with
#                         `xcrun notarytool store-credentials PROFILE --apple-id ... --team-id
#                         ... --password <app-specific password>`. The .dmg is submitted, waited
#                         for, and the ticket stapled so it verifies offline.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
APP=${APP:-$ROOT/build/dist/Treechat.app}
OUT=${OUT:-$ROOT/build/installers}
VERSION=$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' "$ROOT/desktop/treechat/__init__.py")
ARCH=$(uname -m)
DMG="$OUT/Treechat-${VERSION}-macos-${ARCH}.dmg"
IDENTITY=${MACOS_SIGN_IDENTITY:-}
NOTARY_PROFILE=${MACOS_NOTARY_PROFILE:-}

[ -d "$APP" ] || { echo "build-dmg.sh: no app bundle at $APP (run pyinstaller first)" >&2; exit 1; }
mkdir -p "$OUT"
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
cp -R "$APP" "$STAGE/Treechat.app"
ln -s /Applications "$STAGE/Applications"

if [ -n "$IDENTITY" ]; then
  echo "build-dmg.sh: signing with $IDENTITY"
  # Inside out: every library and the executable, then the bundle.
  find "$STAGE/Treechat.app/Contents" -type f \( -name '*.dylib' -o -name '*.so' \) -print0 |
    xargs -0 codesign --force --timestamp --options runtime --sign "$IDENTITY"
  codesign --force --timestamp --options runtime \
    --entitlements "$ROOT/installers/macos/entitlements.plist" \
    --sign "$IDENTITY" "$STAGE/Treechat.app"
  codesign --verify --deep --strict --verbose=2 "$STAGE/Treechat.app"
else
  echo "build-dmg.sh: MACOS_SIGN_IDENTITY not set: the app is not signed (skipping signing)"
fi

rm -f "$DMG"
hdiutil create -volname "Treechat $VERSION" -srcfolder "$STAGE" -fs HFS+ -format UDZO \
  -imagekey zlib-level=9 -ov "$DMG" >/dev/null

if [ -n "$IDENTITY" ]; then
  codesign --force --timestamp --sign "$IDENTITY" "$DMG"
fi
if [ -n "$IDENTITY" ] && [ -n "$NOTARY_PROFILE" ]; then
  echo "build-dmg.sh: notarizing with profile $NOTARY_PROFILE"
  xcrun notarytool submit "$DMG" --keychain-profile "$NOTARY_PROFILE" --wait
  xcrun stapler staple "$DMG"
  spctl --assess --type open --context context:primary-signature --verbose=2 "$DMG"
else
  echo "build-dmg.sh: MACOS_NOTARY_PROFILE (and an identity) not set: skipping notarization"
fi
echo "$DMG"
