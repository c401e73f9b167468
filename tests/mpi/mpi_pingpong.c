/* mpi_pingpong: MPI ping-pong between ranks 0 and 1 (a benchmark, used by scripts/bench-mpi.sh).
 * After 2000 one-byte round trips of warm-up, for each size: a short warm-up, then ITERS round trips of MPI_Send/MPI_Recv; prints one line
 *   size=BYTES iters=N lat_us=HALF_ROUND_TRIP_US bw_MBps=BYTES_PER_HALF_ROUND_TRIP
 * from rank 0 (bandwidth = size / half round trip, 10^6 bytes per second).
 * Usage: mpi_pingpong [-i ITERS] SIZE... (default sizes 8 4096 1048576). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long iters = 1000;
  size_t sizes[32];
  int n = 0;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "-i") && i + 1 < argc) iters = atol(argv[++i]);
    else if (n < 32) sizes[n++] = strtoull(argv[i], NULL, 0);
  }
  if (n == 0) {
    sizes[n++] = 8;
    sizes[n++] = 4096;
    sizes[n++] = 1048576;
  }
  size_t max = 0;
  for (int k = 0; k < n; ++k) max = sizes[k] > max ? sizes[k] : max;
  char* buf = malloc(max ? max : 1);
  memset(buf, 1, max ? max : 1);
  if (size >= 2 && rank < 2) {
    for (int i = 0; i < 2000; ++i) {  /* warm-up: connections, caches, the peers' first packets */
      if (rank == 0) {
        MPI_Send(buf, 1, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
        MPI_Recv(buf, 1, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(buf, 1, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, 1, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
      }
    }
    for (int k = 0; k < n; ++k) {
      const int len = (int)sizes[k];
      const long it = len >= 1048576 ? (iters / 10 > 10 ? iters / 10 : 10) : iters;
      double t0 = 0;
      for (long i = -it / 10 - 1; i < it; ++i) {
        if (i == 0) t0 = MPI_Wtime();
        if (rank == 0) {
          MPI_Send(buf, len, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
          MPI_Recv(buf, len, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
          MPI_Recv(buf, len, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          MPI_Send(buf, len, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        }
      }
      const double half = (MPI_Wtime() - t0) / (2.0 * it);
      if (rank == 0) {
        printf("size=%d iters=%ld lat_us=%.2f bw_MBps=%.1f\n", len, it, half * 1e6, len / half / 1e6);
        fflush(stdout);
      }
    }
  }
  free(buf);
  MPI_Finalize();
  return 0;
}
