#include "checkpoint_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "tutti/error.hpp"

namespace fashion_mnist {
namespace {

using tutti::Error;
using tutti::ErrorCode;

constexpr char kMagic[8] = {'T', 'U', 'T', 'T', 'I', 'C', 'K', 'P'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderSize = 8 + 4 + 8 + 4;

void put(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>(v >> (8 * i) & 0xff));
}
uint64_t get(const std::string& in, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t{static_cast<unsigned char>(in[at + i])} << (8 * i);
  return v;
}
uint32_t crc_of(const std::string& data, size_t from) {
  uLong crc = crc32(0L, Z_NULL, 0);
  const auto* p = reinterpret_cast<const Bytef*>(data.data() + from);
  size_t n = data.size() - from;
  while (n > 0) {
    const uInt chunk = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    crc = crc32(crc, p, chunk);
    p += chunk;
    n -= chunk;
  }
  return static_cast<uint32_t>(crc);
}

// An fd that closes itself.
class File {
 public:
  File(const std::string& path, int flags) : fd_(::open(path.c_str(), flags | O_CLOEXEC, 0644)) {
    if (fd_ < 0) fail("open", path);
  }
  ~File() {
    if (fd_ >= 0) ::close(fd_);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  int fd() const { return fd_; }
  [[noreturn]] static void fail(const char* what, const std::string& path) {
    throw Error(ErrorCode::kSystem,
                fmt::format("checkpoint: {} {}: {}", what, path, std::strerror(errno)));
  }

 private:
  int fd_;
};

void fsync_folder_of(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  File d(dir.empty() ? "." : dir, O_RDONLY | O_DIRECTORY);
  if (::fsync(d.fd()) != 0) File::fail("fsync", dir);
}

}  // namespace

void write_checkpoint_file(const std::string& path, const std::string& payload) {
  std::string header(kMagic, sizeof kMagic);
  put(header, kVersion, 4);
  put(header, payload.size(), 8);
  put(header, crc_of(payload, 0), 4);
  const std::string tmp = path + ".tmp";
  {
    File f(tmp, O_WRONLY | O_CREAT | O_TRUNC);
    for (const std::string* part : std::initializer_list<const std::string*>{&header, &payload}) {
      const char* p = part->data();
      size_t n = part->size();
      while (n > 0) {
        const ssize_t w = ::write(f.fd(), p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) File::fail("write", tmp);
        p += w;
        n -= static_cast<size_t>(w);
      }
    }
    if (::fsync(f.fd()) != 0) File::fail("fsync", tmp);
  }
  if (std::filesystem::exists(path) && ::rename(path.c_str(), (path + ".prev").c_str()) != 0)
    File::fail("rename to .prev", path);
  if (::rename(tmp.c_str(), path.c_str()) != 0) File::fail("rename", tmp);
  fsync_folder_of(path);
}

void check_checkpoint_path(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ignored;
  if (fs::is_directory(path, ignored))
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("--checkpoint {} is a folder; name a file in it, e.g. {}", path,
                            (fs::path(path) / "fmnist.ckpt").string()));
  const fs::path folder = fs::absolute(path, ignored).parent_path();
  if (!fs::exists(folder, ignored))
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("--checkpoint {}: its folder {} does not exist; create it (on "
                            "storage every restart of the job sees)",
                            path, folder.string()));
  if (!fs::is_directory(folder, ignored))
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("--checkpoint {}: {} is not a folder", path, folder.string()));
  // A save writes PATH.tmp beside PATH and renames it: make (and remove) a file there the same way
  // now. Permission bits alone do not say (root, ACLs, read-only mounts, NFS's root squash).
  const std::string probe = fmt::format("{}.probe.{}", path, ::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  int error = fd < 0 ? errno : 0;
  if (fd >= 0) {
    if (::write(fd, "t", 1) != 1) error = errno;
    ::close(fd);
    ::unlink(probe.c_str());
  }
  if (error != 0)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("--checkpoint {}: no file can be written in its folder {} ({}); "
                            "checkpoints could not be saved there: choose a writable folder",
                            path, folder.string(), std::strerror(error)));
}

std::string read_checkpoint_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kInvalidArgument, fmt::format("{}: cannot be opened", path));
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (data.size() < kHeaderSize || std::memcmp(data.data(), kMagic, sizeof kMagic) != 0)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{}: not a tutti checkpoint (no TUTTICKP header)", path));
  const uint64_t version = get(data, 8, 4);
  if (version != kVersion)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{}: checkpoint format version {}, this trainer reads {}", path,
                            version, kVersion));
  const uint64_t size = get(data, 12, 8);
  if (data.size() - kHeaderSize != size)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{}: truncated checkpoint ({} payload bytes of {})", path,
                            data.size() - kHeaderSize, size));
  const uint32_t crc = static_cast<uint32_t>(get(data, 20, 4));
  if (crc_of(data, kHeaderSize) != crc)
    throw Error(ErrorCode::kInvalidArgument,
                fmt::format("{}: corrupt checkpoint (CRC-32 mismatch)", path));
  return data.substr(kHeaderSize);
}

std::optional<std::string> load_newest_checkpoint(
    const std::string& path, const std::function<void(const std::string&)>& use,
    const std::function<void(const std::string&)>& note) {
  std::string reasons;
  bool any = false;
  for (const std::string& candidate : {path, path + ".prev"}) {
    if (!std::filesystem::exists(candidate)) continue;
    any = true;
    try {
      use(read_checkpoint_file(candidate));
      return candidate;
    } catch (const std::exception& e) {
      note(fmt::format("checkpoint {} is unusable: {}{}", candidate, e.what(),
                       candidate == path ? "; trying the previous one" : ""));
      reasons += fmt::format("{}{}", reasons.empty() ? "" : "; ", e.what());
    }
  }
  if (!any) return std::nullopt;
  throw Error(ErrorCode::kInvalidArgument,
              fmt::format("no usable checkpoint at {} or {}.prev ({}); remove them to start "
                          "from scratch",
                          path, path, reasons));
}

}  // namespace fashion_mnist
