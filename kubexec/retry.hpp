// Which kubectl failures are worth another try, and how long to wait before it. The launcher of an
// MPIJob often starts before its workers are Running; kubectl then fails fast with one of a few
// messages, and the same call succeeds seconds later.
#pragma once

#include <chrono>
#include <string_view>

namespace tutti::kubexec {

// True when kubectl's stderr says the pod or container is not ready yet, or the exec stream could
// not be opened ("is not running", "container not found", "unable to upgrade connection",
// "error dialing backend", "is waiting to start", "does not have a host assigned"). A missing pod
// (NotFound) or a refused exec is not transient.
bool is_transient_failure(std::string_view kubectl_stderr);

// Delay before retry number `retry` (0-based): 250ms doubling to at most 5s.
std::chrono::milliseconds backoff_delay(int retry);

}  // namespace tutti::kubexec
