#include "comm/job.hpp"

namespace tutti::comm {

Job::~Job() {
  // The lifeline's thread calls fail_all: stop it before the rest of the job goes.
  lifeline.reset();
  stalls_.reset();
}

void Job::watch_calls(StallWatch::Watched watched, std::chrono::milliseconds threshold) {
  if (threshold.count() <= 0 || !store) return;
  std::lock_guard lock(mutex_);
  if (!stalls_) stalls_ = std::make_unique<StallWatch>(store, job_id, threshold);
  stalls_->add(std::move(watched));
}

void Job::fail_all(const Error& error) {
  std::vector<std::shared_ptr<Interrupt>> live;
  {
    std::lock_guard lock(mutex_);
    if (!failure_) failure_ = error;
    for (auto& weak : interrupts_)
      if (auto interrupt = weak.lock()) live.push_back(std::move(interrupt));
  }
  for (auto& interrupt : live) interrupt->raise(error);
}

void Job::watch(const std::shared_ptr<Interrupt>& interrupt) {
  std::optional<Error> failed;
  {
    std::lock_guard lock(mutex_);
    std::erase_if(interrupts_, [](const auto& weak) { return weak.expired(); });
    interrupts_.push_back(interrupt);
    failed = failure_;
  }
  if (failed) interrupt->raise(*failed);
}

}  // namespace tutti::comm
