# cross/apt-private.sh - sourced by the cross/ scripts: a private apt
# configuration with its own sources list, package lists and cache under DIR,
# used through APT_CONFIG. The system's apt configuration is never changed.
#
#   . cross/apt-private.sh
#   apt_private_setup DIR SUITE [TYPE] [ARCH]   # TYPE deb-src (default) or deb
#   APT_CONFIG=DIR/apt.conf apt-get update -qq
#   m=$(apt_mirror)                             # the Debian mirror to use
#
# The mirror: KOPE_DEBIAN_MIRROR when set (a local or corporate mirror, e.g.
# http://mirror.example/debian), else the first Debian archive named in this
# machine's own apt sources: /etc/apt/sources.list and sources.list.d/, in
# one-line (*.list) and deb822 (*.sources) form. An entry counts when one of
# its suites is a plain Debian release (bookworm, trixie, stable, ... without
# -security/-updates/-backports) and it is a "deb" or "deb-src" line; other
# repositories the machine carries (vendor repos with suites of their own) are
# skipped. The suite kope fetches (trixie) is then taken from that mirror:
# Debian mirrors carry every release. With nothing found, the script stops
# and says to set KOPE_DEBIAN_MIRROR: no URL is written into the recipes.

# Print the mirror URL (no trailing slash); return 1 with a message if none.
# APT_SOURCES_ROOT (tests) replaces /etc/apt.
apt_mirror() {
  if [ -n "${KOPE_DEBIAN_MIRROR:-}" ]; then
    echo "${KOPE_DEBIAN_MIRROR%/}"
    return 0
  fi
  local root=${APT_SOURCES_ROOT:-/etc/apt} f files=() m
  [ -f "$root/sources.list" ] && files+=("$root/sources.list")
  for f in "$root"/sources.list.d/*.list "$root"/sources.list.d/*.sources; do
    [ -f "$f" ] && files+=("$f")
  done
  [ ${#files[@]} -gt 0 ] && m=$(awk '
    function release(s) {
      return s ~ /^(buster|bullseye|bookworm|trixie|forky|duke|sid|oldoldstable|oldstable|stable|testing|unstable)$/
    }
    function emit(u, s,   n, i, a) {
      n = split(s, a, /[ \t]+/)
      for (i = 1; i <= n; i++) if (release(a[i])) { sub(/\/+$/, "", u); print u; found = 1; exit 0 }
    }
    # deb822 stanza: fields until a blank line
    function flush() {
      if (types ~ /(^|[ \t])deb(-src)?([ \t]|$)/ && enabled != "no" && uris != "") {
        split(uris, us, /[ \t]+/); emit(us[1], suites)
      }
      types = ""; uris = ""; suites = ""; enabled = ""
    }
    FNR == 1 { if (NR > 1) flush(); deb822 = FILENAME ~ /\.sources$/ }
    /^[ \t]*#/ { next }
    deb822 && /^[ \t]*$/ { flush(); next }
    deb822 {
      key = tolower($1); val = $0; sub(/^[^:]*:[ \t]*/, "", val)
      if (key == "types:") types = val; else if (key == "uris:") uris = val
      else if (key == "suites:") suites = val; else if (key == "enabled:") enabled = tolower(val)
      next
    }
    # one-line: deb [opts] URI SUITE COMPONENTS...
    $1 == "deb" || $1 == "deb-src" {
      line = $0; sub(/^[ \t]*deb(-src)?[ \t]+/, "", line)
      if (line ~ /^\[/) sub(/^\[[^]]*\][ \t]*/, "", line)
      split(line, w, /[ \t]+/); emit(w[1], w[2])
    }
    END { if (!found) flush() }
  ' "${files[@]}")
  if [ -z "${m:-}" ]; then
    echo "kope: no Debian mirror found in $root/sources.list{,.d} (one-line or deb822):" \
         "set KOPE_DEBIAN_MIRROR=http://your-mirror/debian" >&2
    return 1
  fi
  echo "$m"
}

apt_private_setup() {
  local A=$1 suite=$2 type=${3:-deb-src} arch=${4:-} m opt
  m=$(apt_mirror) || return 1
  opt="signed-by=/usr/share/keyrings/debian-archive-keyring.gpg"
  [ -n "$arch" ] && opt="arch=$arch $opt"
  mkdir -p "$A/lists/partial" "$A/cache/archives/partial" "$A/etc/sources.list.d" "$A/etc/preferences.d"
  echo "$type [$opt] $m $suite main" > "$A/etc/sources.list"
  cat > "$A/apt.conf" <<EOF_APT
Dir::Etc::sourcelist "$A/etc/sources.list";
Dir::Etc::sourceparts "$A/etc/sources.list.d";
Dir::Etc::preferencesparts "$A/etc/preferences.d";
Dir::State::Lists "$A/lists";
Dir::Cache "$A/cache";
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF_APT
  [ -n "$arch" ] && echo "APT::Architecture \"$arch\";" >> "$A/apt.conf"
  return 0
}
