#include "collectives/tune_file.hpp"

#include <array>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace tutti::collectives {

std::vector<TunedLine> parse_tune_json(const std::string& text, const std::string& source) {
  auto bad = [&](const std::string& why) {
    return make_error(ErrorCode::kConfig,
                      "tuning file {} (TUTTI_TUNE_FILE): {}; rewrite it with `tutti-bench "
                      "allreduce --tune {}` or unset TUTTI_TUNE_FILE",
                      source, why, source);
  };
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw bad(fmt::format("not valid JSON ({})", e.what()));
  }
  if (!doc.is_object() || doc.value("tutti_tune", 0) != 1)
    throw bad("not a version 1 tuning file (missing \"tutti_tune\": 1)");
  if (!doc.contains("lines") || !doc["lines"].is_array()) throw bad("no \"lines\" array");
  std::vector<TunedLine> out;
  for (size_t i = 0; i < doc["lines"].size(); ++i) {
    const auto& j = doc["lines"][i];
    try {
      TunedLine t;
      t.algorithm = parse_algorithm(j.at("algorithm").get<std::string>());
      t.ranks = j.at("ranks").get<int>();
      t.hosts = j.at("hosts").get<int>();
      t.transport = j.value("transport", std::string("auto"));
      t.alpha_s = j.at("alpha_us").get<double>() * 1e-6;
      t.beta_s_per_byte = j.at("beta_ns_per_byte").get<double>() * 1e-9;
      if (t.algorithm == Algorithm::kAuto || t.ranks < 1 || t.hosts < 1 || t.alpha_s < 0 ||
          t.beta_s_per_byte < 0)
        throw bad(
            fmt::format("line {} has an invalid algorithm, ranks, hosts or negative cost", i));
      out.push_back(std::move(t));
    } catch (const nlohmann::json::exception& e) {
      throw bad(fmt::format("line {}: {}", i, e.what()));
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kConfig && std::string(e.what()).find(source) != std::string::npos)
        throw;
      throw bad(fmt::format("line {}: {}", i, e.what()));
    }
  }
  return out;
}

std::vector<TunedLine> read_tune_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw make_error(ErrorCode::kConfig,
                     "cannot read tuning file {} (TUTTI_TUNE_FILE); check the path or unset it",
                     path);
  // Read in pieces up to the cap, never the whole file at once: the path may name a device or a
  // pipe that never ends, and its size on disk says nothing about either.
  std::string text;
  std::array<char, 64 * 1024> chunk{};
  while (in.read(chunk.data(), chunk.size()) || in.gcount() > 0) {
    text.append(chunk.data(), static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxTuneFileBytes)
      throw make_error(
          ErrorCode::kConfig,
          "tuning file {} (TUTTI_TUNE_FILE) is larger than {} MiB, the most tutti reads; "
          "files from `tutti-bench allreduce --tune` are a few KiB: check the path or "
          "unset TUTTI_TUNE_FILE",
          path, kMaxTuneFileBytes >> 20);
  }
  return parse_tune_json(text, path);
}

}  // namespace tutti::collectives
