/* An installed-tree consumer in C: rank r contributes r + 1 + i at index i; the int64 sum over n
 * ranks is n(n+1)/2 + n*i. Prints one line per rank and exits 0 only if every element is right. */
#include <stdint.h>
#include <stdio.h>
#include <tutti/tutti.h>

#define COUNT 1000

int main(void) {
  if (tutti_init() != 0) {
    fprintf(stderr, "consumer_c: init: %s\n", tutti_last_error());
    return 1;
  }
  int rank = tutti_rank(), size = tutti_size();
  int64_t data[COUNT];
  for (int i = 0; i < COUNT; ++i) data[i] = rank + 1 + i;
  int rc = tutti_allreduce(data, data, COUNT, TUTTI_INT64, TUTTI_SUM);
  if (rc != 0) {
    fprintf(stderr, "consumer_c: allreduce: %s: %s\n", tutti_error_name(rc), tutti_last_error());
    return 1;
  }
  int wrong = 0;
  for (int i = 0; i < COUNT; ++i)
    if (data[i] != (int64_t)size * (size + 1) / 2 + (int64_t)size * i) ++wrong;
  printf("consumer_c: rank %d of %d: allreduce %s (last %lld)\n", rank, size,
         wrong == 0 ? "correct" : "WRONG", (long long)data[COUNT - 1]);
  tutti_finalize();
  return wrong == 0 ? 0 : 1;
}
