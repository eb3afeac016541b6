// The store keys of elastic memberships (tuttirun --max-np, docs/ELASTIC.md): a process started
// into a running job sets arrived(its member id) and waits; once every newcomer arrived (or died)
// the launcher writes membership E's member ids under members(E), then raises kEpoch to E; every
// member of E adds one to formed(E) once it met the others there. Membership E meets as job
// job_id(base, E).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tutti::bootstrap::elastic_keys {

inline constexpr std::string_view kEpoch = "tutti/elastic/epoch";

inline std::string members(int64_t epoch) {
  return "tutti/elastic/members/" + std::to_string(epoch);
}
// Written by a newcomer once it runs and reached the store.
inline std::string arrived(int member) {
  return "tutti/elastic/arrived/" + std::to_string(member);
}
inline std::string formed(int64_t epoch) {
  return "tutti/elastic/formed/" + std::to_string(epoch);
}
// The launcher's decision on membership E (E > 0), written once: "formed" when every member added
// itself to formed(E), or "abandoned: <why>" when a member ended before that; its members then go
// on in the membership before it, its newcomers end.
inline std::string outcome(int64_t epoch) {
  return "tutti/elastic/outcome/" + std::to_string(epoch);
}
// "-e" keeps "<base>-" a prefix of every membership's names, so a sweep of the base job's
// /dev/shm segments takes theirs too.
inline std::string job_id(std::string_view base, int64_t epoch) {
  return std::string(base) + "-e" + std::to_string(epoch);
}

// "3,0,5": member ids in rank order.
std::string format_members(const std::vector<int>& ids);
// The ids of format_members' text; empty when the text is not a list of distinct non-negative ids.
std::vector<int> parse_members(std::string_view text);

}  // namespace tutti::bootstrap::elastic_keys
