#include "idx.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <memory>

#include "tutti/error.hpp"

namespace fashion_mnist {
namespace {

using tutti::Error;
using tutti::ErrorCode;

struct GzClose {
  void operator()(gzFile f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<std::remove_pointer_t<gzFile>, GzClose>;

void read_exactly(gzFile f, void* out, size_t n, const std::string& path) {
  auto* p = static_cast<char*>(out);
  while (n > 0) {
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(n, 1u << 30));
    const int got = gzread(f, p, chunk);
    if (got <= 0)
      throw Error(ErrorCode::kInvalidArgument,
                  fmt::format("fashion_mnist: {} ends early (truncated or not an IDX file)", path));
    p += got;
    n -= static_cast<size_t>(got);
  }
}

uint32_t big_endian(const unsigned char b[4]) {
  return uint32_t{b[0]} << 24 | uint32_t{b[1]} << 16 | uint32_t{b[2]} << 8 | uint32_t{b[3]};
}

}  // namespace

IdxArray read_idx(const std::string& path) {
  GzFile f(gzopen(path.c_str(), "rb"));  // gzread also reads files that are not compressed
  if (!f)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("fashion_mnist: cannot open {} (Debian: apt-get install "
                            "dataset-fashion-mnist, or pass --data DIR)",
                            path));
  unsigned char magic[4];
  read_exactly(f.get(), magic, 4, path);
  if (magic[0] != 0 || magic[1] != 0 || magic[2] != 0x08 || magic[3] < 1 || magic[3] > 4)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("fashion_mnist: {} is not an IDX file of unsigned bytes", path));
  IdxArray a;
  size_t total = 1;
  for (int d = 0; d < magic[3]; ++d) {
    unsigned char b[4];
    read_exactly(f.get(), b, 4, path);
    a.dims.push_back(big_endian(b));
    total *= big_endian(b);
  }
  a.bytes.resize(total);
  read_exactly(f.get(), a.bytes.data(), total, path);
  return a;
}

Split read_split(const std::string& dir, const std::string& name) {
  Split s{read_idx(fmt::format("{}/{}-images-idx3-ubyte.gz", dir, name)),
          read_idx(fmt::format("{}/{}-labels-idx1-ubyte.gz", dir, name))};
  if (s.images.dims.size() != 3 || s.labels.dims.size() != 1 ||
      s.images.dims[0] != s.labels.dims[0])
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("fashion_mnist: {}/{}-*: images and labels do not match", dir, name));
  return s;
}

}  // namespace fashion_mnist
