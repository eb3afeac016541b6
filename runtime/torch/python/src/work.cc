#include "work.hpp"

namespace tutti::torch_backend {

TuttiWork::TuttiWork(int rank, c10d::OpType type, const char* profiling_title,
                     std::vector<at::Tensor> outputs)
    : c10d::Work(rank, type, profiling_title),
      outputs_(std::move(outputs)),
      future_(
          c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {
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
