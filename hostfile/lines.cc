#include "hostfile/lines.hpp"

namespace tutti::hostfile {

void for_each_line(std::string_view text,
                   const std::function<void(std::string_view line, int number)>& each) {
  int number = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++number;
    if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    each(line, number);
  }
}

}  // namespace tutti::hostfile
