/* mpi_pods_check: an MPI program for the pod tests. Every rank reports the network namespace it
 * runs in and its address in 198.18.0.0/15 (the pods' range), then checks an MPI_Allreduce whose
 * exact result is known, and rank 0 says how many distinct namespaces the ranks ran in. Output
 * lines: mpi_pods_check: rank R of N addr A netns I mpi_pods_check: allreduce OK on N ranks in D
 * network namespaces      (rank 0, on success) mpi_pods_check: WRONG ... (exit 1) The tests compare
 * D with the number of pods: ranks that all ran on the launcher's host would still get the sum
 * right. */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <mpi.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

enum { kCount = 4099 };

/* The first IPv4 address in 198.18.0.0/15 of this namespace, or "none". */
static void pod_address(char* out, size_t size) {
  snprintf(out, size, "none");
  struct ifaddrs* list = NULL;
  if (getifaddrs(&list) != 0) return;
  for (struct ifaddrs* a = list; a != NULL; a = a->ifa_next) {
    if (a->ifa_addr == NULL || a->ifa_addr->sa_family != AF_INET) continue;
    const struct sockaddr_in* in = (const struct sockaddr_in*)(const void*)a->ifa_addr;
    uint32_t host = ntohl(in->sin_addr.s_addr);
    if ((host >> 17) == ((198u << 7) | (18u >> 1))) {
      inet_ntop(AF_INET, &in->sin_addr, out, (socklen_t)size);
      break;
    }
  }
  freeifaddrs(list);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  struct stat ns;
  unsigned long long netns = 0;
  if (stat("/proc/self/ns/net", &ns) == 0) netns = (unsigned long long)ns.st_ino;
  char addr[INET_ADDRSTRLEN + 8];
  pod_address(addr, sizeof addr);
  printf("mpi_pods_check: rank %d of %d addr %s netns %llu\n", rank, size, addr, netns);
  fflush(stdout);

  /* Element i of rank r is r * kCount + i, so the sum is size * i + kCount * size * (size - 1) / 2.
   */
  static long long send[kCount], recv[kCount];
  for (int i = 0; i < kCount; ++i) send[i] = (long long)rank * kCount + i;
  MPI_Allreduce(send, recv, kCount, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  int wrong = 0;
  for (int i = 0; i < kCount; ++i) {
    long long want = (long long)size * i + (long long)kCount * size * (size - 1) / 2;
    if (recv[i] != want) {
      if (wrong == 0)
        printf("mpi_pods_check: WRONG rank %d element %d: got %lld expected %lld\n", rank, i,
               recv[i], want);
      ++wrong;
    }
  }
  int any_wrong = 0;
  MPI_Allreduce(&wrong, &any_wrong, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);

  unsigned long long all[1024];
  int distinct = 0;
  if (size <= 1024) {
    MPI_Allgather(&netns, 1, MPI_UNSIGNED_LONG_LONG, all, 1, MPI_UNSIGNED_LONG_LONG,
                  MPI_COMM_WORLD);
    for (int r = 0; r < size; ++r) {
      int seen = 0;
      for (int q = 0; q < r; ++q) seen |= all[q] == all[r];
      distinct += !seen;
    }
  }
  if (rank == 0 && any_wrong == 0)
    printf("mpi_pods_check: allreduce OK on %d ranks in %d network namespaces\n", size, distinct);
  fflush(stdout);
  MPI_Finalize();
  return any_wrong == 0 ? 0 : 1;
}
