/* mpi_check: an MPI program that checks what Open MPI asks of pollfab (issue 9).
 *
 * Two-sided (always): ping-pong between rank pairs (2k, 2k+1) from 0 B to 16 MiB with every
 * byte checked; MPI_ANY_SOURCE / MPI_ANY_TAG receives and their status; MPI_Iprobe,
 * MPI_Improbe + MPI_Mrecv; MPI_Ssend / MPI_Issend; MPI_Cancel of a receive; a truncation error
 * (MPI_ERR_TRUNCATE under MPI_ERRORS_RETURN); MPI_Allreduce, MPI_Alltoall, MPI_Bcast,
 * MPI_Allgather with checked results.
 * One-sided (with --rma): MPI_Put, MPI_Get, MPI_Accumulate, MPI_Fetch_and_op and
 * MPI_Compare_and_swap on a window of every rank, under passive-target locks and fences.
 *
 * Usage: mpi_check [--rma] [--max-bytes N]. Needs an even number of ranks >= 2. Prints one line
 * per section and "mpi_check: PASS (N checks)" on rank 0; any failed check prints what and
 * where and calls MPI_Abort (exit status non-zero).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;
static long checks;

#define CHECK(cond, ...)                                                         \
  do {                                                                           \
    ++checks;                                                                    \
    if (!(cond)) {                                                               \
      fprintf(stderr, "mpi_check: rank %d: %s:%d: %s: ", rank, __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                              \
      fprintf(stderr, "\n");                                                     \
      fflush(stderr);                                                            \
      MPI_Abort(MPI_COMM_WORLD, 1);                                              \
    }                                                                            \
  } while (0)

static unsigned char pattern(size_t i, int seed) {
  return (unsigned char)((i * 131u + (i >> 9) + (unsigned)seed * 17u) ^ 0xa5u);
}

static void section(const char* name) {
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    printf("mpi_check: %s ok\n", name);
    fflush(stdout);
  }
}

static void pingpong(size_t max_bytes) {
  const int peer = rank ^ 1;
  unsigned char* sbuf = malloc(max_bytes ? max_bytes : 1);
  unsigned char* rbuf = malloc(max_bytes ? max_bytes : 1);
  CHECK(sbuf && rbuf, "malloc %zu", max_bytes);
  size_t sizes[64];
  int n = 0;
  sizes[n++] = 0;
  for (size_t s = 1; s <= max_bytes && n < 60; s *= 2) {
    sizes[n++] = s;
    if (s > 8 && s + 3 <= max_bytes) sizes[n++] = s + 3;  /* odd sizes: segment tails */
  }
  for (int k = 0; k < n; ++k) {
    const size_t len = sizes[k];
    for (size_t i = 0; i < len; ++i) sbuf[i] = pattern(i, rank + k);
    memset(rbuf, 0, len);
    MPI_Status st;
    int count = -1;
    if (rank % 2 == 0) {
      MPI_Send(sbuf, (int)len, MPI_BYTE, peer, k, MPI_COMM_WORLD);
      MPI_Recv(rbuf, (int)len, MPI_BYTE, peer, k, MPI_COMM_WORLD, &st);
    } else {
      MPI_Recv(rbuf, (int)len, MPI_BYTE, peer, k, MPI_COMM_WORLD, &st);
      MPI_Send(sbuf, (int)len, MPI_BYTE, peer, k, MPI_COMM_WORLD);
    }
    MPI_Get_count(&st, MPI_BYTE, &count);
    CHECK((size_t)count == len, "size %zu: count %d", len, count);
    for (size_t i = 0; i < len; ++i)
      CHECK(rbuf[i] == pattern(i, peer + k), "size %zu: byte %zu is %u", len, i, rbuf[i]);
  }
  free(sbuf);
  free(rbuf);
}

static void wildcards(void) {
  /* Every rank but 0 sends two messages to 0 with tags 100 + rank and 200 + rank. */
  if (rank == 0) {
    int seen[2][1024] = {{0}};
    for (int i = 0; i < 2 * (size - 1); ++i) {
      int v = -1;
      MPI_Status st;
      MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
      CHECK(st.MPI_SOURCE > 0 && st.MPI_SOURCE < size, "source %d", st.MPI_SOURCE);
      CHECK(st.MPI_TAG == 100 + st.MPI_SOURCE || st.MPI_TAG == 200 + st.MPI_SOURCE, "tag %d", st.MPI_TAG);
      CHECK(v == st.MPI_TAG * 7, "value %d for tag %d", v, st.MPI_TAG);
      seen[st.MPI_TAG >= 200][st.MPI_SOURCE]++;
    }
    for (int r = 1; r < size; ++r) CHECK(seen[0][r] == 1 && seen[1][r] == 1, "rank %d seen", r);
  } else {
    int v1 = (100 + rank) * 7, v2 = (200 + rank) * 7;
    MPI_Send(&v1, 1, MPI_INT, 0, 100 + rank, MPI_COMM_WORLD);
    MPI_Send(&v2, 1, MPI_INT, 0, 200 + rank, MPI_COMM_WORLD);
  }
}

