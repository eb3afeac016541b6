// The engine's readiness seam for GPU buffers: an event recorded on the stream that produces a
// tensor; the engine polls it before it announces the tensor, so no device is ever synchronized
// on the hot path.
#include "api/device_ready.hpp"

#include <memory>

#include "device/device_api.hpp"
#include "tutti/async.hpp"

namespace tutti {

namespace {

class StreamReadyEvent final : public ReadyEvent {
 public:
  explicit StreamReadyEvent(void* stream) : event_(device::api().current_device()) {
    device::api().record(event_.id(), stream);
  }
  bool ready() override { return device::api().query(event_.id()); }

 private:
  device::Event event_;
};

}  // namespace

std::shared_ptr<ReadyEvent> cuda_stream_ready(void* stream) {
  return std::make_shared<StreamReadyEvent>(stream);
}

namespace api {

bool on_device(const void* a, const void* b) {
  auto& runtime = device::api();
  return (a != nullptr && runtime.locate(a).on_device) ||
         (b != nullptr && runtime.locate(b).on_device);
}

std::shared_ptr<ReadyEvent> ready_for(const void* send, const void* recv, void* stream) {
  if (!on_device(send, recv)) return nullptr;
  return cuda_stream_ready(stream);
}

}  // namespace api
}  // namespace tutti
