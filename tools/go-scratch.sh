# Sourced by tools/k8s/build and tools/helm/build once they hold their build lock, with ROOT set to
# their cache root. Go's build and module caches serve only one build of pinned binaries (a pin or
# recipe change downloads again through the proxy), and after the Kubernetes build they hold ~5.7
# GB. So they live in ${ROOT}/.go-scratch, deleted when the script exits, which keeps CI machines
# with little disk working. DOVETAIL_KEEP_GO_CACHES=1 uses Go's usual caches instead.
if [[ "${DOVETAIL_KEEP_GO_CACHES:-0}" != 1 ]]; then
  GO_SCRATCH="${ROOT:?}/.go-scratch"
  drop_go_scratch() {
    if [[ -d "${GO_SCRATCH}" ]]; then
      chmod -R u+w "${GO_SCRATCH}" && rm -rf "${GO_SCRATCH}"
    fi
    return 0
  }
  drop_go_scratch
  trap drop_go_scratch EXIT
  export GOCACHE="${GO_SCRATCH}/build" GOMODCACHE="${GO_SCRATCH}/mod"
  GOFLAGS+=" -modcacherw"
fi
