#!/usr/bin/env bash
# Builds (npm run build: the native addon's prebuilt copy in prebuilds/, then dist/) only
# when something it is built from changed since the last build, or an output is missing.
# Run by scripts/setup.sh and by `npm pack` (prepack), so that a pack after a build packs
# what is there instead of building it all again.
set -euo pipefail
cd "$(dirname "$0")/.."

stamp=dist/.built
sources=(src native binding.gyp package.json package-lock.json tsconfig.json tsconfig.build.json)
if [ -f "$stamp" ] && compgen -G 'prebuilds/*/*.node' >/dev/null &&
  [ -z "$(find "${sources[@]}" -newer "$stamp" -print -quit)" ]; then
  printf 'build: built already (nothing changed since %s)\n' "$stamp" >&2
  exit 0
fi
printf 'build: building\n' >&2
npm run --silent build
touch "$stamp"
