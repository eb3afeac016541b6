// libFuzzer target for the hostfile parser (tuttirun reads hostfiles that users and operators
// write). Beyond "no crash, no sanitizer report", it checks what parse promises: every input either
// throws kConfig or yields valid, unique hosts whose Open MPI and MPICH renderings parse back to
// the same hosts.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string_view>

#include "hostfile/dns_name.hpp"
#include "hostfile/emit.hpp"
#include "hostfile/parse.hpp"
#include "tutti/error.hpp"

namespace {

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "hostfile fuzz: invariant broken: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tutti::hostfile;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  Hostfile parsed;
  try {
    parsed = parse(text, "fuzz");
  } catch (const tutti::Error& e) {
    check(e.code() == tutti::ErrorCode::kConfig, "parse threw an error other than kConfig");
    check(std::string_view(e.what()).starts_with("fuzz:"),
          "error message does not name the source");
    for (char c : std::string_view(e.what()))
      check(c != '\n' && c != '\r' && c != '\x1b', "error message carries control characters");
    return 0;
  }
  check(!parsed.hosts.empty(), "parse returned no hosts without an error");
  std::set<std::string_view> names;
  for (const Host& h : parsed.hosts) {
    check(subdomain_problem(h.name).empty(), "parse accepted an invalid host name");
    check(h.slots >= 1 && h.slots <= kMaxSlots, "slots out of range");
    check(!h.max_slots || (*h.max_slots >= h.slots && *h.max_slots <= kMaxSlots), "bad max_slots");
    check(names.insert(h.name).second, "duplicate host accepted");
  }
  check(parse(emit(parsed, Format::kOpenMpi), "again") == parsed,
        "openmpi round trip changed hosts");
  Hostfile mpich = parse(emit(parsed, Format::kMpich), "again");
  check(mpich.hosts.size() == parsed.hosts.size(), "mpich round trip lost hosts");
  for (size_t i = 0; i < mpich.hosts.size(); ++i) {
    check(mpich.hosts[i].name == parsed.hosts[i].name, "mpich round trip renamed a host");
    check(mpich.hosts[i].slots == parsed.hosts[i].slots, "mpich round trip changed slots");
  }
  return 0;
}
