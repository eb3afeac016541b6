#include "work.hpp"

namespace tutti::torch_backend {

namespace {

std::vector<c10::Device> devices_of(const std::optional<c10::Stream>& stream) {
  if (!stream) return {};
  return {stream->device()};
}

}  // namespace

TuttiWork::TuttiWork(int rank, c10d::OpType type, const char* profiling_title,
                     std::vector<at::Tensor> outputs, const std::optional<c10::Stream>& stream)
    : c10d::Work(rank, type, profiling_title),
      outputs_(std::move(outputs)),
      on_device_(stream.has_value()),
      future_(c10::make_intrusive<c10::ivalue::Future>(
          c10::ListType::create(c10::TensorType::get()), devices_of(stream))) {}

bool TuttiWork::wait(std::chrono::milliseconds timeout) {
  const bool done = c10d::Work::wait(timeout);
  // Completed by now: this only makes the current streams wait for the events the future
  // recorded on the caller's stream.
  if (done && on_device_) future_->wait();
  return done;
}

void TuttiWork::complete(std::exception_ptr error) {
  // Work first (a thread in wait() may be the only one watching), then the future, whose
  // callbacks may take a while (DDP copies buckets back in them).
  finish(error);
  if (error)
    future_->setError(error);
  else
    future_->markCompleted(c10::IValue(outputs_));
}

}  // namespace tutti::torch_backend
