// The one typed registry of TUTTI_* environment variables. Every variable tutti reads is listed in
// env.cc with its type, default, range and meaning; reading an unlisted name is a bug (kInternal),
// and a value of the wrong shape or out of its range is a clear kConfig error naming the variable
// and the range (through core/parse.hpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "tutti/options.hpp"

namespace tutti::env {

enum class Kind { kString, kInt, kSeconds, kBytes, kChoice, kBool };

// The most ranks a world may have: far beyond any job tutti is meant for, small enough that rank
// arithmetic never overflows an int.
inline constexpr int64_t kMaxRanks = int64_t{1} << 20;

// The Options member a variable sets (the public struct's fields have no initializers: this table
// gives their defaults too). A kChoice variable bound to an enum sets the enum whose value is the
// choice's index in `choices`; one bound to a string keeps the (lower-cased) name.
using Field = std::variant<std::monostate, size_t Options::*, int Options::*, bool Options::*,
                           std::string Options::*, std::optional<int> Options::*,
                           std::chrono::seconds Options::*, std::chrono::milliseconds Options::*,
                           std::chrono::microseconds Options::*, Algorithm Options::*,
                           TransportKind Options::*, DeviceAllreduce Options::*>;

struct Variable {
  std::string_view name;
  Kind kind;
  std::string_view default_value;  // empty: unset by default
  std::string_view choices;        // for kChoice: "a|b|c"
  std::string_view description;
  // Allowed values of kInt, kBytes and kSeconds (inclusive); every numeric variable has one.
  double min = 0;
  double max = 0;
  // The communicator setting it is (Options::from_env fills it); none for what is not one (the
  // launcher's rank variables, the log level, the elastic loop's).
  Field field = {};
  std::string_view field_name = {};  // the member's name, for messages and tests
};

std::span<const Variable> all();
const Variable& find(std::string_view name);

// Any variable of the process environment (TUTTI_* or not, no registry check): nullopt when it is
// unset or empty. tutti reads an empty value as unset everywhere, so every getenv of the runtime,
// tuttirun and kubexec goes through here (tutti-bench sees only the public API: it has a copy).
std::optional<std::string> process_value(std::string_view name);

// A registered variable's raw value, or nullopt when unset or empty.
std::optional<std::string> raw(std::string_view name);
bool is_set(std::string_view name);

std::string get_string(std::string_view name);
int64_t get_int(std::string_view name);
double get_seconds(std::string_view name);
uint64_t get_bytes(std::string_view name);  // accepts 4096, 64K, 1M, 2G (powers of 1024)
bool get_bool(std::string_view name);       // 1/0, true/false, yes/no, on/off
std::string get_choice(std::string_view name);
// The name of choice `index` of a kChoice variable (an enum's value: TransportKind::kShm is "shm").
std::string_view choice_name(std::string_view name, int index);

// Reads every registered variable that is set, so that init fails on a bad value (a typo in
// TUTTI_LOG_LEVEL, a TUTTI_TCP_STREAMS out of range) even when nothing else would read it yet.
// Throws the first variable's Error(kConfig).
void check_all();

// Parsers shared with the command-line tools so flags and env accept the same spellings.
uint64_t parse_bytes(std::string_view text, std::string_view what);
double parse_seconds(std::string_view text, std::string_view what);

// The docs' env table, generated from the registry (tests check docs/ENVIRONMENT.md matches).
std::string markdown_table();

// Sets every Options field the registry binds: from its variable where that is set and
// `from_environment`, else from the registry's default. Error(kConfig) on a bad value.
void fill(Options& options, bool from_environment);

// The registered name nearest to `name` (a TUTTI_* variable the registry lacks: a typo), or ""
// when none is close enough to be the one meant.
std::string nearest(std::string_view name);

// Every TUTTI_* variable of the process environment the registry lacks, each with its nearest
// registered name ("" when none is near). Variables other tools own under the prefix (tuttirun's
// own, the tests') are the caller's to skip.
std::vector<std::pair<std::string, std::string>> unknown_variables();

}  // namespace tutti::env
