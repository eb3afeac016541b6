// The file one rank's timeline goes to: "{rank}" in `path` becomes the world rank; without it,
// ".rank<N>" goes before the extension when the world has more than one rank.
#pragma once

#include <string>

namespace tutti {

std::string timeline_file(std::string path, int rank, int size);

}  // namespace tutti
