#include "engine/negotiation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>

#include "core/error.hpp"

namespace tutti::engine {
namespace {

enum class Record : uint8_t { kRequest = 1, kJoin, kShutdown, kStallFail, kTune };

}  // namespace

std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += j > i + 1    ? fmt::format("{}-{}", ranks[i], ranks[j])
           : j == i + 1 ? fmt::format("{},{}", ranks[i], ranks[j])
                        : fmt::format("{}", ranks[i]);
    i = j + 1;
  }
  return out;
}

void Announcements::request(const std::string& name, const OpSpec& spec) {
  writer_.u8(static_cast<uint8_t>(Record::kRequest));
  writer_.str(name);
  spec.encode(writer_);
}
void Announcements::join() {
  writer_.u8(static_cast<uint8_t>(Record::kJoin));
}
void Announcements::shutdown(const std::string& reason) {
  writer_.u8(static_cast<uint8_t>(Record::kShutdown));
  writer_.str(reason);
}
void Announcements::stall_fail(const std::string& name, const std::string& message) {
  writer_.u8(static_cast<uint8_t>(Record::kStallFail));
  writer_.str(name);
  writer_.str(message);
}
void Announcements::tune(uint64_t fusion_threshold, uint64_t cycle_time_us) {
  writer_.u8(static_cast<uint8_t>(Record::kTune));
  writer_.u64(fusion_threshold);
  writer_.u64(cycle_time_us);
}

Negotiation::Negotiation(int rank, int size, size_t cache_capacity, std::string label)
    : rank_(rank), size_(size), label_(std::move(label)), cache_(cache_capacity) {}

Response Negotiation::failure(const std::string& name, ErrorCode code, std::string message) const {
  Response r;
  r.kind = Response::Kind::kFail;
  r.name = name;
  r.error = Error(code, std::move(message));
  return r;
}

void Negotiation::add_request(int rank, const std::string& name, OpSpec spec) {
  // A name announced outside the cache (new, changed, or waiting too long) leaves the cache on
  // every rank, so ranks waiting on its cache bit announce it too and meet in the table.
  cache_.evict(name);
  auto [it, inserted] = table_.try_emplace(name);
  Pending& p = it->second;
  if (inserted) {
    p.specs.resize(static_cast<size_t>(size_));
    p.first = rank;
    p.first_seen = Clock::now();
    p.order = next_order_++;
  }
  if (p.specs[static_cast<size_t>(rank)])
    throw make_error(ErrorCode::kInternal, "{}: rank {} announced tensor '{}' twice", label_, rank,
                     name);
  p.specs[static_cast<size_t>(rank)] = std::move(spec);
}

bool Negotiation::complete(const Pending& p) const {
  for (int q = 0; q < size_; ++q)
    if (!p.specs[static_cast<size_t>(q)] && !joined_.count(q)) return false;
  return true;
}

Response Negotiation::decide(const std::string& name, const Pending& p) {
  const OpSpec& agreed = *p.specs[static_cast<size_t>(p.first)];
  // Group the ranks by what they asked for, so that the message is short at any scale.
  std::vector<std::pair<const OpSpec*, std::vector<int>>> groups;
  for (int q = 0; q < size_; ++q) {
    const auto& s = p.specs[static_cast<size_t>(q)];
    if (!s) continue;
    auto g = std::find_if(groups.begin(), groups.end(),
                          [&](const auto& e) { return e.first->agrees_with(*s); });
    if (g == groups.end())
      groups.push_back({&*s, {q}});
    else
      g->second.push_back(q);
  }
  if (groups.size() > 1) {
    std::string detail;
    for (const auto& [spec, ranks] : groups)
      detail += fmt::format("{}rank{} {}: {}", detail.empty() ? "" : "; ",
                            ranks.size() > 1 ? "s" : "", rank_list(ranks), spec->describe());
    return failure(
        name, ErrorCode::kMismatch,
        fmt::format("{}: ranks disagree on tensor '{}' ({}): {}. Every rank must "
                    "submit a name with the same collective, dtype, size, op and root.",
                    label_, name, groups[0].first->difference(*groups[1].first), detail));
  }
  std::vector<int> joined(joined_.begin(), joined_.end());
  if (!joined.empty()) {
    const bool refuses = agreed.kind == OpKind::kReduceScatter || agreed.kind == OpKind::kAlltoall;
    if (refuses || (agreed.kind == OpKind::kBroadcast && joined_.count(agreed.root)))
      return failure(
          name, ErrorCode::kInvalidArgument,
          fmt::format("{}: tensor '{}' ({}) cannot run while rank{} {} {} joined{}", label_, name,
                      agreed.describe(), joined.size() > 1 ? "s" : "", rank_list(joined),
                      joined.size() > 1 ? "have" : "has",
                      refuses ? ": joined ranks only take part in allreduce, allgather, broadcast "
                                "and barrier"
                              : " (the root of a broadcast must not join)"));
  }
  Response r;
  r.name = name;
  r.spec = agreed;
  r.joined = std::move(joined);
  if (agreed.kind == OpKind::kAllgather || agreed.kind == OpKind::kAlltoall) {
    r.per_rank.resize(static_cast<size_t>(size_), agreed);
    for (int q = 0; q < size_; ++q) {
      auto& mine = r.per_rank[static_cast<size_t>(q)];
      if (p.specs[static_cast<size_t>(q)])
        mine = *p.specs[static_cast<size_t>(q)];
      else
        mine.rows = 0;  // joined: contributes no rows
    }
  }
  return r;
}

