#!/usr/bin/env bash
# release-check.sh — check that distlock still packages and that the package works.
#
#   scripts/release-check.sh            # fail (exit 1) if goreleaser is not found
#   CI=true scripts/release-check.sh    # install the pinned goreleaser first when it is absent
#   scripts/release-check.sh --install  # the same outside CI
#
# Nothing is skipped: without goreleaser the packaging is not checked, and
# that is a failure, not a pass. goreleaser is looked for in build/tools/bin
# (where --install and CI put it), then on PATH. The pinned version is
# GORELEASER_VERSION below (override with the environment variable of that
# name); it is a Go module, installed with
#   GOBIN=$PWD/build/tools/bin go install github.com/goreleaser/goreleaser/v2@VERSION
# (v2.16.0 needs Go >= 1.26.3, v2.17.0 Go >= 1.26.4, v2.18 Go 1.27). --require is accepted
# and changes nothing (the check is always strict).
#
# Steps:
#   1. goreleaser check                 (.goreleaser.yaml is valid, nothing deprecated)
#   2. a snapshot release for linux/amd64 only (a copy of .goreleaser.yaml with
#      the build targets narrowed), into build/release-check/dist
#   3. dpkg -x the .deb into a scratch root and run its /usr/bin/distlock --version;
#      check the man pages and completions it installs (bash -n the bash one)
#
# Needs: go, git, dpkg-deb, bash (and goreleaser, or network access to the Go
# module proxy to install it). See docs/RELEASING.md.
set -euo pipefail

GORELEASER_VERSION=${GORELEASER_VERSION:-v2.16.0}
install=0
[ "${CI:-}" = true ] && install=1
for arg in "$@"; do
	case $arg in
	--require) ;;
	--install) install=1 ;;
	-h | --help)
		sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
		exit 0
		;;
	*)
		echo "release-check: unknown argument: $arg (try --help)" >&2
		exit 64
		;;
	esac
done

say() { printf 'release-check: %s\n' "$*"; }
die() {
	printf 'release-check: FAIL: %s\n' "$*" >&2
	exit 1
}

cd "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"

tools=$PWD/build/tools/bin
export PATH="$tools:$PATH"
if ! command -v goreleaser >/dev/null 2>&1; then
	if [ "$install" != 1 ]; then
		die "goreleaser is not found, so the packaging cannot be checked: run with --install (or CI=true) to install $GORELEASER_VERSION into $tools, or: GOBIN=$tools go install github.com/goreleaser/goreleaser/v2@$GORELEASER_VERSION"
	fi
	say "installing goreleaser $GORELEASER_VERSION into $tools (go install; a few minutes on 2 cores)"
	start=$(date +%s)
	GOBIN=$tools GOFLAGS= go install "github.com/goreleaser/goreleaser/v2@$GORELEASER_VERSION" ||
		die "go install github.com/goreleaser/goreleaser/v2@$GORELEASER_VERSION failed"
	say "installed in $(($(date +%s) - start))s"
	command -v goreleaser >/dev/null 2>&1 || die "goreleaser is still not found after installing it into $tools"
fi
command -v dpkg-deb >/dev/null 2>&1 || die "dpkg-deb is not on PATH (needed to unpack the .deb)"

say "using $(goreleaser --version 2>/dev/null | grep -m1 -i '^GitVersion' || echo goreleaser)"

# goreleaser takes the commit, commit date and tag from git only if
# `git ls-remote --get-url` works; in a checkout without a remote it silently
# stamps no commit. Give this run (only: environment, not .git/config) a
# remote pointing at the checkout itself.
if ! git ls-remote --get-url >/dev/null 2>&1; then
	say "no git remote: pointing remote.origin.url at $PWD for this run only"
	n=${GIT_CONFIG_COUNT:-0}
	export "GIT_CONFIG_KEY_$n=remote.origin.url" "GIT_CONFIG_VALUE_$n=$PWD"
	export GIT_CONFIG_COUNT=$((n + 1))
fi