static void probes(void) {
  const int peer = rank ^ 1;
  if (rank % 2 == 0) {
    int a[3] = {1, 2, 3}, b[5] = {4, 5, 6, 7, 8};
    MPI_Send(a, 3, MPI_INT, peer, 11, MPI_COMM_WORLD);
    MPI_Send(b, 5, MPI_INT, peer, 12, MPI_COMM_WORLD);
  } else {
    int flag = 0, count = 0;
    MPI_Status st;
    for (long i = 0; !flag && i < 100000000L; ++i) MPI_Iprobe(peer, 11, MPI_COMM_WORLD, &flag, &st);
    CHECK(flag, "Iprobe never saw tag 11");
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == 3 && st.MPI_TAG == 11 && st.MPI_SOURCE == peer, "Iprobe count %d tag %d", count, st.MPI_TAG);
    MPI_Message msg;
    flag = 0;
    for (long i = 0; !flag && i < 100000000L; ++i)
      MPI_Improbe(peer, 12, MPI_COMM_WORLD, &flag, &msg, &st);
    CHECK(flag, "Improbe never saw tag 12");
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == 5, "Improbe count %d", count);
    int b[5] = {0};
    MPI_Mrecv(b, 5, MPI_INT, &msg, &st);
    CHECK(b[0] == 4 && b[4] == 8, "Mrecv data %d..%d", b[0], b[4]);
    int a[3] = {0};
    MPI_Recv(a, 3, MPI_INT, peer, 11, MPI_COMM_WORLD, &st);  /* still there after Iprobe */
    CHECK(a[0] == 1 && a[2] == 3, "Recv after Iprobe %d..%d", a[0], a[2]);
  }
}