Negotiation::Outcome Negotiation::process(std::span<const uint64_t> and_bits,
                                          std::span<const std::span<const std::byte>> payloads) {
  Outcome out;
  // 1. Cached names ready on every rank, in slot order. A hit can only happen when no rank has
  // joined (a joined rank sets no bits), so cached responses never carry joined ranks.
  for (size_t w = 0; w < and_bits.size(); ++w) {
    for (uint64_t bits = and_bits[w]; bits != 0; bits &= bits - 1) {
      const auto slot = static_cast<uint32_t>(w * 64 + static_cast<size_t>(std::countr_zero(bits)));
      if (!cache_.occupied(slot))
        throw make_error(ErrorCode::kInternal, "{}: every rank set the bit of empty cache slot {}",
                         label_, slot);
      cache_.touch(slot);
      out.responses.push_back(cache_.at(slot));
      out.responses.back().cached = true;
    }
  }
  // 2. Announcements, rank by rank.
  std::vector<std::string> stall_failed;
  for (int q = 0; q < static_cast<int>(payloads.size()); ++q) {
    net::wire::Reader r(payloads[static_cast<size_t>(q)], "engine negotiation message");
    while (!r.done()) {
      out.announcements = true;
      const auto record = static_cast<Record>(r.u8());
      switch (record) {
        case Record::kRequest: {
          std::string name = r.str();
          add_request(q, name, OpSpec::decode(r, size_));
          break;
        }
        case Record::kJoin:
          joined_.insert(q);
          last_joined_ = q;
          break;
        case Record::kShutdown: {
          std::string reason = r.str();
          if (shutdown_message_.empty())
            shutdown_message_ =
                fmt::format("{}: rank {} shut down its engine ({})", label_, q, reason);
          shut_down_[q] = std::move(reason);
          break;
        }
        case Record::kStallFail: {
          std::string name = r.str();
          std::string message = r.str();
          if (table_.erase(name))
            out.responses.push_back(failure(name, ErrorCode::kTimeout, std::move(message)));
          break;
        }
        case Record::kTune: {
          TuneDecision t;
          t.fusion_threshold = r.u64();
          t.cycle_time_us = r.u64();
          out.tune = t;
          break;
        }
        default:
          throw make_error(ErrorCode::kMismatch,
                           "{}: malformed negotiation message from rank {} (record {}); are all "
                           "ranks running the same tutti version?",
                           label_, q, static_cast<int>(record));
      }
    }
  }
  // 3. Names every rank (but the joined) has announced, in the order they were first announced.
  std::vector<std::pair<uint64_t, std::string>> ready;
  for (const auto& [name, p] : table_)
    if (complete(p)) ready.emplace_back(p.order, name);
  std::sort(ready.begin(), ready.end());
  for (const auto& [order, name] : ready) {
    auto it = table_.find(name);
    Response r = decide(name, it->second);
    table_.erase(it);
    if (r.kind == Response::Kind::kRun && r.joined.empty()) cache_.put(r);
    out.responses.push_back(std::move(r));
  }
  // 4. Once a rank shuts its engine down, nothing still waiting can complete.
  if (!shutdown_message_.empty()) {
    std::vector<std::pair<uint64_t, std::string>> left;
    for (const auto& [name, p] : table_) left.emplace_back(p.order, name);
    std::sort(left.begin(), left.end());
    for (const auto& [order, name] : left)
      out.responses.push_back(
          failure(name, ErrorCode::kAborted,
                  fmt::format("{} before tensor '{}' ran on every rank", shutdown_message_, name)));
    table_.clear();
  }
  // 5. A join completes once every rank has joined.
  if (static_cast<int>(joined_.size()) == size_) {
    Response r;
    r.kind = Response::Kind::kJoin;
    r.name = "join";
    r.last_joined = last_joined_;
    out.responses.push_back(std::move(r));
    joined_.clear();
  }
  return out;
}

std::vector<Stall> Negotiation::stalls(Clock::time_point now, Clock::duration older_than) const {
  std::vector<std::pair<uint64_t, Stall>> found;
  for (const auto& [name, p] : table_) {
    if (now - p.first_seen < older_than) continue;
    Stall s;
    s.name = name;
    s.what = p.specs[static_cast<size_t>(p.first)]->describe();
    s.age = now - p.first_seen;
    for (int q = 0; q < size_; ++q) {
      if (p.specs[static_cast<size_t>(q)])
        s.present.push_back(q);
      else if (!joined_.count(q))
        s.missing.push_back(q);
    }
    found.emplace_back(p.order, std::move(s));
  }
  std::sort(found.begin(), found.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Stall> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

}  // namespace tutti::engine
