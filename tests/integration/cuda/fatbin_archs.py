#!/usr/bin/env python3
"""fatbin_archs.py FILE: lists the GPU code an ELF file (object, libtutti.so, program) carries, one
line per fatbin entry: "sm_90 elf" (machine code) or "sm_120 ptx" (PTX the driver compiles).

For machines without cuobjdump (NVIDIA's pip wheels ship none). The layout below was worked out on
objects compiled here with known -gencode sets and is checked the same way by cuda_archs.sh:
  .nv_fatbin holds one container per compiled .cu file, each 8-byte aligned:
    u32 magic 0xBA55ED50, u16 version, u16 header size, u64 size of the entries that follow
  and each entry:
    u16 kind (1 PTX, 2 ELF), u16 flags, u32 header size, u64 payload size, ...,
    u32 at offset 28: the architecture (75 for sm_75); the payload follows the header.
"""
import struct
import subprocess
import sys
import tempfile

MAGIC = 0xBA55ED50
KINDS = {1: "ptx", 2: "elf"}


def fatbin_section(path):
    with tempfile.NamedTemporaryFile() as out:
        subprocess.run(["objcopy", "-O", "binary", "--only-section=.nv_fatbin", path, out.name],
                       check=True)
        return open(out.name, "rb").read()


def entries(data):
    pos = 0
    while pos + 16 <= len(data):
        magic, _version, header, size = struct.unpack_from("<IHHQ", data, pos)
        if magic != MAGIC:
            pos += 8  # padding between containers
            continue
        entry = pos + header
        end = entry + size
        while entry + 32 <= end:
            kind, _flags, eheader, payload = struct.unpack_from("<HHIQ", data, entry)
            (arch,) = struct.unpack_from("<I", data, entry + 28)
            if kind not in KINDS or eheader < 32:
                raise SystemExit(f"fatbin_archs: unexpected entry (kind {kind}, header {eheader}) "
                                 f"at offset {entry}")
            yield f"sm_{arch} {KINDS[kind]}"
            entry += eheader + payload
        pos = (end + 7) // 8 * 8


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    data = fatbin_section(sys.argv[1])
    if not data:
        raise SystemExit(f"fatbin_archs: {sys.argv[1]} has no .nv_fatbin section")
    for line in sorted(set(entries(data)), key=lambda s: (int(s.split()[0][3:]), s)):
        print(line)


if __name__ == "__main__":
    main()
