/* Start-up to the first collective: the program a launcher's start-up is measured with. It joins
 * the job, runs one allreduce of one int (sum), checks it, and rank 0 prints the world size and
 * the largest memory of any rank: its peak RSS, and its PSS after the allreduce (shared memory
 * counted once among the processes that map it: RSS counts a segment every rank maps in full in
 * every rank), in KiB, each reduced with max. Built
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

/* Pss from /proc/self/smaps_rollup (kB), or -1 where the kernel has none. */
static long pss_kib(void) {
  FILE* f = fopen("/proc/self/smaps_rollup", "r");
  if (f == NULL) return -1;
  char line[256];
  long kib = -1;
  while (fgets(line, sizeof line, f) != NULL)
    if (sscanf(line, "Pss: %ld kB", &kib) == 1) break;
  fclose(f);
  return kib;
}

int main(int argc, char** argv) {
  int rank = 0, size = 0, one = 1, sum = 0;
  long most[2] = {0, 0}; /* peak RSS, PSS */
#ifdef FIRST_ALLREDUCE_MPI
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  long mine[2] = {peak_rss_kib(), pss_kib()};
  MPI_Allreduce(mine, most, 2, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
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
  long long mine[2] = {peak_rss_kib(), pss_kib()}, both[2] = {0, 0};
  if (tutti_allreduce(mine, both, 2, TUTTI_INT64, TUTTI_MAX) != 0) {
    fprintf(stderr, "first_allreduce: %s\n", tutti_last_error());
    return 1;
  }
  most[0] = (long)both[0];
  most[1] = (long)both[1];
  tutti_finalize();
#endif
  if (sum != size) {
    fprintf(stderr, "first_allreduce: rank %d: the sum of %d ones is %d\n", rank, size, sum);
    return 1;
  }
  if (rank == 0)
    printf("first_allreduce: %d ranks, peak RSS of a rank %ld KiB, PSS of a rank %ld KiB\n", size,
           most[0], most[1]);
  return 0;
}
