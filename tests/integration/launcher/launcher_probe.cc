// A rank program for the launcher's integration tests. It runs the actions given on its command
// line in order; "on R ACTION ..." runs one action only on rank R (from TUTTI_RANK).
//
//   env                 print every TUTTI_* variable as NAME=VALUE (sorted), then STDIN=<eof|data>
//   show NAME           print NAME=VALUE (or NAME unset) for any variable
//   lines N             print N lines "line I of rank R" to stdout as fast as possible
//   errlines N          the same to stderr
//   partial TEXT        print TEXT to stdout without a newline
//   touch PREFIX        create the file PREFIX.<rank> (tests wait for it: "the rank is running")
//   shm NAME            create /dev/shm/NAME (a stand-in for a leaked segment)
//   sleep SECONDS       sleep
//   exit CODE           exit with CODE
//   kill SIGNAL         send SIGNAL (a number) to itself
//   ignore-term         ignore SIGTERM from here on
//   grandchild SECONDS  fork a child that sleeps SECONDS (it must not outlive the job)
//   marker TEXT         does nothing; TEXT is on the command line for pgrep -f
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern char** environ;

namespace {

int my_rank() {
  const char* r = std::getenv("TUTTI_RANK");
  return r != nullptr ? std::atoi(r) : -1;
}

long number(const std::vector<std::string>& args, size_t i) {
  if (i >= args.size()) {
    std::fprintf(stderr, "launcher_probe: action '%s' needs an argument\n", args[i - 1].c_str());
    std::exit(64);
  }
  return std::strtol(args[i].c_str(), nullptr, 10);
}

void print_lines(FILE* out, long n, int rank) {
  for (long i = 0; i < n; ++i) std::fprintf(out, "line %ld of rank %d\n", i, rank);
  std::fflush(out);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  const int rank = my_rank();
  size_t i = 0;
  while (i < args.size()) {
    bool mine = true;
    if (args[i] == "on") {
      mine = number(args, i + 1) == rank;
      i += 2;
      if (i >= args.size()) break;
    }
    const std::string action = args[i++];
    auto arg = [&]() -> std::string {
      if (i >= args.size()) {
        std::fprintf(stderr, "launcher_probe: action '%s' needs an argument\n", action.c_str());
        std::exit(64);
      }
      return args[i++];
    };
    if (action == "env") {
      if (!mine) continue;
      std::vector<std::string> vars;
      for (char** e = environ; *e != nullptr; ++e)
        if (std::strncmp(*e, "TUTTI_", 6) == 0) vars.emplace_back(*e);
      std::sort(vars.begin(), vars.end());
      for (const auto& v : vars) std::printf("%s\n", v.c_str());
      char c;
      std::printf("STDIN=%s\n", ::read(STDIN_FILENO, &c, 1) == 0 ? "eof" : "data");
      std::fflush(stdout);
    } else if (action == "show") {
      std::string name = arg();
      if (!mine) continue;
      const char* v = std::getenv(name.c_str());
      if (v != nullptr)
        std::printf("%s=%s\n", name.c_str(), v);
      else
        std::printf("%s unset\n", name.c_str());
      std::fflush(stdout);
    } else if (action == "lines" || action == "errlines") {
      long n = std::strtol(arg().c_str(), nullptr, 10);
      if (mine) print_lines(action == "lines" ? stdout : stderr, n, rank);
    } else if (action == "partial") {
      std::string text = arg();
      if (mine) {
        std::fputs(text.c_str(), stdout);
        std::fflush(stdout);
      }
    } else if (action == "touch" || action == "shm") {
      std::string name = arg();
      if (!mine) continue;
      std::string path = action == "touch" ? name + "." + std::to_string(rank) : "/dev/shm/" + name;
      int fd = ::open(path.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
      if (fd < 0) {
        std::perror(path.c_str());
        return 65;
      }
      ::close(fd);
    } else if (action == "sleep") {
      double s = std::strtod(arg().c_str(), nullptr);
      if (mine) ::usleep(static_cast<useconds_t>(s * 1e6));
    } else if (action == "exit") {
      int code = std::atoi(arg().c_str());
      if (mine) {
        std::fflush(nullptr);
        std::_Exit(code);
      }
    } else if (action == "kill") {
      int sig = std::atoi(arg().c_str());
      if (mine) {
        std::fflush(nullptr);
        ::kill(::getpid(), sig);
        ::pause();
      }
    } else if (action == "ignore-term") {
      if (mine) ::signal(SIGTERM, SIG_IGN);
    } else if (action == "grandchild") {
      double s = std::strtod(arg().c_str(), nullptr);
      if (mine && ::fork() == 0) {
        ::usleep(static_cast<useconds_t>(s * 1e6));
        std::_Exit(0);
      }
    } else if (action == "marker") {
      arg();
    } else {
      std::fprintf(stderr, "launcher_probe: unknown action '%s'\n", action.c_str());
      return 64;
    }
  }
  return 0;
}
