#include "kubexec/retry.hpp"

#include <algorithm>
#include <array>

namespace tutti::kubexec {

bool is_transient_failure(std::string_view kubectl_stderr) {
  constexpr std::array<std::string_view, 6> kTransient = {
      "is not running",        "container not found", "unable to upgrade connection",
      "error dialing backend", "is waiting to start", "does not have a host assigned"};
  return std::any_of(kTransient.begin(), kTransient.end(), [&](std::string_view needle) {
    return kubectl_stderr.find(needle) != std::string_view::npos;
  });
}

std::chrono::milliseconds backoff_delay(int retry) {
  constexpr std::chrono::milliseconds kFirst{250};
  constexpr std::chrono::milliseconds kMax{5000};
  std::chrono::milliseconds delay = kFirst;
  for (int i = 0; i < retry && delay < kMax; ++i) delay *= 2;
  return std::min(delay, kMax);
}

}  // namespace tutti::kubexec
