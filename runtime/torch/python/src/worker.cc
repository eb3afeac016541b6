#include "worker.hpp"

#include <c10/util/Exception.h>

#include <algorithm>
#include <chrono>
#include <memory>

namespace tutti::torch_backend {

Worker::Worker() : thread_([this] { run(); }) {}

Worker::~Worker() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void Worker::enqueue(std::function<void()> job) {
  {
    std::lock_guard lock(mutex_);
    jobs_.push_back(std::move(job));
  }
  wake_.notify_one();
}

void Worker::watch(tutti::Request request, std::function<void(std::exception_ptr)> done) {
  auto shared = std::make_shared<tutti::Request>(std::move(request));
  watched_.push_back(
      {[shared] { return shared->test(); }, [shared] { shared->wait(); }, std::move(done)});
}

void Worker::watch_device(const tutti::Communicator& comm, int rank) {
  for (const Watched& w : watched_)
    if (w.device == &comm) return;  // already watched: the same look covers the new call
  watched_.push_back({[&comm] { return comm.device_done(); }, [&comm] { comm.device_wait(); },
                      [rank](std::exception_ptr error) {
                        if (!error) return;
                        try {
                          std::rethrow_exception(error);
                        } catch (const std::exception& e) {
                          TORCH_WARN("tutti: rank ", rank,
                                     ": device work of this process group failed after its op "
                                     "returned (CUDA ops complete once enqueued, as NCCL's do): ",
                                     e.what(), "; every later op on the group fails with it");
                        }
                      },
                      &comm});
}

void Worker::run() {
  // While requests are watched the thread polls them, backing off from 20 us to 1 ms so that an
  // idle receive does not spin a core of a small machine.
  auto backoff = std::chrono::microseconds(20);
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(mutex_);
      const auto ready = [this] { return stopping_ || !jobs_.empty(); };
      if (watched_.empty()) {
        wake_.wait(lock, ready);
      } else if (!ready()) {
        wake_.wait_for(lock, backoff, ready);
        backoff = std::min(backoff * 2, std::chrono::microseconds(1000));
      }
      if (!jobs_.empty()) {
        job = std::move(jobs_.front());
        jobs_.pop_front();
      } else if (stopping_) {
        break;
      }
    }
    if (job) {
      backoff = std::chrono::microseconds(20);
      try {
        job();
      } catch (...) {
        // Jobs complete their Work with their own errors; nothing may end this thread.
      }
    }
    poll_watched();
  }
  finish_watched();
}

void Worker::poll_watched() {
  for (auto it = watched_.begin(); it != watched_.end();) {
    std::exception_ptr error;
    bool complete = false;
    try {
      complete = it->test();
    } catch (...) {
      error = std::current_exception();
      complete = true;
    }
    if (!complete) {
      ++it;
      continue;
    }
    auto done = std::move(it->done);
    it = watched_.erase(it);
    done(error);
  }
}

void Worker::finish_watched() {
  // Shutting down: each watched request gets the communicator's timeout to complete.
  for (auto& w : watched_) {
    std::exception_ptr error;
    try {
      w.wait();
    } catch (...) {
      error = std::current_exception();
    }
    w.done(error);
  }
  watched_.clear();
}

}  // namespace tutti::torch_backend
