#!/bin/sh
# fetch-release.sh DEST — install the prebuilt bazinga binary that matches the
# action's own ref and the runner's platform, verified against the release's
# sha256 checksums file. POSIX sh; needs only curl, tar and sha256sum (or
# shasum / openssl), which every GitHub-hosted runner has.
#
# The ref names a release when it is a release tag (v1.2.3), or a moving
# version tag (v1, v1.2) or a commit sha that points at the commit of one
# (found in the repository's git ref advertisement). A branch never does.
#
# Exit status (action.yml branches on it):
#   0  DEST is the verified release binary
#   3  no prebuilt release applies or it could not be downloaded: build from source
#   1  the release is wrong (checksum mismatch, a binary of another version or
#      one that does not run): a hard error, never a fallback, because a
#      tampered or mislabelled binary must not run and must not be papered over
#   2  usage error
#
# Environment:
#   BAZINGA_ACTION_REF         the action's ref (github.action_ref), e.g. v1.2.3
#   BAZINGA_ACTION_REPOSITORY  owner/name of the action (github.action_repository)
#   BAZINGA_RELEASE_BASE_URL   overrides <server>/<owner>/<name>/releases/download;
#                              assets are fetched from <base>/<tag>/<asset>
#   GITHUB_SERVER_URL          the GitHub (Enterprise) server, default https://github.com;
#                              tags are listed from <server>/<owner>/<name>.git
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
[ -n "$ref" ] || fallback "the action's ref is unknown"
repo=${BAZINGA_ACTION_REPOSITORY:-}
server=${GITHUB_SERVER_URL:-https://github.com}
server=${server%/}

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

release_tag='^v[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.+-]+)?$'
matches() { printf '%s\n' "$1" | grep -Eq "$2"; }

# Only a release names a binary built from exactly the action's source: an
# exact tag (v1.2.3) directly; a commit sha or a moving version tag (v1,
# v1.2) when it points at the commit of a release tag. A branch never does (it
# may have moved since the runner downloaded the action), so it builds.
if matches "$ref" "$release_tag"; then
	need_resolve=false
elif matches "$ref" '^[0-9a-fA-F]{40}$' || matches "$ref" '^v[0-9]+(\.[0-9]+)?$'; then
	need_resolve=true
else
	fallback "the action's ref '$ref' is not a release tag (vX.Y.Z), a moving version tag (v1) or a commit sha"
fi

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

# get URL FILE: download URL into $tmp/FILE; a missing file or a failed
# download returns non-zero (the caller falls back), after saying which.
get() {
	code=$(curl -sSL --proto '=https,http' --retry 2 --connect-timeout 10 --max-time 300 \
		-o "$tmp/$2" -w '%{http_code}' "$1") || {
		annotate warning "downloading $1 failed (curl exit $?)"
		return 1
	}
	if [ "$code" != 200 ]; then
		annotate notice "$1: HTTP $code"
		return 1
	fi
}

if $need_resolve; then
	[ -n "$repo" ] || fallback "the action's repository is unknown, so its ref '$ref' cannot be resolved to a release"
	# The repository's ref advertisement (git's smart HTTP, what a clone reads
	# first): every tag with its commit, peeled (^{}) for annotated tags. No
	# API call, no token, no JSON.
	refs_url="$server/$repo.git/info/refs?service=git-upload-pack"
	get "$refs_url" refs || fallback "cannot list the tags of $repo to resolve '$ref'"
	tr '\000' ' ' <"$tmp/refs" |
		sed -n 's|^.*\([0-9a-f]\{40\}\) refs/tags/\([^ ]*\).*$|\1 \2|p' |
		awk '{ n = $2; if (sub(/\^\{\}$/, "", n)) peeled[n] = $1; else direct[n] = $1 }
			END { for (n in direct) print ((n in peeled) ? peeled[n] : direct[n]), n }' |
		LC_ALL=C sort >"$tmp/tags"
	if matches "$ref" '^[0-9a-fA-F]{40}$'; then
		commit=$(printf '%s\n' "$ref" | tr 'A-F' 'a-f')
	else
		commit=$(awk -v t="$ref" '$2 == t { print $1 }' "$tmp/tags")
		[ -n "$commit" ] || fallback "$repo has no tag '$ref'"
	fi
	# A final release before a pre-release of the same commit.
	tag=$(awk -v c="$commit" '$1 == c { print $2 }' "$tmp/tags" | grep -E "$release_tag" |
		awk '{ print (index($0, "-") ? 1 : 0), $0 }' | LC_ALL=C sort | head -n 1 | cut -d' ' -f2)
	[ -n "$tag" ] || fallback "no release tag (vX.Y.Z) of $repo is at '$ref' ($commit)"
	annotate notice "the action's ref '$ref' is release $tag ($commit)"
else
	tag=$ref
fi
version=${tag#v}

archive="${project}_${version}_${goos}_${goarch}.tar.gz"
sums="${project}_${version}_checksums.txt"

if [ -n "${BAZINGA_RELEASE_BASE_URL:-}" ]; then
	base=${BAZINGA_RELEASE_BASE_URL%/}
else
	[ -n "$repo" ] || fallback "the action's repository is unknown"
	base="$server/$repo/releases/download"
fi
url="$base/$tag"

get "$url/$sums" "$sums" || fallback "no release $tag with $sums"
want=$(awk -v f="$archive" '$2 == f || $2 == "*" f { print $1; exit }' "$tmp/$sums")
[ -n "$want" ] || fallback "release $tag lists no $archive in $sums"
printf '%s\n' "$want" | grep -Eq '^[0-9a-f]{64}$' || fail "release $tag: $sums has a malformed sha256 for $archive: '$want'"
get "$url/$archive" "$archive" || fallback "could not download $archive from release $tag"

got=$(sha256 "$tmp/$archive")
if [ "$got" != "$want" ]; then
	fail "checksum mismatch for $archive from $url: sha256 $got, but $sums says $want; refusing to run it"
fi

mkdir "$tmp/x" && tar -xzf "$tmp/$archive" -C "$tmp/x" "$project" 2>"$tmp/tar.err" ||
	fail "release $tag: $archive (checksum verified) has no $project binary: $(cat "$tmp/tar.err")"
chmod 0755 "$tmp/x/$project"
# The checksum proves the bytes are the release's; the version proves the
# release is the one for this ref (a mislabelled upload must not run).
out=$("$tmp/x/$project" version 2>&1) ||
	fail "release $tag: the $goos/$goarch binary of $archive (checksum verified) does not run here: $out"
said=$(printf '%s\n' "$out" | head -n 1)
[ "$said" = "$project $version" ] ||
	fail "release $tag: $archive (checksum verified) holds a binary that says '$said', want '$project $version'"

mkdir -p "$(dirname "$dest")" || fail "cannot create the directory of $dest"
# Copy next to DEST and rename, so DEST is never a half-written binary.
cp "$tmp/x/$project" "$dest.tmp.$$" && mv -f "$dest.tmp.$$" "$dest" || {
	rm -f "$dest.tmp.$$"
	fail "cannot install the binary at $dest"
}
echo "bazinga $version ($goos/$goarch) from $url/$archive, sha256 $got verified" >&2
exit 0
