// FormingStore: the store as a membership of an elastic job sees it while it forms (a regroup, or a
// newcomer's init). The launcher decides each membership's outcome once (bootstrap/elastic_keys.hpp
// outcome(E)): "formed" once every member met there, or "abandoned ..." when a member ended
// before that. A member that died leaves the others waiting in the meeting for keys it never
// writes, so every wait here is cut into short slices, and an abandoned outcome ends it at once
// with kPeerFailure, whatever it waited for. Once the membership formed, disarm() makes it a plain
// pass-through for the rest of the world's life.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "bootstrap/store.hpp"

namespace tutti::comm {

class FormingStore final : public bootstrap::Store {
 public:
  FormingStore(std::shared_ptr<bootstrap::Store> inner, int64_t epoch);

  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key, Deadline deadline) override;
  int64_t add(const std::string& key, int64_t delta) override;
  std::vector<std::string> missing(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, Deadline deadline) override;
  bool remove(const std::string& key) override;
  std::string describe() const override { return inner_->describe(); }

  // After the meeting: adds this member to formed(E) and waits for the launcher's outcome. Returns
  // when it is "formed"; throws kPeerFailure when it is "abandoned", kTimeout at the deadline.
  void await_outcome(Deadline deadline);
  // After a meeting that failed: kPeerFailure naming the launcher's reason when it abandoned the
  // membership (it decides within moments of the death), else nothing (the caller rethrows).
  void throw_if_abandoned(Deadline deadline);
  void disarm() { armed_.store(false); }

 private:
  [[noreturn]] void abandoned(const std::string& outcome) const;
  void check();
  template <typename Call>
  auto sliced(Deadline deadline, Call call);

  std::shared_ptr<bootstrap::Store> inner_;
  int64_t epoch_;
  std::string outcome_key_;
  std::atomic<bool> armed_{true};
};

}  // namespace tutti::comm
