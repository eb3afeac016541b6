// How many worlds this process has finished (tutti::finalize after tutti::init): a handle made in
// one world remembers it, and is refused once that world is over (world.cc).
#pragma once

namespace tutti {

int world_incarnation();

}  // namespace tutti
