// Fashion-MNIST's IDX files (gzip'd, as Debian's dataset-fashion-mnist ships them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fashion_mnist {

// One IDX file: unsigned bytes (type 0x08) with its dimensions, e.g. {60000, 28, 28}.
struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> bytes;
};

// Reads `path` (.gz or plain). Throws tutti::Error(kInvalidArgument) naming the file when it is
// missing, not IDX, not unsigned bytes, or shorter than its header says.
IdxArray read_idx(const std::string& path);

// The images (N x 28 x 28) and labels (N) of one split: "train" or "t10k".
struct Split {
  IdxArray images;
  IdxArray labels;
};
Split read_split(const std::string& dir, const std::string& name);

}  // namespace fashion_mnist
