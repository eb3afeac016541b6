#include "hostfile/cli.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "core/error.hpp"
#include "hostfile/build.hpp"
#include "hostfile/emit.hpp"
#include "hostfile/parse.hpp"

namespace tutti::hostfile {
namespace {

constexpr std::string_view kDescription =
    "tutti-hostfile: write an MPI hostfile for Kubernetes pods, or check and convert one.\n\n"
    "Examples:\n"
    "  tutti-hostfile --job train --workers 4 --slots 8\n"
    "  tutti-hostfile --job train --workers 4 --namespace ml --format mpich\n"
    "  kubectl get pods -l job=train -o name | tutti-hostfile --pods-file - --slots 2\n"
    "  tutti-hostfile --hostfile /etc/mpi/hostfile --format plain\n\n"
    "Exit codes: 0 success, 1 invalid hostfile or pods file (or I/O error), 2 usage error.\n";

struct Options {
  std::string pods;
  std::string pods_file;
  std::string job;
  int workers = 0;
  std::string hostfile;
  int slots = 1;
  std::string domain;
  std::string ns;
  std::string format = "openmpi";
  std::string output;
};

std::vector<std::string> pods_from_file(const std::string& path, std::istream& in) {
  if (path == "-") return parse_pods_file(read_limited(in, "<stdin>"), "<stdin>");
  std::error_code ec;
  std::ifstream file(path, std::ios::binary);
  if (!file || std::filesystem::is_directory(path, ec))
    throw make_error(ErrorCode::kConfig,
                     "cannot read pods file {}: it does not exist or is not a readable file", path);
  return parse_pods_file(read_limited(file, path), path);
}

// Written next to the target and renamed over it, so a reader (mpirun, a ConfigMap sync) never
// sees half a hostfile.
void write_atomically(const std::string& path, const std::string& text) {
  std::string tmp = fmt::format("{}.tmp{}", path, ::getpid());
  {
    std::ofstream file(tmp, std::ios::binary | std::ios::trunc);
    if (!file)
      throw make_error(ErrorCode::kConfig,
                       "cannot write {}: check the directory exists and is writable", tmp);
    file << text;
    file.close();
    if (!file) throw make_error(ErrorCode::kConfig, "error writing {}", tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw make_error(ErrorCode::kConfig, "cannot rename {} to {}", tmp, path);
  }
}

// A device, fifo or socket is written into, never replaced (-o /dev/stdout works; as root a rename
// would have replaced /dev/full with a regular file). A fifo nobody reads is an error, not a hang.
void write_in_place(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0)
    throw make_error(ErrorCode::kConfig, "cannot open {} for writing: {}{}", path,
                     std::strerror(errno), errno == ENXIO ? " (a fifo that no process reads)" : "");
  // Blocking from here on: a reader that is slow must slow us down, not cut the hostfile short.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  size_t done = 0;
  int err = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = n < 0 ? errno : EIO;
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0 && err == 0 && errno != EINTR) err = errno;
  if (err != 0)
    throw make_error(ErrorCode::kConfig, "error writing {}: {}", path, std::strerror(err));
}

// Follows symlinks (also dangling ones, which weakly_canonical would not) to the path they name.
std::filesystem::path resolve_links(const std::filesystem::path& path) {
  std::filesystem::path p = path;
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code ec;
    if (!std::filesystem::is_symlink(std::filesystem::symlink_status(p, ec))) return p;
    std::filesystem::path next = std::filesystem::read_symlink(p, ec);
    if (ec)
      throw make_error(ErrorCode::kConfig, "cannot read the symlink {}: {}", p.string(),
                       ec.message());
    p = next.is_absolute() ? next : p.parent_path() / next;
  }
  throw make_error(ErrorCode::kConfig, "{}: too many levels of symlinks", path.string());
}

void write_output(const std::string& path, const std::string& text) {
  // Through a symlink to what it points at: the link stays a link.
  const std::filesystem::path target = resolve_links(path);
  std::error_code ec;
  const auto status = std::filesystem::status(target, ec);
  if (std::filesystem::is_directory(status))
    throw make_error(ErrorCode::kConfig, "{} is a directory; -o takes a file name",
                     target.string());
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status))
    write_in_place(target.string(), text);
  else
    write_atomically(target.string(), text);
}

