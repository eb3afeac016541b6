#include "device/device_api.hpp"

#include <atomic>
#include <mutex>

#include "device/process_api.hpp"

namespace tutti::device {

namespace {

// api() is on every collective's path (locate), so it reads one atomic pointer; the shared_ptrs
// below only keep the objects alive.
std::mutex g_mutex;
std::shared_ptr<DeviceApi> g_process;  // made on first use
std::shared_ptr<DeviceApi> g_current;  // what api() returns
std::atomic<DeviceApi*> g_api{nullptr};

}  // namespace

DeviceApi& api() {
  if (DeviceApi* current = g_api.load(std::memory_order_acquire)) return *current;
  std::lock_guard lock(g_mutex);
  if (!g_current) {
    if (!g_process) g_process = make_process_api();
    g_current = g_process;
    g_api.store(g_current.get(), std::memory_order_release);
  }
  return *g_current;
}

ScopedDeviceApi::ScopedDeviceApi(std::shared_ptr<DeviceApi> replacement) {
  std::lock_guard lock(g_mutex);
  previous_ = g_current;
  g_current = std::move(replacement);
  g_api.store(g_current.get(), std::memory_order_release);
}

ScopedDeviceApi::~ScopedDeviceApi() {
  std::lock_guard lock(g_mutex);
  g_current = std::move(previous_);
  g_api.store(g_current.get(), std::memory_order_release);
}

}  // namespace tutti::device
