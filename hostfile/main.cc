// tutti-hostfile: see `tutti-hostfile --help` and docs/KUBERNETES.md.
#include <iostream>
#include <string>
#include <vector>

#include "hostfile/cli.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  int code = tutti::hostfile::run_cli(args, std::cin, std::cout, std::cerr);
  std::cout.flush();
  return std::cout ? code : tutti::hostfile::kExitBadInput;
}
