#include "hostfile/build.hpp"

#include <set>

#include "core/error.hpp"
#include "hostfile/dns_name.hpp"
#include "hostfile/lines.hpp"

namespace tutti::hostfile {

std::vector<std::string> split_pod_list(std::string_view text) {
  std::vector<std::string> names;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    names.emplace_back(
        text.substr(start, comma == std::string_view::npos ? text.npos : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return names;
}

std::vector<std::string> parse_pods_file(std::string_view text, std::string_view source) {
  std::vector<std::string> names;
  for_each_line(text, [&](std::string_view line, int line_number) {
    size_t i = 0;
    while (i < line.size()) {
      auto blank = [&](size_t k) { return line[k] == ' ' || line[k] == '\t' || line[k] == '\r'; };
      while (i < line.size() && blank(i)) ++i;
      size_t word_start = i;
      while (i < line.size() && !blank(i)) ++i;
      if (i == word_start) continue;
      std::string_view name = line.substr(word_start, i - word_start);
      if (name.starts_with("pod/")) name.remove_prefix(4);
      if (std::string problem = label_problem(name); !problem.empty())
        throw make_error(ErrorCode::kConfig, "{}:{}: '{}' is not a valid pod name: {}", source,
                         line_number, printable(name), problem);
      names.emplace_back(name);
    }
  });
  if (names.empty())
    throw make_error(ErrorCode::kConfig, "{}: no pod names (the file is empty or only comments)",
                     source);
  return names;
}

std::vector<std::string> job_pod_names(std::string_view job, int workers) {
  if (workers < 1 || workers > kMaxSlots)
    throw make_error(ErrorCode::kConfig, "--workers {} must be between 1 and {}", workers,
                     kMaxSlots);
  std::vector<std::string> names;
  for (int i = 0; i < workers; ++i) names.push_back(fmt::format("{}-worker-{}", job, i));
  // The last name is the longest; if it is a label, the job name is fine for all of them.
  if (std::string problem = label_problem(names.back()); !problem.empty())
    throw make_error(ErrorCode::kConfig, "job name '{}' gives invalid pod names like {}: {}",
                     printable(job), printable(names.back()), problem);
  return names;
}

std::string job_domain(std::string_view job, std::string_view ns) {
  if (std::string problem = label_problem(ns); !problem.empty())
    throw make_error(ErrorCode::kConfig, "namespace '{}' is not a valid Kubernetes namespace: {}",
                     printable(ns), problem);
  return fmt::format("{}.{}.svc", job, ns);
}

Hostfile from_pods(const std::vector<std::string>& pods, int slots, std::string_view domain) {
  if (slots < 1 || slots > kMaxSlots)
    throw make_error(ErrorCode::kConfig, "--slots {} must be between 1 and {}", slots, kMaxSlots);
  if (domain.starts_with('.')) domain.remove_prefix(1);
  if (!domain.empty()) {
    if (std::string problem = subdomain_problem(domain); !problem.empty())
      throw make_error(ErrorCode::kConfig, "domain '{}' is not a valid DNS name: {}",
                       printable(domain), problem);
  }
  if (pods.empty()) throw make_error(ErrorCode::kConfig, "no pod names given");
  Hostfile result;
  std::set<std::string, std::less<>> seen;
  for (const std::string& pod : pods) {
    if (std::string problem = label_problem(pod); !problem.empty())
      throw make_error(ErrorCode::kConfig, "'{}' is not a valid pod name: {}", printable(pod),
                       problem);
    if (!seen.insert(pod).second)
      throw make_error(ErrorCode::kConfig,
                       "pod {} is given twice; list each pod once and use --slots", pod);
    std::string name = domain.empty() ? pod : fmt::format("{}.{}", pod, domain);
    if (std::string problem = subdomain_problem(name); !problem.empty())
      throw make_error(ErrorCode::kConfig, "host name {} is not a valid DNS name: {}",
                       printable(name), problem);
    result.hosts.push_back(Host{std::move(name), slots, std::nullopt});
  }
  return result;
}

}  // namespace tutti::hostfile
