#!/bin/sh
# Build keel's .deb offline from a staged tree with dpkg-deb (on every Debian
# machine): the static binary, keel-boot (the boot's fast path, which
# keel-activate.service starts) in /usr/libexec/keel, the systemd units, man
# pages and bash, zsh and fish completion generated from keel's own help
# text, /etc/keel with a commented example, the integration drop-ins under
# /usr/share/keel, /usr/lib/keel/vet-dropin, /usr/share/doc/keel (docs,
# examples, copyright, changelogs), and maintainer scripts that start
# nothing without a desired state.
#
#   packaging/build-deb.sh [OUTDIR]      (make deb)
#
# VERSION overrides the package version (default: from git describe).
set -eu
cd "$(dirname "$0")/.."
out=${1:-dist}
go=${GO:-go}
arch=${ARCH:-$($go env GOARCH)}
desc=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
case $desc in
v[0-9]*) version=${desc#v} ;;
*) version=0.0~git$(git log -1 --format=%cd --date=format:%Y%m%d 2>/dev/null || echo 0).$desc ;;
esac
version=${VERSION:-$version}
# dpkg wants no '-' in an upstream version without a revision: keep it simple.
version=$(printf '%s' "$version" | tr -- '-' '+')

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/root
mkdir -p "$root/DEBIAN" "$root/usr/bin" "$root/usr/lib/systemd/system" "$root/usr/share/man/man8" \
	"$root/usr/share/bash-completion/completions" "$root/etc/keel" "$root/usr/share/doc/keel/examples" \
	"$root/usr/share/keel" "$root/usr/lib/keel" "$root/usr/share/zsh/vendor-completions" \
	"$root/usr/share/fish/vendor_completions.d" "$root/usr/libexec/keel"

CGO_ENABLED=0 GOARCH=$arch $go build -trimpath -ldflags "-s -w -X main.Version=$version" -o "$root/usr/bin/keel" ./cmd/keel
CGO_ENABLED=0 GOARCH=$arch $go build -trimpath -ldflags "-s -w" -o "$root/usr/libexec/keel/keel-boot" ./cmd/keel-boot
# The generator runs the binary, so it must run here: build it for the host.
hostkeel=$stage/keel-host
CGO_ENABLED=0 $go build -trimpath -ldflags "-X main.Version=$version" -o "$hostkeel" ./cmd/keel
$go run ./packaging/mangen -keel "$hostkeel" -man "$stage/man" -completion "$root/usr/share/bash-completion/completions/keel" \
	-zsh "$root/usr/share/zsh/vendor-completions/_keel" -fish "$root/usr/share/fish/vendor_completions.d/keel.fish"
for p in "$stage"/man/*.8; do
	gzip -9n <"$p" >"$root/usr/share/man/man8/$(basename "$p").gz"
done

install -m 0644 packaging/systemd/keel.service packaging/systemd/keel-activate.service \
	packaging/systemd/keel-check.service packaging/systemd/keel-check.timer "$root/usr/lib/systemd/system/"
install -m 0755 packaging/lib/vet-dropin "$root/usr/lib/keel/"
install -m 0644 packaging/etc/keel/keel.cue.example "$root/etc/keel/"
cp -R packaging/integrations "$root/usr/share/keel/integrations"
find "$root/usr/share/keel" -name '*_test.go' -delete
install -m 0644 README.md docs/*.md "$root/usr/share/doc/keel/"
install -m 0644 packaging/debian/copyright "$root/usr/share/doc/keel/"
install -m 0644 examples/*.cue packaging/etc/keel/keel.cue.example "$root/usr/share/doc/keel/examples/"
# Debian policy 12.7: changelog.Debian.gz for the package, changelog.gz for
# upstream's changes (here the commit subjects since the last tag).
{
	printf 'keel (%s) unstable; urgency=medium\n\n  * Built from %s.\n\n' "$version" "$desc"
	printf ' -- keel developers <keel@keel-storage.invalid>  %s\n' "$(date -R -u -d "@${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}")"
} | gzip -9n >"$root/usr/share/doc/keel/changelog.Debian.gz"
since=$(git describe --tags --abbrev=0 2>/dev/null || true)
git log --no-merges --date=short --format='%ad %s' ${since:+"$since"..HEAD} 2>/dev/null | gzip -9n >"$root/usr/share/doc/keel/changelog.gz"
# The directory the generated udev rules go to (keel udev-rules --write).
mkdir -p "$root/etc/udev/rules.d"

sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" packaging/debian/control.in >"$root/DEBIAN/control"
echo "Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)" >>"$root/DEBIAN/control"
install -m 0644 packaging/debian/conffiles "$root/DEBIAN/"
install -m 0755 packaging/debian/postinst packaging/debian/prerm packaging/debian/postrm "$root/DEBIAN/"

mkdir -p "$out"
deb=$out/keel_${version}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
