// A C++-only consumer of tutti/tutti_mpi.h: a tutti communicator over MPI_COMM_WORLD. The install
// test builds it (its include path and libmpi come through tutti::tutti) but does not run it.
#include <mpi.h>
#include <tutti/tutti_mpi.h>

#include <cstdio>
#include <span>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rc = 0;
  try {
    tutti::Communicator comm = tutti::communicator_from_mpi(MPI_COMM_WORLD);
    std::vector<double> data(16, 1.0);
    comm.allreduce(std::span<double>(data), tutti::ReduceOp::kSum);
    std::printf("consumer_mpi: rank %d of %d: allreduce %s\n", comm.rank(), comm.size(),
                data[0] == comm.size() ? "correct" : "WRONG");
    rc = data[0] == comm.size() ? 0 : 1;
  } catch (const tutti::Error& e) {
    std::fprintf(stderr, "consumer_mpi: %s\n", e.what());
    rc = 1;
  }
  MPI_Finalize();
  return rc;
}
