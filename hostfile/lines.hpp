// The lines of a hostfile or a pods file, as both formats read them: split at '\n', numbered from 1
// for messages, and cut at '#' (a comment runs to the end of its line).
#pragma once

#include <functional>
#include <string_view>

namespace tutti::hostfile {

// Calls `each(line, number)` for every line of `text`, its comment removed. Lines left blank are
// passed too (the reader skips them), so that the numbers stay the file's own.
void for_each_line(std::string_view text,
                   const std::function<void(std::string_view line, int number)>& each);

}  // namespace tutti::hostfile
