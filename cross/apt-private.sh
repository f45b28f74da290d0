# cross/apt-private.sh - sourced by the cross/ scripts: a private apt
# configuration for fetching Debian *source* packages, with its own sources
# list, package lists and cache under DIR, used through APT_CONFIG. The
# system's apt sources are never touched.
#
#   . cross/apt-private.sh
#   apt_private_setup DIR SUITE     # e.g. build/deps/apt trixie
#   APT_CONFIG=DIR/apt.conf apt-get update -qq
apt_private_setup() {
  local A=$1 suite=$2
  mkdir -p "$A/lists/partial" "$A/cache/archives/partial" "$A/etc/sources.list.d" "$A/etc/preferences.d"
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $suite main" \
    > "$A/etc/sources.list"
  cat > "$A/apt.conf" <<EOF_APT
Dir::Etc::sourcelist "$A/etc/sources.list";
Dir::Etc::sourceparts "$A/etc/sources.list.d";
Dir::Etc::preferencesparts "$A/etc/preferences.d";
Dir::State::Lists "$A/lists";
Dir::Cache "$A/cache";
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF_APT
}
