#include "comm/forming_store.hpp"

#include <algorithm>
#include <chrono>

#include "bootstrap/elastic_keys.hpp"
#include "core/error.hpp"

namespace tutti::comm {
namespace {

namespace keys = bootstrap::elastic_keys;

// How often a wait looks at the outcome: a death costs the others this much more than the
// launcher's own reaction.
constexpr std::chrono::milliseconds kSlice{100};

}  // namespace

FormingStore::FormingStore(std::shared_ptr<bootstrap::Store> inner, int64_t epoch)
    : inner_(std::move(inner)), epoch_(epoch), outcome_key_(keys::outcome(epoch)) {}

void FormingStore::abandoned(const std::string& outcome) const {
  throw make_error(ErrorCode::kPeerFailure,
                   "elastic membership {} was abandoned before it formed: {}; its members go on "
                   "without it",
                   epoch_, outcome.substr(std::min(outcome.size(), outcome.find(": ") + 2)));
}

void FormingStore::check() {
  if (!armed_.load() || !inner_->missing({outcome_key_}).empty()) return;
  const std::string outcome = inner_->get(outcome_key_, Deadline::after(kSlice));
  if (outcome.starts_with("abandoned")) abandoned(outcome);
}

void FormingStore::set(const std::string& key, const std::string& value) {
  inner_->set(key, value);
}

int64_t FormingStore::add(const std::string& key, int64_t delta) {
  return inner_->add(key, delta);
}

std::vector<std::string> FormingStore::missing(const std::vector<std::string>& keys) {
  return inner_->missing(keys);
}

bool FormingStore::remove(const std::string& key) {
  return inner_->remove(key);
}

// `call(deadline)` in slices while armed, looking at the outcome between them.
template <typename Call>
auto FormingStore::sliced(Deadline deadline, Call call) {
  for (;;) {
    if (!armed_.load()) return call(deadline);
    check();
    try {
      return call(Deadline::after(kSlice).earlier(deadline));
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kTimeout || deadline.expired()) throw;
    }
  }
}

std::string FormingStore::get(const std::string& key, Deadline deadline) {
  return sliced(deadline, [&](Deadline d) { return inner_->get(key, d); });
}

void FormingStore::wait(const std::vector<std::string>& keys, Deadline deadline) {
  sliced(deadline, [&](Deadline d) { inner_->wait(keys, d); });
}

void FormingStore::await_outcome(Deadline deadline) {
  inner_->add(keys::formed(epoch_), 1);
  const std::string outcome = inner_->get(outcome_key_, deadline);
  if (outcome.starts_with("abandoned")) abandoned(outcome);
  disarm();
}

void FormingStore::throw_if_abandoned(Deadline deadline) {
  // The launcher reaps a dead member and decides within a moment; a meeting that failed for
  // another reason gets no outcome, and this wait gives up early.
  const Deadline soon = Deadline::after(std::chrono::seconds(5)).earlier(deadline);
  std::string outcome;
  try {
    outcome = inner_->get(outcome_key_, soon);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kTimeout) return;
    throw;
  }
  if (outcome.starts_with("abandoned")) abandoned(outcome);
}

}  // namespace tutti::comm
