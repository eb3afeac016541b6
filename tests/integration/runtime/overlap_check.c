/* overlap_check: send and receive buffers that overlap partly are refused with
 * TUTTI_ERR_INVALID_ARGUMENT naming the call, the rank and both ranges, on every collective that
 * takes both and on the engine's calls, through the C API (they used to return 0 with wrong sums:
 * allreduce(a, a + 2, 6) on shm, ring and tcp). The same buffer (in place), each call's own
 * in-place block, adjacent buffers and count 0 still work and give the right results. A refusal
 * sends nothing, so the communicator stays usable: a root that was refused calls again, and the
 * ranks that were already waiting in that call pair with the second one. Prints "overlap OK" on
 * rank 0 and exits 0, or "FAIL: ..." for the first failure. */
#include <stdio.h>
#include <string.h>

#include "c_check.h"
#include "tutti/tutti.h"

static float g_buf[4096];
static float g_other[4096];

/* rc is TUTTI_ERR_INVALID_ARGUMENT and the message names the call, this rank and both ranges. */
static int refused(int rc, const char* call, const char* what) {
  char rank_text[64];
  snprintf(rank_text, sizeof rank_text, "%s on rank %d:", call, g_rank);
  const char* message = tutti_last_error();
  if (rc != TUTTI_ERR_INVALID_ARGUMENT || strstr(message, rank_text) == NULL ||
      strstr(message, "send [0x") == NULL || strstr(message, "recv [0x") == NULL ||
      strstr(message, "overlap") == NULL) {
    printf("FAIL: rank %d: %s: want a refusal naming \"%s\" and both ranges, got %s: %s\n", g_rank,
           what, rank_text, rc == 0 ? "success" : tutti_error_name(rc), rc == 0 ? "" : message);
    return 0;
  }
  return 1;
}

static void fill(float* x, size_t n, float value) {
  for (size_t i = 0; i < n; ++i) x[i] = value;
}

static int all_equal(const float* x, size_t n, float value) {
  for (size_t i = 0; i < n; ++i)
    if (x[i] != value) return 0;
  return 1;
}

