/* Start-up to the first collective: the program a launcher's start-up is measured with. It joins
 * the job, runs one allreduce of one int (sum), checks it, and rank 0 prints the world size and
 * the largest resident set of any rank (every rank's peak RSS, reduced with max, in KiB). Built
 * twice from this file: against libtutti (tutti-first-allreduce, under tuttirun) and, where MPI is
 * found, against MPI (mpi-first-allreduce, under mpirun), so that both launchers start the same
 * work. bench/startup.sh times them. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#ifdef FIRST_ALLREDUCE_MPI
#include <mpi.h>
#else
#include "tutti/tutti.h"
#endif

static long peak_rss_kib(void) {
  struct rusage u;
  return getrusage(RUSAGE_SELF, &u) == 0 ? u.ru_maxrss : -1;
}

int main(int argc, char** argv) {
  int rank = 0, size = 0, one = 1, sum = 0;
  long max_rss = 0;
#ifdef FIRST_ALLREDUCE_MPI
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  long rss = peak_rss_kib();
  MPI_Allreduce(&rss, &max_rss, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
#else
  (void)argc;
  (void)argv;
  if (tutti_init() != 0) {
    fprintf(stderr, "first_allreduce: %s\n", tutti_last_error());
    return 1;
  }
  rank = tutti_rank();
  size = tutti_size();
  if (tutti_allreduce(&one, &sum, 1, TUTTI_INT32, TUTTI_SUM) != 0) {
    fprintf(stderr, "first_allreduce: %s\n", tutti_last_error());
    return 1;
  }
  long long mine = peak_rss_kib(), most = 0;
  if (tutti_allreduce(&mine, &most, 1, TUTTI_INT64, TUTTI_MAX) != 0) {
    fprintf(stderr, "first_allreduce: %s\n", tutti_last_error());
    return 1;
  }
  max_rss = (long)most;
  tutti_finalize();
#endif
  if (sum != size) {
    fprintf(stderr, "first_allreduce: rank %d: the sum of %d ones is %d\n", rank, size, sum);
    return 1;
  }
  if (rank == 0) printf("first_allreduce: %d ranks, peak RSS of a rank %ld KiB\n", size, max_rss);
  return 0;
}
