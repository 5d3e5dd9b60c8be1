# Sourced by scripts/build-absl-tsan and scripts/build-httplib-tsan.
#
# debian_source PACKAGE VERSION DSC_SHA256 WORK: unpacks Debian's source package PACKAGE=VERSION,
# its patches applied, into WORK/src. The files come through apt (`apt-get source
# --download-only`, with a private deb-src list made from /etc/apt/sources.list.d/debian.sources,
# so the system's apt state is untouched), which checks them against the signed Sources index;
# then the .dsc is checked against DSC_SHA256, and dpkg-source -x checks the tarballs against the
# .dsc before it applies debian/patches. DOVETAIL_DEBIAN_SOURCE_DIR names a directory already
# holding the .dsc and its tarballs instead (e.g. offline); the same checks apply.
debian_source() {
  local pkg="$1" version="$2" sha="$3" work="$4"
  local dsc="${pkg}_${version}.dsc" upstream="${version%-*}"
  if [[ -n "${DOVETAIL_DEBIAN_SOURCE_DIR:-}" ]]; then
    cp "${DOVETAIL_DEBIAN_SOURCE_DIR}/${dsc}" "${DOVETAIL_DEBIAN_SOURCE_DIR}/${pkg}_${upstream}".orig.tar.* \
      "${DOVETAIL_DEBIAN_SOURCE_DIR}/${pkg}_${version}".debian.tar.* "${work}/"
  else
    [[ -f /etc/apt/sources.list.d/debian.sources ]] ||
      die "no /etc/apt/sources.list.d/debian.sources to make a deb-src list from" \
        "(set DOVETAIL_DEBIAN_SOURCE_DIR to a directory holding ${dsc} and its tarballs)"
    local apt_dir="${work}/apt"
    mkdir -p "${apt_dir}/parts" "${apt_dir}/lists/partial" "${apt_dir}/cache/archives/partial"
    sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources \
      >"${apt_dir}/parts/src.sources"
    local apt_opts=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=${apt_dir}/parts"
      -o "Dir::State::Lists=${apt_dir}/lists" -o "Dir::Cache=${apt_dir}/cache")
    say "fetching Debian's ${pkg} ${version} source package"
    apt-get -q "${apt_opts[@]}" update >"${work}/apt.log" 2>&1 ||
      { cat "${work}/apt.log" >&2; die "apt-get update (deb-src) failed"; }
    (cd "${work}" && apt-get -q "${apt_opts[@]}" source --download-only "${pkg}=${version}") \
      >>"${work}/apt.log" 2>&1 ||
      { cat "${work}/apt.log" >&2; die "apt-get source ${pkg}=${version} failed"; }
  fi
  echo "${sha}  ${work}/${dsc}" | sha256sum --quiet -c - ||
    die "${dsc} does not have the pinned SHA-256 ${sha}"
  dpkg-source -q -x "${work}/${dsc}" "${work}/src" >/dev/null 2>"${work}/dpkg-source.log" ||
    { cat "${work}/dpkg-source.log" >&2; die "dpkg-source -x failed"; }
}