int main(void) {
  CHECK(tutti_init());
  g_rank = tutti_rank();
  const int size = tutti_size();
  const size_t n = (size_t)size;
  float* a = g_buf;

  /* The report's case: [1,1,2,2,2,2,2,2], allreduce(a, a + 2, 6). Refused, nothing written. */
  const float report[8] = {1, 1, 2, 2, 2, 2, 2, 2};
  memcpy(a, report, sizeof report);
  EXPECT(refused(tutti_allreduce(a, a + 2, 6, TUTTI_FLOAT32, TUTTI_SUM), "allreduce",
                 "allreduce(a, a + 2, 6)"),
         "see above");
  EXPECT(memcmp(a, report, sizeof report) == 0, "a refused allreduce wrote its buffer");
  EXPECT(refused(tutti_allreduce(a + 2, a, 6, TUTTI_FLOAT32, TUTTI_SUM), "allreduce",
                 "allreduce(a + 2, a, 6)"),
         "see above");
  /* One byte shared (float16 buffers one element apart). */
  EXPECT(refused(tutti_allreduce(a, (char*)a + 2, 3, TUTTI_FLOAT16, TUTTI_SUM), "allreduce",
                 "allreduce of float16 one element apart"),
         "see above");
  /* Adjacent, in place and count 0 go through, with the right sums. */
  fill(a, 6, 2.0f);
  CHECK(tutti_allreduce(a, a + 6, 6, TUTTI_FLOAT32, TUTTI_SUM));
  EXPECT(all_equal(a + 6, 6, 2.0f * (float)size) && all_equal(a, 6, 2.0f),
         "adjacent allreduce gave %g", (double)a[6]);
  fill(a, 6, 3.0f);
  CHECK(tutti_allreduce(a, a, 6, TUTTI_FLOAT32, TUTTI_SUM));
  EXPECT(all_equal(a, 6, 3.0f * (float)size), "in-place allreduce gave %g", (double)a[0]);
  CHECK(tutti_allreduce(a, a + 2, 0, TUTTI_FLOAT32, TUTTI_SUM));

  /* allgather: in place is send = this rank's block of recv; any other overlap is refused. */
  float* gathered = g_other;
  fill(gathered, 3 * n, -1.0f);
  fill(gathered + 3 * (size_t)g_rank, 3, (float)(g_rank + 1));
  CHECK(tutti_allgather(gathered + 3 * (size_t)g_rank, gathered, 3, TUTTI_FLOAT32));
  for (int p = 0; p < size; ++p)
    EXPECT(all_equal(gathered + 3 * (size_t)p, 3, (float)(p + 1)),
           "in-place allgather: block %d is %g", p, (double)gathered[3 * p]);
  EXPECT(refused(tutti_allgather(gathered + 3 * (size_t)g_rank + 1, gathered, 3, TUTTI_FLOAT32),
                 "allgather", "allgather with send one element into this rank's block"),
         "see above");
  if (size > 1) /* recv itself is rank 0's block: in place there, refused on every other rank */
    EXPECT(refused(tutti_allgather(gathered + 3 * ((size_t)g_rank + 1) % (3 * n), gathered, 3,
                                   TUTTI_FLOAT32),
                   "allgather", "allgather with send at another rank's block"),
           "see above");

  /* reduce_scatter: in place is recv = this rank's block of send. */
  float* blocks = g_other;
  fill(blocks, 2 * n, 1.0f);
  CHECK(tutti_reduce_scatter(blocks, blocks + 2 * (size_t)g_rank, 2, TUTTI_FLOAT32, TUTTI_SUM));
  EXPECT(all_equal(blocks + 2 * (size_t)g_rank, 2, (float)size), "in-place reduce_scatter gave %g",
         (double)blocks[2 * g_rank]);
  fill(blocks, 2 * n + 1, 1.0f);
  EXPECT(refused(tutti_reduce_scatter(blocks, blocks + 2 * (size_t)g_rank + 1, 2, TUTTI_FLOAT32,
                                      TUTTI_SUM),
                 "reduce_scatter", "reduce_scatter with recv one element into this rank's block"),
         "see above");

  /* alltoall: in place is the same buffer. */
  fill(a, 2 * n, (float)g_rank);
  CHECK(tutti_alltoall(a, a, 2, TUTTI_FLOAT32));
  for (int p = 0; p < size; ++p)
    EXPECT(all_equal(a + 2 * (size_t)p, 2, (float)p), "in-place alltoall: block %d is %g", p,
           (double)a[2 * p]);
  EXPECT(refused(tutti_alltoall(a, a + 1, 2, TUTTI_FLOAT32), "alltoall", "alltoall(a, a + 1)"),
         "see above");

  /* The v-forms. */
  size_t counts[64];
  for (int p = 0; p < size; ++p) counts[p] = (size_t)p + 2;
  size_t before = 0, total = 0;
  for (int p = 0; p < size; ++p) {
    if (p == g_rank) before = total;
    total += counts[p];
  }
  EXPECT(refused(tutti_allgatherv(g_other + before + 1, g_other, counts, TUTTI_FLOAT32),
                 "allgatherv", "allgatherv with send one element into this rank's block"),
         "see above");
  EXPECT(refused(
             tutti_reduce_scatterv(g_other, g_other + before + 1, counts, TUTTI_FLOAT32, TUTTI_SUM),
             "reduce_scatterv", "reduce_scatterv with recv one element into its block"),
         "see above");
  EXPECT(refused(tutti_alltoallv(g_other, counts, g_other + 1, counts, TUTTI_FLOAT32), "alltoallv",
                 "alltoallv(x, x + 1)"),
         "see above");
  fill(g_other + before, counts[g_rank], (float)g_rank);
  CHECK(tutti_allgatherv(g_other + before, g_other, counts, TUTTI_FLOAT32));
  for (size_t p = 0, at = 0; p < n; at += counts[p], ++p)
    EXPECT(all_equal(g_other + at, counts[p], (float)p), "in-place allgatherv: block %zu is %g", p,
           (double)g_other[at]);

  /* Rooted calls: only the root looks at recv (reduce, gather) or send (scatter), so only it
   * refuses; the others are already in the call and pair with the root's second, right call. */
  fill(a, 4, 1.0f);
  if (g_rank == 0) {
    EXPECT(refused(tutti_reduce(a, a + 1, 4, TUTTI_FLOAT32, TUTTI_SUM, 0), "reduce",
                   "reduce(a, a + 1) at the root"),
           "see above");
    CHECK(tutti_reduce(a, a + 4, 4, TUTTI_FLOAT32, TUTTI_SUM, 0));
    EXPECT(all_equal(a + 4, 4, (float)size), "reduce after a refusal gave %g", (double)a[4]);
  } else {
    CHECK(tutti_reduce(a, a + 1, 4, TUTTI_FLOAT32, TUTTI_SUM, 0)); /* recv unused here */
  }
  fill(a, 2, (float)g_rank);
  if (g_rank == 0) {
    EXPECT(refused(tutti_gather(a, a + 1, 2, TUTTI_FLOAT32, 0), "gather",
                   "gather with send one element before the root's block"),
           "see above");
    CHECK(tutti_gather(a, g_other, 2, TUTTI_FLOAT32, 0));
    for (int p = 0; p < size; ++p)
      EXPECT(all_equal(g_other + 2 * p, 2, (float)p), "gather after a refusal: block %d is %g", p,
             (double)g_other[2 * p]);
    fill(g_other, 2 * n, 7.0f);
    EXPECT(refused(tutti_scatter(g_other, g_other + 1, 2, TUTTI_FLOAT32, 0), "scatter",
                   "scatter with recv one element into the root's block"),
           "see above");
    CHECK(tutti_scatter(g_other, g_other, 2, TUTTI_FLOAT32, 0)); /* in place at the root */
  } else {
    CHECK(tutti_gather(a, NULL, 2, TUTTI_FLOAT32, 0));
    CHECK(tutti_scatter(NULL, a, 2, TUTTI_FLOAT32, 0));
    EXPECT(all_equal(a, 2, 7.0f), "scatter after a refusal gave %g", (double)a[0]);
  }

  /* The engine: refused before anything is enqueued (no request is made, nothing waits). */
  tutti_request_t request = NULL;
  EXPECT(
      refused(tutti_allreduce_async("overlap.ar", a, a + 2, 6, TUTTI_FLOAT32, TUTTI_SUM, &request),
              "allreduce_async", "allreduce_async(a, a + 2, 6)") &&
          request == NULL,
      "see above");
  EXPECT(refused(tutti_reduce_scatter_async("overlap.rs", blocks, blocks + 1, 2, TUTTI_FLOAT32,
                                            TUTTI_SUM, &request),
                 "reduce_scatter_async", "reduce_scatter_async with recv inside send"),
         "see above");
  EXPECT(refused(tutti_allgather_async("overlap.ag", a, 1, 2, TUTTI_FLOAT32, a + 1, 2 * n, NULL,
                                       &request),
                 "allgather_async", "allgather_async with recv inside send"),
         "see above");
  size_t rows[64];
  for (int p = 0; p < size; ++p) rows[p] = 1;
  EXPECT(
      refused(tutti_alltoall_async("overlap.a2a", a, rows, 1, TUTTI_FLOAT32, a, n, NULL, &request),
              "alltoall_async", "alltoall_async into its own send buffer"),
      "see above");
  fill(a, 6, 1.0f);
  CHECK(tutti_allreduce_async("overlap.ok", a, a, 6, TUTTI_FLOAT32, TUTTI_SUM, &request));
  CHECK(tutti_wait(request));
  EXPECT(all_equal(a, 6, (float)size), "in-place allreduce_async gave %g", (double)a[0]);

  /* Communicator handles go the same way. */
  tutti_comm_t world = NULL, copy = NULL;
  CHECK(tutti_comm_world(&world));
  CHECK(tutti_comm_dup(world, &copy));
  EXPECT(refused(tutti_comm_allreduce(copy, a, a + 2, 6, TUTTI_FLOAT32, TUTTI_SUM), "allreduce",
                 "tutti_comm_allreduce(copy, a, a + 2, 6)"),
         "see above");
  fill(a, 6, 1.0f);
  CHECK(tutti_comm_allreduce(copy, a, a, 6, TUTTI_FLOAT32, TUTTI_SUM));
  EXPECT(all_equal(a, 6, (float)size), "allreduce after a refusal gave %g", (double)a[0]);
  CHECK(tutti_comm_free(copy));
  CHECK(tutti_comm_free(world));
  CHECK(tutti_finalize());
  if (g_rank == 0) printf("overlap OK\n");
  return 0;
}