// Checks the combinations CLI11 cannot express; returns an empty string when they are fine.
std::string usage_problem(const CLI::App& app, const Options& o) {
  int sources = static_cast<int>(app.count("--pods") + app.count("--pods-file") +
                                 app.count("--job") + app.count("--hostfile"));
  if (sources != 1) return "give exactly one of --pods, --pods-file, --job, --hostfile";
  if (app.count("--job") && !app.count("--workers")) return "--job needs --workers N";
  if (app.count("--workers") && !app.count("--job")) return "--workers goes with --job NAME";
  if (app.count("--namespace") && !app.count("--job"))
    return "--namespace goes with --job (for pod lists, give the suffix with --domain)";
  if (app.count("--namespace") && app.count("--domain"))
    return "give --namespace NS or --domain SUFFIX, not both";
  if (app.count("--hostfile") && (app.count("--slots") || app.count("--domain")))
    return "--slots and --domain build a new hostfile; they do not apply to --hostfile";
  (void)o;
  return {};
}

}  // namespace

int run_cli(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
            std::ostream& err) {
  CLI::App app{std::string(kDescription), "tutti-hostfile"};
  Options o;
  app.add_option("--pods", o.pods, "Comma-separated pod names: a,b,c");
  app.add_option(
      "--pods-file", o.pods_file,
      "File of pod names (blank/newline separated, '#' comments, 'pod/' prefix ok); - for stdin");
  app.add_option("--job", o.job, "MPIJob name: hosts NAME-worker-0 .. NAME-worker-(N-1)");
  app.add_option("--workers", o.workers, "Number of workers of --job");
  app.add_option("--hostfile", o.hostfile,
                 "Read this hostfile (any format), check it, and write it in --format");
  app.add_option("--slots", o.slots, "Ranks per host (default 1)");
  app.add_option("--domain", o.domain,
                 "DNS suffix appended to each pod name, e.g. train.ml.svc.cluster.local");
  app.add_option("--namespace", o.ns,
                 "With --job: append NAME.NS.svc (the MPIJob's headless service)");
  app.add_option("--format", o.format,
                 "openmpi (host slots=N), mpich or intel (host:N), plain (host)")
      ->check(CLI::IsMember({"openmpi", "mpich", "intel", "plain"}));
  app.add_option("-o,--output", o.output, "Write here (atomically) instead of stdout");
  app.add_flag_callback(
      "--version",
      [&out] {
        out << "tutti-hostfile (tutti) " << TUTTI_VERSION << "\n";
        throw CLI::Success();
      },
      "Print the version");

  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 parses a reversed vector
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return kExitOk;
  } catch (const CLI::Success&) {  // --version printed already
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    err << "tutti-hostfile: " << e.what() << "\nRun 'tutti-hostfile --help' for usage.\n";
    return kExitUsage;
  }
  if (std::string problem = usage_problem(app, o); !problem.empty()) {
    err << "tutti-hostfile: " << problem << "\nRun 'tutti-hostfile --help' for usage.\n";
    return kExitUsage;
  }

  // Names given on the command line are usage errors; names read from files are bad input.
  bool from_file = app.count("--pods-file") || app.count("--hostfile");
  try {
    Hostfile hostfile;
    if (!o.hostfile.empty()) {
      hostfile =
          o.hostfile == "-" ? parse(read_limited(in, "<stdin>"), "<stdin>") : read_file(o.hostfile);
    } else {
      std::vector<std::string> pods;
      std::string domain = o.domain;
      if (!o.pods_file.empty()) pods = pods_from_file(o.pods_file, in);
      if (app.count("--pods")) pods = split_pod_list(o.pods);
      if (!o.job.empty()) {
        pods = job_pod_names(o.job, o.workers);
        if (!o.ns.empty()) domain = job_domain(o.job, o.ns);
      }
      hostfile = from_pods(pods, o.slots, domain);
    }
    std::string text = emit(hostfile, parse_format(o.format));
    if (o.output.empty()) {
      out << text;
    } else {
      from_file = true;  // a failed write is an I/O error, not a usage error
      write_output(o.output, text);
    }
    return kExitOk;
  } catch (const Error& e) {
    err << "tutti-hostfile: " << e.what() << "\n";
    return from_file ? kExitBadInput : kExitUsage;
  }
}

}  // namespace tutti::hostfile
