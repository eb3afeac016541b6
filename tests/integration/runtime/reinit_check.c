/* reinit_check: tutti_init -> tutti_finalize -> tutti_init in one process, three times, each
 * world running an allreduce (the second init used to fail in 3 of 4 runs, meeting the first
 * world's shared-memory leftovers); a communicator handle kept past tutti_finalize is
 * refused with TUTTI_ERR_NOT_INITIALIZED, also once a new world exists; tutti_finalize twice is
 * harmless. Prints "reinit OK" on rank 0 and exits 0, or names the first failure. */
#include <stdio.h>

#include "c_check.h"
#include "tutti/tutti.h"

int main(void) {
  tutti_comm_t kept = NULL;
  for (int round = 0; round < 3; ++round) {
    CHECK(tutti_init());
    g_rank = tutti_rank();
    const int size = tutti_size();
    float x[1000];
    for (int i = 0; i < 1000; ++i) x[i] = (float)(round + 1);
    CHECK(tutti_allreduce(x, x, 1000, TUTTI_FLOAT32, TUTTI_SUM));
    if (x[0] != (float)(size * (round + 1)) || x[999] != x[0]) {
      printf("FAIL: rank %d: round %d: sum %g, want %d\n", g_rank, round, x[0], size * (round + 1));
      return 1;
    }
    if (kept != NULL) {
      /* A handle of the world before this one. */
      const int rc = tutti_comm_allreduce(kept, x, x, 1000, TUTTI_FLOAT32, TUTTI_SUM);
      if (rc != TUTTI_ERR_NOT_INITIALIZED) {
        printf(
            "FAIL: rank %d: a handle of an ended world returned %s, want "
            "TUTTI_ERR_NOT_INITIALIZED\n",
            g_rank, tutti_error_name(rc));
        return 1;
      }
      CHECK(tutti_comm_free(kept));
      kept = NULL;
    }
    tutti_comm_t world = NULL;
    CHECK(tutti_comm_world(&world));
    CHECK(tutti_comm_dup(world, &kept));
    CHECK(tutti_comm_allreduce(kept, x, x, 1000, TUTTI_FLOAT32, TUTTI_SUM));
    CHECK(tutti_comm_free(world));
    CHECK(tutti_finalize());
    /* Past finalize the kept handle is refused. */
    const int rc = tutti_comm_allreduce(kept, x, x, 1000, TUTTI_FLOAT32, TUTTI_SUM);
    if (rc != TUTTI_ERR_NOT_INITIALIZED) {
      printf("FAIL: rank %d: a handle past tutti_finalize returned %s: %s\n", g_rank,
             tutti_error_name(rc), tutti_last_error());
      return 1;
    }
  }
  CHECK(tutti_comm_free(kept));
  CHECK(tutti_finalize()); /* twice: nothing to do, not an error */
  if (g_rank == 0) printf("reinit OK\n");
  return 0;
}
