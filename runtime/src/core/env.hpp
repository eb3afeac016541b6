// The one typed registry of TUTTI_* environment variables. Every variable tutti reads is listed in
// env.cc with its type, default and meaning; reading an unlisted name is a bug (kInternal), and a
// value of the wrong shape is a clear kConfig error naming the variable.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tutti::env {

enum class Kind { kString, kInt, kSeconds, kBytes, kChoice, kBool };

struct Variable {
  std::string_view name;
  Kind kind;
  std::string_view default_value;  // empty: unset by default
  std::string_view choices;        // for kChoice: "a|b|c"
  std::string_view description;
};

std::span<const Variable> all();
const Variable& find(std::string_view name);

// The raw value, or nullopt when unset or empty.
std::optional<std::string> raw(std::string_view name);
bool is_set(std::string_view name);

std::string get_string(std::string_view name);
int64_t get_int(std::string_view name);
double get_seconds(std::string_view name);
uint64_t get_bytes(std::string_view name);  // accepts 4096, 64K, 1M, 2G (powers of 1024)
bool get_bool(std::string_view name);       // 1/0, true/false, yes/no, on/off
std::string get_choice(std::string_view name);

// Parsers shared with the command-line tools so flags and env accept the same spellings.
uint64_t parse_bytes(std::string_view text, std::string_view what);
double parse_seconds(std::string_view text, std::string_view what);

// The README's env table, generated from the registry (tests check the README matches).
std::string markdown_table();

}  // namespace tutti::env
