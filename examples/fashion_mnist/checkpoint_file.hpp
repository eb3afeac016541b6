// Checkpoint files that are either whole or refused: a small header (magic, version, payload
// size, CRC-32 of the payload) before the payload; written atomically (temporary file, fsync,
// rename, fsync of the folder), keeping the previous checkpoint as PATH.prev.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace fashion_mnist {

// Writes `payload` to `path`: PATH.tmp first (fsync'd), then the current PATH becomes PATH.prev
// and PATH.tmp becomes PATH. A crash at any point leaves PATH or PATH.prev whole.
void write_checkpoint_file(const std::string& path, const std::string& payload);

// Throws tutti::Error(kInvalidArgument) saying why checkpoints cannot be saved to `path`: it is a
// folder, its folder does not exist or is a file, or no file can be made there (permissions, a
// read-only or immutable folder, a full disk). Rank 0 calls it before training: found at the
// first save instead, rank 0 stopped and its peers reported only that it had gone.
void check_checkpoint_path(const std::string& path);

// The payload of `path`. Throws tutti::Error(kInvalidArgument) saying what is wrong: missing,
// not a checkpoint (bad magic), another version, truncated, or a CRC mismatch.
std::string read_checkpoint_file(const std::string& path);

// The newest usable checkpoint: PATH, else PATH.prev. `use` parses a payload (and throws when it
// cannot); a file whose framing or parse fails is reported through `note` and the next one is
// tried. Returns the path used, or nullopt when neither file exists (a fresh start). Throws
// tutti::Error(kInvalidArgument) naming both files and why when files exist but none is usable:
// starting over silently would throw the training away.
std::optional<std::string> load_newest_checkpoint(
    const std::string& path, const std::function<void(const std::string& payload)>& use,
    const std::function<void(const std::string& message)>& note);

}  // namespace fashion_mnist