# Archives ship these; goreleaser fails on a missing one with a glob error.
for f in README.md LICENSE; do
	[ -f "$f" ] || die "$f is missing; every release archive ships it"
done

# 1. The real config must pass as it is.
say "goreleaser check"
goreleaser check

# 2. Snapshot release for linux/amd64 only. goreleaser (OSS) has no
#    single-target release, so narrow goos/goarch in a copy of the config.
work=build/release-check
rm -rf "$work"
mkdir -p "$work"
cfg=$work/goreleaser.yaml
awk '
	skipping && /^      - / { next }
	{ skipping = 0 }
	/^    goos:[[:space:]]*$/   { print; print "      - linux"; skipping = 1; next }
	/^    goarch:[[:space:]]*$/ { print; print "      - amd64"; skipping = 1; next }
	/^dist:/ { next }
	{ print }
	END { print "dist: '"$work"'/dist" }
' .goreleaser.yaml >"$cfg"
grep -q '^      - darwin' "$cfg" && die "narrowing the targets failed: $cfg still builds darwin"
grep -q '^      - arm64' "$cfg" && die "narrowing the targets failed: $cfg still builds arm64"
goreleaser check -f "$cfg"

say "goreleaser release --snapshot --clean (linux/amd64 only)"
goreleaser release --snapshot --clean -f "$cfg"
dist=$work/dist

shopt -s nullglob
debs=("$dist"/*_amd64.deb)
rpms=("$dist"/*.x86_64.rpm)
tars=("$dist"/*_linux_amd64.tar.gz)
shopt -u nullglob
[ "${#debs[@]}" = 1 ] || die "expected one amd64 .deb in $dist, found ${#debs[@]}"
[ "${#rpms[@]}" = 1 ] || die "expected one x86_64 .rpm in $dist, found ${#rpms[@]}"
[ "${#tars[@]}" = 1 ] || die "expected one linux_amd64 .tar.gz in $dist, found ${#tars[@]}"
[ -s "$dist/checksums.txt" ] || die "no $dist/checksums.txt"
version=$(sed -n 's/.*"version": *"\([^"]*\)".*/\1/p' "$dist/metadata.json")
version=${version%%$'\n'*}
[ -n "$version" ] || die "no version in $dist/metadata.json"

# The archive holds the binary, LICENSE, man pages and completions.
listing=$(tar -tzf "${tars[0]}")
for want in /distlock /LICENSE /man/man1/distlock.1 /completions/distlock.bash /completions/_distlock /completions/distlock.fish; do
	grep -q -- "$want\$" <<<"$listing" || die "${tars[0]} lacks *$want"
done

# 3. Install the .deb into a scratch root and run it from there.
root=$(mktemp -d "${TMPDIR:-/tmp}/distlock-deb.XXXXXX")
trap 'rm -rf "$root"' EXIT
say "dpkg -x ${debs[0]} $root"
dpkg-deb -x "${debs[0]}" "$root"
for f in usr/bin/distlock \
	usr/share/man/man1/distlock.1.gz \
	usr/share/bash-completion/completions/distlock \
	usr/share/zsh/vendor-completions/_distlock \
	usr/share/fish/vendor_completions.d/distlock.fish \
	usr/share/doc/distlock/copyright; do
	[ -e "$root/$f" ] || die "the .deb does not install /$f"
done
bash -n "$root/usr/share/bash-completion/completions/distlock" ||
	die "the packaged bash completion does not parse (bash -n)"

out=$("$root/usr/bin/distlock" --version) || die "$root/usr/bin/distlock --version failed"
say "installed binary says: $out"
case $out in
"distlock $version ("*"commit "*", built "*) ;;
*) die "expected 'distlock $version (commit ..., built ...)', got: $out" ;;
esac
out2=$("$root/usr/bin/distlock" version) || die "$root/usr/bin/distlock version failed"
[ "$out2" = "$out" ] || die "'distlock version' ($out2) differs from --version ($out)"

say "OK: $version; artefacts in $dist:"
ls -l "${tars[0]}" "${debs[0]}" "${rpms[0]}" "$dist/checksums.txt"