static void synchronous(void) {
  const int peer = rank ^ 1;
  int v = rank, w = -1;
  if (rank % 2 == 0) {
    MPI_Ssend(&v, 1, MPI_INT, peer, 21, MPI_COMM_WORLD);
    MPI_Request rq;
    MPI_Issend(&v, 1, MPI_INT, peer, 22, MPI_COMM_WORLD, &rq);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
  } else {
    MPI_Recv(&w, 1, MPI_INT, peer, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(w == peer, "Ssend value %d", w);
    MPI_Recv(&w, 1, MPI_INT, peer, 22, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(w == peer, "Issend value %d", w);
  }
}

static void cancel_and_truncate(void) {
  int buf = 0, cancelled = 0;
  MPI_Request rq;
  MPI_Status st;
  MPI_Irecv(&buf, 1, MPI_INT, MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &rq);  /* never sent */
  MPI_Cancel(&rq);
  MPI_Wait(&rq, &st);
  MPI_Test_cancelled(&st, &cancelled);
  CHECK(cancelled, "receive not cancelled");

  const int peer = rank ^ 1;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (rank % 2 == 0) {
    char big[100];
    memset(big, 'x', sizeof big);
    MPI_Send(big, 100, MPI_CHAR, peer, 31, MPI_COMM_WORLD);
  } else {
    char small[10];
    int rc = MPI_Recv(small, 10, MPI_CHAR, peer, 31, MPI_COMM_WORLD, &st);
    int cls = 0;
    MPI_Error_class(rc, &cls);
    CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_TRUNCATE, "truncation: rc %d class %d", rc, cls);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

static void collectives(void) {
  long v = rank + 1, sum = 0;
  MPI_Allreduce(&v, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  CHECK(sum == (long)size * (size + 1) / 2, "Allreduce %ld", sum);
  double big_in[4096], big_out[4096];
  for (int i = 0; i < 4096; ++i) big_in[i] = rank * 0.5 + i;
  MPI_Allreduce(big_in, big_out, 4096, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  CHECK(big_out[4095] == (size - 1) * 0.5 + 4095, "Allreduce max %f", big_out[4095]);
  int* sendv = malloc(sizeof(int) * size * 1000);
  int* recvv = malloc(sizeof(int) * size * 1000);
  for (int r = 0; r < size; ++r)
    for (int i = 0; i < 1000; ++i) sendv[r * 1000 + i] = rank * 1000000 + r * 1000 + i;
  MPI_Alltoall(sendv, 1000, MPI_INT, recvv, 1000, MPI_INT, MPI_COMM_WORLD);
  for (int r = 0; r < size; ++r)
    for (int i = 0; i < 1000; ++i)
      CHECK(recvv[r * 1000 + i] == r * 1000000 + rank * 1000 + i, "Alltoall from %d [%d]", r, i);
  char bc[70000];
  if (rank == 0)
    for (int i = 0; i < (int)sizeof bc; ++i) bc[i] = (char)pattern(i, 3);
  MPI_Bcast(bc, sizeof bc, MPI_CHAR, 0, MPI_COMM_WORLD);
  for (int i = 0; i < (int)sizeof bc; ++i) CHECK(bc[i] == (char)pattern(i, 3), "Bcast byte %d", i);
  int me[2] = {rank, rank * rank};
  MPI_Allgather(me, 2, MPI_INT, recvv, 2, MPI_INT, MPI_COMM_WORLD);
  for (int r = 0; r < size; ++r) CHECK(recvv[2 * r] == r && recvv[2 * r + 1] == r * r, "Allgather %d", r);
  free(sendv);
  free(recvv);
}

static void one_sided(void) {
  const int n = 1024;
  int64_t* base = NULL;
  MPI_Win win;
  MPI_Win_allocate(n * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
  for (int i = 0; i < n; ++i) base[i] = 0;
  MPI_Win_fence(0, win);
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  /* Put: my rank pattern into my right neighbour's slots [0, 512). */
  int64_t src[512];
  for (int i = 0; i < 512; ++i) src[i] = rank * 100000 + i;
  MPI_Put(src, 512, MPI_INT64_T, right, 0, 512, MPI_INT64_T, win);
  MPI_Win_fence(0, win);
  for (int i = 0; i < 512; ++i) CHECK(base[i] == left * 100000 + i, "Put slot %d: %lld", i, (long long)base[i]);
  /* Get: read my right neighbour's slots (written by me). */
  int64_t got[512];
  MPI_Get(got, 512, MPI_INT64_T, right, 0, 512, MPI_INT64_T, win);
  MPI_Win_fence(0, win);
  for (int i = 0; i < 512; ++i) CHECK(got[i] == rank * 100000 + i, "Get slot %d", i);
  /* Accumulate: everyone adds rank+1 into slot 600 of rank 0. */
  int64_t one = rank + 1;
  MPI_Accumulate(&one, 1, MPI_INT64_T, 0, 600, 1, MPI_INT64_T, MPI_SUM, win);
  MPI_Win_fence(0, win);
  if (rank == 0) CHECK(base[600] == (int64_t)size * (size + 1) / 2, "Accumulate %lld", (long long)base[600]);
  /* Fetch_and_op and Compare_and_swap under a passive-target lock. */
  MPI_Win_lock_all(0, win);
  int64_t inc = 1, old = -1;
  MPI_Fetch_and_op(&inc, &old, MPI_INT64_T, 0, 700, MPI_SUM, win);
  MPI_Win_flush(0, win);
  CHECK(old >= 0 && old < size, "Fetch_and_op old %lld", (long long)old);
  int64_t want = 0, mine = rank + 1, prev = -1;
  MPI_Compare_and_swap(&mine, &want, &prev, MPI_INT64_T, 0, 701, win);
  MPI_Win_flush(0, win);
  MPI_Win_unlock_all(win);
  MPI_Barrier(MPI_COMM_WORLD);
  int winner = prev == 0;
  int winners = 0;
  MPI_Allreduce(&winner, &winners, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  CHECK(winners == 1, "Compare_and_swap winners %d", winners);
  MPI_Win_fence(0, win);
  if (rank == 0) {
    CHECK(base[700] == size, "Fetch_and_op total %lld", (long long)base[700]);
    CHECK(base[701] >= 1 && base[701] <= size, "Compare_and_swap value %lld", (long long)base[701]);
  }
  MPI_Win_fence(0, win);
  MPI_Win_free(&win);
}

int main(int argc, char** argv) {
  int rma = 0;
  size_t max_bytes = 16u << 20;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--rma")) rma = 1;
    else if (!strcmp(argv[i], "--max-bytes") && i + 1 < argc) max_bytes = strtoull(argv[++i], NULL, 0);
  }
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2 || size % 2) {
    if (rank == 0) fprintf(stderr, "mpi_check: needs an even number of ranks >= 2\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  pingpong(max_bytes);
  section("point-to-point 0 B..max with data checks");
  wildcards();
  section("MPI_ANY_SOURCE / MPI_ANY_TAG");
  probes();
  section("Iprobe / Improbe / Mrecv");
  synchronous();
  section("Ssend / Issend");
  cancel_and_truncate();
  section("Cancel / truncation");
  collectives();
  section("Allreduce / Alltoall / Bcast / Allgather");
  if (rma) {
    one_sided();
    section("Put / Get / Accumulate / Fetch_and_op / Compare_and_swap");
  }
  long total = 0;
  MPI_Reduce(&checks, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("mpi_check: PASS (%ld checks, %d ranks)\n", total, size);
  MPI_Finalize();
  return 0;
}
