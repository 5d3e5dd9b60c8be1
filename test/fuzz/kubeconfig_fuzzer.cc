// kubeconfig files (`--kubeconfig`, $KUBECONFIG) as the controller and CLI read them. Relative
// file references resolve under a directory that does not exist, so no input reads the machine's
// files through a relative path. Property: the parser returns a config or a status.
#include <cstdint>
#include <string_view>

#include "dovetail/kube/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)dovetail::kube::ParseKubeconfig(text, "/nonexistent/dovetail-fuzz");
  (void)dovetail::kube::ParseKubeconfig(text, "/nonexistent/dovetail-fuzz", "fuzz");
  return 0;
}
