#!/bin/sh
# fetch-release.sh DEST — install the prebuilt bazinga binary that matches the
# action's own ref and the runner's platform, verified against the release's
# sha256 checksums file. POSIX sh; needs only curl, tar and sha256sum (or
# shasum / openssl), which every GitHub-hosted runner has.
#
# Exit status (action.yml branches on it):
#   0  DEST is the verified release binary
#   3  no prebuilt release applies or it could not be downloaded: build from source
#   1  the release is wrong (checksum or version mismatch): a hard error, never a
#      fallback, because a tampered or mislabelled binary must not run silently
#   2  usage error
#
# Environment:
#   BAZINGA_ACTION_REF         the action's ref (github.action_ref), e.g. v1.2.3
#   BAZINGA_ACTION_REPOSITORY  owner/name of the action (github.action_repository)
#   BAZINGA_RELEASE_BASE_URL   overrides <server>/<owner>/<name>/releases/download;
#                              assets are fetched from <base>/<tag>/<asset>
#   GITHUB_SERVER_URL          the GitHub (Enterprise) server, default https://github.com
#   RUNNER_OS, RUNNER_ARCH     the runner's platform (uname is used outside Actions)
set -u

# The asset names follow .goreleaser.yaml (archives.name_template and
# checksum.name_template); scripts/release_test.go checks that they agree.
project=bazinga

annotate() { # level message: a workflow annotation on Actions, plain text elsewhere
	if [ "${GITHUB_ACTIONS:-}" = true ]; then
		printf '::%s title=bazinga binary::%s\n' "$1" "$2" >&2
	else
		printf 'bazinga binary: %s: %s\n' "$1" "$2" >&2
	fi
}

fallback() { # the prebuilt path does not apply; the caller builds from source
	annotate notice "$1; building bazinga from source"
	exit 3
}

fail() {
	annotate error "$1"
	exit 1
}

if [ $# -ne 1 ] || [ -z "$1" ]; then
	echo "usage: fetch-release.sh DEST" >&2
	exit 2
fi
dest=$1

ref=${BAZINGA_ACTION_REF:-}
# Only an exact release tag names a binary built from exactly this source; a
# branch, a sha or a moving major tag (v1) does not, so those build instead.
case $ref in
'') fallback "the action's ref is unknown" ;;
esac
if ! printf '%s\n' "$ref" | grep -Eq '^v[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.+-]+)?$'; then
	fallback "the action's ref '$ref' is not a release tag (vX.Y.Z)"
fi
version=${ref#v}

os=${RUNNER_OS:-$(uname -s)}
arch=${RUNNER_ARCH:-$(uname -m)}
case $os in
Linux | linux) goos=linux ;;
macOS | Darwin | darwin) goos=darwin ;;
*) fallback "no prebuilt release for OS '$os'" ;;
esac
case $arch in
X64 | x86_64 | amd64) goarch=amd64 ;;
ARM64 | arm64 | aarch64) goarch=arm64 ;;
*) fallback "no prebuilt release for architecture '$arch'" ;;
esac

archive="${project}_${version}_${goos}_${goarch}.tar.gz"
sums="${project}_${version}_checksums.txt"

if [ -n "${BAZINGA_RELEASE_BASE_URL:-}" ]; then
	base=${BAZINGA_RELEASE_BASE_URL%/}
else
	repo=${BAZINGA_ACTION_REPOSITORY:-}
	[ -n "$repo" ] || fallback "the action's repository is unknown"
	base="${GITHUB_SERVER_URL:-https://github.com}/$repo/releases/download"
fi
url="$base/$ref"

for tool in curl tar; do
	command -v "$tool" >/dev/null 2>&1 || fallback "$tool is not installed"
done
if command -v sha256sum >/dev/null 2>&1; then
	sha256() { sha256sum "$1" | cut -d' ' -f1; }
elif command -v shasum >/dev/null 2>&1; then
	sha256() { shasum -a 256 "$1" | cut -d' ' -f1; }
elif command -v openssl >/dev/null 2>&1; then
	sha256() { openssl dgst -sha256 -r "$1" | cut -d' ' -f1; }
else
	fallback "no sha256 tool (sha256sum, shasum or openssl) to verify the release"
fi

tmp=$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/bazinga-release.XXXXXX") || fail "cannot create a temporary directory"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

# get NAME: download $url/NAME into $tmp/NAME; a missing asset or a failed
# download returns non-zero (the caller falls back), after saying which.
get() {
	code=$(curl -sSL --proto '=https,http' --retry 2 --connect-timeout 10 --max-time 300 \
		-o "$tmp/$1" -w '%{http_code}' "$url/$1") || {
		annotate warning "downloading $url/$1 failed (curl exit $?)"
		return 1
	}
	if [ "$code" != 200 ]; then
		annotate notice "$url/$1: HTTP $code"
		return 1
	fi
}

get "$sums" || fallback "no release $ref with $sums"
want=$(awk -v f="$archive" '$2 == f || $2 == "*" f { print $1; exit }' "$tmp/$sums")
[ -n "$want" ] || fallback "release $ref lists no $archive in $sums"
printf '%s\n' "$want" | grep -Eq '^[0-9a-f]{64}$' || fail "release $ref: $sums has a malformed sha256 for $archive: '$want'"
get "$archive" || fallback "could not download $archive from release $ref"

got=$(sha256 "$tmp/$archive")
if [ "$got" != "$want" ]; then
	fail "checksum mismatch for $archive from $url: sha256 $got, but $sums says $want; refusing to run it"
fi

mkdir "$tmp/x" && tar -xzf "$tmp/$archive" -C "$tmp/x" "$project" 2>"$tmp/tar.err" ||
	fail "release $ref: $archive (checksum verified) has no $project binary: $(cat "$tmp/tar.err")"
chmod 0755 "$tmp/x/$project"
# The checksum proves the bytes are the release's; the version proves the
# release is the one for this ref (a mislabelled upload must not run).
out=$("$tmp/x/$project" version 2>&1) ||
	fail "release $ref: the $goos/$goarch binary of $archive (checksum verified) does not run here: $out"
said=$(printf '%s\n' "$out" | head -n 1)
[ "$said" = "$project $version" ] ||
	fail "release $ref: $archive (checksum verified) holds a binary that says '$said', want '$project $version'"

mkdir -p "$(dirname "$dest")" || fail "cannot create the directory of $dest"
# Copy next to DEST and rename, so DEST is never a half-written binary.
cp "$tmp/x/$project" "$dest.tmp.$$" && mv -f "$dest.tmp.$$" "$dest" || {
	rm -f "$dest.tmp.$$"
	fail "cannot install the binary at $dest"
}
echo "bazinga $version ($goos/$goarch) from $url/$archive, sha256 $got verified" >&2
exit 0
