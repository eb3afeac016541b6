/* c_engine_check: the engine's C API on real ranks (run under tuttirun): every *_async form,
 * tutti_poll, tutti_wait_for, tutti_request_then, join, process sets, stats and the timeline
 * calls. Prints "ok: ..." and exits 0, or "FAIL: ..." and exits 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tutti/tutti.h"

static int g_rank, g_size, g_failures;

#define EXPECT(cond, ...)                                   \
  do {                                                      \
    if (!(cond)) {                                          \
      printf("FAIL: rank %d: line %d: ", g_rank, __LINE__); \
      printf(__VA_ARGS__);                                  \
      printf(" (%s)\n", tutti_last_error());                \
      ++g_failures;                                         \
    }                                                       \
  } while (0)

static int g_called, g_status = 99;
static void on_done(int status, const char* message, void* user) {
  (void)message;
  g_status = status;
  *(int*)user += 1;
}

int main(void) {
  if (tutti_init() != 0) {
    printf("FAIL: init: %s\n", tutti_last_error());
    return 1;
  }
  g_rank = tutti_rank();
  g_size = tutti_size();
  tutti_request_t r;

  /* allreduce, polled to completion. */
  double x[5] = {1, 2, 3, 4, 5};
  EXPECT(tutti_allreduce_async("x", x, x, 5, TUTTI_FLOAT64, TUTTI_SUM, &r) == 0, "allreduce_async");
  int done = 0;
  for (int i = 0; i < 100000 && !done; ++i) {
    EXPECT(tutti_poll(r, &done) == 0, "poll");
    if (!done) usleep(100);
  }
  EXPECT(done && x[4] == 5.0 * g_size, "polled allreduce: %g", x[4]);

  /* allgather with rows differing per rank, into the caller's buffer, rows per rank reported. */
  int mine[3] = {g_rank, g_rank, g_rank};
  int all[64];
  size_t rows[16];
  EXPECT(tutti_allgather_async("g", mine, (size_t)(g_rank % 3), 1, TUTTI_INT32, all, 64, rows,
                               &r) == 0,
         "allgather_async");
  EXPECT(tutti_wait(r) == 0, "allgather wait");
  size_t at = 0;
  for (int q = 0; q < g_size; ++q) {
    EXPECT(rows[q] == (size_t)(q % 3), "rows[%d] = %zu", q, rows[q]);
    for (size_t k = 0; k < rows[q]; ++k, ++at) EXPECT(all[at] == q, "all[%zu] = %d", at, all[at]);
  }

  /* broadcast, waited with a deadline. */
  float b[4] = {0};
  if (g_rank == g_size - 1) b[0] = b[3] = 7.5f;
  EXPECT(tutti_broadcast_async("b", b, 4, TUTTI_FLOAT32, g_size - 1, &r) == 0, "broadcast_async");
  EXPECT(tutti_wait_for(r, 30000) == 0, "broadcast wait_for");
  EXPECT(b[0] == 7.5f && b[3] == 7.5f, "broadcast: %g", b[3]);

  /* reduce_scatter and alltoall. */
  long long rs_in[64], rs_out[4];
  for (int i = 0; i < 4 * g_size; ++i) rs_in[i] = i;
  EXPECT(tutti_reduce_scatter_async("rs", rs_in, rs_out, 4, TUTTI_INT64, TUTTI_SUM, &r) == 0, "rs");
  EXPECT(tutti_wait(r) == 0, "rs wait");
  EXPECT(rs_out[1] == (long long)(4 * g_rank + 1) * g_size, "rs_out[1] = %lld", rs_out[1]);
  size_t send_rows[16];
  int a2a_in[64], a2a_out[64];
  size_t got_rows[16];
  for (int q = 0; q < g_size; ++q) {
    send_rows[q] = 1;
    a2a_in[q] = 100 * g_rank + q;
  }
  EXPECT(tutti_alltoall_async("a2a", a2a_in, send_rows, 1, TUTTI_INT32, a2a_out, 64, got_rows,
                              &r) == 0,
         "alltoall_async");
  EXPECT(tutti_wait(r) == 0, "alltoall wait");
  for (int q = 0; q < g_size; ++q)
    EXPECT(a2a_out[q] == 100 * q + g_rank && got_rows[q] == 1, "a2a_out[%d] = %d", q, a2a_out[q]);

  /* A callback, then the request is the engine's. */
  float c[2] = {1, 1};
  int calls = 0;
  EXPECT(tutti_allreduce_async("cb", c, c, 2, TUTTI_FLOAT32, TUTTI_MAX, &r) == 0, "cb");
  EXPECT(tutti_request_then(r, on_done, &calls) == 0, "then");
  EXPECT(tutti_barrier_async(&r) == 0 && tutti_wait(r) == 0, "barrier");
  for (int i = 0; i < 100000 && calls == 0; ++i) usleep(100);
  EXPECT(calls == 1 && g_status == 0, "callback ran %d times, status %d", calls, g_status);
  (void)g_called;

  /* A process set (every even rank) with scales, and its counters. */
  tutti_comm_t world, evens;
  EXPECT(tutti_comm_world(&world) == 0, "world");
  EXPECT(tutti_comm_split(world, g_rank % 2 ? -1 : 0, g_rank, &evens) == 0, "split");
  if (evens) {
    int n = tutti_comm_size(evens);
    float s[3] = {2, 2, 2};
    EXPECT(tutti_comm_allreduce_async(evens, "s", s, s, 3, TUTTI_FLOAT32, TUTTI_SUM, 0.5, 2.0,
                                      &r) == 0,
           "scaled");
    EXPECT(tutti_wait(r) == 0, "scaled wait");
    EXPECT(s[2] == 2.0f * n, "scaled: %g instead of %g", s[2], 2.0 * n);
    tutti_engine_stats_t st;
    EXPECT(tutti_comm_engine_stats(evens, &st) == 0 && st.tensors == 1, "stats: %llu", st.tensors);
    EXPECT(tutti_comm_free(evens) == 0, "free");
  }

  /* Mistakes are codes with messages, never crashes. */
  EXPECT(tutti_allreduce_async(NULL, x, x, 5, TUTTI_FLOAT64, TUTTI_SUM, &r) ==
             TUTTI_ERR_INVALID_ARGUMENT,
         "null name");
  EXPECT(tutti_allreduce_async("x", x, x, 5, TUTTI_FLOAT64, TUTTI_SUM, NULL) ==
             TUTTI_ERR_INVALID_ARGUMENT,
         "null request");
  EXPECT(tutti_wait_for(NULL, 1) == TUTTI_ERR_INVALID_ARGUMENT, "null wait_for");
  EXPECT(tutti_start_timeline("") == TUTTI_ERR_INVALID_ARGUMENT, "empty timeline path");
  EXPECT(tutti_start_timeline("/nonexistent-dir/t.json") == TUTTI_ERR_SYSTEM,
         "unwritable timeline");

  /* join: the last rank joins last. */
  if (g_rank == g_size - 1) {
    double late[2] = {1, 1};
    EXPECT(tutti_allreduce_async("late", late, late, 2, TUTTI_FLOAT64, TUTTI_SUM, &r) == 0, "late");
    EXPECT(tutti_wait(r) == 0 && late[0] == 1.0, "late allreduce with the others joined: %g",
           late[0]);
  }
  int last = -1;
  EXPECT(tutti_join_async(&last, &r) == 0, "join");
  EXPECT(tutti_wait(r) == 0, "join wait");
  EXPECT(last == g_size - 1, "last joined %d", last);

  EXPECT(tutti_comm_free(world) == 0, "free world");
  EXPECT(tutti_finalize() == 0, "finalize");
  if (g_failures == 0 && g_rank == 0) printf("ok: the engine's C API\n");
  return g_failures ? 1 : 0;
}
