/* A plain C program on libtutti: integer allreduce of every op, checked, with errors reported through
 * tutti_last_error(). Exit status 0 only if every result is right. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tutti/tutti.h"

static int check(int rc, const char* what) {
  if (rc != 0) {
    fprintf(stderr, "%s failed: %s (%s)\n", what, tutti_error_name(rc), tutti_last_error());
    exit(1);
  }
  return rc;
}

int main(void) {
  check(tutti_init(), "tutti_init");
  int rank = tutti_rank(), size = tutti_size();
  int32_t send[3] = {rank + 1, rank + 1, rank + 1};
  int32_t sum[3], max[3];
  check(tutti_allreduce(send, sum, 3, TUTTI_INT32, TUTTI_SUM), "allreduce sum");
  check(tutti_allreduce(send, max, 3, TUTTI_INT32, TUTTI_MAX), "allreduce max");
  int ok = sum[0] == size * (size + 1) / 2 && max[2] == size;

  int32_t value = rank == 0 ? 42 : -1;
  check(tutti_broadcast(&value, 1, TUTTI_INT32, 0), "broadcast");
  ok = ok && value == 42;

  int32_t* all = malloc(sizeof(int32_t) * (size_t)size);
  check(tutti_allgather(&rank, all, 1, TUTTI_INT32), "allgather");
  for (int r = 0; r < size; ++r) ok = ok && all[r] == r;
  free(all);

  /* A bad argument is an error code, not a crash. */
  ok = ok && tutti_allreduce(NULL, sum, 3, TUTTI_INT32, TUTTI_SUM) == TUTTI_ERR_INVALID_ARGUMENT;
  check(tutti_barrier(), "barrier");
  printf("rank %d of %d: C API %s\n", rank, size, ok ? "correct" : "WRONG");
  check(tutti_finalize(), "tutti_finalize");
  return ok ? 0 : 1;
}
